// The plain, structural description every planner function takes: numbers and format values, no
// types. Compile-time models (layers.hpp) produce one with describe(); GGUF files and config.json
// produce one at run time. One description, one planner.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "vramplan/error.hpp"
#include "vramplan/format/checked_math.hpp"
#include "vramplan/format/format.hpp"
#include "vramplan/model/tensor_role.hpp"

namespace vramplan {

inline constexpr std::size_t max_layers = 256;      // Llama-3.1-405B has 126
inline constexpr std::size_t max_block_kinds = 16;  // distinct layer kinds (formats x variants) in one model

// RoPE scaling as GGUF's {arch}.rope.scaling.type names it. Linear scaling divides positions by a
// factor; YaRN and others are known so the runtime can refuse them by name (the planner needs
// nothing from them: scaling costs no memory).
enum class rope_scaling : std::uint8_t { none, linear, yarn, unknown };

constexpr std::string_view rope_scaling_name(rope_scaling r) {
    switch (r) {
        case rope_scaling::none: return "none";
        case rope_scaling::linear: return "linear";
        case rope_scaling::yarn: return "yarn";
        case rope_scaling::unknown: break;
    }
    return "unknown";
}

// The scaling a name denotes, as GGUF's rope.scaling.type and config.json's rope_scaling.rope_type
// spell it ("default" is config.json's none); any other name is unknown, so it can be refused.
constexpr rope_scaling rope_scaling_by_name(std::string_view n) {
    if (n == "none" || n == "default") return rope_scaling::none;
    if (n == "linear") return rope_scaling::linear;
    if (n == "yarn") return rope_scaling::yarn;
    return rope_scaling::unknown;
}

struct decoder_shape {
    std::uint64_t n_vocab = 0;
    std::uint64_t n_embd = 0;
    std::uint64_t n_layer = 0;
    std::uint64_t n_head = 0;
    std::uint64_t n_head_kv = 0;
    std::uint64_t head_dim = 0;
    std::uint64_t n_ff = 0;
    bool qkv_bias = false;
    bool tied_output = false;  // the output head reuses token_embd
    float rope_base = 10000.0f;
    float norm_eps = 1e-5f;
    // The longest context the model was trained for (GGUF {arch}.context_length, config.json
    // max_position_embeddings); 0 when unknown. It costs no memory: the planner sizes what is
    // asked, and a caller warns when that is more than the model can use.
    std::uint64_t n_ctx_train = 0;
    // Llama 3.1's RoPE scaling: a global rope_freqs.weight tensor (head_dim / 2 f32 divisors of the
    // rotation frequencies). Its bytes are weights; it is a fixed buffer, not a parameter.
    bool rope_freqs = false;
    rope_scaling scaling = rope_scaling::none;
    float scaling_factor = 1.0f;  // linear: positions are divided by it
    bool rope_neox = false;       // RoPE pairs (i, i + head_dim/2), GPT-NeoX style (Qwen2), not (2i, 2i+1)
    // LongRoPE (Phi-3 128k, Phi-3.5): rope_factors_long.weight and rope_factors_short.weight, head_dim
    // / 2 f32 factors each; buffers, not parameters, like rope_freqs.
    bool rope_factors = false;

    // Mixture of experts: each layer's feed-forward is n_expert SwiGLU experts of n_ff_expert, of
    // which the router picks n_expert_used per token (n_expert = 0: a dense feed-forward of n_ff).
    // An optional shared expert of n_ff_shared runs for every token; Qwen2-MoE scales its output
    // by a sigmoid gate (ffn_gate_inp_shexp). norm_topk_prob: the chosen experts' weights are
    // renormalized to sum to 1 (Mixtral, Qwen3-MoE), or not (Qwen2-MoE). It costs no memory.
    std::uint64_t n_expert = 0;
    std::uint64_t n_expert_used = 0;
    std::uint64_t n_ff_expert = 0;
    std::uint64_t n_ff_shared = 0;
    bool shared_expert_gate = false;
    bool norm_topk_prob = true;
    // Llama 4's block: each chosen expert is weighed by the sigmoid of its router logit, applied to
    // the expert's input rather than its output, and the global layers use no RoPE. It costs no
    // memory; the forward graph does not express it yet, so the forward pass refuses such a model.
    bool llama4_block = false;
    // Dense layers among the expert layers: the first n_dense_lead layers (DeepSeek's
    // first_k_dense_replace, a prefix of Qwen-MoE's mlp_only_layers), and with moe_every = P > 1
    // only every P-th layer (layer % P == P - 1: Qwen-MoE's decoder_sparse_step, Llama 4's
    // interleave_moe_layer_step) has experts. Dense layers are n_ff wide.
    std::uint64_t n_dense_lead = 0;
    std::uint64_t moe_every = 0;

