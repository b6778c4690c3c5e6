// Matrix products on the GPU: Y[t][r] = sum_c W[r][c] X[t][c], W in any device weight format, X in
// f32 or f16 (the W8A16 / W4A16 case), accumulation in f32. Three kernels, the first that applies
// runs: staged (the K-quants, and Q4_0 for one token, with 16-byte aligned rows; activations
// rounded to int8: matmul_staged.cuh), chunked (f32/f16/bf16, Q8_0, Q4_0 for several tokens, and
// Q8_0/Q4_0 unaligned) and element by element (the other formats, and rows whose length is not a
// multiple of 8). In the chunked kernel a warp owns one output row (four for quantized weights):
// lanes take consecutive 8-value chunks of the row, so a warp's loads cover one contiguous stretch
// of weights; several chunks per lane are fetched before any is used (the loads of a lane are in
// flight together), and each weight chunk serves up to four tokens. cub::WarpReduce sums the lanes.
#pragma once

#include <cuda_fp16.h>
#include <cub/warp/warp_reduce.cuh>

#include "vramplan/kernels/block_math.hpp"
#include "vramplan/kernels/cuda/check.cuh"
#include "vramplan/kernels/cuda/chunk8.cuh"
#include "vramplan/kernels/cuda/matmul_staged.cuh"
#include "vramplan/kernels/cuda/row_sums.cuh"

