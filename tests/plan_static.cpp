// Compile-time planning, within the compilers' default constexpr limits (no flags raised).
#include "vramplan/model/presets.hpp"
#include "vramplan/plan/fits.hpp"
#include "vramplan/target/catalog.hpp"

namespace vp = vramplan;
using namespace vramplan::presets;

constexpr vp::limits ctx8k{.context = 8192, .batch = 1, .ubatch = 512};

// Llama-3-8B with Q4_0 weights and an f16 cache at 8192 tokens fits an 8 GiB RTX 4060.
static_assert(vp::fits<llama3_8b<vp::q4_0, vp::f16>, vp::targets::rtx_4060_8gb, ctx8k>);
// Weights 4,517,937,152 + KV 1,073,741,824 + activations 75,499,520 (peak at gate+up: residual,
// positions, ffn_in, gate, up) + reserve 536,870,912.
static_assert(vp::compile_time_plan<llama3_8b<vp::q4_0, vp::f16>, vp::targets::rtx_4060_8gb, ctx8k>.needed() ==
              6'204'049'408);
// The whole of Llama-3.1-70B plans at compile time; in Q4_0 it needs 43,063,216,384 bytes, far
// more than a 24 GiB RTX 4090 (256 of them are rope_freqs.weight: 64 f32 RoPE divisors).
constexpr auto big = vp::compile_time_plan<llama31_70b<vp::q4_0, vp::f16>, vp::targets::rtx_4090, ctx8k>;
static_assert(!vp::fits_v<llama31_70b<vp::q4_0, vp::f16>, vp::targets::rtx_4090, ctx8k>);
static_assert(big.needed() == 43'063'216'384 && big.shortfall() == 43'063'216'384 - 25'769'803'776);
// ... and with 43 of 80 layers resident (the rest streamed) it does.
static_assert(vp::auto_gpu_layers(big) == 43);
static_assert(
    vp::plan_auto_offload(llama31_70b<vp::q4_0, vp::f16>::describe(), vp::targets::rtx_4090::value, ctx8k).fits());
// A custom target is one short struct.
struct board {
    static constexpr vp::target_desc value{.name = "board", .capacity = 2ull << 20, .reserve = 0};
};
static_assert(vp::fits<stories260k<vp::f32, vp::f16>, board, vp::limits{.context = 256, .ubatch = 64}>);
static_assert(!vp::fits_v<stories260k<vp::f32, vp::f16>, board, vp::limits{.context = 2048, .batch = 2}>);

// Qwen3-30B-A3B (128 experts of 768 per layer) in Q4_K with an f16 cache of 32768 tokens fits a
// 24 GiB RTX 4090: its 48 layers are one kind.
static_assert(vp::fits<qwen3_30b_a3b<vp::q4_k>, vp::targets::rtx_4090, vp::limits{.context = 32768}>);
static_assert(qwen3_30b_a3b<vp::q4_k>::describe().n_kinds == 1);
// Llama-4-Scout's text model (16 experts of 8192 and a shared expert in each of 48 layers) in Q4_K
// fits an H200 at 131072 tokens: 12 global layers hold the context, the 36 chunked ones 8192 + 511
// positions; it does not fit an RTX 4090 whole.
constexpr vp::limits ctx128k{.context = 131072, .ubatch = 512};
static_assert(vp::fits<llama4_scout<vp::q4_k>, vp::targets::h200_141gb, ctx128k>);
static_assert(vp::compile_time_plan<llama4_scout<vp::q4_k>, vp::targets::h200_141gb, ctx128k>.gpu.kv.bytes ==
              (12ull * 131072 + 36ull * 8703) * 8 * 128 * 2 * 2);
static_assert(!vp::fits_v<llama4_scout<vp::q4_k>, vp::targets::rtx_4090, ctx8k>);
// 80 layers of two alternating kinds (Llama-3.1-70B's shape with Gemma 2's local/global pattern)
// plan at compile time: 40 global layers of 8192 positions, 40 local ones of 4096 + 511, each
// position 8 KV heads x 128 x 2 bytes, K and V.
constexpr vp::decoder_shape alternating = [] {
    vp::decoder_shape s = llama31_70b_entry.shape;
    s.sliding_window = 4096;
    s.window_period = 2;
    return s;
}();
constexpr auto alternating_plan =
    vp::plan_inference(vp::make_model("alternating", alternating, vp::uniform_policy(vp::format{vp::format_id::q4_0})),
                       vp::targets::rtx_4090::value, ctx8k);
static_assert(alternating_plan.model.n_kinds == 2);
static_assert(alternating_plan.gpu.kv.bytes == 40ull * (8192 + 4607) * 8 * 128 * 2 * 2);
