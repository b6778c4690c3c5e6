#!/usr/bin/env bash
# Installs, on Debian 12 as root, the packages vramplan's build, tests and examples need; does
# nothing when they are all present. CUDA is not installed: it is optional and comes from NVIDIA.
set -euo pipefail
packages=(cmake ninja-build g++ clang libclang-rt-14-dev libboost-dev doctest-dev libbenchmark-dev nlohmann-json3-dev libcli11-dev libfmt-dev)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
    echo "install-deps: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
