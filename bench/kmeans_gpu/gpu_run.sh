#!/usr/bin/env bash
# gpu_run.sh: the k-means benchmark of record, on a machine with an NVIDIA GPU.
# Runs kmeans_gpu (examples/kmeans through CudaExecutor) for every N and
# (K, D), then PyTorch on the same points (torch_lloyd.py), and prints the
# joint table: ms per iteration, % of the floor, ratio to PyTorch.  Logs and
# the JSON lines go to $OUT/kmeans_gpu (default: BUILD_DIR/kmeans_gpu).
#
#   bench/kmeans_gpu/gpu_run.sh [BUILD_DIR] [kmeans_gpu options: --sizes=... --shapes=...]
#   KMEANS_GPU_TF32_SHAPES=256x64 bench/kmeans_gpu/gpu_run.sh ...   # and those with --tf32=1
# The joint table is also written as JSON to $out/kmeans_gpu.json (for bench/save-result).
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
if [ -n "${KMEANS_GPU_TF32_SHAPES:-}" ]; then  # the same shapes again with TF32 distances
  same=()  # the same options but the shapes
  for a in "$@"; do [[ $a == --shapes=* || $a == --json=* ]] || same+=("$a"); done
  "$build/bench/kmeans_gpu" "${same[@]}" --json="$out/lizard.jsonl.tf32" --tf32=1 \
    --shapes="$KMEANS_GPU_TF32_SHAPES" 2>&1 | tee -a "$out/lizard.txt"
  cat "$out/lizard.jsonl.tf32" >>"$out/lizard.jsonl"
fi
PYTHONUNBUFFERED=1 python3 bench/kmeans_gpu/torch_lloyd.py --lizard "$out/lizard.jsonl" \
  --json "$out/kmeans_gpu.json" 2>&1 |
  tee "$out/table.txt"
