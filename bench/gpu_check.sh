#!/usr/bin/env bash
# The checks that need a GPU, in one run (about 45 s on an H200): the CUDA test binary, the CUDA
# benchmarks, generate on CUDA against CPU (resident, streamed, each KV format) and
# compute-sanitizer. Writes its logs to OUT_DIR; bench/REPORT-cuda.md is written from them.
# Usage: bench/gpu_check.sh [build-dir] [out-dir] [models-dir]
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
out=${2:-$root/gpu-check}
models=${3:-$root/../shared/models}
mkdir -p "$out"
nvidia-smi --query-gpu=name,memory.total,memory.free,clocks.max.sm,clocks.max.mem --format=csv >"$out/info.txt" 2>&1
timeout 100 "$build/tests/vramplan_cuda_tests" --duration=true >"$out/tests.txt" 2>&1
echo "tests rc=$?" >>"$out/tests.txt"
timeout 120 "$build/bench/vramplan_bench_cuda" >"$out/bench.txt" 2>&1
echo "bench rc=$?" >>"$out/bench.txt"
for m in stories260K stories260K-q8_0 stories260K-q4_0 stories260K-wide-q4_k_m stories260K-moe-f32; do
    [ -f "$models/$m.gguf" ] || continue
    extra=()
    [ "$m" = stories260K-moe-f32 ] && extra=("--device cuda --host-experts all" "--device cuda --host-experts 2")
    # A budget above the device is a cap, not a demand: the 1.2 MiB plan runs (a plan above what is
    # free is refused before allocation: the CUDA test)
    [ "$m" = stories260K ] && extra=("--device cuda --device-budget 1TiB")
    # Quantized matrices held in planes (kernels/weight_planes.hpp), resident and streamed.
    case $m in *q4_0 | *q8_0 | *q4_k_m) extra=("--device cuda --weight-layout planes"
                                              "--device cuda --weight-layout planes --device-budget 600KiB") ;; esac
    for args in "--device cpu" "--device cuda" "--device cuda --device-budget 600KiB" "--device cpu --kv q8_0" "--device cuda --kv q8_0" \
                "--device cpu --kv q4_0" "--device cuda --kv q4_0" "${extra[@]}"; do
        echo "=== $m $args"
        # shellcheck disable=SC2086
        timeout 20 "$build/examples/generate" -m "$models/$m.gguf" -n 32 $args
        echo "rc=$?"
    done
done >"$out/generate.txt" 2>&1
{
    timeout 60 compute-sanitizer --tool memcheck "$build/tests/vramplan_cuda_tests" -tc="CUDA fused*,CUDA matmul*,a CUDA backend that holds planes*"
    [ -f "$models/stories260K.gguf" ] && timeout 30 compute-sanitizer --tool racecheck "$build/examples/generate" -m "$models/stories260K.gguf" -n 4 --device cuda
    for m in stories260K-wide-q4_k_m stories260K-moe-f32; do  # the K-quant and expert kernels
        [ -f "$models/$m.gguf" ] && timeout 60 compute-sanitizer --tool memcheck "$build/examples/generate" -m "$models/$m.gguf" -n 4 --device cuda
    done
    [ -f "$models/stories260K-wide-q4_k_m.gguf" ] && timeout 60 compute-sanitizer --tool memcheck "$build/examples/generate" \
        -m "$models/stories260K-wide-q4_k_m.gguf" -n 4 --device cuda --weight-layout planes
} >"$out/sanitizer.txt" 2>&1
{  # the real NVML: this machine's GPU, and a plan against what is free on it
    "$build/examples/vramplan" gpus --local
    "$build/examples/vramplan" gpus --local --json
    "$build/examples/vramplan" plan -m llama-3-8b -g local --weights q4_0 --ctx 8192
    echo "rc=$?"
} >"$out/local.txt" 2>&1
grep -E "test cases|assertions|rc=" "$out/tests.txt"
grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$out/sanitizer.txt"
