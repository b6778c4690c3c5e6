#!/usr/bin/env bash
# Decode speed of `generate` on a model of Llama-2-7B's widths (4096, feed-forward 11008, vocabulary
# 32000; 32 layers: 3.3 GB in Q4_0 with bench_model's grouped KV heads), written with random blocks by
# `vramplan_bench_model --fast`, for each weight format given. The bound to hold it against is the
# plan's weights plus KV bytes read once per token at the device's read rate (bench_cuda's
# read_GBps). Usage: bench/gpu_decode.sh [build-dir] [out-dir] [layers] [formats...]
# DEVICE=cpu runs the same on the CPU (a check of the script without a GPU). One log per format and
# layout: run it with an out-dir of its own, or gather the logs, where few files may come back.
set -euo pipefail
build=${1:-build}
out=${2:-gpu-check}
layers=${3:-32}
shift 3 2>/dev/null || shift $#
formats=("$@")
[ ${#formats[@]} -eq 0 ] && formats=(q4_0 q4_k_m)
mkdir -p "$out"
for f in "${formats[@]}"; do
    model=$(mktemp --suffix=".gguf")
    "$build/bench/vramplan_bench_model" --fast "$model" "$f" "$layers" 4096 11008 32000
    ls -l "$model"
    # A prompt of eight words, then 256 tokens: the decode rate is generate's own figure. On CUDA,
    # with the file's layout and with planes (kernels/weight_planes.hpp), in turn.
    layouts=(file)
    [ "${DEVICE:-cuda}" = cuda ] && layouts=(file planes)
    for layout in "${layouts[@]}"; do
        log="$out/decode-$f-$layout.txt"
        timeout 300 "$build/examples/generate" -m "$model" --device "${DEVICE:-cuda}" --weight-layout "$layout" -n 256 \
            -p "the quick brown fox jumps over the lazy dog" >"$log" 2>&1 || echo "rc=$?" >>"$log"
        echo "== $f $layout"
        grep -E "^plan|^decode|^prefill|rc=" "$log"
    done
    rm -f "$model"
done
