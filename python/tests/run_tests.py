"""Runs the Python client's tests (ctest: python.client). Exits 77, which
ctest counts as skipped, when numpy or pytest is not installed."""

import os
import sys

sys.dont_write_bytecode = True
try:
    import numpy  # noqa: F401
    import pytest
except ImportError as e:
    print(f"python.client skipped: the Python module {e.name} is not installed "
          f"(Debian: apt-get install python3-numpy python3-pytest)")
    sys.exit(77)

here = os.path.dirname(os.path.abspath(__file__))
sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", here] + sys.argv[1:]))
