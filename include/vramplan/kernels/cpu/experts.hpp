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

// Row (t, j) of y = plane ids[t][j] of a stacked weight times x's row t, or x's row (t, j) when x
// has a row per routed row (x_per_route). `first` is the first of n_expert planes, each laid out
// alike (n rows of k_in values, held as panels or as stored). Experts are taken in turn, each in
// one matrix product over every row routed to it (named by index, not gathered: token_rows.hpp),
// so a prefill reads an expert's plane once per product, not once per routed row, and its tokens
// share the panel kernels' tiles. The indices live on the stack, up to routes_per_product rows a
// product.
inline constexpr std::uint64_t routes_per_product = 1024;

inline void expert_matmul(matmul_rows_fn fn, const weight_view& first, std::uint64_t n_expert, const float* x,
                          bool x_per_route, const std::int32_t* ids, float* y, std::uint64_t rows, std::uint64_t k,
                          thread_pool& pool) {
    const std::uint64_t plane = kernel_row_bytes(first.fmt, first.cols) * first.rows;
    std::uint32_t x_at[routes_per_product], y_at[routes_per_product];
    for (std::uint64_t e = 0; e < n_expert; ++e) {
        weight_view wv = first;
        wv.data = static_cast<const std::uint8_t*>(first.data) + e * plane;
        std::uint64_t m = 0;
        for (std::uint64_t r = 0; r < rows * k; ++r) {
            if (static_cast<std::uint64_t>(ids[r]) != e) continue;
            x_at[m] = static_cast<std::uint32_t>(x_per_route ? r : r / k);
            y_at[m] = static_cast<std::uint32_t>(r);
            if (++m == routes_per_product) {
                fn(wv, token_rows{x, y, m, x_at, y_at}, pool);
                m = 0;
            }
        }
        if (m) fn(wv, token_rows{x, y, m, x_at, y_at}, pool);
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
