"""The Python client against a real server and CPU workers on 127.0.0.1."""

import io
import json
import os
import signal
import sys
import time
import types
import urllib.request

import numpy as np
import pytest

import lizard
from cluster import SOURCE_DIR, LocalCluster

KMEANS = os.path.join(SOURCE_DIR, "examples", "kmeans")
SUM = os.path.join(SOURCE_DIR, "examples", "sum")
DATA = os.path.join(SOURCE_DIR, "tests", "data")


def blobs(n, seed=0):
    """n float32 points around three centres; rows 0, 1 and 2 lie one near each."""
    rng = np.random.default_rng(seed)
    centres = np.array([[-4, -4], [4, -4], [0, 5]], dtype=np.float32)
    return (centres[np.arange(n) % 3] + rng.normal(0, 0.6, size=(n, 2))).astype(np.float32)


def lloyd(points, centroids, max_iterations, threshold):
    """The kmeans example's algorithm: float32 distances, means of the
    assigned points, empty clusters stay; (centroids, iterations)."""
    c = centroids.astype(np.float32).copy()
    for it in range(max_iterations):
        d = ((points[:, None, :] - c[None, :, :]) ** 2).sum(axis=2, dtype=np.float32)
        labels = d.argmin(axis=1)
        moved = 0.0
        for q in range(len(c)):
            mine = points[labels == q]
            if len(mine):
                mean = mine.astype(np.float64).mean(axis=0).astype(np.float32)
                moved = max(moved, float(np.sqrt(((mean - c[q]).astype(np.float64) ** 2).sum())))
                c[q] = mean
        if moved <= threshold:
            return c, it + 1
    return c, max_iterations


def uploads(cluster):
    with urllib.request.urlopen(cluster.uri + "/datasets", timeout=10) as r:
        return json.loads(r.read())["uploads"]


