import os
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
