// Quantized matrix products on weights held in planes (kernels/weight_planes.hpp): every lane reads
// its 32 weights (kernels/plane_units.hpp, shared with the CPU tests) with one 16-byte load (two for Q8_0 and Q5_K/Q6_K's high bits) straight from
// global memory, so a warp's loads cover 512 contiguous bytes of a row's values. The staged kernel
// (matmul_staged.cuh) reads the file's layout, where values sit at 2-byte alignment: it needs
// shared-memory staging and two 16-bit reads per four values, and was bound by instruction issue at
// 0.32-0.43 of the read rate. Here no weight passes through shared memory; only the activations do,
// rounded there once per block and stretch to Q8_0 blocks by the shared quantizer (rounded_x.cuh),
// exactly as the staged kernel rounds them, so the two give the same integers to the same dp4a.
//
// Work: a block of Warps warps owns Warps x Rows consecutive rows and Tokens tokens; it walks the
// columns in stretches of Values (whole blocks: Values is a multiple of 256); in each, lane l of a
// warp takes the stretch's units l, l + 32, ... of each of its rows.
#pragma once

#include <cuda_fp16.h>
#include <cub/warp/warp_reduce.cuh>

#include <cstdint>
#include <type_traits>

#include "vramplan/error.hpp"
#include "vramplan/kernels/cuda/check.cuh"
#include "vramplan/kernels/plane_units.hpp"
#include "vramplan/kernels/cuda/rounded_x.cuh"
#include "vramplan/kernels/cuda/row_sums.cuh"

namespace vramplan::gpu {

// 32 activations from global memory as floats (p 16-byte aligned).
template <class A>
__device__ inline void load_x32(const A* p, float (&out)[32]) {
    if constexpr (std::is_same_v<A, __half>) {
        const auto* h = reinterpret_cast<const __half2*>(p);
#pragma unroll
        for (int i = 0; i < 16; ++i) {
            const float2 f = __half22float2(h[i]);
            out[2 * i] = f.x, out[2 * i + 1] = f.y;
        }
    } else {
        const auto* f = reinterpret_cast<const float4*>(p);
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            const float4 v = f[i];
            out[4 * i] = v.x, out[4 * i + 1] = v.y, out[4 * i + 2] = v.z, out[4 * i + 3] = v.w;
        }
    }
}

