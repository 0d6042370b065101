#!/usr/bin/env python3
"""The seed workload against any lizard server: k-means on 65,536 points of
32 dimensions, K = 16, exactly 50 iterations, started the way users start a
run (POST /runtime/<checksum>?wait=1) and timed from the client.

    python3 bench/seed_kmeans/seed_kmeans.py [--uri http://127.0.0.1:5000] [--repeat 7]

Registers examples/kmeans and uploads the points once (not timed), then
times `--repeat` runs and prints the median wall time and, for the median
run, the phases and per-iteration figures the server recorded.  Needs numpy
and the Python client (PYTHONPATH=python, or pip install ./python).
"""
import argparse
import json
import os
import statistics
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))

import numpy as np  # noqa: E402

import lizard  # noqa: E402

ROWS, DIMS, K, ITERATIONS = 65536, 32, 16, 50


def points(rows, seed=7):
    rng = np.random.default_rng(seed)
    centres = rng.uniform(-10, 10, size=(K, DIMS)).astype(np.float32)
    which = rng.integers(0, K, size=rows)
    return (centres[which] + rng.normal(0, 1, size=(rows, DIMS))).astype(np.float32)


def timed_run(uri, token, checksum, body):
    req = urllib.request.Request(f"{uri}/runtime/{checksum}?wait=1", data=json.dumps(body).encode(),
                                 method="POST", headers={"Content-Type": "application/json"})
    if token:
        req.add_header("Authorization", "Bearer " + token)
    t0 = time.perf_counter()
    with urllib.request.urlopen(req, timeout=600) as answer:
        record = json.loads(answer.read())
    return (time.perf_counter() - t0) * 1e3, record


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--uri", default=os.environ.get("LIZARD_ADDRESS", "http://127.0.0.1:5000"))
    ap.add_argument("--token", default=os.environ.get("LIZARD_TOKEN"))
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--executors", type=int, default=None)
    ap.add_argument("--rows", type=int, default=ROWS,
                    help="points (the seed workload has 65536; fewer shows the fixed costs)")
    args = ap.parse_args()

    client = lizard.Client(args.uri, token=args.token)
    checksum = client.load_program(os.path.join(ROOT, "examples", "kmeans"))
    data = points(args.rows)
    upload = client.upload(data)
    body = {"params": {"k": K, "dims": DIMS, "max_iterations": ITERATIONS, "threshold": -1.0},
            "dataset": {"points": {"upload": upload}},
            "state": {"centroids": data[:K].tolist()},
            "outputs": []}
    if args.executors:
        body["executors"] = args.executors
    runs = []
    try:
        for _ in range(args.repeat + 1):  # the first run warms the caches
            wall, record = timed_run(args.uri, args.token, checksum, body)
            if record.get("status") != "done":
                sys.exit(f"run failed: {record.get('error', record.get('status'))}")
            if record.get("iterations") != ITERATIONS:
                sys.exit(f"run made {record.get('iterations')} iterations, not {ITERATIONS}")
            runs.append((wall, record))
    finally:
        client.delete_dataset(upload)
    timed = sorted(runs[1:], key=lambda r: r[0])
    wall, record = timed[len(timed) // 2]
    its = record.get("timings", [])
    iter_ms = [t["ms"] for t in its if "ms" in t]
    kernel_ms = [t["kernel_ms"] for t in its if "kernel_ms" in t]
    print(f"seed k-means: {args.rows} x {DIMS}, K={K}, {ITERATIONS} iterations, "
          f"{len(record.get('plan', {}).get('executors', []))} executor(s)")
    print(f"wall (POST ?wait=1): median {wall:.2f} ms, min {timed[0][0]:.2f}, "
          f"max {timed[-1][0]:.2f} over {len(timed)} runs")
    if iter_ms:
        print(f"iteration at the server: median {statistics.median(iter_ms) * 1e3:.0f} us, "
              f"kernel median {statistics.median(kernel_ms) * 1e3:.0f} us, "
              f"sum {sum(iter_ms):.2f} ms")
    print("phases (median run):", json.dumps(record.get("phases", {})))
    # Where the median run's wall time went: the run's own phases, the rest of
    # the driver's time (hooks, ending the run), and what lies outside the
    # driver (the HTTP exchange, checking and storing the request, the record
    # and its answer, this client).
    phases = record.get("phases", {})
    elapsed = record.get("elapsed_ms", 0.0)
    inside = sum(phases.get(k, 0.0) for k in ("planning_ms", "loading_ms", "compile_ms",
                                                "iterations_ms"))
    print(f"breakdown (median run): queued {phases.get('queued_ms', 0.0):.2f} ms, "
          f"phases {inside:.2f} ms, rest of the driver {elapsed - inside:.2f} ms, "
          f"outside the driver {wall - elapsed - phases.get('queued_ms', 0.0):.2f} ms")


if __name__ == "__main__":
    main()
