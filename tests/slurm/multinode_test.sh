#!/usr/bin/env bash
# The Slurm launcher (packaging/slurm/lizard-slurm) on a real three-node
# Slurm whose nodes are network namespaces on one machine.  Each node is a
# namespace with one veth link to a bridge that lives in a namespace of its
# own, and an address (10.217.0.11-13/24) that exists only there; slurmctld
# runs in a fourth namespace (10.217.0.1), one slurmd per node
# (slurmd -N NAME), one munged in the machine's own namespace whose socket
# every namespace reaches through the shared file system.
#   1. `lizard-slurm job` in an sbatch -N 3 job: the server on the first
#      node, one CPU-backend worker in each node's namespace, each joined
#      from its node's address; the command registers examples/sum, runs it
#      on all three workers, and the sums are exact.
#   2. A long `lizard-slurm job -N 3` cancelled with scancel: no lizard
#      process is left in any node's namespace.
# Everything (daemons, namespaces, bridge, links, directory) is removed at
# the end, also on failure.  Exits 77 (skipped) where namespaces cannot be
# made (not root, no iproute2) or the Slurm or munge programs are missing.
# SLURM_TEST_KEEP=1 keeps the temporary directory (logs, job output).
#
#   tests/slurm/multinode_test.sh LIZARD_BIN LOAD_PROGRAM_BIN SOURCE_DIR
set -euo pipefail

lizard_bin=$(readlink -f "$1")
load_program=$(readlink -f "$2")
src=$(readlink -f "$3")
here=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
launcher=$src/packaging/slurm/lizard-slurm
# shellcheck source=local_slurm.sh
. "$here/local_slurm.sh"

slurm_skip_unless_installed
if [ "$(id -u)" -ne 0 ]; then
  echo "SKIPPED: network namespaces need root (this test runs as uid $(id -u))"
  exit 77
fi
if ! ip -V >/dev/null 2>&1 || ! command -v nsenter >/dev/null; then
  echo "SKIPPED: the ip (iproute2) and nsenter (util-linux) commands are needed"
  exit 77
fi

# Every namespace's name starts with lzsm<pid of this script>-, so that a
# later run can remove what a killed one left, and nothing collides with
# the netns tests' lznt<pid>- names.
prefix=lzsm$$-
net=10.217.0
nodes=(lzn1 lzn2 lzn3)
node_addr=("$net.11" "$net.12" "$net.13")
ctl_addr=$net.1
ns_switch=${prefix}sw
ns_ctl=${prefix}ctl
ns_of() { echo "${prefix}$1"; }
# Runs a command in namespace $1.  Unlike `ip netns exec`, nsenter changes
# only the network namespace: /sys (and the cgroup file system slurmd looks
# at) stays the machine's.
in_ns() { nsenter --net="/run/netns/$1" -- "${@:2}"; }

# Namespaces of runs of this test that are no longer running.
remove_stale() {
  local name pid
  for name in $(ip netns list 2>/dev/null | awk '{ print $1 }'); do
    [[ $name =~ ^lzsm([0-9]+)- ]] || continue
    pid=${BASH_REMATCH[1]}
    kill -0 "$pid" 2>/dev/null && continue
    remove_ns "$name"
  done
}

