"""PyTorch on the same k-means problems as kmeans_gpu, and the joint table.

Reads the JSON lines kmeans_gpu wrote (one per N, K, D), makes the same points
on the GPU (the `blobs` generator of examples/kmeans, bit for bit), starts
from the same centroids, checks that PyTorch's first Lloyd step agrees with
lizard's, times the step and prints the table of both.

    python3 bench/kmeans_gpu/torch_lloyd.py --lizard results.jsonl [--iters 20] [--json OUT]
"""
import argparse
import json
import statistics

import numpy as np
import torch

M64 = (1 << 64) - 1


def signed(c):
    return c - (1 << 64) if c >= 1 << 63 else c


GOLDEN, MUL1, MUL2 = (signed(c) for c in (0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9,
                                          0x94D049BB133111EB))


def lsr(x, s):
    """Logical right shift of int64 tensors holding uint64 bits."""
    return (x >> s) & ((1 << (64 - s)) - 1)


def mix64(x):
    x = x + GOLDEN
    x = (x ^ lsr(x, 30)) * MUL1
    x = (x ^ lsr(x, 27)) * MUL2
    return x ^ lsr(x, 31)


def mix64_int(x):
    x = (x + 0x9E3779B97F4A7C15) & M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & M64
    return x ^ (x >> 31)


def unit(h):
    return lsr(h, 40).to(torch.float32) * (1.0 / 16777216.0)


def blobs(n, k, d, seed, dev, chunk=1 << 22):
    """The points examples/kmeans' `blobs` kernel generates, as float32 [n, d]."""
    centre = np.zeros((k, d), dtype=np.float32)
    for b in range(k):
        for j in range(d):
            h = mix64_int(seed ^ mix64_int(b * 1000003 + j))
            centre[b, j] = np.float32(10.0) * np.float32((h >> 40) * (1.0 / 16777216.0))
    centre = torch.from_numpy(centre).to(dev)
    x = torch.empty(n, d, dtype=torch.float32, device=dev)
    cols = torch.arange(d, device=dev, dtype=torch.int64)
    for r0 in range(0, n, chunk):
        rows = torch.arange(r0, min(n, r0 + chunk), device=dev, dtype=torch.int64)
        h = mix64(signed(seed) + mix64(rows[:, None] * 64 + cols[None, :]))
        x[r0:r0 + len(rows)] = centre[rows % k] + (unit(h) - 0.5)
        del h
    return x


def lloyd_step(x, c, chunk):
    """One assign step: per-centroid sums and counts (argmin of |c|^2 - 2 x.c)."""
    k = c.shape[0]
    sums = torch.zeros_like(c)
    counts = torch.zeros(k, dtype=torch.int64, device=x.device)
    norms = (c * c).sum(1)
    for r0 in range(0, x.shape[0], chunk):
        xs = x[r0:r0 + chunk]
        labels = (norms - 2.0 * (xs @ c.t())).argmin(1)
        sums.index_add_(0, labels, xs)
        counts += torch.bincount(labels, minlength=k)
    return sums, counts


def time_steps(x, c, iters, chunk):
    for _ in range(2):
        lloyd_step(x, c, chunk)
    times = []
    for _ in range(iters):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        sums, counts = lloyd_step(x, c, chunk)
        e1.record()
        e1.synchronize()
        times.append(e0.elapsed_time(e1))
        c = torch.where(counts[:, None] > 0, sums / counts.clamp(min=1)[:, None].float(), c)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lizard", required=True, help="JSON lines written by kmeans_gpu --json")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--json", help="also write the joint table here, as JSON")
    a = ap.parse_args()
    dev = torch.device("cuda")
    torch.backends.cuda.matmul.allow_tf32 = False  # float32 like the kernel
    with open(a.lizard) as f:
        records = [json.loads(line) for line in f if line.strip()]
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name()}, float32 matmul (no TF32)")
    rows = []
    for r in records:
        n, k, d = r["n"], r["k"], r["d"]
        x = blobs(n, k, d, r["seed"], dev)
        c = torch.tensor(r["centroids0"], dtype=torch.float32, device=dev).reshape(k, d)
        if not torch.equal(c, x[:k]):
            print(f"N={n} K={k} D={d}: the starting centroids are not the first points: "
                  "the generated data differ")
        chunk = min(n, 1 << 22, (1 << 29) // k)  # at most 4M rows and 2 GiB of scores at a time
        sums, counts = lloyd_step(x, c, chunk)
        want_counts = torch.tensor(r["counts0"], device=dev)
        want_sums = torch.tensor(r["sums0"], dtype=torch.float64, device=dev).reshape(k, d)
        count_diff = int((counts - want_counts).abs().sum())
        rel = float((sums.double() - want_sums).norm() / want_sums.norm().clamp(min=1e-30))
        ms = time_steps(x, c, max(3, min(a.iters, int(2000 / max(r["kernel_ms"], 1e-3)))), chunk)
        rows.append((r, ms, count_diff, rel))
        del x
        torch.cuda.empty_cache()
    dev_name = records[0]["device"] if records else "?"
    bw = records[0]["copy_gbps"] if records else 0
    print(f"\nk-means, one Lloyd step per iteration, float32, on {dev_name} "
          f"(device copy {bw:.0f} GB/s read + write)")
    print(f"{'N':>10} {'K':>4} {'D':>3} {'lizard ms':>10} {'floor ms':>9} {'% floor':>8} "
          f"{'torch ms':>9} {'x torch':>8}  first step vs torch")
    for r, ms, count_diff, rel in rows:
        print(f"{r['n']:>10} {r['k']:>4} {r['d']:>3} {r['kernel_ms']:>10.3f} {r['floor_ms']:>9.3f} "
              f"{100 * r['floor_ms'] / r['kernel_ms']:>7.0f}% {ms:>9.3f} {ms / r['kernel_ms']:>7.1f}x"
              f"  counts differ by {count_diff}, sums rel {rel:.1e}")
    if a.json:
        table = [{"n": r["n"], "k": r["k"], "d": r["d"], "tf32": r.get("tf32", 0),
                  "kernel_ms": r["kernel_ms"], "floor_ms": r["floor_ms"],
                  "percent_of_floor": 100 * r["floor_ms"] / r["kernel_ms"], "torch_ms": ms,
                  "counts_differ_by": count_diff, "sums_rel_diff": rel}
                 for r, ms, count_diff, rel in rows]
        with open(a.json, "w") as f:
            json.dump({"device": dev_name, "copy_gbps": bw, "shapes": table}, f, indent=1)


if __name__ == "__main__":
    main()
