"""LizardError: what every failure of the client raises."""


class LizardError(Exception):
    """A request the server refused, a run that failed or was cancelled, or a
    server that could not be reached.

    The message is the server's own where it gave one. `status` is the HTTP
    status of a refused request; `record` is the run record of a run that did
    not finish as done; `unreachable` is True when the server could not be
    reached at all; `runs` are the runs of a `Client.map` that did not all
    finish as done.
    """

    def __init__(self, message, status=None, record=None, unreachable=False, runs=None):
        super().__init__(message)
        self.message = message
        self.status = status
        self.record = record
        self.unreachable = unreachable
        self.runs = runs
