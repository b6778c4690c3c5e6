// What a fused attention call needs; the CPU and CUDA kernels take the same description.
#pragma once

#include <cstdint>
#include <string>

#include "vramplan/config.hpp"
#include "vramplan/error.hpp"
#include "vramplan/kernels/attention_layout.hpp"
#include "vramplan/kernels/block_math.hpp"
#include "vramplan/kernels/kernel_format.hpp"

namespace vramplan::kernels {

// Cache layout: one row per (sequence, position) (kv_cache_row in attention_layout.hpp), each row
// the n_head_kv * head_dim values of that token, quantized along the row as the planner sizes it.
// Partial states in the workspace follow attention_state_layout.
struct attention_args {
    std::uint64_t tokens = 0;  // query rows
    std::uint64_t n_head = 0;
    std::uint64_t n_head_kv = 0;
    std::uint64_t head_dim = 0;
    std::uint64_t context = 0;                    // cache rows per sequence (a sliding layer's ring)
    std::uint64_t window = 0;                     // a query at p sees keys p - window + 1 .. p (0: 0 .. p)
    float scale = 1.0f;                           // usually 1 / sqrt(head_dim)
    float softcap = 0.0f;                         // scores capped to softcap tanh(s / softcap) (0: not)
    const void* q = nullptr;                      // [tokens][n_head][head_dim] in q_format
    kernel_format q_format = kernel_format::f32;  // f32, or f16 (activations kept in half precision)
    const std::int32_t* pos = nullptr;            // position of each query row (it sees keys up to pos)
    const std::int32_t* seq = nullptr;            // sequence of each query row (nullptr: all 0)
    const void* k = nullptr;
    const void* v = nullptr;
    float* out = nullptr;        // [tokens][n_head][head_dim]
    float* workspace = nullptr;  // partial states: workspace_rows rows of attention_state_layout
    std::uint64_t workspace_rows = 0;
    std::uint64_t max_splits = 1;  // context splits per query row, when the workspace allows

    VRAMPLAN_HOST_DEVICE std::uint64_t kv_dim() const { return n_head_kv * head_dim; }
    // Query value i (of tokens x n_head x head_dim) as a float; f16 widens exactly.
    VRAMPLAN_HOST_DEVICE float query(std::uint64_t i) const {
        return q_format == kernel_format::f16 ? load<kernel_format::f16>(q, i) : load<kernel_format::f32>(q, i);
    }
    VRAMPLAN_HOST_DEVICE std::uint64_t splits() const {
        const std::uint64_t fit = tokens ? workspace_rows / tokens : 1;
        const std::uint64_t s = fit < max_splits ? fit : max_splits;
        return s < 1 ? 1 : s;
    }
    VRAMPLAN_HOST_DEVICE attention_state_layout states() const { return {n_head, head_dim, splits()}; }
    // The cache row of query row t's sequence at position 0.
    VRAMPLAN_HOST_DEVICE std::uint64_t first_row(std::uint64_t t) const { return kv_cache_row(seq, t, context, 0); }
    // The first position query row t sees: 0, or the start of its window.
    VRAMPLAN_HOST_DEVICE std::uint64_t first_key(std::uint64_t t) const {
        const std::uint64_t p = static_cast<std::uint64_t>(pos[t]);
        return window != 0 && p + 1 > window ? p + 1 - window : 0;
    }
};

// Both the CPU and the CUDA kernels read queries in f32 or f16 and nothing else.
inline void check_query_format(const attention_args& a) {
    if (a.q_format != kernel_format::f32 && a.q_format != kernel_format::f16)
        throw error(std::string("fused attention reads f32 or f16 queries, got ") + kernel_format_name(a.q_format) +
                    "; convert the queries to f32 or f16");
}

}  // namespace vramplan::kernels
