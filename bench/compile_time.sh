#!/usr/bin/env bash
# Compile time and peak memory of: the umbrella header alone; planning each preset at compile time
# (a static_assert on fits_v); the CUDA kernel translation units. For g++, clang++ and nvcc where
# present. Prints a markdown table. Usage: bench/compile_time.sh [build-dir]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
nvcc=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null || true)
measure() {  # prints "seconds peak_MiB" of compiling with the given command: the fastest of 3 runs
    local best="" peak=0 s kb
    for _ in 1 2 3; do
        /usr/bin/time -f "%e %M" -o "$work/time" "$@" >/dev/null 2>&1 || { echo "failed -"; return; }
        read -r s kb <"$work/time"
        if [ -z "$best" ] || awk "BEGIN{exit !($s < $best)}"; then best=$s; fi
        ((kb > peak)) && peak=$kb
    done
    echo "$best $((peak / 1024))"
}
measure_once() {  # for the slow CUDA translation units
    /usr/bin/time -f "%e %M" -o "$work/time" "$@" >/dev/null 2>&1 || { echo "failed -"; return; }
    read -r s kb <"$work/time"
    echo "$s $((kb / 1024))"
}
echo '#include <vramplan/vramplan.hpp>' >"$work/umbrella.cpp"
echo "| translation unit | compiler | seconds (fastest of 3; CUDA units: 1 run) | peak MiB |"
echo "|---|---|---|---|"
presets="llama2_7b llama2_13b llama3_8b llama31_70b mistral_7b qwen25_7b tinyllama_1b phi3_mini stories260k"
for cxx in g++ clang++; do
    command -v "$cxx" >/dev/null || continue
    flags="-std=c++20 -fsyntax-only -I$root/include"
    read -r s m <<<"$(measure $cxx $flags "$work/umbrella.cpp")"
    echo "| umbrella header alone | $cxx | $s | $m |"
    for p in $presets; do
        cat >"$work/$p.cpp" <<CPP
#include <vramplan/vramplan.hpp>
static_assert(vramplan::compile_time_plan<vramplan::presets::$p<vramplan::f16>, vramplan::targets::h100_80gb, vramplan::limits{.context = 8192}>.needed() > 0);
CPP
        read -r s m <<<"$(measure $cxx $flags "$work/$p.cpp")"
        echo "| plan $p at compile time | $cxx | $s | $m |"
    done
done
if [ -n "$nvcc" ]; then
    cp "$work/umbrella.cpp" "$work/umbrella.cu"
    read -r s m <<<"$(measure "$nvcc" -std=c++20 -arch=sm_90 -I"$root/include" -c "$work/umbrella.cu" -o "$work/u.o")"
    echo "| umbrella header alone | nvcc | $s | $m |"
    cp "$work/llama31_70b.cpp" "$work/plan70b.cu"
    read -r s m <<<"$(measure "$nvcc" -std=c++20 -arch=sm_90 -I"$root/include" -c "$work/plan70b.cu" -o "$work/p.o")"
    echo "| plan llama31_70b at compile time | nvcc | $s | $m |"
    cccl=$(dirname "$nvcc")/../include/cccl
    for tu in tests/cuda/cuda_test.cu examples/generate/cuda_engine.cu; do
        read -r s m <<<"$(measure_once "$nvcc" -std=c++20 --expt-relaxed-constexpr -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
            -I"$root/include" -I"$cccl" -I"$root/examples" -c "$root/$tu" -o "$work/k.o")"
        echo "| $tu (sm_80 + sm_90) | nvcc | $s | $m |"
    done
fi
