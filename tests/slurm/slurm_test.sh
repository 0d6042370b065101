#!/usr/bin/env bash
# The Slurm launcher (packaging/slurm/lizard-slurm) against a real, one-node
# Slurm that this test starts under a temporary directory:
#   1. `lizard-slurm job` in a batch job with two GPUs: the server and a
#      CPU-backend worker start, the worker announces the job id once in
#      GET /clients and was given the job's GPUs, the command registers
#      examples/sum and runs it, and the sums match the data.
#   2. A long `lizard-slurm job` is cancelled with scancel: it stops cleanly
#      (before Slurm's SIGKILL) and leaves no process of the job behind.
#   3. `lizard-slurm workers -n 2` against a server started here: two array
#      jobs join, serve a run, and leave when cancelled.
# Exits 77 (skipped) only when the Slurm or munge programs are missing.
# SLURM_TEST_KEEP=1 keeps the temporary directory (logs, job output).
#
#   tests/slurm/slurm_test.sh LIZARD_BIN LOAD_PROGRAM_BIN SOURCE_DIR
set -euo pipefail

lizard_bin=$(readlink -f "$1")
load_program=$(readlink -f "$2")
src=$(readlink -f "$3")
here=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
launcher=$src/packaging/slurm/lizard-slurm
# shellcheck source=local_slurm.sh
. "$here/local_slurm.sh"

slurm_skip_unless_installed

