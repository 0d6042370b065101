#!/usr/bin/env bash
# gpu_run.sh: the k-means benchmark of record, on a machine with an NVIDIA GPU.
# Runs kmeans_gpu (examples/kmeans through CudaExecutor) for every N and
# (K, D), then PyTorch on the same points (torch_lloyd.py), and prints the
# joint table: ms per iteration, % of the floor, ratio to PyTorch.  Logs and
# the JSON lines go to $OUT/kmeans_gpu (default: BUILD_DIR/kmeans_gpu).
#
#   bench/kmeans_gpu/gpu_run.sh [BUILD_DIR] [kmeans_gpu options: --sizes=... --shapes=...]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build-gpu}
shift || true
out=${OUT:-$build}/kmeans_gpu
mkdir -p "$out"
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,memory.total \
    --format=csv | tee "$out/device.txt"
fi
"$build/bench/kmeans_gpu" --json="$out/lizard.jsonl" "$@" 2>&1 | tee "$out/lizard.txt"
PYTHONUNBUFFERED=1 python3 bench/kmeans_gpu/torch_lloyd.py --lizard "$out/lizard.jsonl" 2>&1 |
  tee "$out/table.txt"