    // Sliding-window attention: a layer attends to the last `sliding_window` positions (each query
    // sees itself and window - 1 before it). window_period = 0: every layer slides (Mistral v0.1,
    // Phi-3); P > 0: every P-th layer (layer % P == P - 1) attends to the whole context and the
    // others slide (Gemma 2: P = 2, Gemma 3: P = 6, gpt-oss: P = 2).
    std::uint64_t sliding_window = 0;
    std::uint64_t window_period = 0;
    // Chunked attention (Llama 4's local layers): the positions are cut into chunks of
    // attention_chunk tokens and a query attends to the earlier positions of its own chunk only.
    // window_period places the global layers as for sliding windows (Llama 4: P = 4).
    std::uint64_t attention_chunk = 0;

    bool qk_norm = false;     // RMSNorm of each q and k head before RoPE (Qwen3, Gemma 3)
    bool post_norms = false;  // RMSNorm of each sublayer's output before its residual add (Gemma 2/3)
    bool gelu = false;        // the feed-forward gate is GELU (tanh form), not SiLU (Gemma)
    // Gemma's numbers that cost no memory: the token embedding scaled by sqrt(n_embd) before the
    // first block; attention scores and the final logits soft-capped to c tanh(x / c) (Gemma 2:
    // 50 and 30; 0: not capped); the softmax scale 1 / sqrt(query_pre_attn_scalar) instead of
    // 1 / sqrt(head_dim) (0: head_dim); and, in Gemma 3, sliding layers rotating with their own
    // RoPE base and no scaling (rope_base_local; 0: as the global layers).
    bool embed_scale = false;
    float attn_softcap = 0.0f;
    float final_softcap = 0.0f;
    float query_pre_attn_scalar = 0.0f;
    float rope_base_local = 0.0f;
    // Phi-3 stores q, k and v as one matrix (attn_qkv) and the gate and up projections as one
    // (ffn_up of 2 n_ff rows, the gate first); the bytes are those of the separate matrices.
    bool fused_qkv = false;
    bool fused_gate_up = false;
    // gpt-oss: each attending layer has attention sinks, one learned logit per query head that
    // takes part in every softmax (attn_sinks, n_head f32 values: parameters, as its card counts);
    // a bias on the attention output (attn_output_bias); and biases on the router and on every
    // expert's three projections (expert_bias). Its experts' gate is SwiGLU with a clamp, which
    // costs no memory; the forward graph does not express it, so the forward pass refuses it.
    bool attn_sinks = false;
    bool attn_output_bias = false;
    bool expert_bias = false;

    // Multi-head latent attention (DeepSeek-V2/V3, Kimi-K2; kv_lora_rank > 0): each query and key
    // head is head_dim = qk_nope + rope_dim wide, of which rope_dim values are rotated; values are
    // v_head_dim wide. q comes from the input through a q_lora_rank bottleneck (0: straight, as in
    // DeepSeek-V2-Lite). Keys and values are not cached: each token's layer caches its latent
    // (kv_lora_rank values) and the rotated key part its heads share (rope_dim values), one row of
    // kv_lora_rank + rope_dim in one plane, and attention reads the keys' unrotated parts and the
    // values out of the latent through attn_k_b and attn_v_b ("absorbed", as DeepSeek-V2's paper,
    // section 2.1.3, describes and as llama.cpp, vLLM and SGLang cache it). n_head_kv is 1 (the
    // latent is one head that every query head reads).
    std::uint64_t q_lora_rank = 0;
    std::uint64_t kv_lora_rank = 0;
    std::uint64_t rope_dim = 0;
    std::uint64_t v_head_dim = 0;
    // DeepSeek-V3: exp_probs_b.bias, one value per expert that steers the choice of experts.
    bool expert_probs_bias = false;

