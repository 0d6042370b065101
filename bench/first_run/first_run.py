#!/usr/bin/env python3
"""The first run against the tenth: what a user waits for when a program or
a parameter value is new, through a running server and its workers.

    bench/seed_kmeans/local.sh BUILD                       # starts both, then:
    LIZARD_SEED_SCRIPT="python3 bench/first_run/first_run.py" \\
        LIZARD_SEED_ARGS="--json $OUT/first_run.json" bench/seed_kmeans/local.sh BUILD

or against any server: first_run.py --uri URI [--load-program PATH] [--json FILE].

Each figure starts from nothing the workers have built: the bench copies
examples/kmeans and adds a comment that makes it a new program (a new
checksum and new sources, so no compile cache holds it). Then it times:

  load_program         `load_program DIR URI`, the README's command (waits
                       until every worker has built the program), cold, and
                       again for the same directory;
  first run of a new k the seed workload (65,536 points of 32 dimensions, 50
                       Lloyd iterations, POST /runtime/<hash>?wait=1) with a
                       value of k no run has used, compile included;
  warm run             the same request again, once the run is on the
                       optimised build (GPU runs begin on a quick build
                       while it compiles: docs/program-format.md);
  map                  the Python client's map over 8 new values of k (one
                       upload), and the same map again.

Before that, unless --no-warmup, it registers and runs another copy once,
so that the daemons' processes have loaded the compiler and the host's page
cache holds it, as on a node that has run anything before: the figures are
those of a new program, not of a new machine.

Needs numpy and the Python client (PYTHONPATH=python, or pip install ./python).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "bench", "seed_kmeans"))

import numpy as np  # noqa: E402

import lizard  # noqa: E402
import seed_kmeans  # noqa: E402  (its timed POST ?wait=1)

ROWS, DIMS, ITERATIONS = 65536, 32, 50


def points(rows, seed=7):
    rng = np.random.default_rng(seed)
    centres = rng.uniform(-10, 10, size=(64, DIMS)).astype(np.float32)
    which = rng.integers(0, len(centres), size=rows)
    return (centres[which] + rng.normal(0, 1, size=(rows, DIMS))).astype(np.float32)


def new_program_copy(parent, name="kmeans"):
    """examples/kmeans as a program no worker has seen: the same kernel with
    a device variable of its own (code, not a comment, so that no compiler's
    own cache of the preprocessed source can serve it)."""
    target = os.path.join(parent, name)
    shutil.copytree(os.path.join(ROOT, "examples", "kmeans"), target)
    with open(os.path.join(target, "kernel.cu"), "a") as f:
        f.write(f"__device__ int first_run_tag_{time.time_ns()};\n")
    return target


def timed_load_program(tool, directory, uri):
    t0 = time.perf_counter()
    out = subprocess.run([tool, directory, uri], capture_output=True, text=True, timeout=900)
    ms = (time.perf_counter() - t0) * 1e3
    if out.returncode != 0:
        sys.exit(f"load_program failed ({out.returncode}): {out.stdout}{out.stderr}")
    return ms


def timed_run(uri, token, checksum, body):
    wall, record = seed_kmeans.timed_run(uri, token, checksum, body)
    if record.get("status") != "done":
        sys.exit(f"run failed: {record.get('error', record.get('status'))}")
    return wall, record


def run_body(upload, data, k):
    return {"params": {"k": k, "dims": DIMS, "max_iterations": ITERATIONS, "threshold": -1.0},
            "dataset": {"points": {"upload": upload}},
            "state": {"centroids": data[:k].tolist()},
            "outputs": []}


def timed_map(client, checksum, data, ks):
    params = [{"k": k, "dims": DIMS, "max_iterations": ITERATIONS, "threshold": -1.0} for k in ks]
    t0 = time.perf_counter()
    runs = client.map(checksum, params, dataset={"points": data})
    ms = (time.perf_counter() - t0) * 1e3
    phases = [r.record.get("phases", {}) for r in runs]
    return ms, phases


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--uri", default=os.environ.get("LIZARD_ADDRESS", "http://127.0.0.1:5000"))
    ap.add_argument("--token", default=os.environ.get("LIZARD_TOKEN"))
    ap.add_argument("--load-program", default=os.path.join(
        os.environ.get("LIZARD_BUILD", os.path.join(ROOT, "build")), "load_program"))
    ap.add_argument("--repeat", type=int, default=3, help="new values of k timed (median)")
    ap.add_argument("--rows", type=int, default=ROWS)
    ap.add_argument("--json", help="write the figures here")
    ap.add_argument("--no-warmup", action="store_true",
                    help="time the very first compile of the daemons' processes too")
    args = ap.parse_args()
    if args.token:
        os.environ.setdefault("LIZARD_TOKEN", args.token)

    client = lizard.Client(args.uri, token=args.token)
    workers = client.workers()
    work = tempfile.TemporaryDirectory(prefix="lizard-first-run-")
    program = new_program_copy(work.name)
    result = {"rows": args.rows, "dims": DIMS, "iterations": ITERATIONS,
              "workers": len(workers), "warmup": not args.no_warmup}
    data = points(args.rows)
    if not args.no_warmup:
        warmup = client.load_program(new_program_copy(work.name, "warmup"))
        client.run(warmup, params={"k": 3, "dims": DIMS, "max_iterations": 2},
                   dataset={"points": data[:4096]}, state={"centroids": data[:3]})

    result["load_program_cold_ms"] = timed_load_program(args.load_program, program, args.uri)
    result["load_program_again_ms"] = timed_load_program(args.load_program, program, args.uri)
    print(f"load_program examples/kmeans (a new program): cold "
          f"{result['load_program_cold_ms']:.0f} ms, again {result['load_program_again_ms']:.0f} ms")

    checksum = client.load_program(program)
    upload = client.upload(data)
    try:
        firsts = []
        for k in range(17, 17 + args.repeat):  # values no run of this program has used
            wall, record = timed_run(args.uri, args.token, checksum, run_body(upload, data, k))
            phases = record.get("phases", {})
            firsts.append((wall, phases.get("compile_ms", 0.0), phases.get("quick_build", False)))
        deadline = time.monotonic() + 60  # until the optimised build is in
        while time.monotonic() < deadline:
            _, record = timed_run(args.uri, args.token, checksum, run_body(upload, data, 17))
            if not record.get("phases", {}).get("quick_build"):
                break
            time.sleep(0.05)
        warm = [timed_run(args.uri, args.token, checksum, run_body(upload, data, 17))[0]
                for _ in range(7)]
    finally:
        client.delete_dataset(upload)
    result["first_new_k"] = {"median_ms": statistics.median(w for w, _, _ in firsts),
                             "compile_median_ms": statistics.median(c for _, c, _ in firsts),
                             "quick_build": all(q for _, _, q in firsts),
                             "runs": [{"wall_ms": w, "compile_ms": c, "quick_build": q}
                                      for w, c, q in firsts]}
    result["warm"] = {"median_ms": statistics.median(warm), "min_ms": min(warm)}
    print(f"seed workload ({args.rows:,} x {DIMS}, {ITERATIONS} iterations), first run of a new k: "
          f"median {result['first_new_k']['median_ms']:.0f} ms (compile "
          f"{result['first_new_k']['compile_median_ms']:.0f} ms"
          f"{', on quick builds' if result['first_new_k']['quick_build'] else ''}) "
          f"over {len(firsts)} values")
    print(f"seed workload, warm run (POST ?wait=1): median {result['warm']['median_ms']:.2f} ms")

    ks = list(range(24, 32))  # 8 values no run has used
    first_ms, first_phases = timed_map(client, checksum, data, ks)
    again_ms, again_phases = timed_map(client, checksum, data, ks)
    first_compiles = [p.get("compile_ms", 0.0) for p in first_phases]
    result["map"] = {"values": len(ks), "first_ms": first_ms, "again_ms": again_ms,
                     "ratio": first_ms / again_ms, "first_compile_ms": first_compiles,
                     "first_phases": first_phases, "again_phases": again_phases}
    print(f"map over {len(ks)} new values of k: {first_ms:.0f} ms, the same map again "
          f"{again_ms:.0f} ms ({first_ms / again_ms:.2f}x); compile ms per run "
          f"{[round(c) for c in first_compiles]}")
    for name, phases in (("first", first_phases), ("again", again_phases)):
        print(f"  {name} map, per run: " + "; ".join(
            f"queued {p.get('queued_ms', 0):.0f} load {p.get('loading_ms', 0):.0f} "
            f"iterations {p.get('iterations_ms', 0):.0f}{' quick' if p.get('quick_build') else ''}"
            for p in phases))

    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
        print(f"figures written to {args.json}")


if __name__ == "__main__":
    main()
