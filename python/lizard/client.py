"""Client: a connection to a lizard server.

    c = Client("http://head:5000", token=None)       # or $LIZARD_ADDRESS, $LIZARD_TOKEN
    c = Client("https://head:5000", ca="ca.pem")     # TLS; or $LIZARD_TLS_CA
    checksum = c.load_program("examples/kmeans")
    run = c.run(checksum, params={...}, dataset={"points": array}, state={...})
    runs = c.map("examples/kmeans", [{"k": 2, ...}, {"k": 3, ...}], dataset=..., state=...)
    for run in c.imap_unordered(...): ...

Dataset values may be numpy arrays (streamed to the server as .npy from
the array's own memory), handles of c.put(array), paths on the cluster
(str: every node reads the file there), lists of rows (sent in the request),
or source objects as the REST API takes them ({"generate": ..., "rows": ...},
{"upload": id}). State values may be numpy arrays, lists or numbers.

An array given to a run is sent once: the client keeps its upload on the
server and, when a later run is given an array, hashes it and asks the
server for an upload of exactly those bytes before sending anything. The
latest array of each dataset field is kept until the client is closed;
c.put(array) keeps one until c.delete_dataset(handle).
"""

import json
import os
import re
import weakref

import numpy as np

from ._fields import fit_to_field
from ._http import Connection
from ._per_run import per_run, runs_watcher, seed_of
from ._program import is_checksum, read_bundle
from ._uploads import KeptUploads, NpyBytes, file_chunks
from .errors import LizardError
from .run import FINISHED, Poller, Run, wait_for_runs

_HEX_DIGITS = re.compile(r"^[0-9a-fA-F]+$")