    // Mamba-2 layers among the attention layers (Granite-4.0-H; recurrent_layers marks them, one bit
    // per layer). Such a layer mixes tokens with a causal convolution of ssm_conv_kernel taps over
    // ssm_inner + 2 ssm_groups ssm_state channels and a selective scan of ssm_heads heads (each
    // ssm_inner / ssm_heads wide) whose state is ssm_state values per channel, between an input
    // projection (ssm_in: z, x, B, C and one dt per head) and an output projection (ssm_out). It
    // keeps no KV: each sequence carries the convolution's last ssm_conv_kernel - 1 inputs and the
    // scan's state, whose size does not depend on the context (footprint.hpp).
    std::array<std::uint64_t, 4> recurrent_layers{};  // bit l % 64 of word l / 64: layer l is Mamba-2
    std::uint64_t ssm_conv_kernel = 0;
    std::uint64_t ssm_inner = 0;
    std::uint64_t ssm_state = 0;
    std::uint64_t ssm_groups = 0;
    std::uint64_t ssm_heads = 0;
    bool ssm_conv_bias = false;  // ssm_conv1d.bias, one value per convolved channel

    // False for an architecture vramplan has no forward graph for (a GGUF file of another
    // architecture): its tensors are planned as opaque bytes per layer and globally, its KV from
    // the generic keys, and no activations; every report says so.
    bool activations_planned = true;

    friend constexpr bool operator==(const decoder_shape&, const decoder_shape&) = default;

