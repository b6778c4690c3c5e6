// Matrix products on the GPU: Y[t][r] = sum_c W[r][c] X[t][c], W stored in f32/f16/bf16/Q8_0/Q4_0,
// X in f32 or f16 (the W8A16 / W4A16 case), accumulation in f32. One warp per output row and
// token: lanes stride over the row's blocks, dequantizing with the shared block math, and
// cub::WarpReduce sums the lanes.
#pragma once

#include <cub/warp/warp_reduce.cuh>
#include <cuda_fp16.h>

#include "vramplan/kernels/block_math.hpp"
#include "vramplan/kernels/cuda/check.cuh"

namespace vramplan::gpu {

template <class A>
__device__ inline float act_value(const A* x, std::uint64_t i) {
    if constexpr (std::is_same_v<A, __half>) return __half2float(x[i]);
    else return x[i];
}

// Sum over one stored row of w[c] * x[c], this lane's share: whole blocks per lane.
template <kernels::kernel_format F, class A>
__device__ inline float lane_dot(const void* row, const A* x, std::uint64_t cols, int lane) {
    float acc = 0.0f;
    if constexpr (F == kernels::kernel_format::q8_0 || F == kernels::kernel_format::q4_0) {
        using block = std::conditional_t<F == kernels::kernel_format::q8_0, blocks::q8_0, blocks::q4_0>;
        const block* b = static_cast<const block*>(row);
        for (std::uint64_t k = lane; k < cols / 32; k += 32) {
            float s = 0.0f;
            for (int j = 0; j < 32; ++j) s += static_cast<float>(kernels::quant_value(b[k], j)) * act_value(x, k * 32 + j);
            acc += s * to_float(b[k].d);
        }
    } else {
        for (std::uint64_t c = lane; c < cols; c += 32) acc += kernels::load<F>(row, c) * act_value(x, c);
    }
    return acc;
}

template <kernels::kernel_format F, class A>
__global__ void matmul_kernel(const void* w, const A* x, float* y, std::uint64_t rows, std::uint64_t cols, std::uint64_t tokens) {
    using reduce = cub::WarpReduce<float>;
    __shared__ typename reduce::TempStorage tmp[4];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const std::uint64_t r = static_cast<std::uint64_t>(blockIdx.x) * 4 + warp;
    const std::uint64_t t = blockIdx.y;
    if (r >= rows || t >= tokens) return;
    const void* row = static_cast<const std::uint8_t*>(w) + r * kernels::kernel_row_bytes(F, cols);
    const float sum = reduce(tmp[warp]).Sum(lane_dot<F>(row, x + t * cols, cols, lane));
    if (lane == 0) y[t * rows + r] = sum;
}

template <kernels::kernel_format F, class A>
void matmul(const void* w, const A* x, float* y, std::uint64_t rows, std::uint64_t cols, std::uint64_t tokens, cudaStream_t stream) {
    const dim3 grid(static_cast<unsigned>((rows + 3) / 4), static_cast<unsigned>(tokens));
    matmul_kernel<F, A><<<grid, 128, 0, stream>>>(w, x, y, rows, cols, tokens);
    check_launch("matmul_kernel");
}

}  // namespace vramplan::gpu
