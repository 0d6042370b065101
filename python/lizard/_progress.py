"""The progress a Run shows while Run.wait waits for it.

    display = progress_display(run_id, progress)   # None: nothing to show
    display.update(record)                           # after each poll
    display.close()

`progress` None shows it when standard error is a terminal; True always
(on standard error); False never; a file object shows it there. A tqdm bar
is used when tqdm is installed, else one line rewritten in place:
"r4 running: iteration 3/50".
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
        text = f"{self._run_id} {_describe(record)}"
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


def progress_display(run_id, progress):
    if progress is False:
        return None
    if progress is None or progress is True:
        stream = sys.stderr
        if progress is None and not (hasattr(stream, "isatty") and stream.isatty()):
            return None
    else:
        stream = progress
    try:
        from tqdm import tqdm
    except ImportError:
        return _Line(run_id, stream)
    return _Bar(run_id, stream, tqdm)
