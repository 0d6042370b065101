"""One Lloyd step of k-means in PyTorch on the same problem as kmeans_gpu.

    python3 bench/kmeans_gpu/torch_lloyd.py [--n 16000000] [--iters 20]
"""
import argparse

import torch


def lloyd_step(x, c):
    # argmin_k |x - c_k|^2 = argmin_k (|c_k|^2 - 2 x.c_k)
    scores = (c * c).sum(1) - 2.0 * (x @ c.t())
    labels = scores.argmin(1)
    sums = torch.zeros_like(c).index_add_(0, labels, x)
    counts = torch.bincount(labels, minlength=c.shape[0])
    return sums, counts


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=16_000_000)
    ap.add_argument("--d", type=int, default=32)
    ap.add_argument("--k", type=int, default=16)
    ap.add_argument("--iters", type=int, default=20)
    a = ap.parse_args()
    dev = torch.device("cuda")
    g = torch.Generator(device=dev).manual_seed(1)
    centres = torch.rand(a.k, a.d, device=dev, generator=g) * 20 - 10
    x = centres[torch.randint(0, a.k, (a.n,), device=dev, generator=g)]
    x += torch.randn(a.n, a.d, device=dev, generator=g)
    c = x[: a.k].clone()
    for _ in range(3):
        lloyd_step(x, c)
    times = []
    for _ in range(a.iters):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        sums, counts = lloyd_step(x, c)
        e1.record()
        e1.synchronize()
        times.append(e0.elapsed_time(e1))
        c = torch.where(counts[:, None] > 0, sums / counts.clamp(min=1)[:, None].float(), c)
    times.sort()
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name()}: "
          f"N={a.n} D={a.d} K={a.k} float32, tf32 matmul={torch.backends.cuda.matmul.allow_tf32}")
    print(f"torch Lloyd step (median of {a.iters}): {times[len(times) // 2]:.3f} ms")


if __name__ == "__main__":
    main()
