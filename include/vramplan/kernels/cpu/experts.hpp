// A mixture of experts on the CPU: the router's choice per token, the experts' products over the
// routed rows, and their weighted sum back into one row per token. A routed row (t, j) is token t's
// j-th chosen expert; a micro-batch holds tokens x k of them.
#pragma once

#include <cstdint>

#include "vramplan/kernels/cpu/dispatch.hpp"
#include "vramplan/kernels/ffn_math.hpp"

namespace vramplan::kernels::cpu {

// ids[t][j] and weights[t][j] of each token's k experts out of n (kernels/ffn_math.hpp).
inline void route(const float* logits, std::int32_t* ids, float* weights, std::uint64_t rows, std::uint64_t n,
                  std::uint64_t k, bool renorm) {
    for (std::uint64_t t = 0; t < rows; ++t) route_row(logits + t * n, n, k, renorm, ids + t * k, weights + t * k);
}

// Row (t, j) of y = plane ids[t][j] of a stacked weight (n_expert planes of n rows of k_in values)
// times x's row t, or x's row (t, j) when x has a row per routed row (x_per_route). Experts are
// taken in turn, each with every row routed to it, so one expert's plane is read in one stretch of
// calls: from memory once, then from cache while it fits there. The products are matrix-vector
// ones; gathering an expert's rows for one matrix-matrix product needs a planned buffer for them,
// which the graph does not have yet.
inline void expert_matmul(matmul_fn fn, kernel_format f, const void* w, std::uint64_t n_expert, const float* x,
                          bool x_per_route, const std::int32_t* ids, float* y, std::uint64_t n, std::uint64_t k_in,
                          std::uint64_t rows, std::uint64_t k, thread_pool& pool) {
    const std::uint64_t plane = kernel_row_bytes(f, k_in) * n;
    for (std::uint64_t e = 0; e < n_expert; ++e) {
        const weight_view wv{f, static_cast<const std::uint8_t*>(w) + e * plane, n, k_in};
        for (std::uint64_t r = 0; r < rows * k; ++r)
            if (static_cast<std::uint64_t>(ids[r]) == e)
                fn(wv, x + (x_per_route ? r : r / k) * k_in, y + r * n, 1, pool);
    }
}

// y[t] = sum over j of weights[t][j] x routed row (t, j), in order of j (as llama.cpp adds them).
inline void expert_sum(float* y, const float* routed, const float* weights, std::uint64_t rows, std::uint64_t n,
                       std::uint64_t k) {
    for (std::uint64_t t = 0; t < rows; ++t)
        for (std::uint64_t i = 0; i < n; ++i) {
            float acc = 0.0f;
            for (std::uint64_t j = 0; j < k; ++j) acc += weights[t * k + j] * routed[(t * k + j) * n + i];
            y[t * n + i] = acc;
        }
}

}  // namespace vramplan::kernels::cpu
