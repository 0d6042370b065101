#!/usr/bin/env bash
# Where an upload's time goes on this machine: its disk's write and flush
# rates, one core's SHA-256 rate, and a server's CPU per thread while
# `lizard upload` sends it a 2 GiB .npy from /dev/shm three times.  Prints
# its figures; nothing is kept.
#
#   bench/user_data/upload_probe.sh [BUILD]      (default build/)
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
grep -m1 "model name" /proc/cpuinfo
grep -q -w sha_ni /proc/cpuinfo && echo "sha_ni: yes" || echo "sha_ni: no"
scratch=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$scratch" /dev/shm/lizard-probe-*' EXIT
dd if=/dev/urandom of=/dev/shm/lizard-probe-1g bs=1M count=1024 status=none
for i in 1 2; do
  /usr/bin/time -f "write 1 GiB to the page cache: %e s" \
    dd if=/dev/shm/lizard-probe-1g of="$scratch/w$i" bs=256k status=none
  /usr/bin/time -f "  then flush it: %e s" sync "$scratch/w$i"
  rm -f "$scratch/w$i"
done
python3 - <<'PY'
import hashlib, os, time
b = os.urandom(1 << 28)
t = time.perf_counter()
hashlib.sha256(b).digest()
print("SHA-256 on one core: %.2f GB/s" % ((1 << 28) / (time.perf_counter() - t) / 1e9))
PY
python3 - <<'PY'
import os
header = "{'descr': '<f4', 'fortran_order': False, 'shape': (16777216, 32), }"
header += " " * (127 - 10 - len(header)) + "\n"
with open("/dev/shm/lizard-probe-2g.npy", "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode())
    for _ in range(32):
        f.write(os.urandom(64 << 20))
PY
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$build/lizard" server --host 127.0.0.1 --port "$port" --state-dir "$scratch/state" >"$scratch/server.log" 2>&1 &
spid=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/ruok" >/dev/null && break; sleep 0.1; done
python3 - "$spid" "$port" "$build/lizard" <<'PY'
import os, subprocess, sys, time
pid, port, lizard = sys.argv[1:4]
tick = os.sysconf("SC_CLK_TCK")
def cpu(path):
    p = open(path).read().rsplit(")", 1)[1].split()
    return int(p[11]) + int(p[12])
def threads():
    out = {}
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            out[t] = cpu(f"/proc/{pid}/task/{t}/stat")
        except OSError:
            pass
    return out
for i in range(3):
    a, pa, t0 = threads(), cpu(f"/proc/{pid}/stat"), time.perf_counter()
    r = subprocess.run([lizard, "upload", "/dev/shm/lizard-probe-2g.npy", "-a", "127.0.0.1",
                        "-p", port], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    b = threads()
    busiest = max((v - a.get(k, 0) for k, v in b.items()), default=0)
    print(f"upload {i}: {wall:.2f} s, server CPU {(cpu(f'/proc/{pid}/stat') - pa) / tick:.2f} s "
          f"(busiest thread {busiest / tick:.2f} s): {r.stdout.strip()[:90]}{r.stderr.strip()[:200]}")
PY
