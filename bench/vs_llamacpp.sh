#!/usr/bin/env bash
# Decode and prefill tokens/s of vramplan's `generate` and of llama.cpp on the same GGUF files,
# the two engines in turn, several times, same prompt length and thread count; prints each
# engine's median and vramplan's ratio to it. A measuring instrument, never run by CI.
#
#   LLAMACPP_BIN=/path/to/llama.cpp/build/bin bench/vs_llamacpp.sh
#
# LLAMACPP_BIN: the folder holding llama-bench from a CPU build of llama.cpp (built by hand under
#   build/peer/, e.g. cmake -DGGML_NATIVE=ON -DLLAMA_CURL=OFF; see bench/REPORT.md). Its own
#   timings are the yardstick: llama-bench's pp (prompt) and tg (generation) tokens/s.
# NODE_PEER=1: also install node-llama-cpp (pinned 3.21.1) under build/peer/node and time it with
#   the CPU backend it picks for this processor (bench/node_bench.mjs): its prefill, and its decode
#   one token per call through its lowest-level evaluation, whose time includes a JavaScript step
#   per call (llama-bench stays the yardstick for decode).
# FORMATS (q4_0 q8_0 q4_k_m: llama.cpp's Q4_K_M mix of Q4_K and Q6_K, random valid blocks), THREADS (2), RUNS (3), PROMPT (512 tokens), GEN (128 tokens),
# BUILD (build-bench: a Release build with benchmarks and examples), MODELS (build/peer/models).
set -euo pipefail
cd "$(dirname "$0")/.."

: "${LLAMACPP_BIN:?set LLAMACPP_BIN to the folder holding llama-bench (a CPU build of llama.cpp)}"
FORMATS=${FORMATS:-"q4_0 q8_0 q4_k_m"}
THREADS=${THREADS:-2}
RUNS=${RUNS:-3}
PROMPT=${PROMPT:-512}
GEN=${GEN:-128}
BUILD=${BUILD:-build-bench}
MODELS=${MODELS:-build/peer/models}
NODE_PEER=${NODE_PEER:-0}

[[ -x "$LLAMACPP_BIN/llama-bench" ]] || { echo "no llama-bench in $LLAMACPP_BIN" >&2; exit 2; }
if [[ ! -x "$BUILD/examples/generate" || ! -x "$BUILD/bench/vramplan_bench_model" ]]; then
    cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DVRAMPLAN_ENABLE_CUDA=OFF \
        -DVRAMPLAN_BUILD_TESTS=OFF -DVRAMPLAN_BUILD_BENCHMARKS=ON -DVRAMPLAN_BUILD_EXAMPLES=ON >/dev/null
    cmake --build "$BUILD" --target generate vramplan_bench_model
fi
mkdir -p "$MODELS"

if [[ "$NODE_PEER" == 1 && ! -d build/peer/node/node_modules/node-llama-cpp ]]; then
    mkdir -p build/peer/node
    (cd build/peer/node && npm init -y >/dev/null && npm i -E node-llama-cpp@3.21.1 >/dev/null)
fi

median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

# PROMPT tokens in all: the BOS generate adds, SentencePiece's leading space as its three UTF-8
# byte tokens, and one byte token per letter (bench_model's vocabulary has no merges to make).
prompt=$(printf 'a%.0s' $(seq 5 "$PROMPT"))

echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); threads $THREADS; runs $RUNS;" \
    "prompt $PROMPT tokens, $GEN generated"
for f in $FORMATS; do
    [[ -f "$MODELS/bench-$f.gguf" ]] || "$BUILD/bench/vramplan_bench_model" "$MODELS/bench-$f.gguf" "$f" >/dev/null
done
commit=$(git rev-parse --short HEAD)
git diff --quiet HEAD -- include bench examples || commit="$commit with uncommitted changes"
peer=$("$LLAMACPP_BIN/llama-bench" -m "$MODELS/bench-$(set -- $FORMATS; echo "$1").gguf" -p 0 -n 1 -r 1 -t "$THREADS" \
    -o csv 2>/dev/null | awk -F, 'NR == 2 {gsub(/"/, ""); print "build " $2 " (" $1 ")"}' || true)
