// Rows of any kernel format to f32 (embedding look-up, bias and norm vectors).
#pragma once

#include <cstdint>

#include "vramplan/kernels/block_math.hpp"
#include "vramplan/kernels/kernel_format.hpp"

namespace vramplan::kernels::cpu {

inline void dequantize_row(kernel_format f, const void* row, float* out, std::uint64_t n) {
    with_kernel_format(f, [&](auto k) { decode_range<k()>(row, 0, out, n); });
}

}  // namespace vramplan::kernels::cpu
