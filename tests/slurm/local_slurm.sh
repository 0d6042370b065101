# local_slurm.sh: a one-node Slurm cluster of its own, for tests.  Source it,
# then call slurm_start DIR (everything lives under DIR: munge key and socket,
# slurm.conf, gres.conf, spool, state, logs) and slurm_stop when done.  The
# node offers two GPUs whose device files are symlinks to /dev/null, so jobs
# see CUDA_VISIBLE_DEVICES set as on a real GPU node.  Client commands find
# the cluster through SLURM_CONF, which slurm_start exports.  It also gives
# the Slurm tests what they share: slurm_conf_settings (the slurm.conf lines
# every test cluster has), slurm_sum_request, slurm_skip_unless_installed,
# fail and wait_for.
#
#   . tests/slurm/local_slurm.sh
#   slurm_start "$work" || exit 77
#   sbatch --gres=gpu:2 --wrap 'echo $CUDA_VISIBLE_DEVICES'
#   slurm_stop

# A TCP port nobody listens on now, below the kernel's ephemeral range (the
# ports other programs' connections and port-0 listeners get meanwhile).
slurm_free_port() {
  local p low=32768
  read -r low _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || true
  [ "$low" -gt 11000 ] || low=32768
  for _ in $(seq 50); do
    p=$((10000 + RANDOM % (low - 10000)))
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return 0; }
  done
  return 1
}

# Why this machine cannot start a Slurm cluster; empty when it can.
slurm_missing() {
  local m=""
  for b in munged slurmctld slurmd sbatch srun scontrol squeue scancel sinfo; do
    command -v "$b" >/dev/null 2>&1 || PATH=$PATH:/usr/sbin command -v "$b" >/dev/null 2>&1 || m+=" $b"
  done
  [ -z "$m" ] || echo "missing:$m (scripts/bootstrap slurm-wlm munge installs them)"
}

# Exits 77 (a skipped test) with the reason when Slurm or munge is missing.
slurm_skip_unless_installed() {
  local missing
  missing=$(slurm_missing)
  if [ -n "$missing" ]; then
    echo "SKIPPED: Slurm is not installed here: $missing"
    exit 77
  fi
}

# slurm_conf_settings DIR USER CTLD_PORT SLURMD_PORT SLURMD_FILES: the
# settings of slurm.conf that every test cluster shares (ports, munge, the
# files under DIR, plugins that need no cgroups, short timeouts); slurmd's
# pid and log files are DIR/SLURMD_FILES.pid and .log ("slurmd-%n" for one
# per node).
slurm_conf_settings() {
  local dir=$1 user=$2 ctld_port=$3 slurmd_port=$4 slurmd=$5
  cat <<CONF
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=$user
SlurmdUser=$user
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/$slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/$slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=256
ReturnToService=2
SchedulerType=sched/builtin
SchedulerParameters=sched_interval=1
MessageTimeout=10
KillWait=30
MinJobAge=600
InactiveLimit=0
SlurmdTimeout=60
CONF
}

# slurm_sum_request WORK ROWS: writes WORK/run.json, a run request of
# examples/sum over ROWS rows [i, i/2] (i = 1..ROWS, also in
# WORK/values.json), and prints the sums it must give.
slurm_sum_request() {
  local work=$1 rows=$2
  awk -v n="$rows" 'BEGIN { printf "["; for (i = 1; i <= n; i++) printf "%s[%d,%.1f]", (i > 1 ? "," : ""), i, i / 2; print "]" }' \
    >"$work/values.json"
  printf '{"params": {"dims": 2}, "dataset": {"values": {"values": %s}}}' "$(cat "$work/values.json")" \
    >"$work/run.json"
  awk -v n="$rows" 'BEGIN { s = n * (n + 1) / 2; printf "[%.1f,%.1f]", s, s / 2 }'
}

fail() {
  echo "FAILED: $*" >&2
  exit 1
}

# Waits up to $1 seconds for the command that follows to succeed.
wait_for() {
  local limit=$1
  shift
  local deadline=$((SECONDS + limit))
  until "$@"; do
    [ $SECONDS -lt "$deadline" ] || return 1
    sleep 0.2
  done
}