echo "vramplan $commit; llama.cpp ${peer:-(version not read)}"
printf '%-6s %-22s %12s %12s\n' format engine prefill_t/s decode_t/s
for f in $FORMATS; do
    model="$MODELS/bench-$f.gguf"
    : >"$MODELS/.v_pp" && : >"$MODELS/.v_tg" && : >"$MODELS/.l_pp" && : >"$MODELS/.l_tg" && : >"$MODELS/.n_pp" && : >"$MODELS/.n_tg"
    for _ in $(seq "$RUNS"); do
        out=$("$BUILD/examples/generate" -m "$model" -p "$prompt" -n "$GEN" -t "$THREADS" --temp 0 2>/dev/null)
        sed -n 's/^prefill: .*(\([0-9.]*\) tokens\/s).*/\1/p' <<<"$out" >>"$MODELS/.v_pp"
        sed -n 's/^decode: .*(\([0-9.]*\) tokens\/s).*/\1/p' <<<"$out" >>"$MODELS/.v_tg"
        csv=$("$LLAMACPP_BIN/llama-bench" -m "$model" -p "$PROMPT" -n "$GEN" -t "$THREADS" -r 1 -o csv 2>/dev/null)
        # Columns n_prompt, n_gen and avg_ts, found by name in the header.
        awk -F, -v want=pp 'NR == 1 {for (i = 1; i <= NF; i++) c[$i] = i; next}
            {gsub(/"/, ""); if ((want == "pp") == ($c["n_gen"] == 0)) print $c["avg_ts"]}' <<<"$csv" >>"$MODELS/.l_pp"
        awk -F, -v want=tg 'NR == 1 {for (i = 1; i <= NF; i++) c[$i] = i; next}
            {gsub(/"/, ""); if ((want == "pp") == ($c["n_gen"] == 0)) print $c["avg_ts"]}' <<<"$csv" >>"$MODELS/.l_tg"
        if [[ "$NODE_PEER" == 1 ]]; then
            node_out=$(node bench/node_bench.mjs "$model" "$PROMPT" "$THREADS" "$GEN" 2>"$MODELS/.n_err" | tail -1) || true
            read -r npp ntg <<<"$node_out" || true
            if [[ ! "$npp" =~ ^[0-9.]+$ || ! "$ntg" =~ ^[0-9.]+$ ]]; then
                echo "node-llama-cpp printed no rates for $model (its messages: $MODELS/.n_err);" \
                    "run node bench/node_bench.mjs $model $PROMPT $THREADS $GEN to see why" >&2
                exit 1
            fi
            echo "$npp" >>"$MODELS/.n_pp" && echo "$ntg" >>"$MODELS/.n_tg"
        fi
    done
    vpp=$(median <"$MODELS/.v_pp") vtg=$(median <"$MODELS/.v_tg")
    lpp=$(median <"$MODELS/.l_pp") ltg=$(median <"$MODELS/.l_tg")
    printf '%-6s %-22s %12.1f %12.1f\n' "$f" vramplan "$vpp" "$vtg" "$f" llama.cpp "$lpp" "$ltg"
    if [[ "$NODE_PEER" == 1 ]]; then
        npp=$(median <"$MODELS/.n_pp") ntg=$(median <"$MODELS/.n_tg")
        printf '%-6s %-22s %12.1f %12.1f\n' "$f" node-llama-cpp-3.21.1 "$npp" "$ntg"
        printf '%-6s %-22s %12.2f %12.2f\n' "$f" "ratio vs node" \
            "$(awk -v a="$vpp" -v b="$npp" 'BEGIN {print a / b}')" "$(awk -v a="$vtg" -v b="$ntg" 'BEGIN {print a / b}')"
    fi
    printf '%-6s %-22s %12.2f %12.2f\n' "$f" "ratio vs llama.cpp" \
        "$(awk -v a="$vpp" -v b="$lpp" 'BEGIN {print a / b}')" "$(awk -v a="$vtg" -v b="$ltg" 'BEGIN {print a / b}')"
done
rm -f "$MODELS"/.v_pp "$MODELS"/.v_tg "$MODELS"/.l_pp "$MODELS"/.l_tg "$MODELS"/.n_pp "$MODELS"/.n_tg "$MODELS"/.n_err
