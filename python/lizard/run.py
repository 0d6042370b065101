"""Run: one run on a lizard server, as Client.run and Client.map return it.

A Run follows its record (GET /runtimes/<id>): `status` and `progress`
read it afresh until the run has finished. Once it is done, `state`,
`aggregate` and `outputs` map field names to numpy arrays, downloaded as
.npy files when first read and shaped as the program's manifest says;
`logs()` lists what its kernels and hooks printed.
"""

import io
import time
import urllib.parse
from collections.abc import Mapping

import numpy as np

from ._progress import progress_display
from .errors import LizardError

FINISHED = ("done", "failed", "cancelled")


class _Fields(Mapping):
    """Field name -> numpy array, for one section of a finished run."""

    def __init__(self, run, names):
        self._run = run
        self._names = list(names)

    def __getitem__(self, name):
        if name not in self._names:
            raise KeyError(name)
        return self._run.field(name)

    def __iter__(self):
        return iter(self._names)

    def __len__(self):
        return len(self._names)

    def __repr__(self):
        return "{" + ", ".join(f"{n!r}: ..." for n in self._names) + "}"


class Run:
    """A run on the server. Made by Client.run, Client.map, Client.get_run."""

    def __init__(self, client, run_id, program=None, uploads=(), status=None):
        self.id = run_id
        self.program = program
        self._client = client
        self._record = None
        self._submitted_status = status  # what the server said when it took the run
        self._uploads = list(uploads)  # upload ids of arrays this run was given
        self._arrays = {}

    def __repr__(self):
        if self._record:
            status = self._record.get("status", "?")
        else:
            status = (self._submitted_status or "not read yet") + "; .status reads it afresh"
        return f"<lizard.Run {self.id} {status}>"

    # --- the record ---------------------------------------------------------

    def refresh(self, wait_ms=0):
        """Reads the run record again; returns it. With `wait_ms`, the server
        answers once the run has finished or after that long, as it stands."""
        query = f"?wait_ms={int(wait_ms)}" if wait_ms > 0 else ""
        self._record = self._client._conn.json("GET", "/runtimes/" + self.id + query)
        if self.program is None:
            self.program = self._record.get("program")
        if self._record.get("status") in FINISHED:
            self._release_uploads()
        return self._record

    @property
    def record(self):
        """The run record (refreshed while the run has not finished)."""
        if self._record is None or self._record.get("status") not in FINISHED:
            self.refresh()
        return self._record

    @property
    def status(self):
        """queued, running, done, failed or cancelled."""
        return self.record["status"]

    @property
    def finished(self):
        return self.status in FINISHED

    @property
    def error(self):
        """The server's reason when the run failed or was cancelled, else None."""
        return self.record.get("error")

    @property
    def progress(self):
        """Iterations done, the cap, and rows done of the current iteration."""
        rec = self.record
        iterations = rec.get("iterations", 0)
        rows = rec.get("rows", 0)
        rows_done = rows if rec["status"] == "done" else 0
        p = rec.get("progress") or {}
        if rec["status"] != "done" and p.get("iteration") == iterations:
            rows_done = p.get("rows_done", 0)
        cap = rec.get("max_iterations", 0) or 1
        fraction = 1.0 if rec["status"] == "done" else (iterations + (rows_done / rows if rows else 0)) / cap
        return {
            "status": rec["status"],
            "iterations": iterations,
            "max_iterations": rec.get("max_iterations", 0),
            "rows": rows,
            "rows_done": rows_done,
            "fraction": min(max(fraction, 0.0), 1.0),
        }

    # --- waiting and cancelling ---------------------------------------------

    def wait(self, timeout=None, progress=None):
        """Waits until the run has finished; returns self when it is done and
        raises LizardError (with the record) when it failed or was cancelled.
        Ctrl-C (KeyboardInterrupt) while waiting cancels the run.
        `progress`: the iteration as the run goes, on standard error when it
        is a terminal (None), always (True), never (False), or on a file
        object; a tqdm bar when tqdm is installed, else one line."""
        display = progress_display(self.id, progress)
        on_poll = None
        if display is not None:
            def on_poll():
                if self._record is not None:
                    display.update(self._record)
        try:
            self._client._wait_for([self], timeout, on_poll)
        except KeyboardInterrupt:
            try:
                self.cancel()
            except LizardError:
                pass  # it had finished, or the server is gone
            self._release_uploads()  # a cancelled run reads them no more
            raise
        finally:
            if display is not None:
                on_poll()
                display.close()
        return self._check()

    def _release_uploads(self):
        """Tells the client that this run no longer reads its uploads."""
        uploads, self._uploads = self._uploads, []
        if uploads:
            self._client._release_uploads(uploads)

    def cancel(self):
        """Cancels the run (DELETE /runtimes/<id>); returns self."""
        self._client._conn.json("DELETE", "/runtimes/" + self.id)
        return self

    def _check(self):
        rec = self._record
        if rec["status"] != "done":
            raise LizardError(f"{self.id} {rec['status']}: {rec.get('error', 'no reason given')}",
                              record=rec)
        return self

    # --- results ------------------------------------------------------------

    def _section_names(self, section):
        return list(self._done_record().get("result", {}).get(section, {}).keys())

    def _done_record(self):
        rec = self.record
        if rec["status"] != "done":
            raise LizardError(f"{self.id} is {rec['status']}: only a done run has results",
                              record=rec)
        return rec

    @property
    def state(self):
        """The final state: field name -> numpy array."""
        return _Fields(self, self._section_names("state"))

    @property
    def aggregate(self):
        """The last folded aggregate: field name -> numpy array."""
        return _Fields(self, self._section_names("aggregate"))

    @property
    def outputs(self):
        """The gathered output dataset fields, in row order: name -> numpy array."""
        rec = self._done_record()
        result = rec.get("result", {})
        others = set(result.get("state", {})) | set(result.get("aggregate", {}))
        return _Fields(self, [n for n in rec.get("fields", {}) if n not in others])

    def logs(self, worker=None):
        """What the run's kernels and host hooks printed so far, as a list of
        lines tagged with where each was printed ("[w1 e0 it 3] hello");
        `worker`: only that worker's lines ("server": the server's hooks')."""
        path = f"/runtimes/{self.id}/logs"
        if worker is not None:
            path += "?" + urllib.parse.urlencode({"worker": worker})
        text = self._client._conn.request("GET", path).decode("utf-8", errors="replace")
        return text.splitlines()

    def field(self, name):
        """One field of the done run as a numpy array (any section)."""
        if name not in self._arrays:
            rec = self._done_record()
            path = rec.get("fields", {}).get(name)
            if path is None:
                raise LizardError(f"{self.id} has no field {name!r} (it has: "
                                  f"{', '.join(rec.get('fields', {}))})")
            raw = self._client._conn.request("GET", path, timeout=3600)
            self._arrays[name] = np.load(io.BytesIO(raw), allow_pickle=False)
        return self._arrays[name]