slurm_write_conf() {
  local dir=$1 node=$2 user=$3 ctld_port=$4 slurmd_port=$5 cpus=$6 mem=$7
  cat >"$dir/slurm.conf" <<CONF
ClusterName=lizardtest
SlurmctldHost=$node(127.0.0.1)
$(slurm_conf_settings "$dir" "$user" "$ctld_port" "$slurmd_port" slurmd)
GresTypes=gpu
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem Gres=gpu:2 State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
CONF
  mkdir -p "$dir/dev"
  ln -sf /dev/null "$dir/dev/gpu0"
  ln -sf /dev/null "$dir/dev/gpu1"
  cat >"$dir/gres.conf" <<CONF
AutoDetect=off
NodeName=$node Name=gpu File=$dir/dev/gpu[0-1]
CONF
}

# slurm_start DIR: starts munged, slurmctld and slurmd; waits until the node
# takes jobs.  Returns non-zero (with the reason on stderr) when it cannot.
slurm_start() {
  SLURM_DIR=$1
  local dir=$SLURM_DIR node user cpus mem
  export PATH=$PATH:/usr/sbin
  node=$(hostname -s)
  user=$(id -un)
  cpus=$(nproc)
  mem=$(awk '/MemTotal/ { printf "%d", $2 / 1024 / 2 }' /proc/meminfo)
  mkdir -p "$dir/munge" "$dir/state" "$dir/spool"
  chmod 700 "$dir/munge"
  head -c 1024 /dev/urandom >"$dir/munge/munge.key"
  chmod 400 "$dir/munge/munge.key"
  munged --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.socket" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" \
    --seed-file="$dir/munge/munged.seed" || { echo "munged did not start" >&2; return 1; }
  local ctld_port slurmd_port
  ctld_port=$(slurm_free_port) && slurmd_port=$(slurm_free_port) || return 1
  slurm_write_conf "$dir" "$node" "$user" "$ctld_port" "$slurmd_port" "$cpus" "$mem"
  export SLURM_CONF=$dir/slurm.conf
  slurmctld -c -i || { echo "slurmctld did not start: $(tail -5 "$dir/slurmctld.log")" >&2; return 1; }
  slurmd -N "$node" || { echo "slurmd did not start: $(tail -5 "$dir/slurmd.log")" >&2; return 1; }
  for _ in $(seq 100); do
    case "$(sinfo -h -n "$node" -o %T 2>/dev/null)" in
      idle*|mixed*|allocated*) return 0 ;;
    esac
    sleep 0.1
  done
  echo "the node did not come up: $(sinfo -h -N -o '%N %T %E' 2>&1)" >&2
  tail -5 "$dir/slurmctld.log" "$dir/slurmd.log" >&2
  return 1
}

# Stops what slurm_start started, by the process ids they recorded.
slurm_stop() {
  local dir=${SLURM_DIR:-}
  [ -n "$dir" ] || return 0
  # Jobs first, while slurmd is there to end their processes.
  scancel --user "$(id -un)" 2>/dev/null || true
  for _ in $(seq 100); do
    [ -n "$(squeue -h -o %i 2>/dev/null)" ] || break
    sleep 0.2
  done
  local pf pid
  for pf in "$dir/slurmd.pid" "$dir/slurmctld.pid" "$dir/munge/munged.pid"; do
    [ -f "$pf" ] || continue
    pid=$(cat "$pf")
    kill "$pid" 2>/dev/null || continue
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  done
  SLURM_DIR=
}

# Stops this test with TERM (exit 124) when it runs past $1 seconds, so that
# whatever hangs, the daemons it started are stopped by its cleanup; sets
# $watchdog, the watcher's pid, for the cleanup to kill.
slurm_start_watchdog() {
  local limit=$1
  (
    sleep "$limit" &
    sleeper=$!
    trap 'kill $sleeper; exit 0' TERM
    wait $sleeper
    echo "FAILED: the test ran past $limit s" >&2
    kill -TERM $$
  ) &
  watchdog=$!
  trap 'exit 124' TERM INT
}
