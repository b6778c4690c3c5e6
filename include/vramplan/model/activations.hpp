// The activation buffers of one forward pass over a micro-batch, layer by layer, each with the
// schedule steps that write it first and read it last. Decoder blocks repeat, so the block's
// steps appear once and stand for every layer: a buffer that must survive from one block to the
// next (the residual stream, positions) spans the whole block.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "vramplan/model/model_desc.hpp"
#include "vramplan/plan/limits.hpp"

namespace vramplan {

enum class step : std::uint16_t {
    embed, attn_norm, qkv, rope_kv_append, attention, attn_output, ffn_norm, gate_up, swiglu,
    ffn_down, output_norm, logits, sample,
};
inline constexpr std::uint16_t n_steps = 13;
inline constexpr std::uint16_t first_block_step = 1;  // steps 1..9 run once per layer
inline constexpr std::uint16_t last_block_step = 9;
inline constexpr std::array<std::string_view, n_steps> step_names{
    "embed", "attn_norm", "qkv", "rope+kv_append", "attention", "attn_output+residual", "ffn_norm",
    "gate+up", "swiglu", "ffn_down+residual", "output_norm", "logits", "sample",
};

struct activation_buffer {
    std::string_view name;
    std::uint64_t bytes = 0;
    std::uint16_t first = 0;
    std::uint16_t last = 0;
};

constexpr std::uint16_t at(step s) { return static_cast<std::uint16_t>(s); }

// Decode splits a long cache into at most this many chunks whose partial results are combined.
inline constexpr std::uint64_t max_kv_splits = 32;
inline constexpr std::uint64_t kv_split_tokens = 256;

constexpr std::uint64_t kv_splits(std::uint64_t context) {
    const std::uint64_t s = ceil_div(context, kv_split_tokens);
    return s < 1 ? 1 : (s > max_kv_splits ? max_kv_splits : s);
}

// Fused attention keeps, per query row and head, a running max, a running sum and an f32
// accumulator of head_dim values; decode keeps one such state per context split.
constexpr std::uint64_t attention_scratch_bytes(const decoder_shape& s, const limits& lim) {
    const std::uint64_t t = lim.tokens_per_pass();
    if (lim.attention == attention_kernel::naive) return checked_mul(checked_mul(t, s.n_head), lim.context, 4);
    const std::uint64_t decode_rows = checked_mul(kv_splits(lim.context), lim.batch);
    const std::uint64_t rows = t > decode_rows ? t : decode_rows;
    return checked_mul(checked_mul(rows, s.n_head), checked_add(s.head_dim, 2), 4);
}

constexpr std::array<activation_buffer, 3> embedding_activations(const decoder_shape& s, const limits& lim) {
    const std::uint64_t t = lim.tokens_per_pass();
    return {{
        {"tokens", checked_mul(t, 4), at(step::embed), at(step::embed)},
        {"positions", checked_mul(t, 4), at(step::embed), last_block_step},
        {"residual", checked_mul(t, s.n_embd, 4), at(step::embed), at(step::output_norm)},  // f32 stream
    }};
}

constexpr std::array<activation_buffer, 7> attention_activations(const decoder_shape& s, format act, const limits& lim) {
    const std::uint64_t t = lim.tokens_per_pass();
    return {{
        {"attn_in", tensor_bytes(act, t, s.n_embd), at(step::attn_norm), at(step::qkv)},
        {"q", tensor_bytes(act, t, s.q_dim()), at(step::qkv), at(step::attention)},
        {"k", tensor_bytes(act, t, s.kv_dim()), at(step::qkv), at(step::rope_kv_append)},
        {"v", tensor_bytes(act, t, s.kv_dim()), at(step::qkv), at(step::rope_kv_append)},
        {"attn_scratch", attention_scratch_bytes(s, lim), at(step::attention), at(step::attention)},
        {"attn_out", tensor_bytes(act, t, s.q_dim()), at(step::attention), at(step::attn_output)},
        {"attn_proj", tensor_bytes(act, t, s.n_embd), at(step::attn_output), at(step::attn_output)},
    }};
}

constexpr std::array<activation_buffer, 4> mlp_activations(const decoder_shape& s, format act, const limits& lim) {
    const std::uint64_t t = lim.tokens_per_pass();
    return {{
        {"ffn_in", tensor_bytes(act, t, s.n_embd), at(step::ffn_norm), at(step::gate_up)},
        {"gate", tensor_bytes(act, t, s.n_ff), at(step::gate_up), at(step::ffn_down)},
        {"up", tensor_bytes(act, t, s.n_ff), at(step::gate_up), at(step::swiglu)},
        {"ffn_proj", tensor_bytes(act, t, s.n_embd), at(step::ffn_down), at(step::ffn_down)},
    }};
}

constexpr std::array<activation_buffer, 2> head_activations(const decoder_shape& s, format act, const limits& lim) {
    const std::uint64_t rows = lim.output_rows();
    return {{
        {"out_in", tensor_bytes(act, rows, s.n_embd), at(step::output_norm), at(step::logits)},
        {"logits", checked_mul(rows, s.n_vocab, 4), at(step::logits), at(step::sample)},
    }};
}

inline constexpr std::size_t n_activation_buffers = 16;

// Positions in forward_activations(): how the runtime finds each buffer without string look-ups.
enum class act : std::uint8_t {
    tokens, positions, residual, attn_in, q, k, v, attn_scratch, attn_out, attn_proj, ffn_in, gate, up, ffn_proj, out_in, logits,
};

constexpr std::array<activation_buffer, n_activation_buffers> forward_activations(const model_desc& m, const limits& lim) {
    std::array<activation_buffer, n_activation_buffers> all{};
    std::size_t i = 0;
    for (const auto& b : embedding_activations(m.shape, lim)) all[i++] = b;
    for (const auto& b : attention_activations(m.shape, m.activations, lim)) all[i++] = b;
    for (const auto& b : mlp_activations(m.shape, m.activations, lim)) all[i++] = b;
    for (const auto& b : head_activations(m.shape, m.activations, lim)) all[i++] = b;
    return all;
}

}  // namespace vramplan
