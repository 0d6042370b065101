#!/usr/bin/env bash
# Runs the seed workload (seed_kmeans.py) on this machine: a server and one
# worker from BUILD (default build/), started as the README starts them, on
# a free port of 127.0.0.1.  Extra arguments go to the worker
# (e.g. --gpus 0,1); LIZARD_SERVER_ARGS to the server (e.g. --no-worker-loop),
# LIZARD_SEED_ARGS to seed_kmeans.py (LIZARD_SEED_SCRIPT: another client
# command, given --uri and those arguments).  With LIZARD_LOG_DIR the
# daemons' logs (with -v) are kept there.
#
#   bench/seed_kmeans/local.sh [BUILD] [worker args...]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
shift || true
export LIZARD_BIN="$build/lizard"  # for client scripts that run the CLI
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
state=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$state"' EXIT
logs=${LIZARD_LOG_DIR:-$state}
mkdir -p "$logs"
verbose=()
[ -n "${LIZARD_LOG_DIR:-}" ] && verbose=(-v)
"$build/lizard" server "${verbose[@]}" --host 127.0.0.1 --port "$port" --state-dir "$state" ${LIZARD_SERVER_ARGS:-} \
  >"$logs/server.log" 2>&1 &
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/clients" >/dev/null && break; sleep 0.1; done
"$build/lizard" client "${verbose[@]}" -a 127.0.0.1 -p "$port" --cache-dir "$state/cache" "$@" \
  >"$logs/worker.log" 2>&1 &
for _ in $(seq 300); do
  [ "$(curl -sf "http://127.0.0.1:$port/clients" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))' 2>/dev/null)" -ge 1 ] 2>/dev/null && break
  sleep 0.1
done
${LIZARD_SEED_SCRIPT:-python3 $root/bench/seed_kmeans/seed_kmeans.py} --uri "http://127.0.0.1:$port" ${LIZARD_SEED_ARGS:-}
