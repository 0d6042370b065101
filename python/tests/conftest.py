import os
import signal
import sys

import pytest

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..")))
sys.path.insert(0, os.path.dirname(__file__))

from cluster import LocalCluster  # noqa: E402


@pytest.fixture(scope="module")
def cluster():
    """A server and two CPU workers shared by a test module."""
    c = LocalCluster(workers=2)
    yield c
    c.stop()


TEST_LIMIT_S = 180


@pytest.fixture(autouse=True)
def bounded_time():
    """Fails a test still running after TEST_LIMIT_S where it stands (its
    traceback says what it waited for), so that the others still run."""
    def expired(signum, frame):
        raise TimeoutError(f"the test ran past {TEST_LIMIT_S} s")
    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(TEST_LIMIT_S)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)
