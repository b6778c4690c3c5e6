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

template <kernel_format F>
void matmul(const weight_view& w, const float* x, float* y, std::uint64_t tokens, thread_pool& pool) {
    pool.parallel_for(w.rows, [&](std::uint64_t begin, std::uint64_t end) {
        for (std::uint64_t r = begin; r < end; ++r) {
            const void* row = w.row(r);
            for (std::uint64_t t = 0; t < tokens; ++t) y[t * w.rows + r] = dot<F>(row, x + t * w.cols, w.cols);
        }
    });
}

}  // namespace vramplan::kernels::cpu
