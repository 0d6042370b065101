#!/usr/bin/env python3
"""Data from the user's hand: how long a user waits for k-means (examples/
kmeans, K = 16, 32 dimensions, exactly 50 iterations) over data they hold,
through a real server and worker, on each path a user takes.

For each size (--rows) it times, median of --repeat:
  upload               c.upload(x): the array's .npy bytes to the server (GB/s);
  cli_upload           `lizard upload FILE` of the same bytes as a file (GB/s);
  python_run.first     c.run(kmeans, dataset={"points": x}, ...) on a new
                       Client for an array the server has never seen: the
                       digest, the upload, the run, the gathered labels, and
                       reading run.state["centroids"];
  python_run.again     the same c.run again with the unchanged array (found
                       on the server by its digest, its rows kept);
                       `load_gbs_per_executor`: the first run's data bytes
                       over its loading phase, per executor;
  cli.<mode>.first     `lizard run examples/kmeans --dataset points=FILE
                       --state centroids=C.npy --out DIR` right after the
                       file's modification time changed (a new file to every
                       cache), for mode choose (the default: by path when
                       every worker reads the file there), upload (--upload)
                       and shared_path (--shared-path);
  cli.<mode>.again     the same command over the unchanged file;
and, when PyTorch sees a GPU, in the same sitting on the same device, a
tuned Lloyd (one matmul for the distances, one-hot sums; the labels copied
back, as the runs above return them):
  torch.from_array     the in-memory array to the GPU, then the 50 steps;
  torch.from_file      np.load of the same file, to the GPU, then the steps.

The server and worker are started as the README starts them, from --build
(default: the directory of $LIZARD_BIN, else build/), with --worker-args
(e.g. "--backend cpu --cpu-threads 2" on a machine without GPUs), and
stopped at the end; or, with --uri, it uses a running server (as
bench/seed_kmeans/local.sh runs it, which exports LIZARD_BIN):

    bench/user_data/user_data.py --rows 262144 --worker-args "--backend cpu"
    LIZARD_SEED_SCRIPT="python3 bench/user_data/user_data.py --out /tmp/r" \\
        bench/seed_kmeans/local.sh build-release

Prints a short table and writes user_data.json to --out (default $OUT when
set); bench/save-result files it under bench/results/.
"""
import argparse
import contextlib
import json
import os
import shlex
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))

import numpy as np  # noqa: E402

import lizard  # noqa: E402
from lizard._uploads import NpyBytes  # noqa: E402

K, DIMS, ITERATIONS = 16, 32, 50
KMEANS = os.path.join(ROOT, "examples", "kmeans")
PARAMS = {"k": K, "dims": DIMS, "max_iterations": ITERATIONS, "threshold": -1.0}
CLI_TIMEOUT_S = 900  # one `lizard run`, at most
CLI_MODES = {"choose": [], "upload": ["--upload"], "shared_path": ["--shared-path"]}


def fail(message):
    sys.exit(f"user_data: {message}")