def wait_until(ready, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready():
            return True
        time.sleep(0.02)
    return False


def test_run_uploads_arrays_and_returns_fields_as_arrays(cluster):
    c = lizard.Client(cluster.uri)
    pts = blobs(3000)
    run = c.run(KMEANS, params={"k": 3, "dims": 2, "max_iterations": 20, "threshold": 1e-4},
                dataset={"points": pts}, state={"centroids": pts[:3]})
    assert run.status == "done"
    want, iterations = lloyd(pts, pts[:3], 20, 1e-4)
    centroids = run.state["centroids"]
    assert centroids.shape == (3, 2) and centroids.dtype == np.float32
    np.testing.assert_allclose(centroids, want, rtol=1e-4, atol=1e-5)
    assert run.record["iterations"] == iterations
    labels = run.outputs["labels"]
    assert labels.shape == (3000,) and labels.dtype == np.int32
    np.testing.assert_array_equal(np.bincount(labels, minlength=3), run.aggregate["counts"])
    assert run.aggregate["counts"].dtype == np.int64
    assert run.state["shift"].shape == ()
    assert set(run.state) == {"centroids", "shift"}
    assert set(run.aggregate) == {"sums", "counts"}
    assert set(run.outputs) == {"labels"}
    assert run.progress["fraction"] == 1.0
    assert len(uploads(cluster)) == 1  # kept for the same array given again
    c.close()
    assert uploads(cluster) == []  # the upload made for the run is gone


def test_datasets_from_paths_lists_sources_and_a_checksum(cluster):
    c = lizard.Client(cluster.uri)
    checksum = c.load_program(SUM)
    assert len(checksum) == 64
    csv = os.path.join(DATA, "lizard-demo-n2048-d8.csv")
    run = c.run(checksum, params={"dims": 8}, dataset={"values": csv})
    assert run.record["program"] == checksum
    np.testing.assert_allclose(run.aggregate["sums"], np.loadtxt(csv, delimiter=",").sum(axis=0),
                               rtol=1e-9)
    assert run.aggregate["count"] == 2048
    listed = c.run(SUM, params={"dims": 2}, dataset={"values": [[1.5, 2], [3, 4.5]]})
    np.testing.assert_array_equal(listed.aggregate["sums"], [4.5, 6.5])
    generated = c.run(KMEANS, params={"k": 2, "dims": 2, "max_iterations": 3},
                      dataset={"points": {"generate": "blobs", "rows": 1000, "seed": 3}},
                      state={"centroids": [[0, 0], [1, 1]]}, outputs=[])
    assert generated.record["rows"] == 1000
    assert set(generated.outputs) == set()


def test_a_staged_file_is_kept_listed_and_dropped(cluster, tmp_path):
    c = lizard.Client(cluster.uri)
    values = np.arange(2000, dtype=np.float64).reshape(1000, 2)
    path = tmp_path / "values.npy"
    np.save(path, values)
    staged = c.stage(path, SUM, executors=1)
    assert staged["rows"] == 1000 and staged["dtype"] == "float64"
    run = c.run(SUM, params={"dims": 2}, dataset={"values": {"path": str(path)}}, executors=1)
    np.testing.assert_allclose(run.aggregate["sums"], values.sum(axis=0))
    assert run.record["phases"]["file_bytes_read"] == 0
    kept = c.datasets()["kept"]
    assert str(path) in [k["source"] for k in kept]
    assert c.drop_kept_rows(path)["workers_told"] >= 1


def test_map_keeps_input_order_and_spreads_runs_over_the_workers(cluster):
    c = lizard.Client(cluster.uri)
    pts = blobs(2000, seed=1)
    params = [{"k": 3, "dims": 2, "max_iterations": i, "threshold": -1} for i in range(1, 7)]
    runs = c.map(KMEANS, params, dataset={"points": pts}, state={"centroids": pts[:3]})
    assert len(runs) == 6
    for i, run in enumerate(runs, start=1):
        assert run.record["params"]["max_iterations"] == i
        assert run.record["iterations"] == i
        want, _ = lloyd(pts, pts[:3], i, -1)
        np.testing.assert_allclose(run.state["centroids"], want, rtol=1e-4, atol=1e-5)
        assert len(run.record["plan"]["executors"]) == 1  # one executor each by default
    assert {r.record["plan"]["executors"][0]["worker"] for r in runs} == {"w1", "w2"}
    c.close()
    assert uploads(cluster) == []  # the shared upload is gone once the client closes


def test_map_over_new_values_of_k_finds_the_later_runs_built_ahead(cluster):
    """The runs of a map that wait for an executor have their kernels built
    on the workers meanwhile: only the first ones compile as they begin, and
    every answer is the algorithm's (centroids start at zero: no state given)."""
    c = lizard.Client(cluster.uri)
    pts = blobs(2000, seed=3)
    ks = [4, 5, 6, 7, 8, 9]
    params = [{"k": k, "dims": 2, "max_iterations": 5, "threshold": -1} for k in ks]
    runs = c.map(KMEANS, params, dataset={"points": pts})
    # Two workers take the first two runs at once; the four others waited,
    # their kernels built meanwhile.  On a loaded two-core machine the last
    # build may still be under way when its run starts (it then compiles as
    # it begins); the others find theirs built.
    waited = runs[2:]
    built = [r for r in waited if r.record["phases"]["compile_cache_hit"]]
    assert len(built) >= len(waited) - 1, [r.record["phases"] for r in runs]
    assert all(r.record["phases"]["compile_ms"] == 0 for r in built)
    for k, run in zip(ks, runs):
        want, _ = lloyd(pts, np.zeros((k, 2), np.float32), 5, -1)
        np.testing.assert_allclose(run.state["centroids"], want, rtol=1e-4, atol=1e-5)


def test_imap_unordered_yields_every_run_once_as_it_finishes(cluster):
    c = lizard.Client(cluster.uri)
    pts = blobs(2000, seed=2)
    params = [{"k": 3, "dims": 2, "max_iterations": i, "threshold": -1} for i in (40, 1, 20, 2)]
    seen = []
    for run in c.imap_unordered(KMEANS, params, dataset={"points": pts},
                                state={"centroids": pts[:3]}):
        assert run.status == "done"
        seen.append(run.record["params"]["max_iterations"])
    assert sorted(seen) == [1, 2, 20, 40]
    c.close()
    assert uploads(cluster) == []


def test_progress_while_running_then_cancel(cluster):
    c = lizard.Client(cluster.uri)
    pts = blobs(100000, seed=3)
    run = c.run(KMEANS, params={"k": 3, "dims": 2, "max_iterations": 1000000, "threshold": -1},
                dataset={"points": pts}, state={"centroids": pts[:3]}, executors=1, wait=False)
    assert wait_until(lambda: run.progress["iterations"] > 0)
    p = run.progress
    assert p["status"] == "running" and p["max_iterations"] == 1000000 and p["rows"] == 100000
    assert 0 < p["fraction"] < 1
    run.cancel()
    with pytest.raises(lizard.LizardError) as e:
        run.wait(timeout=60)
    assert e.value.record["status"] == "cancelled"
    assert f"{run.id} cancelled: " in str(e.value)
    with pytest.raises(lizard.LizardError, match="only a done run has results"):
        run.state["centroids"]
    with pytest.raises(lizard.LizardError, match=f"run {run.id} is cancelled already"):
        run.cancel()
    c.close()
    assert uploads(cluster) == []


def test_ctrl_c_while_waiting_cancels_the_run(cluster):
    c = lizard.Client(cluster.uri)
    pts = blobs(100000, seed=5)
    checksum = c.load_program(KMEANS)

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 2.0)
        with pytest.raises(KeyboardInterrupt):
            c.run(checksum, params={"k": 3, "dims": 2, "max_iterations": 1000000,
                                    "threshold": -1},
                  dataset={"points": pts}, state={"centroids": pts[:3]}, executors=1)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    last = c.runs()[-1]
    assert wait_until(lambda: c.get_run(last["runtime_id"]).status == "cancelled")
    assert c.get_run(last["runtime_id"]).record["iterations"] < 1000000
    c.close()
    assert uploads(cluster) == []


