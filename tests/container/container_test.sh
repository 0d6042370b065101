#!/usr/bin/env bash
# The container image as an operator uses it: scripts/image builds it from the
# package of the build tree at hand (cpack: no second build) under a tag of
# its own; then its labels, health check and size; a server container and two
# CPU worker containers on a podman network; examples/kmeans registered and
# run from the host with `lizard run` against the published port, centroids
# checked; the server container replaced by a new one on the same state
# volume, which lists the run and serves its record (GET /runtimes).  Everything it made is removed at exit.
# Skipped (77) where podman is absent; needs root (debootstrap, chroot).
#
#   tests/container/container_test.sh BUILD_DIR VERSION
set -euo pipefail

build=$(readlink -f "$1")
version=$2
src=$(readlink -f "$(dirname "$0")/../..")
if ! command -v podman >/dev/null 2>&1; then
  echo "SKIPPED: podman is not installed (scripts/bootstrap installs it)"
  exit 77
fi
[ "$(id -u)" -eq 0 ] || { echo "FAILED: the container test runs as root (debootstrap, chroot)" >&2; exit 1; }

t0=$SECONDS
work=$(mktemp -d "${TMPDIR:-/tmp}/lizard-container-test.XXXXXX")
id=lizard-test-$$-$RANDOM
image=localhost/$id:$version
net=$id-net vol=$id-state
server=$id-server workers=("$id-w1" "$id-w2")
token=$(head -c 18 /dev/urandom | base64 | tr '+/' '-_')
# podman's defaults that some hosts refuse: limits it cannot raise, and crun
# where the host's cgroups do not suit it.
{
  echo '[containers]'
  echo 'default_ulimits = []'
  if command -v runc >/dev/null; then
    echo '[engine]'
    echo 'runtime = "runc"'
  fi
} >"$work/containers.conf"
export CONTAINERS_CONF=$work/containers.conf

