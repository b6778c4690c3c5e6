// The forward graph at compile time: its ops and the lifetimes the planner derives from them,
// checked against the op list written out by hand (steps are op indices).
#include "vramplan/model/decoder_graph.hpp"
#include "vramplan/model/presets.hpp"
#include "vramplan/plan/fits.hpp"
#include "vramplan/target/catalog.hpp"

namespace vp = vramplan;

namespace {
constexpr vp::decoder_shape llama3 = vp::presets::llama3_8b_entry.shape;
constexpr vp::forward_graph g = vp::decoder_graph(llama3);

constexpr std::size_t buffer(const vp::forward_graph& graph, std::string_view name) {
    for (std::size_t i = 0; i < graph.n_buffers; ++i)
        if (graph.buffers[i].name == name) return i;
    return vp::max_graph_buffers;
}
constexpr vp::buffer_span span(const vp::forward_graph& graph, std::string_view name) {
    return vp::buffer_spans(graph)[buffer(graph, name)];
}
constexpr bool spans(std::string_view name, std::uint16_t first, std::uint16_t last) {
    const auto s = span(g, name);
    return s.first == first && s.last == last;
}
}  // namespace

// 0 inputs, 1 embed, then per layer: 2 attn_norm, 3-5 q/k/v, 6-7 rope q/k, 8 kv_append,
// 9 attention, 10 attn_output, 11 add, 12 ffn_norm, 13-14 gate/up, 15 swiglu, 16 ffn_down,
// 17 add; then 18 output_norm, 19 output, 20 logits.
static_assert(g.n_ops == 21 && g.block_begin == 2 && g.block_end == 18 && g.n_buffers == 16);
static_assert(g.ops[9].kind == vp::op_kind::attention && g.ops[9].heads == 32 && g.ops[9].kv_heads == 8 &&
              g.ops[9].head_dim == 128);
static_assert(g.ops[13].kind == vp::op_kind::matmul && g.ops[13].n == 14336 && g.ops[13].k == 4096);
static_assert(g.ops[19].weight == vp::global_weight(vp::global_tensor::output) && g.ops[19].output_rows);

// The residual stream and the positions are used inside and outside the block: they live through
// the whole block (2..17) as well as from where they are written.
static_assert(spans("residual", 1, 18) && spans("positions", 0, 17) && spans("tokens", 0, 1));
// Block-local buffers live from their writer to their last reader.
static_assert(spans("attn_in", 2, 5) && spans("q", 3, 9) && spans("k", 4, 8) && spans("v", 5, 8) &&
              spans("attn_scratch", 9, 9));
static_assert(spans("attn_out", 9, 10) && spans("attn_proj", 10, 11) && spans("ffn_in", 12, 14) &&
              spans("gate", 13, 16));
static_assert(spans("up", 14, 15) && spans("ffn_proj", 16, 17) && spans("out_in", 18, 19) && spans("logits", 19, 20));

// Qwen2: q/k/v biases are three add_bias ops after the projections; its rope ops rotate NeoX pairs.
constexpr vp::forward_graph qwen = vp::decoder_graph(vp::presets::qwen25_7b_entry.shape);
static_assert(qwen.n_ops == g.n_ops + 3 && qwen.ops[6].kind == vp::op_kind::add_bias &&
              qwen.ops[6].weight == vp::layer_weight(vp::tensor_role::attn_q_bias) &&
              qwen.ops[9].kind == vp::op_kind::rope && qwen.ops[9].neox);
static_assert(!g.ops[6].neox);
// Llama 3.1's rope ops read rope_freqs.weight; a tied head reads token_embd.
static_assert(vp::decoder_graph(vp::presets::llama31_8b_entry.shape).ops[6].weight ==
              vp::global_weight(vp::global_tensor::rope_freqs));
static_assert(g.ops[6].weight.scope == vp::weight_scope::none);
constexpr vp::decoder_shape tied = [] {
    vp::decoder_shape s = llama3;
    s.tied_output = true;
    return s;
}();
static_assert(vp::decoder_graph(tied).ops[19].weight == vp::global_weight(vp::global_tensor::token_embd));
// Linear RoPE scaling by 4 is a quarter of the rotation.
constexpr vp::decoder_shape linear4 = [] {
    vp::decoder_shape s = llama3;
    s.scaling = vp::rope_scaling::linear;
    s.scaling_factor = 4.0f;
    return s;
}();
static_assert(vp::decoder_graph(linear4).ops[6].freq_scale == 0.25f && g.ops[6].freq_scale == 1.0f);

// The plan's activation buffers are the graph's, and compile-time and run-time graphs agree.
constexpr auto ct = vp::compile_time_plan<vp::presets::llama3_8b<vp::q4_0, vp::f16>, vp::targets::rtx_4060_8gb,
                                          vp::limits{.context = 8192}>;
static_assert(ct.graph == g && ct.act[buffer(g, "gate")].bytes == 512ull * 14336 * 4 &&
              ct.act[buffer(g, "gate")].first == 13);
// Fused attention's states at 8192 tokens: max(512 tokens, 32 splits) rows x 32 heads x (128 + 2) floats.
static_assert(ct.act[buffer(g, "attn_scratch")].bytes == 512ull * 32 * 130 * 4);