def test_every_failure_raises_lizard_error_with_the_servers_message(cluster):
    c = lizard.Client(cluster.uri)
    pts = blobs(300)
    with pytest.raises(lizard.LizardError,
                       match="no program with checksum " + "a" * 64 + r" is registered \(Client"
                             r"\.load_program\(DIR\) registers the program in DIR\)") as e:
        c.run("a" * 64)
    assert e.value.status == 404
    with pytest.raises(lizard.LizardError, match="neither a program directory nor a checksum"):
        c.run("no/such/dir")
    with pytest.raises(lizard.LizardError, match=r"missing param\(s\): dims") as e:
        c.run(SUM, dataset={"values": pts})
    assert e.value.status == 400
    # An upload of the wrong dtype made by hand is the server's to refuse.
    wrong = c.upload(pts.astype(np.float64))
    with pytest.raises(lizard.LizardError, match=r"expected <f4 \(float32\), file has <f8"):
        c.run(KMEANS, params={"k": 3, "dims": 2}, dataset={"points": {"upload": wrong}})
    c.delete_dataset(wrong)
    with pytest.raises(lizard.LizardError, match="expected a numpy array"):
        c.run(KMEANS, params={"k": 3, "dims": 2}, dataset={"points": 3})
    with pytest.raises(lizard.LizardError, match=r"needs 9 executor\(s\)") as e:
        c.run(KMEANS, params={"k": 3, "dims": 2}, dataset={"points": pts},
              state={"centroids": pts[:3]}, executors=9)
    assert e.value.record["status"] == "failed"
    with pytest.raises(lizard.LizardError, match=r"2 of 2 runs did not finish") as e:
        c.map(KMEANS, [{"k": 3, "dims": 2}] * 2, dataset={"points": pts},
              state={"centroids": pts[:3]}, executors=9)
    assert [r.status for r in e.value.runs] == ["failed", "failed"]
    with pytest.raises(lizard.LizardError, match="cannot reach 127.0.0.1:1"):
        lizard.Client("127.0.0.1:1").workers()
    c.close()
    assert uploads(cluster) == []