    constexpr bool latent_attention() const { return kv_lora_rank != 0; }
    constexpr bool is_recurrent(std::uint64_t l) const {
        return l < max_layers && (recurrent_layers[l / 64] >> (l % 64) & 1) != 0;
    }
    constexpr void set_recurrent(std::uint64_t l, bool on = true) {
        if (l >= max_layers) throw error("vramplan plans at most 256 layers");
        const std::uint64_t bit = std::uint64_t{1} << (l % 64);
        recurrent_layers[l / 64] = on ? recurrent_layers[l / 64] | bit : recurrent_layers[l / 64] & ~bit;
    }
    constexpr bool hybrid() const {
        return (recurrent_layers[0] | recurrent_layers[1] | recurrent_layers[2] | recurrent_layers[3]) != 0;
    }
    // Mamba-2's widths: the channels the convolution runs over (x, B and C), and ssm_in's output
    // (z, those channels, and one dt per head).
    constexpr std::uint64_t ssm_conv_channels() const {
        return checked_add(ssm_inner, checked_mul(checked_mul(ssm_groups, ssm_state), 2));
    }
    constexpr std::uint64_t ssm_in_dim() const {
        return checked_add(checked_add(ssm_inner, ssm_conv_channels()), ssm_heads);
    }
    constexpr std::uint64_t q_dim() const { return checked_mul(n_head, head_dim); }
    // One cached row of one token in one layer: a K (or V) row, or MLA's latent and rotated key.
    constexpr std::uint64_t kv_dim() const {
        return latent_attention() ? checked_add(kv_lora_rank, rope_dim) : checked_mul(n_head_kv, head_dim);
    }
    // Planes a layer's cache holds: K and V, or MLA's one.
    constexpr std::uint64_t kv_planes() const { return latent_attention() ? 1 : 2; }
    // The attention output's width, which the output projection reads.
    constexpr std::uint64_t v_dim() const { return checked_mul(n_head, v_head_dim ? v_head_dim : head_dim); }
    constexpr std::uint64_t qk_nope_dim() const { return head_dim - rope_dim; }
    // Positions past n_ctx_train were never seen in training: without RoPE scaling, output degrades.
    constexpr bool beyond_trained_context(std::uint64_t context) const {
        return n_ctx_train != 0 && context > n_ctx_train;
    }
};

// How a layer attends: over the whole context, over a sliding window or within its chunk (its cache
// holds only what the window or chunk needs), not at all, or not by attention but by a recurrent
// Mamba-2 mixer in its place (a fixed state per sequence instead of a cache).
enum class attention_kind : std::uint8_t { full, sliding, chunked, none, recurrent, count };
// How a layer's feed-forward is made: one dense SwiGLU, or routed experts (plus a shared one).
enum class ffn_kind : std::uint8_t { dense, moe, count };

inline constexpr std::array<std::string_view, static_cast<std::size_t>(attention_kind::count)> attention_kind_names{
    "full", "sliding", "chunked", "none", "recurrent"};
inline constexpr std::array<std::string_view, static_cast<std::size_t>(ffn_kind::count)> ffn_kind_names{"dense", "moe"};
constexpr std::string_view attention_kind_name(attention_kind k) {
    return attention_kind_names[static_cast<std::size_t>(k)];
}
constexpr std::string_view ffn_kind_name(ffn_kind k) { return ffn_kind_names[static_cast<std::size_t>(k)]; }

// Layer l's attention and feed-forward, from the shape's pattern: the one place that rule lives.
constexpr attention_kind layer_attention(const decoder_shape& s, std::uint64_t l) {
    if (s.is_recurrent(l)) return attention_kind::recurrent;
    const attention_kind local = s.sliding_window != 0    ? attention_kind::sliding
                                 : s.attention_chunk != 0 ? attention_kind::chunked
                                                          : attention_kind::full;
    if (local == attention_kind::full || s.window_period == 0) return local;
    return l % s.window_period == s.window_period - 1 ? attention_kind::full : local;
}
constexpr ffn_kind layer_ffn(const decoder_shape& s, std::uint64_t l) {
    if (s.n_expert == 0 || l < s.n_dense_lead) return ffn_kind::dense;
    if (s.moe_every > 1 && l % s.moe_every != s.moe_every - 1) return ffn_kind::dense;
    return ffn_kind::moe;
}

// One layer's formats, role by role.
struct block_formats {
    std::array<format, n_tensor_roles> of{};
    constexpr format operator[](tensor_role r) const { return of[static_cast<std::size_t>(r)]; }
    constexpr format& operator[](tensor_role r) { return of[static_cast<std::size_t>(r)]; }
    friend constexpr bool operator==(const block_formats&, const block_formats&) = default;
};

// A kind of layer: its formats and its variants. Layers of one kind share an entry, so a model of
// two alternating kinds plans as two, whatever its depth.
struct block_kind {
    block_formats formats{};
    attention_kind attention = attention_kind::full;
    ffn_kind ffn = ffn_kind::dense;
    // Tensors of the layer that no role names (an architecture without a graph): their exact bytes
    // and values, planned as one block of the layer's slot.
    std::uint64_t opaque_bytes = 0;
    std::uint64_t opaque_params = 0;
    // Of a checkpoint's layer (model_desc::checkpoint_weights), the bytes of its routed experts'
    // tensors, which end the slot as role-by-role experts do, so they can live in the host tier.
    std::uint64_t opaque_expert_bytes = 0;
    // This kind's KV heads when the file gives each layer its own ({arch}.attention.head_count_kv as
    // an array: Nemotron-NAS's deci files, OpenELM); 0: the shape's n_head_kv.
    std::uint64_t kv_heads = 0;
    constexpr format operator[](tensor_role r) const { return formats[r]; }
    constexpr format& operator[](tensor_role r) { return formats[r]; }
    friend constexpr bool operator==(const block_kind&, const block_kind&) = default;
};

// Whether layers of this kind attend (hold K and V, or MLA's latent, per position).
constexpr bool attends(attention_kind a) { return a != attention_kind::none && a != attention_kind::recurrent; }

// Whether a layer of kind b has a tensor of role r.
constexpr bool role_present(const decoder_shape& s, const block_kind& b, tensor_role r) {
    using enum tensor_role;
    if (!s.activations_planned) return false;  // every tensor is opaque
    const bool moe = b.ffn == ffn_kind::moe, recurrent = b.attention == attention_kind::recurrent;
    const bool attends = vramplan::attends(b.attention);
    switch (r) {
        case attn_norm: return attends || recurrent;  // a Mamba-2 layer's input norm has the same name
        case attn_output: return attends;
        case ssm_in:
        case ssm_conv1d:
        case ssm_dt_bias:
        case ssm_a:
        case ssm_d:
        case ssm_norm:
        case ssm_out: return recurrent;
        case ssm_conv1d_bias: return recurrent && s.ssm_conv_bias;
        case attn_q: return attends && !s.fused_qkv && !(s.latent_attention() && s.q_lora_rank != 0);
        case attn_k:
        case attn_v: return attends && !s.fused_qkv && !s.latent_attention();
        case attn_q_a:
        case attn_q_a_norm:
        case attn_q_b: return attends && s.latent_attention() && s.q_lora_rank != 0;
        case attn_kv_a_mqa:
        case attn_kv_a_norm:
        case attn_k_b:
        case attn_v_b: return attends && s.latent_attention();
        case exp_probs_b_bias: return moe && s.expert_probs_bias;
        case attn_qkv: return attends && s.fused_qkv;
        case attn_sinks: return attends && s.attn_sinks;
        case attn_output_bias: return attends && s.attn_output_bias;
        case attn_q_bias:
        case attn_k_bias:
        case attn_v_bias: return attends && s.qkv_bias;
        case attn_q_norm:
        case attn_k_norm: return attends && s.qk_norm;
        case post_attention_norm: return attends && s.post_norms;
        case post_ffw_norm: return s.post_norms;
        case ffn_norm: return true;
        case ffn_gate: return !moe && !s.fused_gate_up;
        case ffn_up:
        case ffn_down: return !moe;
        case ffn_gate_inp:
        case ffn_gate_exps:
        case ffn_up_exps:
        case ffn_down_exps: return moe;
        case ffn_gate_inp_bias:
        case ffn_gate_exps_bias:
        case ffn_up_exps_bias:
        case ffn_down_exps_bias: return moe && s.expert_bias;
        case ffn_gate_inp_shexp: return moe && s.n_ff_shared != 0 && s.shared_expert_gate;
        case ffn_gate_shexp:
        case ffn_up_shexp:
        case ffn_down_shexp: return moe && s.n_ff_shared != 0;
        case count: break;
    }
    return false;
}

struct model_desc {
    std::string_view name = "model";
    decoder_shape shape{};
    format token_embd{format_id::f32};
    format output{format_id::f32};
    format output_norm{format_id::f32};
    format kv{format_id::f16};
    format activations{format_id::f32};
    std::array<block_kind, max_block_kinds> kinds{};
    std::uint32_t n_kinds = 0;
    std::array<std::uint8_t, max_layers> layer_kind{};
    // Global tensors no role names (an architecture without a graph: all of them), in the GPU tier.
    std::uint64_t global_opaque_bytes = 0;
    std::uint64_t global_opaque_params = 0;
    // The weights are a checkpoint's, read from its safetensors headers: each layer's tensors are
    // its kind's opaque bytes (experts apart), the global ones but the embedding are opaque too,
    // and no role is stored role by role. The shape still gives the graph, the KV and the
    // activations; nothing runs from it (the runtime reads GGUF files).
    bool checkpoint_weights = false;

