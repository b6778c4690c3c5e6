// Rows of any kernel format to f32 (embedding look-up, bias and norm vectors).
#pragma once

#include <cstdint>

#include "vramplan/kernels/block_math.hpp"

namespace vramplan::kernels::cpu {

inline void dequantize_row(kernel_format f, const void* row, float* out, std::uint64_t n) {
    switch (f) {
        case kernel_format::f32: for (std::uint64_t i = 0; i < n; ++i) out[i] = load<kernel_format::f32>(row, i); break;
        case kernel_format::f16: for (std::uint64_t i = 0; i < n; ++i) out[i] = load<kernel_format::f16>(row, i); break;
        case kernel_format::bf16: for (std::uint64_t i = 0; i < n; ++i) out[i] = load<kernel_format::bf16>(row, i); break;
        case kernel_format::q8_0: for (std::uint64_t i = 0; i < n; ++i) out[i] = load<kernel_format::q8_0>(row, i); break;
        case kernel_format::q4_0: for (std::uint64_t i = 0; i < n; ++i) out[i] = load<kernel_format::q4_0>(row, i); break;
    }
}

}  // namespace vramplan::kernels::cpu