cleanup() {
  local status=$?
  if [ "$status" -ne 0 ]; then
    for c in "$server" "${workers[@]}"; do
      podman container exists "$c" 2>/dev/null && { echo "---- podman logs $c"; podman logs --tail 30 "$c" 2>&1; }
    done
    for f in "$work"/*.log; do [ -f "$f" ] && { echo "---- $f"; tail -n 30 "$f"; }; done
  fi
  podman rm -f -t 2 "$server" "${workers[@]}" >/dev/null 2>&1 || true
  podman network rm -f "$net" >/dev/null 2>&1 || true
  podman volume rm -f "$vol" >/dev/null 2>&1 || true
  podman rmi -f "$image" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "FAILED: $*" >&2
  exit 1
}
# Waits up to $1 seconds for the command after it to succeed.
wait_for() {
  local deadline=$((SECONDS + $1))
  shift
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || return 1
    sleep 0.5
  done
}

# --- the image ----------------------------------------------------------------
(cd "$work" && cpack -G DEB -B "$work/pkg" --config "$build/CPackConfig.cmake" >"$work/cpack.log" 2>&1) ||
  fail "cpack failed: $(tail -n 20 "$work/cpack.log")"
deb=$work/pkg/lizard_${version}_amd64.deb
"$src/scripts/image" --deb "$deb" --tag "$image" --cache "$build/image-cache" 2>&1 | tee "$work/image.log" ||
  fail "scripts/image failed"
label() { podman image inspect --format "{{index .Labels \"org.opencontainers.image.$1\"}}" "$image"; }
[ "$(label version)" = "$version" ] || fail "label version is '$(label version)'"
[ -n "$(label revision)" ] || fail "no revision label"
got=$(podman image inspect --format '{{.Config.User}} {{json .Config.Entrypoint}}' "$image")
[ "$got" = 'lizard ["/usr/bin/lizard"]' ] || fail "user and entrypoint: $got"
podman image inspect --format '{{json .HealthCheck}}' "$image" | grep -q /usr/share/lizard/container/healthcheck ||
  fail "no health check: $(podman image inspect --format '{{json .HealthCheck}}' "$image")"
size=$(podman image inspect --format '{{.Size}}' "$image")
[ "$size" -le 250000000 ] || fail "the image is $((size / 1000000)) MB, more than 250 MB"
got=$(podman run --rm "$image" --version)
[ "$got" = "lizard $version" ] || fail "lizard --version printed '$got'"
got=$(podman run --rm --entrypoint id "$image")
[[ "$got" == "uid="*"(lizard) gid="*"(lizard)"* ]] || fail "the container runs as '$got'"
# The Kubernetes manifests name the same user and group by number.
uid=$(podman run --rm --entrypoint id "$image" -u) gid=$(podman run --rm --entrypoint id "$image" -g)
for f in "$src"/packaging/kubernetes/*.yaml; do
  grep -q "runAsUser: $uid$" "$f" && grep -q "runAsGroup: $gid$" "$f" ||
    fail "$(basename "$f") does not run as the image's user $uid:$gid"
done
echo "image: $((size / 1000000)) MB, built in $((SECONDS - t0)) s"

# --- a server and two workers on a network --------------------------------------
podman network create "$net" >/dev/null
podman volume create "$vol" >/dev/null
start_server() {
  podman run -d --name "$server" --network "$net" -v "$vol:/var/lib/lizard" -p 127.0.0.1::5000 \
    -e LIZARD_TOKEN="$token" "$image" server >/dev/null
  port=$(podman port "$server" 5000 | head -n 1 | sed 's/.*://')
  uri=http://127.0.0.1:$port
  wait_for 30 curl -sf --max-time 2 "$uri/ruok" || fail "the server container does not answer $uri/ruok"
}
start_server
address=$(podman inspect --format "{{(index .NetworkSettings.Networks \"$net\").IPAddress}}" "$server")
for w in "${workers[@]}"; do
  podman run -d --name "$w" --network "$net" -e LIZARD_TOKEN="$token" "$image" \
    client -a "$address" --backend cpu --cpu-threads 1 >/dev/null
done
workers_joined() { [ "$(curl -sf --max-time 2 "$uri/clients" | tr -d ' \n' | grep -o '"id":"w' | wc -l)" -ge 2 ]; }
wait_for 60 workers_joined || fail "the workers did not join: $(curl -s "$uri/clients")"
podman healthcheck run "$server" >"$work/health.log" 2>&1 || fail "the server container is not healthy: $(cat "$work/health.log")"
podman healthcheck run "${workers[0]}" >"$work/health.log" 2>&1 || fail "a worker container is not healthy: $(cat "$work/health.log")"
echo "cluster: server at $uri ($address on $net), 2 workers joined, healthy, at $((SECONDS - t0)) s"

# --- examples/kmeans from the host --------------------------------------------
# Two clusters of four corners each, 50 times over: centroids (0.5, 0.5) and
# (10.5, 10.5) from starting points (0, 0) and (10, 10).
for _ in $(seq 50); do printf '0,0\n1,0\n0,1\n1,1\n10,10\n11,10\n10,11\n11,11\n'; done >"$work/points.csv"
LIZARD_TOKEN=$token timeout 120 "$build/lizard" run "$src/examples/kmeans" -a "$uri" -q --json \
  --param k=2 --param dims=2 --dataset "points=$work/points.csv" --state centroids=0,0,10,10 \
  >"$work/record.json" 2>"$work/run.log" || fail "lizard run failed: $(cat "$work/run.log")"
record=$(tr -d ' \n' <"$work/record.json")
grep -q '"status":"done"' <<<"$record" || fail "the run did not finish: $record"
grep -qF '"centroids":[[0.5,0.5],[10.5,10.5]]' <<<"$record" || fail "wrong centroids: $record"
run_id=$({ grep -o '"runtime_id":"r[0-9]*"' <<<"$record" || true; } | head -n 1 | cut -d'"' -f4)
[ -n "$run_id" ] || fail "no runtime_id in the record: $record"
executors=$({ grep -o '"worker":"w[0-9]*"' <<<"$record" || true; } | sort -u | wc -l)
echo "run: $run_id on $executors worker(s), centroids [[0.5,0.5],[10.5,10.5]], at $((SECONDS - t0)) s"

# --- a new server container on the same volume -----------------------------------
podman stop -t 10 "$server" >/dev/null
podman rm "$server" >/dev/null
start_server
runs=$(curl -sf --max-time 5 "$uri/runtimes" | tr -d ' \n') || fail "GET /runtimes failed"
grep -q "\"$run_id\"" <<<"$runs" || fail "the new server lists no $run_id: $runs"
record=$(curl -sf --max-time 5 "$uri/runtimes/$run_id" | tr -d ' \n') || fail "GET /runtimes/$run_id failed"
grep -q '"status":"done"' <<<"$record" || fail "the record of $run_id is not done: $record"
grep -qF '"centroids":[[0.5,0.5],[10.5,10.5]]' <<<"$record" || fail "the record lost its centroids: $record"
echo "restart: the new server container has the record of $run_id"
echo "PASSED in $((SECONDS - t0)) s"
