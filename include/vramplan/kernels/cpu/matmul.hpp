// Matrix products with stored weights (f32, f16, bf16, Q8_0, Q4_0) and f32 activations, f32
// accumulation (W8A16 / W4A16 on the GPU, W8A32 / W4A32 here): Y[t][r] = sum_c W[r][c] X[t][c].
// Rows of W are split across threads; each weight row is read once per call whatever the number
// of tokens, which is what makes decode (one token) bandwidth-bound rather than compute-bound.
#pragma once

#include <cstdint>

#include "vramplan/kernels/cpu/dot.hpp"
#include "vramplan/kernels/cpu/thread_pool.hpp"

namespace vramplan::kernels::cpu {

struct weight_view {
    kernel_format fmt = kernel_format::f32;
    const void* data = nullptr;
    std::uint64_t rows = 0;  // output features
    std::uint64_t cols = 0;  // input features (the stored row)
    const void* row(std::uint64_t r) const { return static_cast<const std::uint8_t*>(data) + r * kernel_row_bytes(fmt, cols); }
};

namespace detail {
// Q4_0 on AVX2: rows in pairs, with each vector's per-block sums computed once (on the stack:
// rows of up to 64Ki values; longer rows take the general path).
inline bool q4_0_pairs(const weight_view& w, const float* x, float* y, std::uint64_t tokens, thread_pool& pool) {
#if VRAMPLAN_X86_SIMD
    constexpr std::uint64_t max_blocks = 2048;
    if (!has_avx2() || w.cols / 32 > max_blocks) return false;
    pool.parallel_for((w.rows + 1) / 2, [&](std::uint64_t begin, std::uint64_t end) {
        float xsum[max_blocks];
        for (std::uint64_t t = 0; t < tokens; ++t) {
            const float* xt = x + t * w.cols;
            for (std::uint64_t b = 0; b < w.cols / 32; ++b) {
                float s = 0.0f;
                for (int j = 0; j < 32; ++j) s += xt[b * 32 + j];
                xsum[b] = s;
            }
            for (std::uint64_t pair = begin; pair < end; ++pair) {
                const std::uint64_t r = 2 * pair, r1 = r + 1 < w.rows ? r + 1 : r;
                float a, b;
                simd::dot2_q4_0(static_cast<const blocks::q4_0*>(w.row(r)), static_cast<const blocks::q4_0*>(w.row(r1)), xt, xsum, w.cols, a, b);
                y[t * w.rows + r] = a;
                if (r1 != r) y[t * w.rows + r1] = b;
            }
        }
    });
    return true;
#else
    (void)w, (void)x, (void)y, (void)tokens, (void)pool;
    return false;
#endif
}
}  // namespace detail

template <kernel_format F>
void matmul(const weight_view& w, const float* x, float* y, std::uint64_t tokens, thread_pool& pool) {
    if constexpr (F == kernel_format::q4_0)
        if (detail::q4_0_pairs(w, x, y, tokens, pool)) return;
    pool.parallel_for(w.rows, [&](std::uint64_t begin, std::uint64_t end) {
        for (std::uint64_t r = begin; r < end; ++r) {
            const void* row = w.row(r);
            for (std::uint64_t t = 0; t < tokens; ++t) y[t * w.rows + r] = dot<F>(row, x + t * w.cols, w.cols);
        }
    });
}

}  // namespace vramplan::kernels::cpu
