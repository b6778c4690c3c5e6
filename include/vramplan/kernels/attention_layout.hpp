// Where fused attention keeps what it keeps: the KV cache's rows and the partial softmax states of
// a split context. The planner sizes the states with this layout and the CPU and CUDA kernels
// index them with it, so the three cannot disagree.
#pragma once

#include <cstdint>

#include "vramplan/config.hpp"

namespace vramplan::kernels {

// Partial states: for query row t, head h and context split s, one state of head_dim + 2 floats
// (running max, running sum, then head_dim accumulated values); the splits of one (t, h) are
// consecutive, so a merge reads them in one run.
struct attention_state_layout {
    std::uint64_t n_head = 0;
    std::uint64_t head_dim = 0;
    std::uint64_t splits = 1;

    VRAMPLAN_HOST_DEVICE constexpr std::uint64_t state_floats() const { return head_dim + 2; }
    // Floats of one row of states (every head of one query row, or of one split of it).
    VRAMPLAN_HOST_DEVICE constexpr std::uint64_t row_floats() const { return n_head * state_floats(); }
    VRAMPLAN_HOST_DEVICE constexpr std::uint64_t offset(std::uint64_t t, std::uint64_t h, std::uint64_t s) const {
        return ((t * n_head + h) * splits + s) * state_floats();
    }
};

// KV cache rows: `context` per sequence, each the n_head_kv x head_dim values of a token. Position
// p lives in row p mod context: a layer that attends to the whole context has a row per position
// (p < context), and a sliding-window layer's ring (context = window + micro-batch - 1 rows,
// model/footprint.hpp) overwrites a position once no query of a later micro-batch can see it.
VRAMPLAN_HOST_DEVICE constexpr std::uint64_t kv_cache_row(const std::int32_t* seq, std::uint64_t t,
                                                          std::uint64_t context, std::uint64_t pos) {
    return (seq ? static_cast<std::uint64_t>(seq[t]) : 0) * context + pos % context;
}

}  // namespace vramplan::kernels