def test_tokens_come_from_the_argument_or_the_environment(monkeypatch):
    with LocalCluster(workers=1, token="s3cret") as cluster:
        monkeypatch.delenv("LIZARD_TOKEN", raising=False)
        args = dict(params={"dims": 2}, dataset={"values": [[1, 2]]})
        with pytest.raises(lizard.LizardError, match="missing token") as e:
            lizard.Client(cluster.uri).run(SUM, **args)
        assert e.value.status == 401
        assert lizard.Client(cluster.uri, token="s3cret").run(SUM, **args).status == "done"
        monkeypatch.setenv("LIZARD_TOKEN", "s3cret")
        assert lizard.Client(cluster.uri).run(SUM, **args).status == "done"


def test_server_gone_mid_run_raises_instead_of_waiting_forever():
    with LocalCluster(workers=1) as cluster:
        c = lizard.Client(cluster.uri)
        pts = blobs(100000, seed=4)
        run = c.run(KMEANS, params={"k": 3, "dims": 2, "max_iterations": 1000000,
                                    "threshold": -1},
                    dataset={"points": pts}, state={"centroids": pts[:3]}, wait=False)
        assert wait_until(lambda: run.status == "running")
        cluster.kill_server()
        t0 = time.monotonic()
        with pytest.raises(lizard.LizardError, match=f"lost the server while waiting for {run.id}"
                                                     f": cannot reach") as e:
            run.wait()
        assert e.value.unreachable
        assert time.monotonic() - t0 < 20


def test_ctrl_c_in_wait_cancels_the_run(cluster):
    c = lizard.Client(cluster.uri)
    pts = blobs(100000, seed=6)
    run = c.run(KMEANS, params={"k": 3, "dims": 2, "max_iterations": 1000000, "threshold": -1},
                dataset={"points": pts}, state={"centroids": pts[:3]}, executors=1, wait=False)

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 1.0)
        with pytest.raises(KeyboardInterrupt):
            run.wait()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert wait_until(lambda: c.get_run(run.id).status == "cancelled")


def test_a_fresh_run_prints_what_the_server_said(cluster):
    c = lizard.Client(cluster.uri)
    run = c.run(SUM, params={"dims": 3}, dataset={"values": os.path.join(DATA, "lizard-demo-n16-d3.csv")},
                wait=False)
    assert repr(run) == f"<lizard.Run {run.id} queued; .status reads it afresh>"
    run.wait(timeout=60)
    assert repr(run) == f"<lizard.Run {run.id} done>"


def test_checksums_are_taken_as_the_command_line_takes_them(cluster):
    c = lizard.Client(cluster.uri)
    checksum = c.load_program(SUM)
    with pytest.raises(lizard.LizardError,
                       match="no registered program has a checksum starting deadbeef1234"):
        c.run("deadbeef1234")
    with pytest.raises(lizard.LizardError,
                       match="PROGRAM 'no/such/dir' is neither a program directory nor a checksum"):
        c.run("no/such/dir")
    run = c.run(checksum[:12], params={"dims": 3},
                dataset={"values": os.path.join(DATA, "lizard-demo-n16-d3.csv")})
    assert run.status == "done" and run.program == checksum


def test_a_float64_array_becomes_the_float32_field_it_is_for(cluster):
    c = lizard.Client(cluster.uri)
    before = uploads(cluster)
    pts = blobs(3000)
    params = {"k": 3, "dims": 2, "max_iterations": 20, "threshold": 1e-4}
    run = c.run(KMEANS, params=params, dataset={"points": pts.astype(np.float64)},
                state={"centroids": pts[:3]})
    want, iterations = lloyd(pts, pts[:3], 20, 1e-4)
    np.testing.assert_allclose(run.state["centroids"], want, rtol=1e-4, atol=1e-5)
    assert run.record["iterations"] == iterations
    c.close()
    assert uploads(cluster) == before


