"""What each run of Client.map and Client.imap_unordered gets of an argument
that may differ from run to run (`state`, `seed`), and the progress over
those runs while they go.

    states = per_run("state", state, params_list, single=dict)
    # one value for every run, a list of one per run, or a function of the
    # run's params dict: states[i] is run i's
"""

from .errors import LizardError
from ._progress import runs_progress_display
from .run import FINISHED


def per_run(name, value, params_list, single):
    """`value` for each params dict of `params_list`: the same for all when it
    is None or a `single` (a dict for state, an int for seed), run i's when
    it is a list or tuple of len(params_list), value(params) when callable."""
    n = len(params_list)
    if hasattr(value, "tolist"):  # a numpy array of one per run, or a numpy scalar
        value = value.tolist()
    if value is None or isinstance(value, single):
        return [value] * n
    if callable(value):
        return [value(dict(params)) for params in params_list]
    if isinstance(value, (list, tuple)):
        values = list(value)
        if len(values) != n:
            entries = f"{len(values)} entr{'y' if len(values) == 1 else 'ies'}"
            raise LizardError(f"{name} has {entries} but params_list has {n} runs: "
                              f"give one {name} per run, a function of the params dict, or one "
                              f"{name} for all")
        return values
    kinds = {dict: "a dict", int: "an int"}
    raise LizardError(f"{name} must be {kinds.get(single, single.__name__)} for every run, a list "
                      f"with one per run, or a function of the params dict, not "
                      f"{type(value).__name__}")


def seed_of(name, value):
    """A run's seed as the server takes it (an int), or None."""
    if value is None:
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        raise LizardError(f"{name} must be an int, not {type(value).__name__}") from None


def runs_watcher(runs, progress):
    """The on_poll callback that shows the progress over `runs` (None when
    `progress` shows nothing), and the function that ends that display."""
    display = runs_progress_display(len(runs), progress)
    if display is None:
        return None, lambda: None

    def on_poll():
        statuses = [r._record.get("status") if r._record is not None else None for r in runs]
        done = statuses.count("done")
        failed = sum(1 for s in statuses if s in FINISHED and s != "done")
        display.update(done, failed)

    def close():
        on_poll()
        display.close()

    return on_poll, close
