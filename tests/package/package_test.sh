#!/usr/bin/env bash
# The Debian package, from the build tree at hand (cpack: no second build):
# its name and control fields, its contents unpacked into a scratch root with
# `dpkg -x`, `lizard --version` from there, a CPU-backend run of the packaged
# examples/sum by the packaged binaries (sums checked against the data), the
# packaged Slurm launcher finding its binary, and `systemd-analyze verify` on
# the units where systemd-analyze exists.
#
#   tests/package/package_test.sh BUILD_DIR VERSION
set -euo pipefail

build=$(readlink -f "$1")
version=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/lizard-package-test.XXXXXX")
pids=()
cleanup() {
  local status=$?
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  if [ "$status" -ne 0 ]; then
    for f in "$work"/*.log; do [ -f "$f" ] && { echo "---- $f"; tail -n 30 "$f"; }; done
  fi
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "FAILED: $*" >&2
  exit 1
}

# --- the package ------------------------------------------------------------
t0=$SECONDS
(cd "$work" && cpack -G DEB -B "$work/pkg" --config "$build/CPackConfig.cmake" >"$work/cpack.log" 2>&1) ||
  fail "cpack failed: $(tail -n 20 "$work/cpack.log")"
deb=$work/pkg/lizard_${version}_amd64.deb
[ -f "$deb" ] || fail "no $(basename "$deb"); cpack made: $(ls "$work/pkg")"
echo "package: $(basename "$deb"), $(($(stat -c %s "$deb") / 1024)) KiB, in $((SECONDS - t0)) s"
control=$(dpkg-deb -f "$deb" Package Version Architecture Depends)
grep -qx "Package: lizard" <<<"$control" || fail "control: $control"
grep -qx "Version: $version" <<<"$control" || fail "control: $control"
grep -qx "Architecture: amd64" <<<"$control" || fail "control: $control"
grep -q "^Depends: .*libyaml-cpp" <<<"$control" || fail "Depends lacks the shared libraries: $control"
dpkg-deb -e "$deb" "$work/control"
for s in postinst prerm postrm; do [ -x "$work/control/$s" ] || fail "no $s script"; done

# --- unpacked into a scratch root -------------------------------------------
root=$work/root
dpkg -x "$deb" "$root"
for f in usr/bin/lizard usr/bin/load_program usr/bin/lizard-slurm usr/include/lizard/cuda_cpu.h usr/include/lizard/lizard_device.h \
  usr/lib/systemd/system/lizard-server.service usr/lib/systemd/system/lizard-client.service \
  usr/share/lizard/systemd/lizard-server.env usr/share/lizard/systemd/lizard-client.env \
  usr/share/doc/lizard/operations.md usr/share/doc/lizard/copyright \
  usr/share/doc/lizard/examples/sum/config.yaml; do
  [ -e "$root/$f" ] || fail "the package lacks /$f"
done
got=$("$root/usr/bin/lizard" --version)
[ "$got" = "lizard $version" ] || fail "lizard --version printed '$got'"
grep -q "^ExecStart=/usr/bin/lizard server" "$root/usr/lib/systemd/system/lizard-server.service" ||
  fail "lizard-server.service does not start /usr/bin/lizard"
grep -q "^EnvironmentFile=/etc/default/lizard-client" "$root/usr/lib/systemd/system/lizard-client.service" ||
  fail "lizard-client.service does not read /etc/default/lizard-client"
# The launcher finds the lizard beside it, not the one of the build tree.
got=$(LIZARD_BIN="" PATH=/usr/bin:/bin "$root/usr/bin/lizard-slurm" version)
[ "$got" = "lizard $version ($root/usr/bin/lizard)" ] || fail "lizard-slurm version printed '$got'"

# --- a run with the packaged binaries ----------------------------------------
# Below the kernel's ephemeral range (32768 and up), where the outgoing
# connections of tests running beside this one take their ports.
port=$(
  p=$((20000 + RANDOM % 12000))
  while (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; do p=$((p + 1)); done
  echo $p
)
uri=http://127.0.0.1:$port
"$root/usr/bin/lizard" server --host 127.0.0.1 --port "$port" --state-dir "$work/state" >"$work/server.log" 2>&1 &
pids+=($!)
"$root/usr/bin/lizard" client -a 127.0.0.1 -p "$port" --backend cpu --cpu-threads 1 \
  --cache-dir "$work/cache" >"$work/client.log" 2>&1 &
pids+=($!)
for _ in $(seq 150); do
  [ "$(curl -s --max-time 2 "$uri/clients" | tr -d ' \n' | grep -o '"id":"w' | wc -l)" -ge 1 ] && break
  sleep 0.1
done
hash=$("$root/usr/bin/load_program" "$root/usr/share/doc/lizard/examples/sum" "$uri") ||
  fail "load_program could not register the packaged examples/sum"
rows=500
values=$(awk -v n=$rows 'BEGIN { printf "["; for (i = 1; i <= n; i++) printf "%s[%d,%d]", (i > 1 ? "," : ""), i, 3 * i; print "]" }')
expect=$(awk -v n=$rows 'BEGIN { s = n * (n + 1) / 2; printf "[%.1f,%.1f]", s, 3 * s }')
record=$(curl -sf --max-time 60 -X POST "$uri/runtime/$hash?wait=1" \
  -d "{\"params\": {\"dims\": 2}, \"dataset\": {\"values\": {\"values\": $values}}}" | tr -d ' \n')
grep -q '"status":"done"' <<<"$record" || fail "the run did not finish: $record"
grep -qF "\"sums\":$expect" <<<"$record" || fail "sums are not $expect: $record"
echo "run: examples/sum on the packaged binaries gave $expect"

# --- the units ---------------------------------------------------------------
if command -v systemd-analyze >/dev/null 2>&1 && [ -d /usr/lib/systemd/system ]; then
  # verify resolves the units' targets and commands inside --root: give it
  # the system's targets and slices and a shell beside the packaged files.
  cp /usr/lib/systemd/system/*.target /usr/lib/systemd/system/*.slice "$root/usr/lib/systemd/system/" 2>/dev/null || true
  mkdir -p "$root/bin"
  cp /bin/sh "$root/bin/sh"
  if ! out=$(systemd-analyze verify --man=no --root="$root" lizard-server.service lizard-client.service 2>&1) ||
    [ -n "$out" ]; then
    fail "systemd-analyze verify: $out"
  fi
  echo "units: systemd-analyze verify found nothing to report"
else
  echo "units: systemd-analyze is not installed; not verified"
fi
echo "PASSED in $((SECONDS - t0)) s"