def test_an_array_that_cannot_become_its_field_is_refused_before_uploading(cluster):
    c = lizard.Client(cluster.uri)
    checksum = c.load_program(KMEANS)
    runs_before = len(c.runs())
    uploads_before = uploads(cluster)
    params = {"k": 3, "dims": 2, "max_iterations": 5}
    huge = blobs(30).astype(np.float64)
    huge[7, 1] = 1e300
    with pytest.raises(lizard.LizardError,
                       match=r"dataset field 'points' is float32; the float64 array holds "
                             r"1e\+300, which does not fit float32"):
        c.run(checksum, params=params, dataset={"points": huge}, state={"centroids": huge[:3]})
    with pytest.raises(lizard.LizardError,
                       match=r"dataset field 'points' is float32; a complex128 array cannot "
                             r"become float32"):
        c.run(checksum, params=params, dataset={"points": blobs(30).astype(np.complex128)})
    with pytest.raises(lizard.LizardError, match="is float32; the float64 array holds"):
        c.map(checksum, [params], dataset={"points": huge})
    assert uploads(cluster) == uploads_before
    assert len(c.runs()) == runs_before


def test_wait_shows_the_iteration_as_a_line(cluster, monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm", None)  # the line is what shows without tqdm
    c = lizard.Client(cluster.uri)
    pts = blobs(3000)
    out = io.StringIO()
    run = c.run(KMEANS, params={"k": 3, "dims": 2, "max_iterations": 30, "threshold": -1},
                dataset={"points": pts}, state={"centroids": pts[:3]}, progress=out)
    text = out.getvalue()
    assert text.startswith(f"\r{run.id} ") and text.endswith("\n"), repr(text)
    assert text.rstrip(" \n").endswith(f"\r{run.id} done: iteration 30/30"), repr(text)
    assert text.count("\n") == 1


def test_wait_shows_a_tqdm_bar_when_tqdm_is_installed(cluster, monkeypatch):
    bars = []

    class FakeTqdm:
        def __init__(self, **kwargs):
            self.kwargs, self.n, self.total, self.postfix, self.closed = kwargs, 0, None, "", False
            bars.append(self)

        def set_postfix_str(self, text, refresh=True):
            self.postfix = text

        def refresh(self):
            pass

        def close(self):
            self.closed = True

    monkeypatch.setitem(sys.modules, "tqdm", types.SimpleNamespace(tqdm=FakeTqdm))
    c = lizard.Client(cluster.uri)
    run = c.run(SUM, params={"dims": 3},
                dataset={"values": os.path.join(DATA, "lizard-demo-n16-d3.csv")}, wait=False)
    run.wait(timeout=60, progress=True)
    assert len(bars) == 1
    bar = bars[0]
    assert bar.kwargs["desc"] == run.id and bar.closed
    assert (bar.n, bar.total, bar.postfix) == (1, run.record["max_iterations"], "done")


def test_wait_is_quiet_where_standard_error_is_not_a_terminal(cluster, capsys):
    c = lizard.Client(cluster.uri)
    c.run(SUM, params={"dims": 3}, dataset={"values": os.path.join(DATA, "lizard-demo-n16-d3.csv")})
    assert capsys.readouterr().err == ""


def test_logs_list_what_the_kernels_and_hooks_printed(cluster):
    chatty = os.path.join(SOURCE_DIR, "tests", "e2e", "programs", "chatty")
    with lizard.Client(cluster.uri) as c:
        run = c.run(chatty, params={"lines": 1, "iterations": 2},
                    dataset={"x": np.full(256, 0.5, dtype=np.float32)})
        assert run.status == "done"
        lines = run.logs()
        assert any(" e0 it 1] hello from block 0 in iteration 1" in l for l in lines), lines
        assert any("] update after iteration 1" in l for l in lines), lines
        worker = lines[0][1:].split(" ")[0]
        assert all(l.startswith("[" + worker) for l in run.logs(worker=worker))
        with pytest.raises(lizard.LizardError):
            run.logs(worker="no such worker")
