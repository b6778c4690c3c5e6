// Matrix products on the GPU: Y[t][r] = sum_c W[r][c] X[t][c], W stored in f32/f16/bf16/Q8_0/Q4_0,
// X in f32 or f16 (the W8A16 / W4A16 case), accumulation in f32. One warp per output row: lanes
// take consecutive 8-value chunks of the row, so a warp's loads cover one contiguous stretch of
// weights; several chunks per lane are fetched before any is used (the loads of a lane are in
// flight together), and each weight chunk serves up to four tokens. cub::WarpReduce sums the lanes.
// Rows whose length is not a multiple of 8 take a per-element path.
#pragma once

#include <cub/warp/warp_reduce.cuh>
#include <cuda_fp16.h>

#include "vramplan/kernels/block_math.hpp"
#include "vramplan/kernels/cuda/check.cuh"
#include "vramplan/kernels/cuda/chunk8.cuh"

namespace vramplan::gpu {

template <class A>
__device__ inline float act_value(const A* x, std::uint64_t i) {
    if constexpr (std::is_same_v<A, __half>) return __half2float(x[i]);
    else return x[i];
}

// This lane's share of sum_c w[c] * x[c] over one stored row, element by element: the path for
// rows that chunks cannot read (a length not a multiple of 8, or unaligned buffers).
template <kernels::kernel_format F, class A>
__device__ inline float lane_dot(const void* row, const A* x, std::uint64_t cols, int lane) {
    float acc = 0.0f;
    for (std::uint64_t c = lane; c < cols; c += 32) acc += kernels::load<F>(row, c) * act_value(x, c);
    return acc;
}

inline constexpr int matmul_warps = 4;  // rows per block

template <kernels::kernel_format F, class A>
__global__ void matmul_elementwise(const void* w, const A* x, float* y, std::uint64_t rows, std::uint64_t cols, std::uint64_t tokens) {
    using reduce = cub::WarpReduce<float>;
    __shared__ typename reduce::TempStorage tmp[matmul_warps];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const std::uint64_t r = static_cast<std::uint64_t>(blockIdx.x) * matmul_warps + warp;
    const std::uint64_t t = blockIdx.y;
    if (r >= rows || t >= tokens) return;
    const void* row = static_cast<const std::uint8_t*>(w) + r * kernels::kernel_row_bytes(F, cols);
    const float sum = reduce(tmp[warp]).Sum(lane_dot<F>(row, x + t * cols, cols, lane));
    if (lane == 0) y[t * rows + r] = sum;
}

// Tokens: tokens per warp sharing each weight chunk; Unroll: chunks per lane in flight at once.
template <kernels::kernel_format F, class A, int Tokens, int Unroll>
__global__ void __launch_bounds__(matmul_warps * 32) matmul_chunked(const void* w, const A* x, float* y, std::uint64_t rows, std::uint64_t cols,
                                                                     std::uint64_t tokens) {
    using reduce = cub::WarpReduce<float>;
    __shared__ typename reduce::TempStorage tmp[matmul_warps];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const std::uint64_t r = static_cast<std::uint64_t>(blockIdx.x) * matmul_warps + warp;
    const std::uint64_t t0 = static_cast<std::uint64_t>(blockIdx.y) * Tokens;
    if (r >= rows) return;
    const int n_tok = static_cast<int>(tokens - t0 < Tokens ? tokens - t0 : Tokens);
    const void* row = static_cast<const std::uint8_t*>(w) + r * kernels::kernel_row_bytes(F, cols);
    const std::uint64_t chunks = cols / 8;
    float acc[Tokens] = {};
    for (std::uint64_t c = lane; c < chunks; c += 32 * Unroll) {
        chunk8<F> wc[Unroll];
        act8<A> xc[Unroll][Tokens];
#pragma unroll
        for (int u = 0; u < Unroll; ++u) {
            const std::uint64_t at = c + 32 * u;
            if (at >= chunks) break;
            wc[u].fetch(row, at * 8);
#pragma unroll
            for (int t = 0; t < Tokens; ++t)
                if (t < n_tok) xc[u][t].fetch(x + (t0 + t) * cols, at * 8);
        }
#pragma unroll
        for (int u = 0; u < Unroll; ++u) {
            if (c + 32 * u >= chunks) break;
            float wv[8];
            wc[u].decode(wv);
#pragma unroll
            for (int t = 0; t < Tokens; ++t) {
                if (t >= n_tok) break;
                float xv[8];
                xc[u][t].decode(xv);
#pragma unroll
                for (int k = 0; k < 8; ++k) acc[t] = fmaf(wv[k], xv[k], acc[t]);
            }
        }
    }
#pragma unroll
    for (int t = 0; t < Tokens; ++t) {
        const float sum = reduce(tmp[warp]).Sum(acc[t]);
        if (lane == 0 && t < n_tok) y[(t0 + t) * rows + r] = sum;
        __syncwarp();  // tmp is reused by the next token
    }
}

template <kernels::kernel_format F, class A>
void matmul(const void* w, const A* x, float* y, std::uint64_t rows, std::uint64_t cols, std::uint64_t tokens, cudaStream_t stream) {
    const unsigned row_blocks = static_cast<unsigned>((rows + matmul_warps - 1) / matmul_warps);
    // Chunks need rows of a multiple of 8 values and, for the dense formats, 16-byte aligned rows.
    const bool dense = F == kernels::kernel_format::f32 || F == kernels::kernel_format::f16 || F == kernels::kernel_format::bf16;
    const bool chunked = cols % 8 == 0 && reinterpret_cast<std::uintptr_t>(x) % 16 == 0 &&
                         reinterpret_cast<std::uintptr_t>(w) % (dense ? 16 : 2) == 0;
    if (!chunked) {
        matmul_elementwise<F, A><<<dim3(row_blocks, static_cast<unsigned>(tokens)), matmul_warps * 32, 0, stream>>>(w, x, y, rows, cols, tokens);
    } else if (tokens == 1) {
        matmul_chunked<F, A, 1, 4><<<dim3(row_blocks, 1), matmul_warps * 32, 0, stream>>>(w, x, y, rows, cols, tokens);
    } else {
        matmul_chunked<F, A, 4, 2><<<dim3(row_blocks, static_cast<unsigned>((tokens + 3) / 4)), matmul_warps * 32, 0, stream>>>(w, x, y, rows, cols, tokens);
    }
    check_launch("matmul");
}

}  // namespace vramplan::gpu