namespace vramplan::gpu {

template <class A>
__device__ inline float act_value(const A* x, std::uint64_t i) {
    if constexpr (std::is_same_v<A, __half>)
        return __half2float(x[i]);
    else
        return x[i];
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
__global__ void matmul_elementwise(const void* w, const A* x, float* y, std::uint64_t rows, std::uint64_t cols,
                                   std::uint64_t tokens) {
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

// acc[t] += the weight chunk times token t's activation chunk. Quantized chunks multiply their
// integer values first and apply the block scale once per chunk.
template <kernels::kernel_format F, class A, int Tokens>
__device__ inline void accumulate(const chunk8<F>& wc, const act8<A> (&xc)[Tokens], int n_tok, float (&acc)[Tokens]) {
    constexpr bool scaled = F == kernels::kernel_format::q8_0 || F == kernels::kernel_format::q4_0;
    float wv[8], scale = 1.0f;
    if constexpr (scaled)
        scale = wc.values(wv);
    else
        wc.decode(wv);
#pragma unroll
    for (int t = 0; t < Tokens; ++t) {
        if (t >= n_tok) break;
        float xv[8];
        xc[t].decode(xv);
        if constexpr (scaled) {
            float dot = 0.0f;
#pragma unroll
            for (int k = 0; k < 8; ++k) dot = fmaf(wv[k], xv[k], dot);
            acc[t] = fmaf(scale, dot, acc[t]);
        } else {
#pragma unroll
            for (int k = 0; k < 8; ++k) acc[t] = fmaf(wv[k], xv[k], acc[t]);
        }
    }
}

// Tokens: tokens per warp sharing each weight chunk. Rows: rows per warp sharing each activation
// chunk (the activations are re-read once per row group from cache, which for the quantized
// formats costs more than the weights themselves). Unroll: chunks per lane in flight at once.
template <kernels::kernel_format F, class A, int Tokens, int Rows, int Unroll>
__global__ void __launch_bounds__(matmul_warps * 32)
    matmul_chunked(const void* w, const A* x, float* y, std::uint64_t rows, std::uint64_t cols, std::uint64_t tokens) {
    __shared__ typename cub::WarpReduce<float>::TempStorage tmp[matmul_warps];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const std::uint64_t r0 = (static_cast<std::uint64_t>(blockIdx.x) * matmul_warps + warp) * Rows;
    const std::uint64_t t0 = static_cast<std::uint64_t>(blockIdx.y) * Tokens;
    if (r0 >= rows) return;
    const int n_rows = static_cast<int>(rows - r0 < Rows ? rows - r0 : Rows);
    const int n_tok = static_cast<int>(tokens - t0 < Tokens ? tokens - t0 : Tokens);
    const std::uint64_t row_bytes = kernels::kernel_row_bytes(F, cols), chunks = cols / 8;
    const auto* first_row = static_cast<const std::uint8_t*>(w) + r0 * row_bytes;
    float acc[Rows][Tokens] = {};
    for (std::uint64_t c = lane; c < chunks; c += 32 * Unroll) {
        chunk8<F> wc[Unroll][Rows];
        act8<A> xc[Unroll][Tokens];
#pragma unroll
        for (int u = 0; u < Unroll; ++u) {
            const std::uint64_t at = c + 32 * u;
            if (at >= chunks) break;
#pragma unroll
            for (int r = 0; r < Rows; ++r)
                if (r < n_rows) wc[u][r].fetch(first_row + r * row_bytes, at * 8);
#pragma unroll
            for (int t = 0; t < Tokens; ++t)
                if (t < n_tok) xc[u][t].fetch(x + (t0 + t) * cols, at * 8);
        }
#pragma unroll
        for (int u = 0; u < Unroll; ++u) {
            if (c + 32 * u >= chunks) break;
#pragma unroll
            for (int r = 0; r < Rows; ++r)
                if (r < n_rows) accumulate(wc[u][r], xc[u], n_tok, acc[r]);
        }
    }
#pragma unroll
    for (int r = 0; r < Rows; ++r)
        if (r < n_rows) store_row_sums(acc[r], tmp[warp], y, rows, r0 + r, t0, n_tok, lane);
}

inline dim3 matmul_grid(std::uint64_t rows, std::uint64_t tokens, std::uint64_t rows_per_warp,
                        std::uint64_t tokens_per_warp) {
    return dim3(static_cast<unsigned>((rows + matmul_warps * rows_per_warp - 1) / (matmul_warps * rows_per_warp)),
                static_cast<unsigned>((tokens + tokens_per_warp - 1) / tokens_per_warp));
}

// Launches the chunked kernel when it applies (a chunk reader for the format, rows of a multiple
// of 8 values and, for the dense formats, 16-byte aligned rows); returns false otherwise.
template <kernels::kernel_format F, class A>
bool launch_chunked(const void* w, const A* x, float* y, std::uint64_t rows, std::uint64_t cols, std::uint64_t tokens,
                    cudaStream_t stream) {
    if constexpr (!has_chunk8(F)) {
        return false;
    } else {
        constexpr bool dense =
            F == kernels::kernel_format::f32 || F == kernels::kernel_format::f16 || F == kernels::kernel_format::bf16;
        auto aligned = [](const void* p, std::uintptr_t to) { return reinterpret_cast<std::uintptr_t>(p) % to == 0; };
        if (cols % 8 != 0 || !aligned(x, 16) || !aligned(w, dense ? 16 : 2)) return false;
        // Dense weights outweigh the activations they meet: one row per warp. Quantized ones are 2
        // to 7 times smaller than f32 activations: four rows per warp share each activation load.
        constexpr int rows_per_warp = dense ? 1 : 4;
        const dim3 block(matmul_warps * 32);
        if (tokens == 1)
            matmul_chunked<F, A, 1, rows_per_warp, dense ? 4 : 2>
                <<<matmul_grid(rows, tokens, rows_per_warp, 1), block, 0, stream>>>(w, x, y, rows, cols, tokens);
        else
            matmul_chunked<F, A, 4, rows_per_warp, 1>
                <<<matmul_grid(rows, tokens, rows_per_warp, 4), block, 0, stream>>>(w, x, y, rows, cols, tokens);
        check_launch("matmul_chunked");
        return true;
    }
}

template <kernels::kernel_format F, class A>
void launch_elementwise(const void* w, const A* x, float* y, std::uint64_t rows, std::uint64_t cols,
                        std::uint64_t tokens, cudaStream_t stream) {
    matmul_elementwise<F, A>
        <<<matmul_grid(rows, tokens, 1, 1), matmul_warps * 32, 0, stream>>>(w, x, y, rows, cols, tokens);
    check_launch("matmul_elementwise");
}

// The fastest kernel that applies (see the top of this file).
template <kernels::kernel_format F, class A>
void matmul(const void* w, const A* x, float* y, std::uint64_t rows, std::uint64_t cols, std::uint64_t tokens,
            cudaStream_t stream) {
    if (launch_staged<F>(w, x, y, rows, cols, tokens, stream)) return;
    if (launch_chunked<F>(w, x, y, rows, cols, tokens, stream)) return;
    launch_elementwise<F>(w, x, y, rows, cols, tokens, stream);
}

}  // namespace vramplan::gpu
