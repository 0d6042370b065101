"""The progress a Run shows while Run.wait waits for it, and the progress
over many runs that Client.map and Client.imap_unordered show.

    display = progress_display(run_id, progress)   # None: nothing to show
    display.update(record)                           # after each poll
    display.close()

    display = runs_progress_display(len(runs), progress)
    display.update(done, failed)                     # runs done, runs failed or cancelled
    display.close()

`progress` None shows it when standard error is a terminal; True always
(on standard error); False never; a file object shows it there. A tqdm bar
is used when tqdm is installed, else one line rewritten in place:
"r4 running: iteration 3/50", or over many runs "runs 3/8 done".
"""

import sys


def _describe(record):
    status = record.get("status", "?")
    iterations = record.get("iterations", 0)
    cap = record.get("max_iterations", 0)
    text = f"{status}: iteration {iterations}" + (f"/{cap}" if cap else "")
    if status in ("failed", "cancelled") and record.get("error"):
        text += f" ({record['error']})"
    return text


class _Line:
    """One line on a stream, rewritten with a carriage return."""

    def __init__(self, run_id, stream):
        self._run_id = run_id
        self._stream = stream
        self._width = 0
        self._last = None

    def update(self, record):
        self._show(f"{self._run_id} {_describe(record)}")

    def _show(self, text):
        if text == self._last:
            return
        self._last = text
        self._stream.write("\r" + text.ljust(self._width))
        self._stream.flush()
        self._width = len(text)

    def close(self):
        if self._last is not None:
            self._stream.write("\n")
            self._stream.flush()


class _Bar:
    """A tqdm bar over the run's iterations."""

    def __init__(self, run_id, stream, tqdm):
        self._bar = tqdm(desc=run_id, unit="it", file=stream, leave=True)
        self._total = None

    def update(self, record):
        cap = record.get("max_iterations") or None
        if cap != self._total:
            self._total = cap
            self._bar.total = cap
        self._bar.n = record.get("iterations", 0)
        self._bar.set_postfix_str(record.get("status", "?"), refresh=False)
        self._bar.refresh()

    def close(self):
        self._bar.close()


def runs_text(total, done, failed):
    """"runs 3/8 done", with ", 1 failed" when any failed or was cancelled."""
    return f"runs {done}/{total} done" + (f", {failed} failed" if failed else "")


class _RunsLine(_Line):
    """One line over many runs: "runs 3/8 done"."""

    def __init__(self, total, stream):
        super().__init__("", stream)
        self._total = total

    def update(self, done, failed=0):
        self._show(runs_text(self._total, done, failed))


class _RunsBar:
    """A tqdm bar over the runs that have finished."""

    def __init__(self, total, stream, tqdm):
        self._bar = tqdm(desc="runs", total=total, unit="run", file=stream, leave=True)

    def update(self, done, failed=0):
        self._bar.n = done + failed
        self._bar.set_postfix_str(f"{failed} failed" if failed else "", refresh=False)
        self._bar.refresh()

    def close(self):
        self._bar.close()


def _stream_of(progress):
    """Where `progress` says to show it; None: nowhere."""
    if progress is False:
        return None
    if progress is None or progress is True:
        stream = sys.stderr
        if progress is None and not (hasattr(stream, "isatty") and stream.isatty()):
            return None
        return stream
    return progress


def _display(progress, line, bar):
    """line(stream) or, where tqdm is installed, bar(stream, tqdm); None
    where `progress` shows nothing."""
    stream = _stream_of(progress)
    if stream is None:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return line(stream)
    return bar(stream, tqdm)


def progress_display(run_id, progress):
    return _display(progress, lambda s: _Line(run_id, s), lambda s, t: _Bar(run_id, s, t))


def runs_progress_display(total, progress):
    return _display(progress, lambda s: _RunsLine(total, s), lambda s, t: _RunsBar(total, s, t))
