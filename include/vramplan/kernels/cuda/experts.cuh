// The CUDA twin of kernels/cpu/experts.hpp: routing, the experts' products over the routed rows and
// their weighted sum. The router's choice is the shared route_row, one thread per token; an
// expert's product is a warp per output row of the plane the token's routed row names, read with
// the shared block math (the per-element path: correct for every format and alignment, not tuned).
#pragma once

#include <cub/warp/warp_reduce.cuh>

#include "vramplan/kernels/block_math.hpp"
#include "vramplan/kernels/cuda/check.cuh"
#include "vramplan/kernels/ffn_math.hpp"

namespace vramplan::gpu {

__global__ void route_kernel(const float* logits, std::int32_t* ids, float* weights, std::uint64_t rows,
                             std::uint64_t n, std::uint64_t k, bool renorm) {
    const std::uint64_t t = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (t < rows) kernels::route_row(logits + t * n, n, k, renorm, ids + t * k, weights + t * k);
}

inline void route(const float* logits, std::int32_t* ids, float* weights, std::uint64_t rows, std::uint64_t n,
                  std::uint64_t k, bool renorm, cudaStream_t s) {
    route_kernel<<<static_cast<unsigned>((rows + 63) / 64), 64, 0, s>>>(logits, ids, weights, rows, n, k, renorm);
    check_launch("route_kernel");
}

inline constexpr int expert_warps = 4;  // output rows per block

// blockIdx.y: the routed row; each warp one output row of its expert's plane.
template <kernels::kernel_format F>
__global__ void expert_matmul_kernel(const void* w, const float* x, bool x_per_route, const std::int32_t* ids, float* y,
                                     std::uint64_t n, std::uint64_t k_in, std::uint64_t used) {
    using reduce = cub::WarpReduce<float>;
    __shared__ typename reduce::TempStorage tmp[expert_warps];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const std::uint64_t r = static_cast<std::uint64_t>(blockIdx.x) * expert_warps + warp, routed = blockIdx.y;
    if (r >= n) return;
    const std::uint64_t row_bytes = kernels::kernel_row_bytes(F, k_in);
    const auto* row =
        static_cast<const std::uint8_t*>(w) + (static_cast<std::uint64_t>(ids[routed]) * n + r) * row_bytes;
    const float* xr = x + (x_per_route ? routed : routed / used) * k_in;
    float acc = 0.0f;
    for (std::uint64_t c = lane; c < k_in; c += 32) acc += kernels::load<F>(row, c) * xr[c];
    const float sum = reduce(tmp[warp]).Sum(acc);
    if (lane == 0) y[routed * n + r] = sum;
}

template <kernels::kernel_format F>
void expert_matmul(const void* w, const float* x, bool x_per_route, const std::int32_t* ids, float* y, std::uint64_t n,
                   std::uint64_t k_in, std::uint64_t rows, std::uint64_t used, cudaStream_t s) {
    const dim3 grid(static_cast<unsigned>((n + expert_warps - 1) / expert_warps), static_cast<unsigned>(rows * used));
    expert_matmul_kernel<F><<<grid, expert_warps * 32, 0, s>>>(w, x, x_per_route, ids, y, n, k_in, used);
    check_launch("expert_matmul_kernel");
}

// y[t][i] = sum over j, in order, of weights[t][j] routed[(t, j)][i]
__global__ void expert_sum_kernel(float* y, const float* routed, const float* weights, std::uint64_t rows,
                                  std::uint64_t n, std::uint64_t k) {
    const std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n * rows) return;
    const std::uint64_t t = i / n, c = i % n;
    float acc = 0.0f;
    for (std::uint64_t j = 0; j < k; ++j) acc += weights[t * k + j] * routed[(t * k + j) * n + c];
    y[i] = acc;
}

inline void expert_sum(float* y, const float* routed, const float* weights, std::uint64_t rows, std::uint64_t n,
                       std::uint64_t k, cudaStream_t s) {
    expert_sum_kernel<<<static_cast<unsigned>((n * rows + 255) / 256), 256, 0, s>>>(y, routed, weights, rows, n, k);
    check_launch("expert_sum_kernel");
}

}  // namespace vramplan::gpu
