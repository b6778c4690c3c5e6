#!/usr/bin/env bash
# Nsight Compute on single matrix-vector benchmarks (the GPU machine has ncu; it reads counters on
# Firecracker machines, not on gVisor ones). Leaves the clocks alone (--clock-control none).
# Usage: bench/gpu_profile.sh [build-dir] [out-dir] [benchmark-regex ...]
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
out=${2:-$root/gpu-check}
shift 2 || true
mkdir -p "$out"
n=0
for filter in "$@"; do
    n=$((n + 1))
    # The first launch of each timing loop is a warm-up; profile the third matrix launch.
    timeout 120 ncu --clock-control none -k regex:'matmul_(staged|chunked|elementwise)' --launch-skip 2 --launch-count 1 \
        --section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis_Tables \
        --section ComputeWorkloadAnalysis --section Occupancy --section LaunchStats \
        "$build/bench/vramplan_bench_cuda" --benchmark_filter="$filter" >"$out/profile$n.txt" 2>&1
    echo "$filter rc=$?" >>"$out/profile$n.txt"
done
