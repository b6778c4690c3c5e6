// The decode-attention call both kernel benchmarks (CPU and CUDA) measure: one query token of
// Llama-3-8B (32 query heads over 8 KV heads of 128 dims), its context split into up to 32 parts.
// The caller points q, pos, k, v, out and the workspace at its own buffers.
#pragma once

#include <cmath>
#include <cstdint>

#include "vramplan/kernels/attention_args.hpp"

namespace bench_shape {

inline constexpr std::uint64_t heads = 32, kv_heads = 8, head_dim = 128, kv_dim = kv_heads * head_dim;
inline constexpr std::uint64_t splits = 32;
inline constexpr std::uint64_t workspace_floats = splits * heads * (head_dim + 2);

inline vramplan::kernels::attention_args llama3_8b_decode(std::uint64_t context) {
    vramplan::kernels::attention_args a;
    a.tokens = 1;
    a.n_head = heads;
    a.n_head_kv = kv_heads;
    a.head_dim = head_dim;
    a.context = context;
    a.scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
    a.workspace_rows = splits;
    a.max_splits = splits;
    return a;
}

}  // namespace bench_shape