    friend constexpr bool operator==(const model_desc&, const model_desc&) = default;

    constexpr const block_kind& layer(std::uint64_t i) const { return kinds[layer_kind[i]]; }
    constexpr format global(global_tensor g) const {
        switch (g) {
            case global_tensor::token_embd: return token_embd;
            case global_tensor::output_norm: return output_norm;
            case global_tensor::output: return output;
            case global_tensor::rope_freqs:
            case global_tensor::rope_factors_long:
            case global_tensor::rope_factors_short:
            case global_tensor::count: break;
        }
        return format{format_id::f32};  // rope_freqs.weight and LongRoPE's factors: f32
    }

    // Gives layer i these formats and the variants the shape gives that layer, sharing an
    // existing kind when one matches. Set the shape first.
    constexpr void set_layer(std::uint64_t i, const block_formats& f) {
        set_layer(i, block_kind{f, layer_attention(shape, i), layer_ffn(shape, i)});
    }
    // Roles the kind lacks read f32 whatever the producer wrote, so equal layers compare equal.
    constexpr void set_layer(std::uint64_t i, block_kind b) {
        if (i >= max_layers) throw error("vramplan plans at most 256 layers");
        for (std::size_t r = 0; r < n_tensor_roles; ++r)
            if (!role_present(shape, b, static_cast<tensor_role>(r))) b.formats.of[r] = format{format_id::f32};
        for (std::uint32_t k = 0; k < n_kinds; ++k)
            if (kinds[k] == b) {
                layer_kind[i] = static_cast<std::uint8_t>(k);
                return;
            }
        if (n_kinds == max_block_kinds)
            throw error(
                "more than 16 distinct kinds of layer (per-layer format mixes times attention and feed-forward "
                "variants); vramplan cannot plan this model");
        kinds[n_kinds] = b;
        layer_kind[i] = static_cast<std::uint8_t>(n_kinds++);
    }
};

// m with every layer's kind changed by change(layer, kind), the kinds shared again: how a
// description is re-formatted (requantized, its experts or its checkpoint's layers).
template <class Change>
constexpr model_desc map_layers(const model_desc& m, Change&& change) {
    model_desc out = m;
    out.kinds = {};
    out.layer_kind = {};
    out.n_kinds = 0;
    for (std::uint64_t l = 0; l < m.shape.n_layer; ++l) {
        block_kind b = m.layer(l);
        change(l, b);
        out.set_layer(l, b);
    }
    return out;
}

// Rows and columns (GGUF ne[1], ne[0]) of each role's tensor, and planes (ne[2]) for the stacked
// experts; ne[0] is the quantized row.
struct tensor_extent {
    std::uint64_t rows = 0;
    std::uint64_t cols = 0;
    std::uint64_t planes = 1;
    constexpr std::uint64_t all_rows() const { return checked_mul(rows, planes); }
};

constexpr tensor_extent role_extent(const decoder_shape& s, tensor_role r) {
    switch (r) {
        case tensor_role::attn_norm:
        case tensor_role::ffn_norm:
        case tensor_role::post_attention_norm:
        case tensor_role::post_ffw_norm:
        case tensor_role::ffn_gate_inp_shexp: return {1, s.n_embd};
        case tensor_role::attn_q_norm:
        case tensor_role::attn_k_norm: return {1, s.head_dim};
        case tensor_role::attn_sinks: return {1, s.n_head};
        case tensor_role::attn_output_bias: return {1, s.n_embd};
        case tensor_role::ffn_gate_inp_bias: return {1, s.n_expert};
        // A row per expert, as planes, so a token's active share counts n_expert_used of them.
        case tensor_role::ffn_gate_exps_bias:
        case tensor_role::ffn_up_exps_bias: return {1, s.n_ff_expert, s.n_expert};
        case tensor_role::ffn_down_exps_bias: return {1, s.n_embd, s.n_expert};
        case tensor_role::ffn_gate_inp: return {s.n_expert, s.n_embd};
        case tensor_role::ffn_gate_exps:
        case tensor_role::ffn_up_exps: return {s.n_ff_expert, s.n_embd, s.n_expert};
        case tensor_role::ffn_down_exps: return {s.n_embd, s.n_ff_expert, s.n_expert};
        case tensor_role::ffn_gate_shexp:
        case tensor_role::ffn_up_shexp: return {s.n_ff_shared, s.n_embd};
        case tensor_role::ffn_down_shexp: return {s.n_embd, s.n_ff_shared};
        case tensor_role::attn_q: return {s.q_dim(), s.n_embd};
        case tensor_role::attn_k:
        case tensor_role::attn_v: return {s.kv_dim(), s.n_embd};
        case tensor_role::attn_q_bias: return {1, s.q_dim()};
        case tensor_role::attn_k_bias:
        case tensor_role::attn_v_bias: return {1, s.kv_dim()};
        case tensor_role::attn_output: return {s.n_embd, s.v_dim()};
        case tensor_role::attn_q_a: return {s.q_lora_rank, s.n_embd};
        case tensor_role::attn_q_a_norm: return {1, s.q_lora_rank};
        case tensor_role::attn_q_b: return {s.q_dim(), s.q_lora_rank};
        case tensor_role::attn_kv_a_mqa: return {s.kv_dim(), s.n_embd};
        case tensor_role::attn_kv_a_norm: return {1, s.kv_lora_rank};
        // Per head: the latent from the unrotated query part, and the value from the latent.
        case tensor_role::attn_k_b: return {s.kv_lora_rank, s.qk_nope_dim(), s.n_head};
        case tensor_role::attn_v_b: return {s.v_head_dim ? s.v_head_dim : s.head_dim, s.kv_lora_rank, s.n_head};
        case tensor_role::exp_probs_b_bias: return {1, s.n_expert};
        // Mamba-2, as llama.cpp's converter stores it: the convolution's taps per channel (a row of
        // ssm_conv_kernel), A and D one per head (rows of 1), the gated norm one row per group.
        case tensor_role::ssm_in: return {s.ssm_in_dim(), s.n_embd};
        case tensor_role::ssm_conv1d: return {s.ssm_conv_channels(), s.ssm_conv_kernel};
        case tensor_role::ssm_conv1d_bias: return {1, s.ssm_conv_channels()};
        case tensor_role::ssm_dt_bias: return {1, s.ssm_heads};
        case tensor_role::ssm_a:
        case tensor_role::ssm_d: return {s.ssm_heads, 1};
        case tensor_role::ssm_norm: return {s.ssm_groups, s.ssm_groups ? s.ssm_inner / s.ssm_groups : 0};
        case tensor_role::ssm_out: return {s.n_embd, s.ssm_inner};
        case tensor_role::ffn_gate: return {s.n_ff, s.n_embd};
        case tensor_role::ffn_up: return {s.fused_gate_up ? checked_mul(s.n_ff, 2) : s.n_ff, s.n_embd};
        case tensor_role::attn_qkv: return {checked_add(s.q_dim(), checked_mul(s.kv_dim(), 2)), s.n_embd};
        case tensor_role::ffn_down: return {s.n_embd, s.n_ff};
        case tensor_role::count: break;
    }
    return {};
}

// A shape is usable when every dimension is positive and the heads tile the attention width. A
// shape without a graph needs only its layer count.
constexpr void validate(const decoder_shape& s) {
    if (!s.activations_planned) {  // how query heads share KV heads costs no memory: only the count matters
        if (s.n_layer > max_layers) throw error("vramplan plans at most 256 layers");
        return;
    }
    if (s.n_vocab == 0 || s.n_embd == 0 || s.n_layer == 0 || s.n_head == 0 || s.n_head_kv == 0 || s.head_dim == 0 ||
        s.n_ff == 0)
        throw error(
            "model shape has a zero dimension (vocab, embedding, layers, heads, head_dim and ffn must be positive)");
    if (s.n_head % s.n_head_kv != 0) throw error("n_head must be a multiple of n_head_kv (grouped-query attention)");
    if (s.n_layer > max_layers) throw error("vramplan plans at most 256 layers");
    if (s.n_expert != 0) {
        if (s.n_expert_used == 0 || s.n_expert_used > s.n_expert)
            throw error("a mixture of experts uses 1 to n_expert experts per token (expert_used_count " +
                        std::to_string(s.n_expert_used) + ", expert_count " + std::to_string(s.n_expert) + ")");
        if (s.n_ff_expert == 0) throw error("a mixture of experts needs the experts' feed-forward width");
        if (s.n_dense_lead >= s.n_layer)
            throw error("every layer is dense (" + std::to_string(s.n_dense_lead) + " leading dense layers of " +
                        std::to_string(s.n_layer) + "), yet experts are given");
    } else if (s.n_expert_used != 0 || s.n_ff_shared != 0) {
        throw error("experts used per token or a shared expert are given, but no experts (expert_count is 0)");
    }
    if (s.window_period != 0 && s.sliding_window == 0 && s.attention_chunk == 0)
        throw error("a local/global layer pattern needs a sliding window or an attention chunk of at least 1 token");
    if (s.sliding_window != 0 && s.attention_chunk != 0)
        throw error("a model's local layers either slide or attend within chunks, not both");
    if (s.latent_attention() && (s.rope_dim == 0 || s.rope_dim >= s.head_dim || s.n_head_kv != 1))
        throw error(
            "latent attention needs a rotated part of each head (qk_rope_head_dim) smaller than the head (qk_nope + "
            "qk_rope) and one latent KV head");
    if (!s.latent_attention() && (s.q_lora_rank != 0 || s.rope_dim != 0 || s.v_head_dim != 0))
        throw error("a query bottleneck, a partial rotary part or a value width is given without latent attention");
    if (s.hybrid()) {
        for (std::uint64_t l = s.n_layer; l < max_layers; ++l)
            if (s.is_recurrent(l)) throw error("a Mamba-2 layer is marked past the model's last layer");
        if (s.ssm_conv_kernel == 0 || s.ssm_inner == 0 || s.ssm_state == 0 || s.ssm_groups == 0 || s.ssm_heads == 0)
            throw error(
                "Mamba-2 layers need a convolution kernel, an inner width, a state size, groups and heads, all "
                "positive (GGUF ssm.conv_kernel, inner_size, state_size, group_count, time_step_rank)");
        if (s.ssm_inner % s.ssm_heads != 0 || s.ssm_inner % s.ssm_groups != 0 || s.ssm_heads % s.ssm_groups != 0)
            throw error("Mamba-2's inner width (" + std::to_string(s.ssm_inner) + ") must split into its " +
                        std::to_string(s.ssm_heads) + " heads and " + std::to_string(s.ssm_groups) +
                        " groups, and the heads into the groups");
        if (s.latent_attention()) throw error("vramplan plans Mamba-2 layers beside plain attention, not MLA");
    } else if (s.ssm_inner != 0 || s.ssm_state != 0 || s.ssm_heads != 0 || s.ssm_conv_bias) {
        throw error("Mamba-2 sizes are given, but no layer is a Mamba-2 layer");
    }
}

// Every tensor's rows must be whole blocks of its format (Q4_0 cannot store a 172-value row).
constexpr void validate_formats(const model_desc& m) {
    // Strings are built only on the error path: constant evaluation cannot build them everywhere.
    auto check = [](format f, std::uint64_t cols, std::string_view prefix, std::string_view tensor) {
        validate(f);
        if (!row_fits_format(f, cols))
            throw error("tensor " + std::string(prefix) + std::string(tensor) + " has rows of " + std::to_string(cols) +
                        " values, which " + name(f) + " cannot store (it needs a multiple of " +
                        std::to_string(block_elements(f)) + "); keep this tensor in another format, e.g. f16");
    };
    for (const format f : {m.kv, m.activations})
        if (is_tensor_format(f))
            throw error(name(f) +
                        " is a checkpoint's weight format (its scales run over whole tensors); a KV cache or "
                        "activations are stored row by row: choose f16, q8_0 or another row format");
    check(m.kv, m.shape.kv_dim(), "",
          m.shape.latent_attention() ? "KV cache row (kv_lora_rank + qk_rope_head_dim)"
                                     : "KV cache row (n_head_kv x head_dim)");
    for (std::uint32_t k = 0; k < m.n_kinds; ++k)
        if (m.kinds[k].kv_heads != 0)
            check(m.kv, checked_mul(m.kinds[k].kv_heads, m.shape.head_dim), "", "KV cache row of a layer's own heads");
    if (!m.shape.activations_planned) return;  // opaque tensors: their file says what they are
    if (m.checkpoint_weights) {  // the checkpoint's headers say what its tensors are; the embedding is a role
        check(m.token_embd, m.shape.n_embd, "", "token_embd.weight");
        return;
    }
    check(m.token_embd, m.shape.n_embd, "", "token_embd.weight");
    check(m.output, m.shape.n_embd, "", "output.weight");
    check(m.output_norm, m.shape.n_embd, "", "output_norm.weight");
    for (std::uint32_t k = 0; k < m.n_kinds; ++k)
        for (std::size_t r = 0; r < n_tensor_roles; ++r) {
            const auto role = static_cast<tensor_role>(r);
            if (role_present(m.shape, m.kinds[k], role))
                check(m.kinds[k][role], role_extent(m.shape, role).cols, "blk.*.", role_name(role));
        }
}

}  // namespace vramplan
