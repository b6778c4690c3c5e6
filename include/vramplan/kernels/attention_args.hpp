// What a fused attention call needs; the CPU and CUDA kernels take the same description.
#pragma once

#include <cstdint>

#include "vramplan/config.hpp"

namespace vramplan::kernels {

// Cache layout: one row per (sequence, position), row index seq * context + pos, each row the
// n_head_kv * head_dim values of that token, quantized along the row as the planner sizes it.
struct attention_args {
    std::uint64_t tokens = 0;      // query rows
    std::uint64_t n_head = 0;
    std::uint64_t n_head_kv = 0;
    std::uint64_t head_dim = 0;
    std::uint64_t context = 0;     // cache rows per sequence
    float scale = 1.0f;            // usually 1 / sqrt(head_dim)
    const float* q = nullptr;      // [tokens][n_head][head_dim]
    const std::int32_t* pos = nullptr;  // position of each query row (it sees keys 0..pos)
    const std::int32_t* seq = nullptr;  // sequence of each query row (nullptr: all 0)
    const void* k = nullptr;
    const void* v = nullptr;
    float* out = nullptr;          // [tokens][n_head][head_dim]
    float* workspace = nullptr;    // partial states: workspace_rows x n_head x (head_dim + 2) floats
    std::uint64_t workspace_rows = 0;
    std::uint64_t max_splits = 1;  // context splits per query row, when the workspace allows

    VRAMPLAN_HOST_DEVICE std::uint64_t kv_dim() const { return n_head_kv * head_dim; }
    VRAMPLAN_HOST_DEVICE std::uint64_t splits() const {
        const std::uint64_t fit = tokens ? workspace_rows / tokens : 1;
        const std::uint64_t s = fit < max_splits ? fit : max_splits;
        return s < 1 ? 1 : s;
    }
};

}  // namespace vramplan::kernels
