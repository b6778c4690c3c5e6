// The decode-attention call both kernel benchmarks (CPU and CUDA) measure: one query token of
// Llama-3-8B (32 query heads over 8 KV heads of 128 dims), its context split into up to 32 parts.
// The CPU benchmark also measures Llama-2-7B's shape (32 KV heads: one query head each), where a
// key's bytes meet a quarter of the arithmetic. The caller points q, pos, k, v, out and the
// workspace at its own buffers.
#pragma once

#include <cmath>
#include <cstdint>

#include "vramplan/kernels/attention_args.hpp"

namespace bench_shape {

inline constexpr std::uint64_t heads = 32, kv_heads = 8, head_dim = 128, kv_dim = kv_heads * head_dim;
inline constexpr std::uint64_t splits = 32;
inline constexpr std::uint64_t workspace_floats =
    splits * vramplan::kernels::attention_state_layout{heads, head_dim, 1}.row_floats();

inline vramplan::kernels::attention_args decode(std::uint64_t context, std::uint64_t n_head_kv) {
    vramplan::kernels::attention_args a;
    a.tokens = 1;
    a.n_head = heads;
    a.n_head_kv = n_head_kv;
    a.head_dim = head_dim;
    a.context = context;
    a.scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
    a.workspace_rows = splits;
    a.max_splits = splits;
    return a;
}

inline vramplan::kernels::attention_args llama3_8b_decode(std::uint64_t context) { return decode(context, kv_heads); }
inline vramplan::kernels::attention_args llama2_7b_decode(std::uint64_t context) { return decode(context, heads); }

}  // namespace bench_shape