work=$(mktemp -d "${TMPDIR:-/tmp}/lizard-slurm-test.XXXXXX")
server_pid=""
# Whatever hangs, the daemons started here are stopped within the time limit.
slurm_start_watchdog "${SLURM_TEST_LIMIT:-180}"
cleanup() {
  local status=$?
  kill "$watchdog" 2>/dev/null || true
  slurm_stop
  if [ -n "$server_pid" ]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  if [ "$status" -ne 0 ]; then
    for f in "$work"/*.out "$work"/*.log "$work"/slurm/slurmctld.log "$work"/slurm/slurmd.log; do
      [ -f "$f" ] && { echo "---- $f"; tail -n 40 "$f"; }
    done
  fi
  if [ -n "${SLURM_TEST_KEEP:-}" ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

# The pids of running lizard processes (server, worker) of Slurm job $1 (or,
# with a second argument, of array job $1).
lizard_pids_of_job() {
  local p var=SLURM_JOB_ID
  [ $# -lt 2 ] || var=SLURM_ARRAY_JOB_ID
  for p in /proc/[0-9]*; do
    [ "$(readlink "$p/exe" 2>/dev/null)" = "$lizard_bin" ] || continue
    tr '\0' '\n' <"$p/environ" 2>/dev/null | grep -qx "$var=$1" && echo "${p#/proc/}"
  done
  return 0
}
no_lizard_of_job() { [ -z "$(lizard_pids_of_job "$@")" ]; }
job_gone() { [ -z "$(squeue -h -j "$1" -o %i 2>/dev/null)" ]; }
job_done() { ! squeue -h -j "$1" -o %T 2>/dev/null | grep -qE 'PENDING|RUNNING|COMPLETING|CONFIGURING'; }

started=$SECONDS
slurm_start "$work/slurm" || fail "could not start the local Slurm"
echo "slurm: up in $((SECONDS - started)) s"
export LIZARD_BIN=$lizard_bin
client_args="--backend cpu --cpu-threads 1 --cache-dir $work/cache"

# A run of examples/sum whose answer the test computes itself (local_slurm.sh).
rows=2000
expect=$(slurm_sum_request "$work" $rows)

# What the batch job runs once the cluster is up: it only sees LIZARD_* variables.
cat >"$work/run-sum.sh" <<EOF
#!/usr/bin/env bash
set -euo pipefail
auth=(-H "Authorization: Bearer \$LIZARD_TOKEN")
curl -sf --max-time 60 "\${auth[@]}" "\$LIZARD_URL/clients" >"$work/clients.json"
hash=\$("$load_program" "$src/examples/sum" "\$LIZARD_URL")
curl -sf --max-time 60 "\${auth[@]}" -X POST "\$LIZARD_URL/runtime/\$hash?wait=1" -d @"$work/run.json" >"$work/record.json"
EOF
chmod +x "$work/run-sum.sh"

# --- 1. a batch job: server, one worker, a run ------------------------------
t0=$SECONDS
job=$(sbatch --parsable -N1 -n1 --gres=gpu:2 --chdir="$work" --output="$work/job1.out" \
  "$launcher" job --wait 60 --client-args "$client_args" -- "$work/run-sum.sh")
wait_for 90 job_done "$job" || fail "job $job did not finish within 90 s"
grep -q "command exited with status 0" "$work/job1.out" || fail "the job's command failed"
# Not the copy of the script in slurmd's spool directory, which other nodes lack.
grep -qF "workers: $launcher client" "$work/job1.out" || fail "the workers were not started with $launcher"
grep -q "on GPUs 0,1 (job $job)" "$work/job1.out" ||
  fail "the worker was not given the job's GPUs 0,1 (CUDA_VISIBLE_DEVICES)"
flat_clients=$(tr -d ' \n' <"$work/clients.json")
[ "$(grep -o '"slurm_job_id"' <<<"$flat_clients" | wc -l)" -eq 1 ] ||
  fail "GET /clients should name the job id once for the one worker: $flat_clients"
grep -q "\"slurm_job_id\":\"$job\"" <<<"$flat_clients" || fail "GET /clients lacks job id $job"
record=$(tr -d ' \n' <"$work/record.json")
grep -q '"status":"done"' <<<"$record" || fail "the run did not finish: $record"
grep -qF "\"sums\":$expect" <<<"$record" || fail "sums are not $expect: $record"
grep -q "\"count\":$rows" <<<"$record" || fail "count is not $rows: $record"
wait_for 10 no_lizard_of_job "$job" || fail "lizard processes of job $job outlived it"
echo "job: sum of $rows rows on a Slurm job in $((SECONDS - t0)) s"

# --- 2. scancel stops a running job cleanly ---------------------------------
t0=$SECONDS
job=$(sbatch --parsable -N1 -n1 --gres=gpu:1 --chdir="$work" --output="$work/job2.out" \
  "$launcher" job --wait 60 --client-args "$client_args" -- sleep 600)
joined() { grep -q "worker(s) joined" "$work/job2.out" 2>/dev/null; }
wait_for 60 joined || fail "the long job's worker did not join"
[ "$(lizard_pids_of_job "$job" | wc -l)" -ge 2 ] || fail "no server and worker found for job $job"
scancel "$job"
# KillWait is 30 s: gone well before then means the launcher stopped them itself.
wait_for 15 job_gone "$job" || fail "job $job still listed 15 s after scancel"
wait_for 5 no_lizard_of_job "$job" || fail "lizard processes left after scancel: $(lizard_pids_of_job "$job")"
grep -q "lizard-slurm: stopped" "$work/job2.out" || fail "the launcher did not stop the cluster itself"
echo "scancel: job and its lizard processes gone in $((SECONDS - t0)) s"

# --- 2b. a SIGTERM while the launcher stops the cluster ----------------------
# Slurm signals a job's processes one by one: the command may end before the
# launcher gets its SIGTERM.  The command here ends by itself and has the
# launcher signalled as soon as it says so; the stopping still completes and
# the job keeps the command's exit status.
t0=$SECONDS
cat >"$work/late-term.sh" <<EOF
#!/usr/bin/env bash
launcher=\$PPID
(
  for _ in \$(seq 250); do grep -q "command exited" "$work/job-late.out" && break; sleep 0.02; done
  kill -TERM \$launcher
) </dev/null >/dev/null 2>&1 &
EOF
chmod +x "$work/late-term.sh"
job=$(sbatch --parsable -N1 -n1 --chdir="$work" --output="$work/job-late.out" \
  "$launcher" job --wait 60 --client-args "$client_args" -- "$work/late-term.sh")
wait_for 60 job_done "$job" || fail "job $job did not finish within 60 s"
grep -q "lizard-slurm: stopped (exit status 0)" "$work/job-late.out" ||
  fail "a SIGTERM while stopping cut the launcher short"
scontrol show job "$job" | grep -q "ExitCode=0:0" ||
  fail "job $job did not keep its command's exit status: $(scontrol show job "$job" | grep -o 'ExitCode=[^ ]*')"
wait_for 5 no_lizard_of_job "$job" || fail "lizard processes left: $(lizard_pids_of_job "$job")"
echo "late SIGTERM: the launcher stopped the cluster in $((SECONDS - t0)) s"

# --- 3. an array of workers for a long-lived server -------------------------
t0=$SECONDS
port=$(slurm_free_port)
"$lizard_bin" server --host 127.0.0.1 --port "$port" --state-dir "$work/server" >"$work/server.log" 2>&1 &
server_pid=$!
array=$("$launcher" workers -a 127.0.0.1 -p "$port" -n 2 --client-args "$client_args" -- \
  --chdir="$work" --output="$work/worker-%a.out" | tail -n 1)
clients_of_array() {
  curl -sf --max-time 10 "http://127.0.0.1:$port/clients" | tr -d ' \n' | grep -o '"slurm_job_id":"[0-9]*"' | sort -u | wc -l
}
two_joined() { [ "$(clients_of_array)" -eq 2 ]; }
wait_for 60 two_joined || fail "the two array workers did not join: $(curl -s "http://127.0.0.1:$port/clients")"
hash=$("$load_program" "$src/examples/sum" "http://127.0.0.1:$port")
record=$(curl -sf --max-time 60 -X POST "http://127.0.0.1:$port/runtime/$hash?wait=1" -d @"$work/run.json" | tr -d ' \n')
grep -qF "\"sums\":$expect" <<<"$record" || fail "sums on the array workers are not $expect: $record"
[ "$(grep -o '"worker":"w[0-9]*"' <<<"$record" | sort -u | wc -l)" -eq 2 ] ||
  fail "the run did not use both array workers: $record"
scancel "$array"
none_left() { [ "$(curl -sf --max-time 10 "http://127.0.0.1:$port/clients" | tr -d ' \n')" = "[]" ]; }
wait_for 15 none_left || fail "cancelled array workers still listed in GET /clients"
wait_for 15 job_gone "$array" || fail "array $array still listed after scancel"
wait_for 5 no_lizard_of_job "$array" array || fail "array workers left: $(lizard_pids_of_job "$array" array)"
echo "workers: array of 2 joined, served a run and left in $((SECONDS - t0)) s"
echo "PASSED in $((SECONDS - started)) s"