# Kills every process in namespace $1, then removes it (and its links).
remove_ns() {
  local pid
  for pid in $(ip netns pids "$1" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
  ip netns del "$1" 2>/dev/null || true
}

work=$(mktemp -d "${TMPDIR:-/tmp}/lizard-slurm-multinode.XXXXXX")
dir=$work/slurm
slurm_start_watchdog "${SLURM_TEST_LIMIT:-180}"
cleanup() {
  local status=$? pf pid ns alive
  kill "$watchdog" 2>/dev/null || true
  # The daemons all at once: SIGTERM, up to 3 s, then SIGKILL.
  local daemons=()
  for pf in "$dir"/slurmd-*.pid "$dir/slurmctld.pid" "$dir/munge/munged.pid"; do
    [ -f "$pf" ] && daemons+=("$(cat "$pf")")
  done
  if [ ${#daemons[@]} -gt 0 ]; then
    kill "${daemons[@]}" 2>/dev/null || true
    for _ in $(seq 30); do
      alive=0
      for pid in "${daemons[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
      [ $alive = 1 ] || break
      sleep 0.1
    done
    kill -9 "${daemons[@]}" 2>/dev/null || true
  fi
  # Whatever is left in a namespace (job steps, workers) dies with it:
  # every process of a job runs in a node's namespace.
  for ns in "$ns_ctl" "${nodes[@]/#/$prefix}" "$ns_switch"; do remove_ns "$ns"; done
  if [ "$status" -ne 0 ]; then
    for f in "$work"/*.out "$dir"/*.log; do
      [ -f "$f" ] && { echo "---- $f"; tail -n 30 "$f"; }
    done
  fi
  if [ -n "${SLURM_TEST_KEEP:-}" ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

# --- the hosts: namespaces on a bridge --------------------------------------
# Host $1 (a namespace) gets link eth0 with address $2, whose peer $3 is a
# port of the bridge in the switch's namespace.
add_host() {
  local ns=$1 addr=$2 port=$3
  ip netns add "$ns" &&
    ip -n "$ns" link add eth0 type veth peer name "$port" netns "$ns_switch" &&
    ip -n "$ns_switch" link set "$port" master br0 up &&
    ip -n "$ns" addr add "$addr/24" dev eth0 &&
    ip -n "$ns" link set eth0 up &&
    ip -n "$ns" link set lo up
}

make_hosts() {
  ip netns add "$ns_switch" || return 1
  ip -n "$ns_switch" link add br0 type bridge &&
    ip -n "$ns_switch" link set br0 up &&
    add_host "$ns_ctl" "$ctl_addr" pc || return 1
  local i
  for i in "${!nodes[@]}"; do
    add_host "$(ns_of "${nodes[$i]}")" "${node_addr[$i]}" "p$i" || return 1
  done
}

# --- Slurm: munged here, slurmctld and one slurmd per node in namespaces ----
write_conf() {
  local user ctld_host cpus mem i
  user=$(id -un)
  # slurmctld runs only where SlurmctldHost names this machine's host name.
  ctld_host=$(hostname -s)
  cpus=$(nproc)
  mem=$(awk '/MemTotal/ { printf "%d", $2 / 1024 / 8 }' /proc/meminfo)
  cat >"$dir/slurm.conf" <<CONF
ClusterName=lizardmulti
SlurmctldHost=$ctld_host($ctl_addr)
$(slurm_conf_settings "$dir" "$user" 6817 6818 "slurmd-%n")
# Job ids apart from the one-node test's, whose checks look for lizard
# processes by SLURM_JOB_ID on the whole machine.
FirstJobId=700000
CONF
  for i in "${!nodes[@]}"; do
    echo "NodeName=${nodes[$i]} NodeAddr=${node_addr[$i]} CPUs=$cpus RealMemory=$mem State=UNKNOWN" \
      >>"$dir/slurm.conf"
  done
  echo "PartitionName=debug Nodes=$(IFS=,; echo "${nodes[*]}") Default=YES MaxTime=INFINITE State=UP" \
    >>"$dir/slurm.conf"
}

all_idle() {
  [ "$(in_ctl sinfo -h -N -o '%N %T' 2>/dev/null | grep -cE ' (idle|mixed|allocated)')" -eq ${#nodes[@]} ]
}

start_slurm() {
  mkdir -p "$dir/munge" "$dir/state" "$dir/spool"
  chmod 700 "$dir/munge"
  head -c 1024 /dev/urandom >"$dir/munge/munge.key"
  chmod 400 "$dir/munge/munge.key"
  munged --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.socket" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" \
    --seed-file="$dir/munge/munged.seed" || fail "munged did not start"
  write_conf
  export SLURM_CONF=$dir/slurm.conf
  in_ctl slurmctld -c -i || fail "slurmctld did not start: $(tail -5 "$dir/slurmctld.log")"
  local node
  for node in "${nodes[@]}"; do
    mkdir -p "$dir/spool/$node"
    in_ns "$(ns_of "$node")" slurmd -N "$node" ||
      fail "slurmd $node did not start: $(tail -5 "$dir/slurmd-$node.log")"
  done
  wait_for 30 all_idle || fail "the nodes did not come up: $(in_ctl sinfo -h -N -o '%N %T %E' 2>&1)"
}

# Slurm's user commands run in the controller's namespace: 127.0.0.1 and the
# bridge are all that is reachable from there.
in_ctl() { in_ns "$ns_ctl" "$@"; }

# The lizard processes (server, workers) running in node $1's namespace.
lizard_pids_in() {
  local p
  for p in $(ip netns pids "$(ns_of "$1")" 2>/dev/null); do
    [ "$(readlink "/proc/$p/exe" 2>/dev/null)" = "$lizard_bin" ] && echo "$p"
  done
  return 0
}
lizard_count_in() { lizard_pids_in "$1" | wc -l; }
no_lizard_anywhere() {
  local node
  for node in "${nodes[@]}"; do [ -z "$(lizard_pids_in "$node")" ] || return 1; done
}
job_gone() { [ -z "$(in_ctl squeue -h -j "$1" -o %i 2>/dev/null)" ]; }
job_done() { ! in_ctl squeue -h -j "$1" -o %T 2>/dev/null | grep -qE 'PENDING|RUNNING|COMPLETING|CONFIGURING'; }

started=$SECONDS
export PATH=$PATH:/usr/sbin
remove_stale
make_hosts 2>"$work/ip.err" || {
  echo "SKIPPED: cannot make network namespaces here: $(head -c 300 "$work/ip.err")"
  exit 77
}
start_slurm
echo "slurm: controller and ${#nodes[@]} nodes in namespaces up in $((SECONDS - started)) s"
export LIZARD_BIN=$lizard_bin
client_args="--backend cpu --cpu-threads 1 --cache-dir $work/cache"

# A run of examples/sum whose answer the test computes itself (local_slurm.sh).
rows=3000
expect=$(slurm_sum_request "$work" $rows)

cat >"$work/run-sum.sh" <<EOF
#!/usr/bin/env bash
set -euo pipefail
echo "url \$LIZARD_URL" >"$work/url.txt"
auth=(-H "Authorization: Bearer \$LIZARD_TOKEN")
curl -sf --max-time 60 "\${auth[@]}" "\$LIZARD_URL/clients" >"$work/clients.json"
hash=\$("$load_program" "$src/examples/sum" "\$LIZARD_URL")
curl -sf --max-time 60 "\${auth[@]}" -X POST "\$LIZARD_URL/runtime/\$hash?wait=1" -d @"$work/run.json" >"$work/record.json"
EOF
chmod +x "$work/run-sum.sh"

# --- 1. a three-node batch job: server, a worker per node, a run ------------
t0=$SECONDS
job=$(in_ctl sbatch --parsable -N 3 -n 3 --chdir="$work" --output="$work/job1.out" \
  "$launcher" job --wait 60 --client-args "$client_args" -- "$work/run-sum.sh")
wait_for 90 job_done "$job" || fail "job $job did not finish within 90 s"
grep -q "command exited with status 0" "$work/job1.out" || fail "the job's command failed"
grep -qx "url http://${node_addr[0]}:[0-9]*" "$work/url.txt" ||
  fail "the server is not at the first node's address ${node_addr[0]}: $(cat "$work/url.txt")"
flat_clients=$(tr -d ' \n' <"$work/clients.json")
for addr in "${node_addr[@]}"; do
  [ "$(grep -o "\"address\":\"$addr:[0-9]*\"" <<<"$flat_clients" | wc -l)" -eq 1 ] ||
    fail "GET /clients should list one worker from $addr: $flat_clients"
done
[ "$(grep -o "\"slurm_job_id\":\"$job\"" <<<"$flat_clients" | wc -l)" -eq 3 ] ||
  fail "GET /clients should list three workers of job $job: $flat_clients"
record=$(tr -d ' \n' <"$work/record.json")
grep -q '"status":"done"' <<<"$record" || fail "the run did not finish: $record"
grep -qF "\"sums\":$expect" <<<"$record" || fail "sums are not $expect: $record"
grep -q "\"count\":$rows" <<<"$record" || fail "count is not $rows: $record"
[ "$(grep -o '"worker":"w[0-9]*"' <<<"$record" | sort -u | wc -l)" -eq 3 ] ||
  fail "the run did not use all three workers: $record"
wait_for 10 no_lizard_anywhere || fail "lizard processes of job $job outlived it"
echo "job: sum of $rows rows on 3 nodes (server ${node_addr[0]}) in $((SECONDS - t0)) s"

# --- 2. scancel of a running three-node job ---------------------------------
t0=$SECONDS
job=$(in_ctl sbatch --parsable -N 3 -n 3 --chdir="$work" --output="$work/job2.out" \
  "$launcher" job --wait 60 --client-args "$client_args" -- sleep 600)
joined() { grep -q "worker(s) joined" "$work/job2.out" 2>/dev/null; }
wait_for 60 joined || fail "the long job's workers did not join"
[ "$(lizard_count_in "${nodes[0]}")" -ge 2 ] || fail "no server and worker in ${nodes[0]}'s namespace"
for node in "${nodes[@]:1}"; do
  [ "$(lizard_count_in "$node")" -ge 1 ] || fail "no worker in $node's namespace"
done
in_ctl scancel "$job"
# KillWait is 30 s: gone well before then means the launcher stopped them.
wait_for 15 job_gone "$job" || fail "job $job still listed 15 s after scancel"
wait_for 5 no_lizard_anywhere ||
  fail "lizard processes left after scancel: $(for n in "${nodes[@]}"; do echo "$n: $(lizard_pids_in "$n")"; done)"
grep -q "lizard-slurm: stopped" "$work/job2.out" || fail "the launcher did not stop the cluster itself"
echo "scancel: job and its lizard processes on 3 nodes gone in $((SECONDS - t0)) s"
echo "PASSED in $((SECONDS - started)) s"
