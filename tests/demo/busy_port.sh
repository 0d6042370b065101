#!/usr/bin/env bash
# scripts/demo beside a server it did not start: with a listener already on
# the demo's port, the demo runs on another port and leaves the listener
# untouched; told that port (LIZARD_PORT), it stops with a message naming it.
#   tests/demo/busy_port.sh BUILD_DIR
set -euo pipefail
build=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
# The demo and the quick start begin with scripts/bootstrap (Debian 12's
# packages); where they are missing and this run may not install them (a
# machine of another distribution), there is nothing to test.
if ! "$root/scripts/bootstrap" --check >/dev/null; then
  echo "skipped: $("$root/scripts/bootstrap" --check), and the README's commands would install them"
  exit 77
fi
work=$(mktemp -d)
listener=""
cleanup() { [ -n "$listener" ] && kill "$listener" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# A stand-in for a server already running, on the first free port from 5000.
busy=5000
while in_use "$busy"; do busy=$((busy + 1)); done
python3 -c '
import http.server, sys
class Log(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        open(sys.argv[2], "a").write(self.path + "\n")
        self.send_response(404); self.end_headers()
    do_POST = do_GET
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Log).serve_forever()
' "$busy" "$work/requests" &
listener=$!
for _ in $(seq 50); do in_use "$busy" && break; sleep 0.1; done

# Told the busy port: refused, with the reason.
if LIZARD_PORT=$busy LIZARD_BUILD_DIR=$build timeout 300 "$root/scripts/demo" >"$work/told.out" 2>&1; then
  echo "FAIL: the demo ran on port $busy, which was in use"; cat "$work/told.out"; exit 1
fi
grep -q "port $busy of 127.0.0.1 is in use" "$work/told.out" ||
  { echo "FAIL: no message naming port $busy"; cat "$work/told.out"; exit 1; }

# The demo's default when 5000 is busy: another port, and it completes.
if [ "$busy" = 5000 ]; then
  LIZARD_BUILD_DIR=$build timeout 300 "$root/scripts/demo" >"$work/demo.out" 2>&1 ||
    { echo "FAIL: the demo failed"; cat "$work/demo.out"; exit 1; }
  grep -q "port 5000 is in use" "$work/demo.out" ||
    { echo "FAIL: the demo did not say it moved off port 5000"; cat "$work/demo.out"; exit 1; }
  grep -q '"status": "done"' "$work/demo.out" ||
    { echo "FAIL: the demo's run did not finish"; cat "$work/demo.out"; exit 1; }
fi
if [ -s "$work/requests" ]; then
  echo "FAIL: the demo sent requests to the server it did not start:"; cat "$work/requests"; exit 1
fi
echo "demo: left the server on port $busy alone"
