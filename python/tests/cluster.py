"""LocalCluster for the Python tests: a real `lizard server` and CPU workers
on 127.0.0.1, each process killed when the cluster stops.

    with LocalCluster(workers=2) as c:
        client = lizard.Client(c.uri)
    with LocalCluster(workers=1, tls=("server.pem", "server.key", "ca.pem")) as c:
        client = lizard.Client(c.uri, ca=c.ca)      # https:// and wss://
"""

import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.request

SOURCE_DIR = os.environ.get("LIZARD_SOURCE_DIR") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", ".."))
LIZARD_BIN = os.environ.get("LIZARD_BIN") or os.path.join(SOURCE_DIR, "build", "lizard")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalCluster:
    def __init__(self, workers=2, token=None, tls=None):
        self.dir = tempfile.mkdtemp(prefix="lizard-py-")
        self.port = free_port()
        self.cert, self.key, self.ca = tls or (None, None, None)
        self.uri = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}"
        self.context = ssl.create_default_context(cafile=self.ca) if tls else None
        self.token = token
        self.server = None
        self.workers = []
        self._start(workers)

    def _spawn(self, args, log):
        out = open(os.path.join(self.dir, log), "ab")
        env = {k: v for k, v in os.environ.items() if k not in ("LIZARD_TOKEN", "LIZARD_ADDRESS")}
        return subprocess.Popen([LIZARD_BIN] + args, stdout=out, stderr=subprocess.STDOUT, env=env)

    def _get(self, path):
        req = urllib.request.Request(self.uri + path)
        if self.token:
            req.add_header("Authorization", "Bearer " + self.token)
        with urllib.request.urlopen(req, timeout=5, context=self.context) as r:
            return r.read()

    def _start(self, workers):
        token = ["--token", self.token] if self.token else []
        server_tls = ["--tls-cert", self.cert, "--tls-key", self.key] if self.cert else []
        worker_tls = ["--tls-ca", self.ca] if self.ca else []
        self.server = self._spawn(["server", "--host", "127.0.0.1", "--port", str(self.port),
                                   "--state-dir", os.path.join(self.dir, "state"),
                                   "--worker-wait", "20"] + token + server_tls, "server.log")
        self._wait_until(lambda: self._get("/ruok") == b"imok", "the server did not answer")
        for i in range(workers):
            self.workers.append(self._spawn(
                ["client", "-a", "127.0.0.1", "-p", str(self.port), "--backend", "cpu",
                 "--cpu-threads", "2", "--cache-dir", os.path.join(self.dir, f"cache{i}")]
                + token + worker_tls,
                f"worker{i}.log"))
        self._wait_until(lambda: len(json.loads(self._get("/clients"))) >= workers,
                         "the workers did not join")

    def _wait_until(self, ready, what, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if ready():
                    return
            except OSError:
                pass
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"{what} within {timeout} s (logs in {self.dir})")

    def kill_server(self):
        self.server.send_signal(signal.SIGKILL)
        self.server.wait(timeout=30)

    def stop(self):
        for p in self.workers + [self.server]:
            if p is not None and p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        self.workers = []
        if not os.environ.get("LIZARD_KEEP_TEST_DIRS"):
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
