#!/usr/bin/env bash
# The README's quick start, as a user types it: its command block is read
# from README.md and run in a scratch directory against BUILD_DIR (the build
# step is already done), once with the system's python3 and once with a
# python3 first on PATH that has no numpy (as a pyenv or a virtualenv one
# is).  Each time the run must finish and the last command must print the
# four centroids.  The quick start's daemons use port 5000, so this runs
# alone (RUN_SERIAL) and fails at once, naming the port, when it is taken.
#   tests/demo/readme_quickstart.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
root=$(cd "$(dirname "$0")/../.." && pwd)
# The demo and the quick start begin with scripts/bootstrap (Debian 12's
# packages); where they are missing and this run may not install them (a
# machine of another distribution), there is nothing to test.
if ! "$root/scripts/bootstrap" --check >/dev/null; then
  echo "skipped: $("$root/scripts/bootstrap" --check), and the README's commands would install them"
  exit 77
fi
work=$(mktemp -d)
cleanup() {
  pkill -f "$work/state" 2>/dev/null || true
  [ -n "${KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
if (exec 3<>/dev/tcp/127.0.0.1/5000) 2>/dev/null; then
  echo "FAIL: port 5000 of 127.0.0.1 is in use; the quick start needs it"; exit 1
fi

# The first ```sh block after '## Quick start', build step and scratch paths
# pointed at this test's own.
block=$(awk '/^## Quick start/{q=1} q && /^```sh/{b=1; next} b && /^```/{exit} b' "$root/README.md")
[ -n "$block" ] || { echo "FAIL: no command block under '## Quick start' in README.md"; exit 1; }
script=$(printf '%s\n' "$block" |
  sed -e "s#^scripts/bootstrap && scripts/build && ##" -e "s#/tmp/lz#$work#g" \
      -e "s#build/lizard#$build/lizard#g" -e "s# examples/# $root/examples/#g")
# The daemons it leaves in the background (the README stops them with
# `kill %1 %2`) go when it ends, however it ends.
printf '%s\n%s\n' "trap 'kill \$(jobs -p) 2>/dev/null; wait' EXIT" "$script" >"$work/quickstart.sh"

# points.npy as docs/quickstart.md makes it: four blobs around (+-5, +-5).
/usr/bin/python3 -c 'import numpy as np; r = np.random.default_rng(1); c = np.array([[-5,-5],[5,-5],[-5,5],[5,5]]);
np.save("'"$work"'/points.npy", (c[r.integers(0, 4, 100000)] + r.normal(0, 1, (100000, 2))).astype(np.float32))'

# A python3 without numpy, first on PATH.
mkdir -p "$work/bare"
/usr/bin/python3 -m venv --without-pip "$work/bare/venv"
"$work/bare/venv/bin/python3" -c 'import numpy' 2>/dev/null &&
  { echo "FAIL: the bare python3 has numpy; it stands for none"; exit 1; }

run_quickstart() {
  local name=$1 path=$2 out="$work/$1.out"
  rm -rf "$work/state" "$work/result"
  if ! (cd "$work" && PATH=$path timeout 300 bash -e quickstart.sh >"$out" 2>&1); then
    echo "FAIL: the quick start failed with $name"; cat "$out"; tail -n 20 "$work/server.log" "$work/worker.log"
    exit 1
  fi
  # The last line prints the centroids: four rows, each near (+-5, +-5).
  /usr/bin/python3 - "$out" <<'EOF' || { echo "FAIL: with $name the centroids are not the blobs' centres"; cat "$out"; exit 1; }
import re, sys
rows = re.findall(r"\[\s*(-?[\d.]+(?:e[-+]?\d+)?)\s+(-?[\d.]+(?:e[-+]?\d+)?)\s*\]", open(sys.argv[1]).read())
centres = sorted((round(float(x) / 5), round(float(y) / 5)) for x, y in rows[-4:])
sys.exit(0 if len(rows) >= 4 and centres == [(-1, -1), (-1, 1), (1, -1), (1, 1)] else 1)
EOF
  echo "quick start with $name: done, centroids at the blobs' centres"
}

run_quickstart "the system's python3" "$PATH"
run_quickstart "a python3 without numpy first on PATH" "$work/bare/venv/bin:$PATH"
