// Exact parameter counts and weight / KV-cache bytes of a model description. Everything here is
// constexpr: the type-level API and the run-time path both call these functions.
#pragma once

#include <cstdint>

#include "vramplan/model/model_desc.hpp"

namespace vramplan {

constexpr std::uint64_t block_params(const decoder_shape& s) {
    std::uint64_t n = 0;
    for (std::size_t r = 0; r < n_tensor_roles; ++r) {
        const auto role = static_cast<tensor_role>(r);
        if (!role_present(s, role)) continue;
        const auto e = role_extent(s, role);
        n = checked_add(n, checked_mul(e.rows, e.cols));
    }
    return n;
}

constexpr std::uint64_t param_count(const decoder_shape& s) {
    const std::uint64_t embd = checked_mul(s.n_vocab, s.n_embd);
    return checked_add(
        checked_add(checked_mul(s.n_layer, block_params(s)), s.tied_output ? embd : checked_mul(embd, 2)),
        s.n_embd /* output norm */);
}

constexpr std::uint64_t role_bytes(const model_desc& m, const block_formats& b, tensor_role role) {
    if (!role_present(m.shape, role)) return 0;
    const auto e = role_extent(m.shape, role);
    return tensor_bytes(b[role], e.rows, e.cols);
}

// Unpadded bytes of one layer's weights; the planner adds alignment between tensors.
constexpr std::uint64_t block_weight_bytes(const model_desc& m, const block_formats& b) {
    std::uint64_t n = 0;
    for (std::size_t r = 0; r < n_tensor_roles; ++r) n = checked_add(n, role_bytes(m, b, static_cast<tensor_role>(r)));
    return n;
}

constexpr std::uint64_t token_embd_bytes(const model_desc& m) {
    return tensor_bytes(m.token_embd, m.shape.n_vocab, m.shape.n_embd);
}
constexpr std::uint64_t output_bytes(const model_desc& m) {
    return m.shape.tied_output ? 0 : tensor_bytes(m.output, m.shape.n_vocab, m.shape.n_embd);
}
constexpr std::uint64_t output_norm_bytes(const model_desc& m) {
    return tensor_bytes(m.output_norm, 1, m.shape.n_embd);
}
constexpr std::uint64_t rope_freqs_bytes(const model_desc& m) {
    return m.shape.rope_freqs ? checked_mul(m.shape.head_dim / 2, 4) : 0;
}

// Unpadded bytes of all weights: the size of the tensor data in a GGUF file of this model.
constexpr std::uint64_t weight_bytes(const model_desc& m) {
    std::uint64_t n = checked_add(checked_add(token_embd_bytes(m), output_bytes(m)),
                                  checked_add(output_norm_bytes(m), rope_freqs_bytes(m)));
    for (std::uint64_t l = 0; l < m.shape.n_layer; ++l) n = checked_add(n, block_weight_bytes(m, m.layer(l)));
    return n;
}

// One token's K (or V) row in one layer: n_head_kv * head_dim elements, quantized along the row
// as llama.cpp does, so GQA shrinks the cache by n_head / n_head_kv.
constexpr std::uint64_t kv_row_bytes(const model_desc& m) { return row_bytes(m.kv, m.shape.kv_dim()); }

constexpr std::uint64_t kv_bytes_per_token(const model_desc& m) {
    return checked_mul(checked_mul(kv_row_bytes(m), 2), m.shape.n_layer);
}

// The whole cache: every layer, K and V, `context` positions for each of `batch` sequences.
constexpr std::uint64_t kv_cache_bytes(const model_desc& m, std::uint64_t context, std::uint64_t batch) {
    return checked_mul(kv_bytes_per_token(m), context, batch);
}

}  // namespace vramplan
