// Exact parameter counts and weight / KV-cache bytes of a model description. Everything here is
// constexpr: the type-level API and the run-time path both call these functions.
#pragma once

#include <cstdint>

#include "vramplan/model/model_desc.hpp"

namespace vramplan {

// Parameters of one layer of kind b; with `active`, only the routed experts a token uses count.
constexpr std::uint64_t block_params(const decoder_shape& s, const block_kind& b, bool active = false) {
    std::uint64_t n = 0;
    for (std::size_t r = 0; r < n_tensor_roles; ++r) {
        const auto role = static_cast<tensor_role>(r);
        if (!role_present(s, b, role)) continue;
        const auto e = role_extent(s, role);
        const std::uint64_t planes = active && is_routed_expert(role) ? s.n_expert_used : e.planes;
        n = checked_add(n, checked_mul(checked_mul(e.rows, e.cols), planes));
    }
    return n;
}

namespace detail {
constexpr std::uint64_t count_params(const decoder_shape& s, bool active) {
    std::uint64_t n = 0;
    for (std::uint64_t l = 0; l < s.n_layer; ++l)
        n = checked_add(n, block_params(s, block_kind{{}, layer_attention(s, l), layer_ffn(s, l)}, active));
    const std::uint64_t embd = checked_mul(s.n_vocab, s.n_embd);
    return checked_add(checked_add(n, s.tied_output ? embd : checked_mul(embd, 2)), s.n_embd /* output norm */);
}
}  // namespace detail

// Every parameter, as model cards count them (rope_freqs.weight is a buffer, not a parameter).
constexpr std::uint64_t param_count(const decoder_shape& s) { return detail::count_params(s, false); }
// The same for a description, whose opaque tensors (an architecture without a graph) count too.
constexpr std::uint64_t param_count(const model_desc& m) {
    if (m.shape.activations_planned) return param_count(m.shape);
    std::uint64_t n = m.global_opaque_params;
    for (std::uint64_t l = 0; l < m.shape.n_layer; ++l) n = checked_add(n, m.layer(l).opaque_params);
    return n;
}

// The parameters one token uses: all but the routed experts the router does not choose, whose
// n_expert - n_expert_used planes per layer are skipped (the "A3B" of Qwen3-30B-A3B). The
// embedding table counts whole, as model cards count it.
constexpr std::uint64_t active_param_count(const decoder_shape& s) { return detail::count_params(s, true); }

constexpr std::uint64_t role_bytes(const model_desc& m, const block_kind& b, tensor_role role) {
    if (m.checkpoint_weights || !role_present(m.shape, b, role)) return 0;  // a checkpoint's: opaque bytes
    // A checkpoint keeps MLA's two per-head maps as one Linear, kv_b_proj (n_head x (qk_nope + v)
    // outputs of the latent), so in a checkpoint format they are that one tensor, counted once.
    const format f = b[role];
    using enum tensor_role;
    if ((role == attn_k_b || role == attn_v_b) && is_tensor_format(f) && b[attn_k_b] == b[attn_v_b]) {
        if (role == attn_v_b) return 0;
        const auto& s = m.shape;
        return tensor_bytes(f, checked_mul(s.n_head, s.qk_nope_dim() + (s.v_head_dim ? s.v_head_dim : s.head_dim)),
                            s.kv_lora_rank);
    }
    const auto e = role_extent(m.shape, role);
    // Plane by plane: a checkpoint format keeps its tables per expert (each one its own Linear);
    // for the row formats it is the same sum.
    return checked_mul(tensor_bytes(b[role], e.rows, e.cols), e.planes);
}

// Unpadded bytes of one layer's weights; the planner adds alignment between tensors.
constexpr std::uint64_t block_weight_bytes(const model_desc& m, const block_kind& b) {
    std::uint64_t n = checked_add(b.opaque_bytes, b.opaque_expert_bytes);
    for (std::size_t r = 0; r < n_tensor_roles; ++r) n = checked_add(n, role_bytes(m, b, static_cast<tensor_role>(r)));
    return n;
}

// Without a graph, the global tensors are opaque bytes (global_opaque_bytes), not these three.
constexpr std::uint64_t token_embd_bytes(const model_desc& m) {
    return m.shape.activations_planned ? tensor_bytes(m.token_embd, m.shape.n_vocab, m.shape.n_embd) : 0;
}
// A checkpoint's head and final norm are among its global opaque bytes.
constexpr std::uint64_t output_bytes(const model_desc& m) {
    return m.shape.tied_output || !m.shape.activations_planned || m.checkpoint_weights
               ? 0
               : tensor_bytes(m.output, m.shape.n_vocab, m.shape.n_embd);
}
constexpr std::uint64_t output_norm_bytes(const model_desc& m) {
    return m.shape.activations_planned && !m.checkpoint_weights ? tensor_bytes(m.output_norm, 1, m.shape.n_embd) : 0;
}
constexpr std::uint64_t rope_freqs_bytes(const model_desc& m) {
    return m.shape.rope_freqs ? checked_mul(m.shape.head_dim / 2, 4) : 0;
}

// Each of LongRoPE's two factor tensors.
constexpr std::uint64_t rope_factors_bytes(const model_desc& m) {
    return m.shape.rope_factors ? checked_mul(m.shape.head_dim / 2, 4) : 0;
}

// Unpadded bytes of all weights: the size of the tensor data in a GGUF file of this model.
constexpr std::uint64_t weight_bytes(const model_desc& m) {
    std::uint64_t n = checked_add(checked_add(token_embd_bytes(m), output_bytes(m)),
                                  checked_add(output_norm_bytes(m), rope_freqs_bytes(m)));
    n = checked_add(n, checked_add(m.global_opaque_bytes, checked_mul(rope_factors_bytes(m), 2)));
    for (std::uint64_t l = 0; l < m.shape.n_layer; ++l) n = checked_add(n, block_weight_bytes(m, m.layer(l)));
    return n;
}

// One token's K (or V) row in one layer: n_head_kv * head_dim elements, quantized along the row
// as llama.cpp does, so GQA shrinks the cache by n_head / n_head_kv.
constexpr std::uint64_t kv_row_bytes(const model_desc& m) { return row_bytes(m.kv, m.shape.kv_dim()); }
// The same for a layer of kind b, whose file may give it its own KV heads.
constexpr std::uint64_t kv_dim_of(const model_desc& m, const block_kind& b) {
    return b.kv_heads ? checked_mul(b.kv_heads, m.shape.head_dim) : m.shape.kv_dim();
}
constexpr std::uint64_t kv_row_bytes(const model_desc& m, const block_kind& b) {
    return row_bytes(m.kv, kv_dim_of(m, b));
}

// Positions one sequence's cache holds in a layer of this attention kind. A full layer holds the
// context. A sliding layer holds a ring of window + micro-batch - 1 positions: a pass appends up to
// `ubatch` tokens before it attends, and its first query still needs the window - 1 positions before
// it, so window - 1 + ubatch positions are live at once; the ring slot a new token overwrites held
// a position the window has already passed (which is why fewer would corrupt and more is waste).
// A chunked layer holds chunk + micro-batch - 1 by the same argument: a query sees at most the
// chunk - 1 positions before it (at the end of a chunk), and in the worst case, a pass that starts
// at a chunk's last position, all of them are live while the pass appends. Never more than the
// context. A layer without attention holds nothing.
constexpr std::uint64_t kv_positions(const decoder_shape& s, attention_kind a, std::uint64_t context,
                                     std::uint64_t ubatch) {
    const std::uint64_t pass = ubatch < context ? ubatch : context;
    auto ring = [&](std::uint64_t span) {
        const std::uint64_t n = checked_add(span, pass) - 1;
        return n < context ? n : context;
    };
    switch (a) {
        case attention_kind::full: return context;
        case attention_kind::sliding: return ring(s.sliding_window);
        case attention_kind::chunked: return ring(s.attention_chunk);
        case attention_kind::none:
        case attention_kind::recurrent:
        case attention_kind::count: break;
    }
    return 0;
}

// One sequence's state in a Mamba-2 layer, which does not grow with the context: the convolution
// needs the last ssm_conv_kernel - 1 inputs of each channel it convolves (the newest input is the
// token's own), and the scan keeps ssm_state values for each of the ssm_inner channels (each
// head's head_dim x ssm_state matrix). Both are f32, whatever the KV cache's format: llama.cpp
// keeps them so (its recurrent memory's type_r and type_s), since quantizing a state that every
// token rewrites would compound the error. Its sizes are llama_hparams::n_embd_r() and n_embd_s().
constexpr std::uint64_t conv_state_values(const decoder_shape& s) {
    return checked_mul(s.ssm_conv_kernel ? s.ssm_conv_kernel - 1 : 0, s.ssm_conv_channels());
}
constexpr std::uint64_t scan_state_values(const decoder_shape& s) { return checked_mul(s.ssm_state, s.ssm_inner); }
constexpr std::uint64_t recurrent_state_bytes(const decoder_shape& s) {
    return checked_mul(checked_add(conv_state_values(s), scan_state_values(s)), 4);
}

// What one layer of kind b keeps per sequence between passes, in one plane: a recurrent layer's
// state, or `positions` cache rows (K or V, or MLA's latent) of an attending one.
constexpr std::uint64_t layer_cache_plane(const model_desc& m, const block_kind& b, std::uint64_t positions) {
    return b.attention == attention_kind::recurrent ? recurrent_state_bytes(m.shape)
                                                    : checked_mul(positions, kv_row_bytes(m, b));
}
// The planes a layer of kind b keeps: K and V, MLA's latent, or a recurrent layer's state.
constexpr std::uint64_t cache_planes(const decoder_shape& s, const block_kind& b) {
    return b.attention == attention_kind::recurrent ? 1 : s.kv_planes();
}

// The Mamba-2 layers' states of `batch` sequences.
constexpr std::uint64_t recurrent_state_bytes(const model_desc& m, std::uint64_t batch) {
    std::uint64_t n = 0;
    for (std::uint64_t l = 0; l < m.shape.n_layer; ++l)
        if (m.layer(l).attention == attention_kind::recurrent) n = checked_add(n, recurrent_state_bytes(m.shape));
    return checked_mul(n, batch);
}

// The whole cache: every layer, K and V (MLA: the latent plane), for each of `batch` sequences of
// `context` positions, sliding layers holding their ring (which depends on the micro-batch).
// Mamba-2 layers hold no KV; their states are recurrent_state_bytes.
constexpr std::uint64_t kv_cache_bytes(const model_desc& m, std::uint64_t context, std::uint64_t batch,
                                       std::uint64_t ubatch) {
    std::uint64_t n = 0;
    for (std::uint64_t l = 0; l < m.shape.n_layer; ++l)
        n = checked_add(n, checked_mul(checked_mul(kv_positions(m.shape, m.layer(l).attention, context, ubatch), batch),
                                       kv_row_bytes(m, m.layer(l))));
    return checked_mul(n, m.shape.kv_planes());
}

// K and V bytes one more token of context costs, counting the layers whose cache grows with the
// context (sliding and chunked layers stop growing at their ring).
constexpr std::uint64_t kv_bytes_per_token(const model_desc& m) {
    std::uint64_t n = 0;
    for (std::uint64_t l = 0; l < m.shape.n_layer; ++l)
        if (m.layer(l).attention == attention_kind::full) n = checked_add(n, kv_row_bytes(m, m.layer(l)));
    return checked_mul(n, m.shape.kv_planes());
}

}  // namespace vramplan
