// Matrix products with stored weights and f32 activations, f32 accumulation: Y[t][r] = sum_c
// W[r][c] X[t][c]. On the GPU the activations are f16 (W8A16, W4A16); here they are f32, except
// that Q4_0 weights meet activations rounded to Q8_0 (W4A8) and K-quant weights activations
// rounded to Q8_K (kquant_dot.hpp), both multiplied in integers.
// Rows of W are split across threads; each weight row is read once per call whatever the number
// of tokens, which is what makes decode (one token) bandwidth-bound rather than compute-bound.
#pragma once

#include <algorithm>
#include <cstdint>

#include "vramplan/kernels/cpu/dot.hpp"
#include "vramplan/kernels/cpu/kquant_dot.hpp"
#include "vramplan/kernels/cpu/quantize.hpp"
#include "vramplan/kernels/cpu/thread_pool.hpp"

namespace vramplan::kernels::cpu {

struct weight_view {
    kernel_format fmt = kernel_format::f32;
    const void* data = nullptr;
    std::uint64_t rows = 0;  // output features
    std::uint64_t cols = 0;  // input features (the stored row)
    const void* row(std::uint64_t r) const {
        return static_cast<const std::uint8_t*>(data) + r * kernel_row_bytes(fmt, cols);
    }
};

namespace detail {
// Q4_0 weights multiply activations rounded to Q8_0 blocks, on every path, so results do not
// depend on the processor: the integer products are what let the AVX2 path keep up with memory
// (W4A8, as llama.cpp's CPU backend). Each thread rounds up to 2048 blocks of x on its stack (no
// allocation): a slice of the columns for as many tokens as fit, so that a prefill multiplies each
// group of weight rows with many tokens while the rows are in cache, instead of streaming the whole
// matrix from memory once per token.
inline void q4_0_matmul(const weight_view& w, const float* x, float* y, std::uint64_t tokens, thread_pool& pool) {
    constexpr std::uint64_t stack_blocks = 2048;
    constexpr std::uint64_t group = 8;  // rows per pass: eight weight streams share each block of x
    const std::uint64_t nblocks = w.cols / 32;
    const std::uint64_t slice = std::min(nblocks, stack_blocks);  // columns (in blocks) per pass
    const std::uint64_t tokens_per_pass = std::max<std::uint64_t>(1, stack_blocks / std::max<std::uint64_t>(slice, 1));
    pool.parallel_for((w.rows + group - 1) / group, [&](std::uint64_t begin, std::uint64_t end) {
        blocks::q8_0 xq[stack_blocks];
        float xsum[stack_blocks];
        for (std::uint64_t b0 = 0; b0 < nblocks; b0 += slice) {
            const std::uint64_t nb = std::min(slice, nblocks - b0);
            for (std::uint64_t t0 = 0; t0 < tokens; t0 += tokens_per_pass) {
                const std::uint64_t nt = std::min(tokens_per_pass, tokens - t0);
                for (std::uint64_t t = 0; t < nt; ++t)
                    for (std::uint64_t b = 0; b < nb; ++b) {
                        blocks::q8_0& q = xq[t * nb + b];
                        const std::int32_t sum = quantize_block_q8_0(x + (t0 + t) * w.cols + (b0 + b) * 32, q);
                        xsum[t * nb + b] = to_float(q.d) * static_cast<float>(sum);
                    }
                for (std::uint64_t g = begin; g < end; ++g) {
                    // The last group repeats its last row where the matrix runs out.
                    const blocks::q4_0* rows[group];
                    for (std::uint64_t i = 0; i < group; ++i)
                        rows[i] = static_cast<const blocks::q4_0*>(w.row(std::min(group * g + i, w.rows - 1))) + b0;
                    for (std::uint64_t t = 0; t < nt; ++t) {
                        float part[group];
                        dot_rows_q4_0_q8_0<group>(rows, xq + t * nb, xsum + t * nb, nb, part);
                        float* out = y + (t0 + t) * w.rows;
                        for (std::uint64_t i = 0; i < group && group * g + i < w.rows; ++i)
                            out[group * g + i] = b0 == 0 ? part[i] : out[group * g + i] + part[i];
                    }
                }
            }
        }
    });
}
}  // namespace detail

template <kernel_format F>
void matmul(const weight_view& w, const float* x, float* y, std::uint64_t tokens, thread_pool& pool) {
    if constexpr (F == kernel_format::q4_0) return detail::q4_0_matmul(w, x, y, tokens, pool);
    if constexpr (is_k_quant(F)) return kquant_matmul<F>(w.data, w.rows, w.cols, x, y, tokens, pool);
    pool.parallel_for(w.rows, [&](std::uint64_t begin, std::uint64_t end) {
        for (std::uint64_t r = begin; r < end; ++r) {
            const void* row = w.row(r);
            for (std::uint64_t t = 0; t < tokens; ++t) y[t * w.rows + r] = dot<F>(row, x + t * w.cols, w.cols);
        }
    });
}

}  // namespace vramplan::kernels::cpu