template <kernels::kernel_format F, class A, int Tokens, int Rows, int Values, int Warps>
__global__ void __launch_bounds__(Warps * 32)
    matmul_planes_kernel(const void* w, const A* x, float* y, std::uint64_t rows, std::uint64_t cols,
                         std::uint64_t tokens) {
    using U = kernels::plane_units<F>;
    static_assert(Values % blocks::qk_k == 0);
    // The stretch's activations rounded to int8 (four per word), each 32 values' scale and each 16
    // values' sum of integers, per token.
    __shared__ int4 x_words[Tokens][Values / 16];
    __shared__ float x_scale[Tokens][Values / 32];
    __shared__ int x_sums[Tokens][Values / 16];
    __shared__ typename cub::WarpReduce<float>::TempStorage tmp[Warps];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const std::uint64_t r0 = (static_cast<std::uint64_t>(blockIdx.x) * Warps + warp) * Rows;
    const std::uint64_t t0 = static_cast<std::uint64_t>(blockIdx.y) * Tokens;
    // Warps past the last row still round activations and meet the barriers.
    const int n_rows = r0 >= rows ? 0 : static_cast<int>(rows - r0 < Rows ? rows - r0 : Rows);
    const int n_tok = static_cast<int>(tokens - t0 < Tokens ? tokens - t0 : Tokens);
    const std::uint64_t blocks_per_row = cols / U::values;
    const kernels::plane_ptrs planes = kernels::planes_at<F>(w, rows * blocks_per_row);
    float acc[Rows][Tokens] = {};
    for (std::uint64_t col0 = 0; col0 < cols; col0 += Values) {
        const int nv = static_cast<int>(cols - col0 < Values ? cols - col0 : Values);  // whole blocks
        const int groups = nv / 32;
        for (int i = threadIdx.x; i < n_tok * groups; i += Warps * 32) {
            const int t = i / groups, g = i % groups;
            float v[32];
            load_x32(x + (t0 + t) * cols + col0 + 32 * g, v);
            const rounded_x32 q = round_x32(v);
            x_words[t][2 * g] = int4{q.words[0], q.words[1], q.words[2], q.words[3]};
            x_words[t][2 * g + 1] = int4{q.words[4], q.words[5], q.words[6], q.words[7]};
            x_scale[t][g] = q.d;
            x_sums[t][2 * g] = q.sum[0];
            x_sums[t][2 * g + 1] = q.sum[1];
        }
        __syncthreads();  // the rounded activations are in place
        const int units = nv / U::values * U::units;
        const std::uint64_t first_block = col0 / U::values;
        for (int s = lane; s < units && n_rows > 0; s += 32) {
            const int bi = s / U::units, u = s % U::units;
            int at[2];  // each half's first value in the stretch
#pragma unroll
            for (int h = 0; h < 2; ++h) at[h] = bi * U::values + U::x_at(u, h);
#pragma unroll
            for (int r = 0; r < Rows; ++r) {
                if (r >= n_rows) break;
                const kernels::plane_unit pu = U::read(planes, (r0 + r) * blocks_per_row + first_block + bi, u);
#pragma unroll
                for (int t = 0; t < Tokens; ++t) {
                    if (t >= n_tok) break;
#pragma unroll
                    for (int h = 0; h < 2; ++h) {
                        const int4 xw = x_words[t][at[h] / 16];
                        const int xs = x_sums[t][at[h] / 16];
                        // sum (byte - bias) * q_x = sum byte * q_x - bias * sum q_x, all in integers.
                        const int dot = dot4(pu.q[h][3], xw.w,
                                             dot4(pu.q[h][2], xw.z, dot4(pu.q[h][1], xw.y, dot4(pu.q[h][0], xw.x, 0)))) -
                                        U::bias * xs;
                        acc[r][t] = fmaf(x_scale[t][at[h] / 32],
                                         fmaf(pu.a[h].scale, static_cast<float>(dot), -pu.a[h].min * static_cast<float>(xs)),
                                         acc[r][t]);
                    }
                }
            }
        }
        __syncthreads();  // the next stretch overwrites the activations
    }
#pragma unroll
    for (int r = 0; r < Rows; ++r)
        if (r < n_rows) store_row_sums(acc[r], tmp[warp], y, rows, r0 + r, t0, n_tok, lane);
}

// The plane kernel with a given shape of work (the benchmark compares shapes; matmul_planes picks
// one).
template <kernels::kernel_format F, class A, int Tokens, int Rows, int Values = 4096, int Warps = 4>
void launch_planes_as(const void* w, const A* x, float* y, std::uint64_t rows, std::uint64_t cols,
                      std::uint64_t tokens, cudaStream_t stream) {
    const dim3 grid(static_cast<unsigned>((rows + Warps * Rows - 1) / (Warps * Rows)),
                    static_cast<unsigned>((tokens + Tokens - 1) / Tokens));
    matmul_planes_kernel<F, A, Tokens, Rows, Values, Warps><<<grid, Warps * 32, 0, stream>>>(w, x, y, rows, cols, tokens);
    check_launch("matmul_planes");
}

// Whether a tensor in planes can be read by the plane kernel: 16-byte aligned weights (plane 0's
// loads) and activations, rows of whole blocks.
template <kernels::kernel_format F>
bool planes_apply(const void* w, const void* x, std::uint64_t cols) {
    auto aligned = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; };
    return kernels::has_planes(F) && aligned(w) && aligned(x) && cols % kernels::block_size(F) == 0;
}

// Y = W X for W held in planes: the one kernel that reads them, so a tensor it cannot read is an
// error (the loader put it in planes because the plan's slots are aligned; this names a broken
// promise, not a user's mistake).
template <kernels::kernel_format F, class A>
void matmul_planes(const void* w, const A* x, float* y, std::uint64_t rows, std::uint64_t cols, std::uint64_t tokens,
                   cudaStream_t stream) {
    if constexpr (!kernels::has_planes(F)) {
        throw error("internal: a weight in a format without planes was handed to the plane kernel");
    } else {
        if (!planes_apply<F>(w, x, cols))
            throw error("internal: a weight held in planes is not 16-byte aligned, or its rows are not whole blocks");
        if (tokens == 1)
            launch_planes_as<F, A, 1, 4>(w, x, y, rows, cols, tokens, stream);
        else
            launch_planes_as<F, A, 4, 4>(w, x, y, rows, cols, tokens, stream);
    }
}

}  // namespace vramplan::gpu