def _plain(value):
    """numpy values as the JSON the server reads."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _cancel_quietly(client, runs):
    """Cancels the runs that have not finished (Ctrl-C while waiting); a
    cancelled run no longer reads its uploads."""
    for run in runs:
        try:
            if run._record is None or run._record["status"] not in FINISHED:
                run.cancel()
        except LizardError:
            pass
        run._release_uploads()


def _delete_uploads(conn, ids):
    for dataset_id in ids:
        try:
            conn.json("DELETE", "/datasets/" + dataset_id, timeout=10)
        except LizardError:
            pass


def _close(conn, kept):
    """Deletes the uploads of arrays given to runs that no unfinished run uses."""
    unused = kept.unused()
    kept.forget(unused)
    _delete_uploads(conn, unused)


class Upload:
    """An upload on the server (Client.put): give it as a run's dataset value;
    it stays until Client.delete_dataset(it)."""

    def __init__(self, meta):
        self.id = meta["id"]
        self.digest = meta.get("digest")
        self.bytes = meta.get("bytes")
        self.dtype = meta.get("dtype")
        self.shape = tuple(meta["shape"]) if "shape" in meta else None

    def __repr__(self):
        what = f" {self.dtype} {self.shape}" if self.dtype else ""
        return f"<lizard.Upload {self.id}{what}>"


class Client:
    """A lizard server at `uri` (http://host:port, https://host:port, host:port
    or host).  For https://, `ca` is a PEM file with the CA that signed the
    server's certificate (default: $LIZARD_TLS_CA, else the system's CAs); a
    `ca` with no scheme in `uri` means https."""

    def __init__(self, uri=None, token=None, timeout=60, ca=None):
        uri = uri or os.environ.get("LIZARD_ADDRESS") or "http://127.0.0.1:5000"
        token = token if token is not None else os.environ.get("LIZARD_TOKEN") or None
        ca = ca or os.environ.get("LIZARD_TLS_CA") or None
        self._conn = Connection(uri, token, timeout, ca)
        self._dtypes = {}  # checksum -> {dataset field: dtype name}
        self._kept = KeptUploads()
        self._closer = weakref.finalize(self, _close, self._conn, self._kept)
        self.lost_server_s = 5.0

    def __repr__(self):
        return f"<lizard.Client {self._conn.base}>"

    def close(self):
        """Deletes the uploads kept of arrays given to runs (but those that
        runs still going use). Also done when the client is garbage collected
        or the program exits; `with Client(...) as c:` closes at the end."""
        _close(self._conn, self._kept)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # --- programs and data ----------------------------------------------------

    def load_program(self, path, timeout=900):
        """Registers the program in directory `path`, waits until every
        connected worker has built it, and returns its checksum."""
        if not os.path.isdir(path):
            raise LizardError(f"{path} is not a program directory")
        answer = self._conn.json("POST", "/programs", read_bundle(path), timeout=timeout)
        return answer["hash"]

    def upload(self, data):
        """Uploads a numpy array (or a local .npy file) for runs to use;
        returns its dataset id ({"upload": id} names it in a run)."""
        return self._post_upload(data)["id"]

    def put(self, data):
        """Uploads a numpy array (or a local .npy file) once, for any number
        of runs and maps: returns an Upload to give as a dataset value. It
        stays on the server until delete_dataset(upload)."""
        return Upload(self._post_upload(data))

    def _post_upload(self, data):
        """POST /datasets straight from the array's memory or the file, in
        large chunks; the server's answer (with its digest of the bytes)."""
        if isinstance(data, (str, os.PathLike)):
            with open(data, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                return self._post_chunks(file_chunks(f, size), size)
        npy = NpyBytes(data)
        return self._post_chunks(npy.chunks(), npy.size)

    def _post_chunks(self, chunks, size):
        raw = self._conn.request("POST", "/datasets", chunks, "application/octet-stream",
                                 timeout=6 * 3600, length=size)
        return json.loads(raw)

    def delete_dataset(self, dataset_id):
        """Deletes an upload (an id or an Upload), and the rows of it that
        executors keep."""
        if isinstance(dataset_id, Upload):
            dataset_id = dataset_id.id
        self._conn.json("DELETE", "/datasets/" + dataset_id)
        self._kept.forget([dataset_id])

    def datasets(self):
        """The uploads, and the rows each worker's executors keep:
        {"uploads": [...], "kept": [{"worker", "executor", "source", "rows", "bytes", ...}]}."""
        return self._conn.json("GET", "/datasets")

    def stage(self, path, program, executors=None, **spec):
        """Loads a dataset file's rows onto executors before any run of
        `program` (a directory, registered first, or a checksum), split as a
        run over `executors` executors splits them, so that its first run
        finds them kept; the program's executor processes keep them, for its
        runs alone.  Raw files need dtype= and width=; returns what was staged."""
        body = dict(spec, path=os.fspath(path), program=self._checksum_of(program))
        if executors is not None:
            body["executors"] = executors
        return self._conn.json("POST", "/datasets/stage", body)

    def drop_kept_rows(self, source):
        """Has every worker drop the rows it keeps of `source` (a path or an upload id)."""
        return self._conn.json("POST", "/datasets/drop", {"source": os.fspath(source)})

    # --- runs -----------------------------------------------------------------

    def run(self, program, params=None, dataset=None, state=None, wait=True, executors=None,
            max_iterations=None, outputs=None, timeout=None, progress=None, seed=None):
        """Starts a run of `program` (a directory, registered first, or a
        checksum) and, with wait=True, waits for it: returns the Run when it is
        done and raises LizardError when it fails or is cancelled. Ctrl-C
        while waiting cancels the run.
        `executors`: how many executors it takes, N or (min, max).
        Numpy arrays are converted to their fields' dtypes where that loses
        no kind of value and every value fits (float64 -> float32), else
        refused before they are uploaded.
        `progress`: as Run.wait shows it (on a terminal by default).
        `seed`: the run's seed (kernels see it as data.run_seed); None: drawn
        at random by the server, and shown in the run's record."""
        checksum = self._checksum_of(program)
        dataset = self._fitted_arrays(checksum, dataset)
        uploads = []
        sources = self._dataset_sources(dataset, uploads)
        run = self._submit(checksum, params, sources, state, executors, max_iterations, outputs,
                           uploads, seed)
        if not wait:
            return run
        return run.wait(timeout, progress)  # Ctrl-C cancels the run

    def map(self, program, params_list, dataset=None, state=None, executors=1,
            max_iterations=None, outputs=None, timeout=None, progress=None, seed=None):
        """One run per params dict in `params_list`, all submitted at once so
        that they spread over the cluster (`executors` each, 1 by default);
        returns the Runs in input order once all have finished. Datasets given
        as numpy arrays are uploaded once for all of them. Raises LizardError
        (with `.runs`) when any run did not finish as done.
        `state` and `seed`: one for every run (a dict, an int), a list with
        one per run, or a function of a run's params dict giving its own.
        `progress`: "runs 3/8 done" while waiting, as Run.wait shows a run."""
        runs = self._start_many(program, params_list, dataset, state, executors,
                                max_iterations, outputs, seed)
        on_poll, close_display = runs_watcher(runs, progress)
        try:
            wait_for_runs(self, runs, timeout, lost_server_s=self.lost_server_s, on_poll=on_poll)
        except KeyboardInterrupt:
            _cancel_quietly(self, runs)
            raise
        finally:
            close_display()
        failed = [r for r in runs if r._record["status"] != "done"]
        if failed:
            first = failed[0]._record
            raise LizardError(f"{len(failed)} of {len(runs)} runs did not finish: {failed[0].id} "
                              f"{first['status']}: {first.get('error', '')}",
                              record=first, runs=runs)
        return runs

    def imap_unordered(self, program, params_list, dataset=None, state=None, executors=1,
                       max_iterations=None, outputs=None, timeout=None, progress=None,
                       seed=None):
        """As map, but yields each Run as soon as it has finished; a run that
        failed or was cancelled raises LizardError when it is reached. Runs
        still going when the loop is left stay on the server, with their
        uploads."""
        runs = self._start_many(program, params_list, dataset, state, executors,
                                max_iterations, outputs, seed)
        on_poll, close_display = runs_watcher(runs, progress)
        poller = Poller(self, timeout, self.lost_server_s, on_poll)
        pending = list(runs)
        try:
            while pending:
                for run in poller.finished(pending):
                    pending.remove(run)
                    yield run._check()
        finally:
            close_display()

    def get_run(self, run_id):
        """The Run with id `run_id` (e.g. "r3")."""
        run = Run(self, run_id)
        run.refresh()
        return run

    def runs(self, status=None):
        """Every run record (without results), optionally only those in `status`."""
        return self._conn.json("GET", "/runtimes" + (f"?status={status}" if status else ""))

    def workers(self):
        """The connected workers (GET /clients)."""
        return self._conn.json("GET", "/clients")

    # --- helpers --------------------------------------------------------------

    def _checksum_of(self, program):
        """A program directory (registered now), a checksum, or the start of
        one, as `lizard run` takes them, with its messages."""
        if is_checksum(program):
            self._field_dtypes(program)  # is it registered?
            return program
        if isinstance(program, (str, os.PathLike)) and os.path.isdir(program):
            return self.load_program(program)
        if isinstance(program, str) and 0 < len(program) < 64 and _HEX_DIGITS.match(program):
            matches = [p["hash"] for p in self._conn.json("GET", "/programs")
                       if p.get("hash", "").startswith(program.lower())]
            if len(matches) == 1:
                return matches[0]
            if not matches:
                raise LizardError(f"no registered program has a checksum starting {program} "
                                  "(Client.load_program(DIR) registers the program in DIR)")
            raise LizardError(f"checksum prefix {program} matches {len(matches)} programs; "
                              "give more digits")
        raise LizardError(f"PROGRAM {os.fspath(program)!r} is neither a program directory nor "
                          "a checksum")

    def _field_dtypes(self, checksum):
        """The program's dataset fields' dtypes by name ({} when the server
        does not say)."""
        if checksum not in self._dtypes:
            try:
                program = self._conn.json("GET", "/programs/" + checksum)
            except LizardError as e:
                if e.status != 404:
                    raise
                raise LizardError(f"no program with checksum {checksum} is registered "
                                  "(Client.load_program(DIR) registers the program in DIR)",
                                  status=404) from None
            self._dtypes[checksum] = program.get("fields", {}).get("dataset", {})
        return self._dtypes[checksum]

    def _fitted_arrays(self, checksum, dataset):
        """The dataset with its numpy arrays converted to their fields' dtypes;
        a LizardError, before any upload, for an array that cannot be."""
        if not isinstance(dataset, dict):
            return dataset
        if not any(isinstance(v, np.ndarray) for v in dataset.values()):
            return dataset
        dtypes = self._field_dtypes(checksum)
        return {name: fit_to_field(name, value, dtypes[name])
                if isinstance(value, np.ndarray) and name in dtypes else value
                for name, value in dataset.items()}

    def _dataset_sources(self, dataset, uploads):
        if dataset is None:
            return None
        if not isinstance(dataset, dict):
            raise LizardError("dataset must be a dict of field name -> data")
        sources = {}
        for name, value in dataset.items():
            if isinstance(value, np.ndarray):
                dataset_id = self._array_upload(name, value)
                uploads.append(dataset_id)
                sources[name] = {"upload": dataset_id}
            elif isinstance(value, Upload):
                sources[name] = {"upload": value.id}
            elif isinstance(value, (str, os.PathLike)):
                sources[name] = {"path": os.fspath(value)}
            elif isinstance(value, dict):
                sources[name] = _plain(value)
            elif isinstance(value, (list, tuple)):
                sources[name] = {"values": _plain(value)}
            else:
                raise LizardError(f"dataset field {name!r}: expected a numpy array, a path on the "
                                  f"cluster, a list of rows or a source dict, not "
                                  f"{type(value).__name__}")
        return sources

    def _array_upload(self, field, array):
        """The id of an upload of exactly `array`'s .npy bytes: one the server
        holds (found by their digest), else one made now and kept as the
        latest of `field`."""
        npy = NpyBytes(array)
        digest = npy.digest()
        held = [u["id"] for u in self._conn.json("GET", "/datasets?digest=" + digest)["uploads"]
                if u.get("digest") == digest]  # an older server lists every upload
        if held:
            dataset_id = next((i for i in held if i in self._kept.made), held[0])
        else:  # the server's digest is of the bytes it got, even were the array changed meanwhile
            dataset_id = self._post_chunks(npy.chunks(), npy.size)["id"]
            self._kept.made.add(dataset_id)
        unneeded = self._kept.given(field, dataset_id)
        self._kept.forget(unneeded)
        _delete_uploads(self._conn, unneeded)
        return dataset_id

    def _release_uploads(self, ids):
        """The run that used uploads `ids` has finished: deletes those no longer kept."""
        unneeded = self._kept.release(ids)
        self._kept.forget(unneeded)
        _delete_uploads(self._conn, unneeded)

    def _submit(self, checksum, params, sources, state, executors, max_iterations, outputs,
                uploads=(), seed=None):
        body = {"params": _plain(params or {})}
        if sources is not None:
            body["dataset"] = sources
        if state is not None:
            body["state"] = _plain(state)
        if executors is not None:
            body["executors"] = (executors if isinstance(executors, int)
                                 else {"min": executors[0], "max": executors[1]})
        if max_iterations is not None:
            body["max_iterations"] = max_iterations
        if outputs is not None:
            body["outputs"] = list(outputs)
        if seed is not None:
            body["seed"] = int(seed)
        answer = self._conn.json("POST", "/runtime/" + checksum, body, timeout=600)
        self._kept.hold(uploads)
        return Run(self, answer["runtime_id"], checksum, uploads, status=answer.get("status"))

    def _start_many(self, program, params_list, dataset, state, executors, max_iterations,
                    outputs, seed=None):
        params_list = list(params_list)
        states = per_run("state", state, params_list, dict)
        seeds = [seed_of("seed", s) for s in per_run("seed", seed, params_list, int)]
        checksum = self._checksum_of(program)
        dataset = self._fitted_arrays(checksum, dataset)
        uploads = []
        runs = []
        try:
            sources = self._dataset_sources(dataset, uploads)
            for params, run_state, run_seed in zip(params_list, states, seeds):
                runs.append(self._submit(checksum, params, sources, run_state, executors,
                                         max_iterations, outputs, uploads, run_seed))
        except BaseException:
            _cancel_quietly(self, runs)
            raise
        return runs

    def _wait_for(self, runs, timeout, on_poll=None):
        wait_for_runs(self, runs, timeout, lost_server_s=self.lost_server_s, on_poll=on_poll)
