// The activation buffers of one forward pass, derived from its graph: each graph buffer's bytes
// under the limits, and the first and last schedule step (op) that uses it.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "vramplan/kernels/attention_layout.hpp"
#include "vramplan/limits.hpp"
#include "vramplan/model/graph.hpp"
#include "vramplan/model/model_desc.hpp"

namespace vramplan {

struct activation_buffer {
    std::string_view name;
    std::uint64_t bytes = 0;
    std::uint16_t first = 0;
    std::uint16_t last = 0;
    friend constexpr bool operator==(const activation_buffer&, const activation_buffer&) = default;
};

// Decode splits a long cache into at most this many chunks whose partial results are combined.
inline constexpr std::uint64_t max_kv_splits = 32;
inline constexpr std::uint64_t kv_split_tokens = 256;

constexpr std::uint64_t kv_splits(std::uint64_t context) {
    const std::uint64_t s = ceil_div(context, kv_split_tokens);
    return s < 1 ? 1 : (s > max_kv_splits ? max_kv_splits : s);
}

// Fused attention keeps, per query row and head, a running max, a running sum and an f32
// accumulator of head_dim values; decode keeps one such state per context split, so the buffer
// holds max(tokens, splits x batch) rows of states. Naive attention materializes its scores
// instead: tokens x heads x context floats.
constexpr std::uint64_t attention_state_bytes(std::uint64_t n_head, std::uint64_t head_dim, const limits& lim) {
    const std::uint64_t t = lim.tokens_per_pass();
    if (lim.attention == attention_kernel::naive) return checked_mul(checked_mul(t, n_head), lim.context, 4);
    const std::uint64_t decode_rows = checked_mul(kv_splits(lim.context), lim.batch);
    const std::uint64_t rows = t > decode_rows ? t : decode_rows;
    const kernels::attention_state_layout layout{n_head, head_dim, 1};
    return checked_mul(checked_mul(rows, n_head), layout.state_floats(), 4);
}

constexpr std::uint64_t buffer_bytes(const graph_buffer& b, format act, const limits& lim) {
    if (b.rows == buffer_rows::attention_states) return attention_state_bytes(b.cols, b.head_dim, lim);
    const std::uint64_t rows =
        b.rows == buffer_rows::outputs ? lim.output_rows() : checked_mul(lim.tokens_per_pass(), b.per_row);
    if (b.elem == buffer_elem::activation) return tensor_bytes(act, rows, b.cols);
    return checked_mul(checked_mul(rows, b.cols), 4);  // f32 and i32
}

constexpr std::array<activation_buffer, max_graph_buffers> graph_activations(const forward_graph& g, format act,
                                                                             const limits& lim) {
    std::array<activation_buffer, max_graph_buffers> out{};
    const auto spans = buffer_spans(g);
    for (std::size_t i = 0; i < g.n_buffers; ++i)
        out[i] = {g.buffers[i].name, buffer_bytes(g.buffers[i], act, lim), spans[i].first, spans[i].last};
    return out;
}

}  // namespace vramplan
