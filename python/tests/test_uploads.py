"""Data from the user's hand: arrays streamed to the server from their own
memory, sent once and found again by their digest, and c.put handles."""

import json
import os
import subprocess
import time
import urllib.request

import numpy as np

import lizard
from cluster import LIZARD_BIN, SOURCE_DIR
from lizard._uploads import NpyBytes

KMEANS = os.path.join(SOURCE_DIR, "examples", "kmeans")
SUM = os.path.join(SOURCE_DIR, "examples", "sum")
LARGE_BYTES = int(os.environ.get("LIZARD_TEST_UPLOAD_BYTES", 1 << 30))


def uploads(cluster):
    with urllib.request.urlopen(cluster.uri + "/datasets", timeout=10) as r:
        return json.loads(r.read())["uploads"]


def same_file_bytes(path, npy):
    """Whether the file at `path` holds exactly `npy`'s bytes (read in blocks)."""
    if os.path.getsize(path) != npy.size:
        return False
    with open(path, "rb") as f:
        if f.read(len(npy.header)) != npy.header:
            return False
        block = 64 << 20
        for at in range(0, npy.data.nbytes, block):
            if f.read(block) != npy.data[at:at + block]:
                return False
    return True


def test_a_large_array_streams_to_the_server_byte_for_byte(cluster):
    c = lizard.Client(cluster.uri)
    x = np.random.default_rng(7).integers(0, 1 << 30, size=LARGE_BYTES // 4, dtype=np.int32)
    x = x.reshape(-1, 64)
    npy = NpyBytes(x)
    start = time.perf_counter()
    handle = c.put(x)
    seconds = time.perf_counter() - start
    meta = [u for u in uploads(cluster) if u["id"] == handle.id][0]
    print(f"\nupload of {npy.size / 1e9:.2f} GB from Python: {npy.size / seconds / 1e9:.2f} GB/s "
          f"({seconds:.2f} s)")
    assert handle.shape == x.shape and handle.dtype == "int32" and handle.bytes == npy.size
    assert same_file_bytes(meta["file"], npy)
    assert handle.digest == meta["digest"] == npy.digest()
    c.delete_dataset(handle)
    assert handle.id not in [u["id"] for u in uploads(cluster)]


def test_an_unchanged_array_is_not_sent_again_and_a_changed_one_is(cluster):
    values = np.arange(40000, dtype=np.float64).reshape(-1, 2)
    with lizard.Client(cluster.uri) as c:
        before = {u["id"] for u in uploads(cluster)}
        first = c.run(SUM, params={"dims": 2}, dataset={"values": values})
        made = [u for u in uploads(cluster) if u["id"] not in before]
        assert len(made) == 1 and made[0]["digest"] == NpyBytes(values).digest()
        again = c.run(SUM, params={"dims": 2}, dataset={"values": values})
        assert [u["id"] for u in uploads(cluster) if u["id"] not in before] == [made[0]["id"]]
        np.testing.assert_array_equal(again.aggregate["sums"], first.aggregate["sums"])
        # Another client finds the same bytes on the server too.
        with lizard.Client(cluster.uri) as other:
            other.run(SUM, params={"dims": 2}, dataset={"values": values.copy()})
            assert {u["id"] for u in uploads(cluster)} - before == {made[0]["id"]}
        # One byte changed: sent again, and the run sums the new values.
        values.view(np.uint8)[-1] ^= 1
        changed = c.run(SUM, params={"dims": 2}, dataset={"values": values})
        now = [u for u in uploads(cluster) if u["id"] not in before]
        assert len(now) == 1 and now[0]["id"] != made[0]["id"]  # the earlier one is gone
        assert now[0]["digest"] == NpyBytes(values).digest()
        np.testing.assert_array_equal(changed.aggregate["sums"], values.sum(axis=0))
        assert changed.aggregate["sums"][1] != first.aggregate["sums"][1]
    assert {u["id"] for u in uploads(cluster)} == before  # closing the client deletes its own


def test_put_handles_serve_runs_and_maps_until_deleted(cluster, tmp_path):
    c = lizard.Client(cluster.uri)
    rng = np.random.default_rng(3)
    pts = rng.normal(size=(3000, 2)).astype(np.float32)
    before = {u["id"] for u in uploads(cluster)}
    handle = c.put(pts)
    assert {u["id"] for u in uploads(cluster)} - before == {handle.id}
    params = {"k": 3, "dims": 2, "max_iterations": 2, "threshold": -1}
    run = c.run(KMEANS, params=params, dataset={"points": handle}, state={"centroids": pts[:3]})
    assert run.record["rows"] == 3000
    runs = c.map(KMEANS, [dict(params, max_iterations=i) for i in (1, 2, 3)],
                 dataset={"points": handle}, state={"centroids": pts[:3]})
    assert [r.record["iterations"] for r in runs] == [1, 2, 3]
    np.testing.assert_allclose(runs[1].state["centroids"], run.state["centroids"], rtol=1e-5)
    # The same array given as it is finds the handle's upload; nothing is sent.
    c.run(KMEANS, params=params, dataset={"points": pts.copy()}, state={"centroids": pts[:3]})
    assert {u["id"] for u in uploads(cluster)} - before == {handle.id}
    c.close()
    assert {u["id"] for u in uploads(cluster)} - before == {handle.id}  # kept until deleted
    c.delete_dataset(handle)
    assert {u["id"] for u in uploads(cluster)} == before
    # A .npy file is streamed as it is.
    path = tmp_path / "pts.npy"
    np.save(path, pts)
    from_file = c.put(path)
    meta = [u for u in uploads(cluster) if u["id"] == from_file.id][0]
    with open(path, "rb") as f, open(meta["file"], "rb") as stored:
        assert f.read() == stored.read()
    assert from_file.digest == NpyBytes(pts).digest()
    c.delete_dataset(from_file)


def test_a_map_sends_its_array_once(cluster):
    pts = np.random.default_rng(4).normal(size=(2000, 2)).astype(np.float32)
    with lizard.Client(cluster.uri) as c:
        before = {u["id"] for u in uploads(cluster)}
        runs = c.map(KMEANS, [{"k": 3, "dims": 2, "max_iterations": i, "threshold": -1}
                           for i in (1, 2, 3, 4)],
                     dataset={"points": pts}, state={"centroids": pts[:3]})
        assert [r.record["iterations"] for r in runs] == [1, 2, 3, 4]
        assert len({u["id"] for u in uploads(cluster)} - before) == 1
    assert {u["id"] for u in uploads(cluster)} == before


def test_the_command_line_streams_a_file_once_for_runs(cluster, tmp_path):
    values = np.random.default_rng(5).normal(size=(LARGE_BYTES // 16, 2))  # float64
    path = tmp_path / "values.npy"
    np.save(path, values)
    before = {u["id"] for u in uploads(cluster)}
    start = time.perf_counter()
    out = subprocess.run([LIZARD_BIN, "upload", str(path), "-a", cluster.uri, "--json"],
                         capture_output=True, text=True, timeout=600)
    seconds = time.perf_counter() - start
    assert out.returncode == 0, out.stderr
    stored = json.loads(out.stdout)
    size = os.path.getsize(path)
    print(f"\nupload of {size / 1e9:.2f} GB with `lizard upload`: {size / seconds / 1e9:.2f} GB/s "
          f"({seconds:.2f} s, the server received at {stored['receive_bytes_per_s'] / 1e9:.2f} "
          f"GB/s)")
    assert stored["bytes"] == size and stored["shape"] == list(values.shape)
    assert same_file_bytes(stored["file"], NpyBytes(values))
    assert stored["digest"] == NpyBytes(values).digest()
    for i in range(2):  # each run reads the upload; none sends it again or removes it
        out_dir = tmp_path / f"out{i}"
        run = subprocess.run([LIZARD_BIN, "run", SUM, "--param", "dims=2", "--dataset",
                              "values=upload:" + stored["id"], "-a", cluster.uri, "-q",
                              "--out", str(out_dir)],
                             capture_output=True, text=True, timeout=600)
        assert run.returncode == 0, run.stderr
        np.testing.assert_allclose(np.load(out_dir / "sums.npy"), values.sum(axis=0), rtol=1e-9)
        assert {u["id"] for u in uploads(cluster)} - before == {stored["id"]}
    lizard.Client(cluster.uri).delete_dataset(stored["id"])


def test_an_earlier_array_stays_while_a_run_still_uses_it(cluster):
    first = np.arange(2000, dtype=np.float64).reshape(-1, 2)
    second = first + 1
    with lizard.Client(cluster.uri) as c:
        before = {u["id"] for u in uploads(cluster)}
        pending = c.run(SUM, params={"dims": 2}, dataset={"values": first}, wait=False)
        [first_id] = {u["id"] for u in uploads(cluster)} - before
        c.run(SUM, params={"dims": 2}, dataset={"values": second})  # the field's new array
        assert first_id in {u["id"] for u in uploads(cluster)}  # `pending` is not seen done yet
        np.testing.assert_array_equal(pending.wait().aggregate["sums"], first.sum(axis=0))
        assert len({u["id"] for u in uploads(cluster)} - before) == 1
        assert first_id not in {u["id"] for u in uploads(cluster)}
    assert {u["id"] for u in uploads(cluster)} == before


def test_uploads_on_one_connection_and_one_cut_short_leave_the_right_files(cluster):
    """Two uploads and a GET on one kept-alive connection, each body's first
    MiB sent with the request's head and the rest in pieces, then an upload whose connection ends mid-body: the
    two are stored byte for byte, the cut one leaves no file, and the server
    goes on answering."""
    import http.client
    import socket
    from urllib.parse import urlsplit

    where = urlsplit(cluster.uri)
    datasets = os.path.join(cluster.dir, "state", "datasets")
    first = NpyBytes(np.arange(3 << 20, dtype=np.float32).reshape(-1, 4))
    second = NpyBytes(np.arange(5 << 20, dtype=np.int32).reshape(-1, 8))
    conn = http.client.HTTPConnection(where.hostname, where.port, timeout=60)
    stored = []
    for npy, whole in ((first, True), (second, False)):
        pieces = [bytes(c) for c in npy.chunks()]
        if whole:
            pieces = [b"".join(pieces)]
        conn.putrequest("POST", "/datasets")
        conn.putheader("Content-Length", str(npy.size))
        conn.endheaders(message_body=pieces[0][:1 << 20])  # sent with the head
        pieces[0] = pieces[0][1 << 20:]
        for piece in pieces:
            for at in range(0, len(piece), 3 << 20):
                conn.send(piece[at:at + (3 << 20)])
        answer = conn.getresponse()
        assert answer.status == 201, answer.read()
        stored.append(json.loads(answer.read()))
    conn.request("GET", "/datasets")
    listed = {u["id"] for u in json.loads(conn.getresponse().read())["uploads"]}
    conn.close()
    for npy, meta in zip((first, second), stored):
        assert meta["id"] in listed
        assert meta["digest"] == npy.digest()
        assert same_file_bytes(meta["file"], npy)

    before = sorted(os.listdir(datasets))
    with socket.create_connection((where.hostname, where.port), timeout=10) as s:
        s.sendall(f"POST /datasets HTTP/1.1\r\nHost: x\r\nContent-Length: {64 << 20}\r\n\r\n"
                  .encode() + b"\0" * (20 << 20))
    deadline = time.monotonic() + 10
    while sorted(os.listdir(datasets)) != before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sorted(os.listdir(datasets)) == before, "the upload cut short left a file"
    assert {u["id"] for u in uploads(cluster)} >= {m["id"] for m in stored}
    with lizard.Client(cluster.uri) as c:
        for meta in stored:
            c.delete_dataset(meta["id"])