# --- the cluster ----------------------------------------------------------------


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(ready, what, timeout_s, procs=()):
    """Polls `ready` until it is true; fails after `timeout_s` or when one of
    `procs` has exited."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for name, proc in procs:
            if proc.poll() is not None:
                fail(f"{what}: the {name} exited with {proc.returncode}")
        try:
            if ready():
                return
        except OSError:
            pass
        time.sleep(0.1)
    fail(f"{what} within {timeout_s} s")


@contextlib.contextmanager
def local_cluster(lizard_bin, worker_args, logs):
    """A server and one worker on a free port of 127.0.0.1, as the README
    starts them; both stopped (and their state removed) when it ends."""
    state = tempfile.mkdtemp(prefix="lizard-user-data-")
    port = free_port()
    uri = f"http://127.0.0.1:{port}"
    procs = []

    def spawn(name, args):
        out = open(os.path.join(logs or state, name + ".log"), "ab")
        procs.append((name, subprocess.Popen([lizard_bin] + args, stdout=out,
                                             stderr=subprocess.STDOUT)))

    def get(path):
        with urllib.request.urlopen(uri + path, timeout=5) as r:
            return r.read()

    try:
        spawn("server", ["server", "--host", "127.0.0.1", "--port", str(port),
                         "--state-dir", os.path.join(state, "state")])
        wait_until(lambda: get("/ruok") == b"imok", "the server did not answer", 30, procs)
        spawn("worker", ["client", "-a", "127.0.0.1", "-p", str(port),
                         "--cache-dir", os.path.join(state, "cache")] + worker_args)
        wait_until(lambda: len(json.loads(get("/clients"))) >= 1, "the worker did not join", 60,
                   procs)
        yield uri
    finally:
        for _, proc in procs[::-1]:
            proc.terminate()
        for name, proc in procs[::-1]:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if logs is None:
            shutil.rmtree(state, ignore_errors=True)


# --- data ---------------------------------------------------------------------


def make_points(rows, seed=7):
    """Blobs around K centres, made in slices so that memory stays small."""
    rng = np.random.default_rng(seed)
    centres = rng.uniform(-10, 10, size=(K, DIMS)).astype(np.float32)
    x = np.empty((rows, DIMS), dtype=np.float32)
    step = 1 << 20
    for first in range(0, rows, step):
        n = min(step, rows - first)
        which = rng.integers(0, K, size=n)
        x[first:first + n] = centres[which] + rng.standard_normal((n, DIMS), dtype=np.float32)
    return x


def stats(walls, **extra):
    out = {"wall_ms": walls, "median_ms": statistics.median(walls)}
    out.update(extra)
    return out


def ms_since(t0):
    return (time.perf_counter() - t0) * 1e3


# --- the figures ----------------------------------------------------------------


def time_uploads(uri, x, repeat):
    """c.upload(x), timed from the call to its answer (c._post_upload is its
    body, and keeps the answer: the server's own rate of receiving it)."""
    npy_bytes = NpyBytes(x).size
    rates, server_rates = [], []
    with lizard.Client(uri) as c:
        for _ in range(repeat):
            t0 = time.perf_counter()
            answer = c._post_upload(x)
            seconds = time.perf_counter() - t0
            rates.append(npy_bytes / seconds / 1e9)
            if answer.get("receive_bytes_per_s"):
                server_rates.append(answer["receive_bytes_per_s"] / 1e9)
            c.delete_dataset(answer["id"])
    return {"bytes": npy_bytes, "gbs": rates, "median_gbs": statistics.median(rates),
            "server_receive_gbs": statistics.median(server_rates) if server_rates else None}


def run_command(cmd):
    """A command's result and its wall time (ms); fails unless it exits 0 in time."""
    t0 = time.perf_counter()
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=CLI_TIMEOUT_S,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        fail(f"`{shlex.join(cmd)}` did not finish within {CLI_TIMEOUT_S} s")
    wall = ms_since(t0)
    if done.returncode != 0:
        fail(f"`{shlex.join(cmd)}` exited {done.returncode}:\n{done.stderr}")
    return done, wall


def time_cli_uploads(lizard_bin, uri, path, repeat):
    """`lizard upload FILE`, timed from the command's start to its end."""
    size = os.path.getsize(path)
    rates = []
    for _ in range(repeat):
        done, wall = run_command([lizard_bin, "upload", path, "-a", uri, "--json"])
        seconds = wall / 1e3
        answer = json.loads(done.stdout)
        answer = answer.get("upload", answer)
        if answer.get("bytes") != size:
            fail(f"`lizard upload` stored {answer.get('bytes')} bytes of {size}")
        rates.append(size / seconds / 1e9)
        with lizard.Client(uri) as c:
            c.delete_dataset(answer["id"])
    return {"bytes": size, "gbs": rates, "median_gbs": statistics.median(rates)}


def run_record(run):
    return run._record or run.record


def load_rate(record, data_bytes):
    """The first run's data bytes over its loading phase, per executor (GB/s)."""
    loading_ms = record.get("phases", {}).get("loading_ms")
    executors = len(record.get("plan", {}).get("executors", [])) or 1
    if not loading_ms:
        return None, loading_ms, executors
    return data_bytes / executors / (loading_ms * 1e6), loading_ms, executors


def checked_run(run):
    record = run_record(run)
    if record.get("status") != "done":
        fail(f"run {run.id} {record.get('status')}: {record.get('error', '')}")
    if record.get("iterations") != ITERATIONS:
        fail(f"run {run.id} made {record.get('iterations')} iterations, not {ITERATIONS}")
    return record


def python_run(c, checksum, x, centroids):
    """One c.run as a user writes it, with the centroids read back."""
    t0 = time.perf_counter()
    run = c.run(checksum, params=PARAMS, dataset={"points": x}, state={"centroids": centroids},
                timeout=CLI_TIMEOUT_S, progress=False)
    result = run.state["centroids"]
    wall = ms_since(t0)
    if result.shape != (K, DIMS):
        fail(f"run {run.id}: centroids of shape {result.shape}")
    return wall, checked_run(run)


def time_python_runs(uri, checksum, x, centroids, repeat):
    first, again, rates = [], [], []
    loading = executors = None
    for rep in range(repeat):
        with lizard.Client(uri) as c:  # closing deletes its upload: the next is new again
            wall, record = python_run(c, checksum, x, centroids)
            first.append(wall)
            rate, loading, executors = load_rate(record, x.nbytes)
            if rate:
                rates.append(rate)
            if rep == repeat - 1:
                again = [python_run(c, checksum, x, centroids)[0] for _ in range(repeat)]
    return {"first": stats(first, loading_ms=loading, executors=executors,
                           load_gbs_per_executor=statistics.median(rates) if rates else None),
            "again": stats(again)}


def cli_run(lizard_bin, uri, path, centroids_file, out_dir, mode_args):
    cmd = [lizard_bin, "run", KMEANS, "-a", uri] + \
        [a for k, v in PARAMS.items() for a in ("--param", f"{k}={v}")] + \
        ["--dataset", f"points={path}", "--state", f"centroids={centroids_file}",
         "--out", out_dir] + mode_args
    done, wall = run_command(cmd)
    labels = np.load(os.path.join(out_dir, "labels.npy"), mmap_mode="r")
    if labels.shape[0] != np.load(path, mmap_mode="r").shape[0]:
        fail(f"{out_dir}/labels.npy has {labels.shape[0]} rows")
    said = done.stderr
    how = "by path" if " by path" in said else "uploaded" if "uploading" in said else None
    return wall, how


def time_cli_runs(lizard_bin, uri, path, centroids_file, work, repeat):
    out = {}
    for mode, mode_args in CLI_MODES.items():
        out_dir = os.path.join(work, "res-" + mode)
        first, again, how = [], [], None
        for rep in range(repeat):
            stamp = time.time() + rep + 1
            os.utime(path, (stamp, stamp))  # a new identity: no cache holds its rows
            wall, how = cli_run(lizard_bin, uri, path, centroids_file, out_dir, mode_args)
            first.append(wall)
        for _ in range(repeat):
            again.append(cli_run(lizard_bin, uri, path, centroids_file, out_dir, mode_args)[0])
        out[mode] = {"first": stats(first), "again": stats(again),
                     "delivery": how}
    return out


def torch_figures(x, path, centroids, repeat):
    """A tuned Lloyd in PyTorch on the same GPU, or (None, why) without one."""
    try:
        import torch
    except ImportError:
        return None, "PyTorch is not installed"
    if not torch.cuda.is_available():
        return None, "PyTorch sees no CUDA device"

    def lloyd(points):
        c = torch.from_numpy(centroids).cuda()
        sq = (points * points).sum(dim=1, keepdim=True)
        for _ in range(ITERATIONS):
            # |x - c|^2 = |x|^2 - 2 x.c + |c|^2: one matmul
            d = torch.addmm((c * c).sum(dim=1).unsqueeze(0), points, c.t(), alpha=-2.0) + sq
            labels = d.argmin(dim=1)
            onehot = torch.nn.functional.one_hot(labels, K).to(points.dtype)
            sums = onehot.t() @ points
            counts = onehot.sum(dim=0).clamp_(min=1).unsqueeze(1)
            c = sums / counts
        return c.cpu(), labels.cpu()

    def timed(fn):
        walls = []
        for _ in range(repeat):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            fn()
            torch.cuda.synchronize()
            walls.append(ms_since(t0))
        return walls

    lloyd(torch.from_numpy(x).cuda())  # warms the kernels and the allocator
    from_array = timed(lambda: lloyd(torch.from_numpy(x).cuda()))
    from_file = timed(lambda: lloyd(torch.from_numpy(np.load(path)).cuda()))
    return {"device": torch.cuda.get_device_name(0),
            "from_array": stats(from_array), "from_file": stats(from_file)}, None


# --- the whole ------------------------------------------------------------------


def rows_list(values):
    rows = []
    for v in values or []:
        rows.extend(int(r) for r in v.replace(",", " ").split())
    return rows or [1 << 20, 1 << 24]


def measure(args, uri, lizard_bin):
    result = {"k": K, "dims": DIMS, "iterations": ITERATIONS, "sizes": []}
    c = lizard.Client(uri, timeout=600)
    checksum = c.load_program(KMEANS)
    work = tempfile.TemporaryDirectory(dir=args.dir)
    warm = make_points(4096)
    centroids = warm[:K].copy()
    centroids_file = os.path.join(work.name, "centroids.npy")
    np.save(centroids_file, centroids)
    t0 = time.perf_counter()
    python_run(c, checksum, warm, centroids)  # compiles k = 16, dims = 32
    result["compile_run_ms"] = ms_since(t0)
    c.close()
    for rows in rows_list(args.rows):
        x = make_points(rows)
        path = os.path.join(work.name, f"points-{rows}.npy")
        np.save(path, x)
        entry = {"rows": rows, "bytes": x.nbytes,
                 "upload": time_uploads(uri, x, args.repeat),
                 "cli_upload": time_cli_uploads(lizard_bin, uri, path, args.repeat),
                 "python_run": time_python_runs(uri, checksum, x, centroids, args.repeat),
                 "cli": time_cli_runs(lizard_bin, uri, path, centroids_file, work.name,
                                      args.repeat)}
        entry["torch"], why = torch_figures(x, path, centroids, args.repeat)
        if why:
            entry["torch_skipped"] = why
        result["sizes"].append(entry)
        print_size(entry, args.repeat)
        os.remove(path)
    work.cleanup()
    return result


def print_size(e, repeat):
    rows = f"{e['rows']:,} rows ({e['bytes'] / 1e6:,.0f} MB)"
    print(f"\n{rows}, medians of {repeat}")
    print(f"  {'c.upload(x)':<50} {e['upload']['median_gbs']:8.2f} GB/s")
    print(f"  {'lizard upload FILE':<50} {e['cli_upload']['median_gbs']:8.2f} GB/s")
    pr = e["python_run"]
    print(f"  {'c.run(dataset={points: x}) first':<50} {pr['first']['median_ms']:8.1f} ms"
          + (f"   (rows to the executors {pr['first']['load_gbs_per_executor']:.2f} GB/s each)"
             if pr["first"].get("load_gbs_per_executor") else ""))
    print(f"  {'c.run again, unchanged array':<50} {pr['again']['median_ms']:8.1f} ms")
    for mode, fig in e["cli"].items():
        flag = {"choose": "", "upload": " --upload", "shared_path": " --shared-path"}[mode]
        print(f"  {'lizard run --dataset points=FILE' + flag:<50} "
              f"{fig['first']['median_ms']:8.1f} ms first, {fig['again']['median_ms']:8.1f} ms again"
              + (f"   [{fig['delivery']}]" if fig.get("delivery") else ""))
    if e.get("torch"):
        t = e["torch"]
        print(f"  {'PyTorch, array to GPU + 50 steps':<50} {t['from_array']['median_ms']:8.1f} ms")
        print(f"  {'PyTorch, np.load + GPU + 50 steps':<50} {t['from_file']['median_ms']:8.1f} ms"
              f"   ({t['device']})")
    else:
        print(f"  PyTorch: skipped ({e.get('torch_skipped')})")


def find_lizard(args):
    if args.lizard:
        return args.lizard
    if args.build:
        return os.path.join(args.build, "lizard")
    return os.environ.get("LIZARD_BIN") or os.path.join(ROOT, "build", "lizard")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--uri", help="a running server (default: start one and a worker)")
    ap.add_argument("--build", help="where the lizard binary is (default: $LIZARD_BIN, else build/)")
    ap.add_argument("--lizard", help="the lizard binary itself")
    ap.add_argument("--worker-args", default="",
                    help='arguments for the worker it starts (e.g. "--backend cpu")')
    ap.add_argument("--rows", action="append",
                    help="points per size, comma separated or repeated (default 1048576,16777216)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dir", help="where the .npy files go (default: a temp dir)")
    ap.add_argument("--logs", help="keep the daemons' logs and state here")
    ap.add_argument("--out", default=os.environ.get("OUT"))
    args = ap.parse_args()
    lizard_bin = find_lizard(args)
    if not os.access(lizard_bin, os.X_OK):
        fail(f"no lizard binary at {lizard_bin} (--build DIR, --lizard FILE or $LIZARD_BIN)")
    if args.repeat < 1:
        fail("--repeat must be at least 1")
    try:
        if args.uri:
            result = measure(args, args.uri, lizard_bin)
        else:
            with local_cluster(lizard_bin, shlex.split(args.worker_args), args.logs) as uri:
                result = measure(args, uri, lizard_bin)
    except lizard.LizardError as e:
        fail(str(e))
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "user_data.json"), "w") as f:
            json.dump(result, f, indent=2)
        print(f"\nresults: {args.out}/user_data.json")


if __name__ == "__main__":
    main()