class Poller:
    """Finds which of some runs have finished, one GET /runtimes at a time,
    every 5 ms for the first second, then a little longer between polls, up
    to 250 ms. A single run's GET waits at the server (?wait_ms) for the
    run's end up to the interval, so its end is seen at once. A server that
    stays unreachable for `lost_server_s` is a LizardError."""

    def __init__(self, client, timeout=None, lost_server_s=5.0, on_poll=None):
        self._client = client
        self._on_poll = on_poll  # called after each poll that reached the server
        self._deadline = None if timeout is None else time.monotonic() + timeout
        self._timeout = timeout
        self._lost_server_s = lost_server_s
        self._unreachable_since = None
        self._interval = 0.005
        self._started = time.monotonic()

    def finished(self, pending):
        """The runs of `pending` that have finished (their records taken),
        after sleeping first when none has."""
        done = [r for r in pending if r._record is not None and r._record["status"] in FINISHED]
        while not done:
            self._check_deadline(pending)
            asked = time.monotonic()
            done = self._reachable(lambda: self._newly_finished(pending), pending)
            if self._on_poll is not None and self._unreachable_since is None:
                self._on_poll()
            if not done:  # the rest of the interval (a server that answered sooner, or not)
                time.sleep(max(0.0, asked + self._interval - time.monotonic()))
            if time.monotonic() - self._started >= 1.0:
                self._interval = min(self._interval * 2, 0.25)
        return done

    def _newly_finished(self, pending):
        """Refreshes and returns the runs that have finished. One run is
        asked to answer at its end or after the interval, whichever comes
        first; a few are read one by one; more through one list of all runs."""
        if len(pending) == 1:
            run = pending[0]
            return [run] if run.refresh(self._interval * 1000)["status"] in FINISHED else []
        if len(pending) <= 4:
            return [r for r in pending if r.refresh()["status"] in FINISHED]
        listed = self._client._conn.json("GET", "/runtimes")
        ids = {r["runtime_id"] for r in listed if r.get("status") in FINISHED}
        finished = [r for r in pending if r.id in ids]
        for run in finished:
            run.refresh()
        return finished

    def _reachable(self, poll, pending):
        """poll()'s answer; [] while the server is unreachable for a while."""
        try:
            answer = poll()
            self._unreachable_since = None
            return answer
        except LizardError as e:
            if not e.unreachable:
                raise
            now = time.monotonic()
            self._unreachable_since = self._unreachable_since or now
            if now - self._unreachable_since >= self._lost_server_s:
                ids = ", ".join(sorted(r.id for r in pending))
                raise LizardError(f"lost the server while waiting for {ids}: {e.message}",
                                  unreachable=True) from None
            return []

    def _check_deadline(self, pending):
        if self._deadline is not None and time.monotonic() >= self._deadline:
            ids = ", ".join(sorted(r.id for r in pending))
            raise LizardError(f"timed out after {self._timeout} s waiting for {ids}")


def wait_for_runs(client, runs, timeout=None, lost_server_s=5.0, on_poll=None):
    """Returns once every run of `runs` has finished."""
    poller = Poller(client, timeout, lost_server_s, on_poll)
    pending = list(runs)
    while pending:
        for run in poller.finished(pending):
            pending.remove(run)
