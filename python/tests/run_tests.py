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

# Each line as it is printed, and the stacks of a test still running after
# four minutes: what ctest shows of a run it had to time out.
sys.stdout.reconfigure(line_buffering=True)
here = os.path.dirname(os.path.abspath(__file__))
sys.exit(pytest.main(["-v", "-p", "no:cacheprovider", "-o", "faulthandler_timeout=240", here] +
                     sys.argv[1:]))
