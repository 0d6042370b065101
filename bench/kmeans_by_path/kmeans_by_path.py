#!/usr/bin/env python3
"""k-means over a dataset named by path, as a cluster holds its data: the
seed workload's kernel (examples/kmeans, K = 16, 32 dimensions, exactly 50
iterations) on .npy files of 1,048,576 and 16,777,216 points, started with
POST /runtime/<checksum>?wait=1 and timed from the client.

For each size it times:
  first    a run right after the file's modification time changed, so the
           worker cannot keep its rows and loads the file afresh (page cache
           warm); the specialisation is already compiled (a run over a small
           file of the same shape compiles it first, and is reported apart);
  later    runs over the unchanged file (the executors keep its rows);
and, when PyTorch sees a GPU, in the same sitting on the same device:
  torch_resident   50 Lloyd steps on points already on the GPU;
  torch_from_file  np.load, copy to the GPU, then the same 50 steps.

    bench/seed_kmeans/local.sh BUILD   with
    LIZARD_SEED_SCRIPT="python3 bench/kmeans_by_path/kmeans_by_path.py"
    (or: python3 bench/kmeans_by_path/kmeans_by_path.py --uri URI)

Prints one line per figure and writes kmeans_by_path.json to --out (default
$OUT when set).
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "bench", "seed_kmeans"))

import numpy as np  # noqa: E402

import lizard  # noqa: E402
from seed_kmeans import DIMS, ITERATIONS, K, timed_run  # noqa: E402


def write_points(path, rows, seed=7):
    """Blobs around K centres, written in slices so memory stays small."""
    rng = np.random.default_rng(seed)
    centres = rng.uniform(-10, 10, size=(K, DIMS)).astype(np.float32)
    out = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(rows, DIMS))
    step = 1 << 20
    for first in range(0, rows, step):
        n = min(step, rows - first)
        which = rng.integers(0, K, size=n)
        out[first:first + n] = centres[which] + rng.standard_normal((n, DIMS), dtype=np.float32)
    out.flush()
    del out


def run_body(path, centroids):
    return {"params": {"k": K, "dims": DIMS, "max_iterations": ITERATIONS, "threshold": -1.0},
            "dataset": {"points": {"path": path}},
            "state": {"centroids": centroids.tolist()},
            "outputs": []}


def checked(wall_record):
    wall, record = wall_record
    if record.get("status") != "done":
        sys.exit(f"run failed: {record.get('error', record.get('status'))}")
    if record.get("iterations") != ITERATIONS:
        sys.exit(f"run made {record.get('iterations')} iterations, not {ITERATIONS}")
    return wall, record


def summary(runs):
    walls = [w for w, _ in runs]
    _, median_record = sorted(runs, key=lambda r: r[0])[len(runs) // 2]
    phases = median_record.get("phases", {})
    return {"wall_ms": walls, "median_ms": statistics.median(walls),
            "loading_ms": phases.get("loading_ms"), "iterations_ms": phases.get("iterations_ms"),
            "file_bytes_read": phases.get("file_bytes_read"),
            "file_bytes_kept": phases.get("file_bytes_kept")}


def torch_figures(path, centroids, repeat):
    """PyTorch's Lloyd steps on the same GPU, or None without one."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None

    def lloyd(x, c):
        for _ in range(ITERATIONS):
            labels = torch.cdist(x, c).argmin(dim=1)
            sums = torch.zeros_like(c).index_add_(0, labels, x)
            counts = torch.bincount(labels, minlength=K).clamp_(min=1).unsqueeze(1)
            c = sums / counts
        return c

    def timed(fn):
        times = []
        for _ in range(repeat):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            fn()
            torch.cuda.synchronize()
            times.append((time.perf_counter() - t0) * 1e3)
        return times

    c0 = torch.from_numpy(centroids).cuda()
    resident = torch.from_numpy(np.load(path)).cuda()
    lloyd(resident, c0)  # warms the kernels
    on_gpu = timed(lambda: lloyd(resident, c0))
    del resident
    from_file = timed(lambda: lloyd(torch.from_numpy(np.load(path)).cuda(), c0))
    return {"device": torch.cuda.get_device_name(0),
            "resident_ms": on_gpu, "resident_median_ms": statistics.median(on_gpu),
            "from_file_ms": from_file, "from_file_median_ms": statistics.median(from_file)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--uri", default=os.environ.get("LIZARD_ADDRESS", "http://127.0.0.1:5000"))
    ap.add_argument("--token", default=os.environ.get("LIZARD_TOKEN"))
    ap.add_argument("--rows", type=int, action="append",
                    help="points per file (repeatable; default 1048576 and 16777216)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--dir", default=None, help="where the .npy files go (default: a temp dir)")
    ap.add_argument("--out", default=os.environ.get("OUT"))
    args = ap.parse_args()
    sizes = args.rows or [1 << 20, 1 << 24]

    client = lizard.Client(args.uri, token=args.token)
    checksum = client.load_program(os.path.join(ROOT, "examples", "kmeans"))
    work = tempfile.TemporaryDirectory(dir=args.dir)
    result = {"k": K, "dims": DIMS, "iterations": ITERATIONS, "sizes": []}

    small = os.path.join(work.name, "small.npy")
    write_points(small, 4096)
    centroids = np.load(small)[:K].copy()
    compile_run = checked(timed_run(args.uri, args.token, checksum, run_body(small, centroids)))
    result["compile_run"] = summary([compile_run])
    result["compile_run"]["compile_ms"] = compile_run[1].get("phases", {}).get("compile_ms")
    print(f"kmeans_by_path: first run of k={K}, dims={DIMS} on 4,096 points "
          f"(compile included): {compile_run[0]:.1f} ms")

    for rows in sizes:
        path = os.path.join(work.name, f"points-{rows}.npy")
        write_points(path, rows)
        np.load(path, mmap_mode="r").sum()  # the page cache holds the file, as after a write
        body = run_body(path, centroids)
        first = []
        for rep in range(args.repeat):
            stamp = time.time() + rep + 1
            os.utime(path, (stamp, stamp))  # a new identity: loaded afresh
            first.append(checked(timed_run(args.uri, args.token, checksum, body)))
        later = [checked(timed_run(args.uri, args.token, checksum, body))
                 for _ in range(args.repeat)]
        entry = {"rows": rows, "bytes": rows * DIMS * 4, "first": summary(first),
                 "later": summary(later), "torch": torch_figures(path, centroids, args.repeat)}
        result["sizes"].append(entry)
        print(f"{rows:>10,} points by path: first run {entry['first']['median_ms']:8.1f} ms "
              f"(loading {entry['first']['loading_ms']} ms), later runs "
              f"{entry['later']['median_ms']:7.1f} ms (median of {args.repeat})")
        if entry["torch"]:
            print(f"{rows:>10,} points, PyTorch on {entry['torch']['device']}: resident "
                  f"{entry['torch']['resident_median_ms']:8.1f} ms, np.load + copy + steps "
                  f"{entry['torch']['from_file_median_ms']:8.1f} ms")
        os.remove(path)

    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "kmeans_by_path.json"), "w") as f:
            json.dump(result, f, indent=2)
        print(f"results: {args.out}/kmeans_by_path.json")


if __name__ == "__main__":
    main()
