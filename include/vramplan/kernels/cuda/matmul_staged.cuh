// Quantized matrix products near the memory's read rate, on the file's own block layout. Blocks of
// 144, 176 or 210 bytes (and Q8_0's 34, Q4_0's 18) allow only 2-byte loads in place, and reading
// them element by element left the K-quants at 0.035 of the read rate on an H200. Here the weights
// and the activations reach shared memory through 16-byte asynchronous copies (async_copy.cuh),
// two stages deep: while the block works on one stretch of its rows, the copies of the next are in
// flight. A block's warps own different rows over the same columns, so each stretch of activations
// is copied once per block, and rounded there once to Q8_0 blocks by the shared quantizer (as the
// CPU rounds them for Q4_0 and Q8_0 weights; for K-quants it uses Q8_K): each 16-value group of weights then meets them
// in four integer dot products (dp4a) of four values per word (quads.cuh), and one float step applies both scales and
// the weights' minimum. A version that multiplied in floats was bound by instruction issue (Nsight
// Compute: 67% of issue slots busy, DRAM 24%), at 0.26-0.34 of the read rate; this one reaches
// 0.32-0.43 (issue 61%, DRAM 31-36%, 22% occupancy), still short of the memory: decoding the
// file's blocks in place takes two 16-bit shared-memory reads per four values.
//
// Why the copy is exact: a row stretch is a whole number of blocks starting at byte `first` of
// the tensor; the warp copies the 16-byte granules that cover [first, last) (the tensor starts
// 16-byte aligned, so granule g holds bytes [16g, 16g + 16)), granule g0 + i into slot i, and finds
// byte `first` at slot offset first % 16. The tensor's last granule may reach past its end; it is
// read directly, 16 bits at a time up to the end.
#pragma once

#include <cuda_fp16.h>
#include <cub/warp/warp_reduce.cuh>

#include <atomic>
#include <cstdint>
#include <type_traits>

#include "vramplan/kernels/block_math.hpp"
#include "vramplan/kernels/cuda/async_copy.cuh"
#include "vramplan/kernels/cuda/check.cuh"
#include "vramplan/kernels/cuda/chunk8.cuh"
#include "vramplan/kernels/cuda/quads.cuh"
#include "vramplan/kernels/cuda/rounded_x.cuh"
#include "vramplan/kernels/cuda/row_sums.cuh"

namespace vramplan::gpu {

inline constexpr int staged_warps = 4;  // warps per block

// Tokens: tokens sharing each staged weight. Rows: rows per warp. Values: columns per stretch.
// Stages: stretches in shared memory at once (Stages - 1 in flight while one is computed on).
template <kernels::kernel_format F, class A, int Tokens, int Rows, int Values, int Stages>
struct staged_geometry {
    using Q = quads<F>;
    static constexpr int block_bytes = sizeof(typename Q::block);
    static constexpr int blocks = Values / Q::values;                             // per row and stretch
    static constexpr int granules = (blocks * block_bytes + 15 + 15) / 16;        // the stretch may start mid-granule
    static constexpr int groups = Q::values / 16;                                 // 16-value groups per block
    static constexpr int x_granules = Values * static_cast<int>(sizeof(A)) / 16;  // per token
    // One stage: each warp's rows, then each token's activations.
    static constexpr int stage_granules = staged_warps * Rows * granules + Tokens * x_granules;
    // The stages, then the rounded activations: Values bytes, a float per 32 values and an int per
    // 16, per token.
    static constexpr int shared_bytes = Stages * stage_granules * 16 + Tokens * (Values + Values / 8 + Values / 4);
    static_assert(Values % Q::values == 0 && block_bytes % 2 == 0 && Values * sizeof(A) % 16 == 0 && Stages >= 2);
};

// The first `bytes` (even, below 16) of a 16-byte aligned granule, 16 bits at a time.
__device__ inline uint4 load_tail_granule(const std::uint8_t* p, std::uint64_t bytes) {
    const auto* h = reinterpret_cast<const std::uint16_t*>(p);
    unsigned part[8] = {};
    for (int i = 0; i < static_cast<int>(bytes / 2); ++i) part[i] = h[i];
    return uint4{part[0] | part[1] << 16, part[2] | part[3] << 16, part[4] | part[5] << 16, part[6] | part[7] << 16};
}

// Where granule g of a token's activations sits in its slot. A lane reads the sizeof(A) granules
// of its 16 values at once; in place, the eight lanes of a quarter warp would meet in two or four
// of the eight 16-byte bank groups. XOR-ing the granule's low bits with the bits above the group
// puts them in eight different groups, and it permutes each aligned run of 8 granules, so slots
// stay distinct.
template <class A>
__device__ inline int x_swizzle(int g) {
    return g ^ ((g >> 3) & (static_cast<int>(sizeof(A)) - 1));
}

// Sixteen activations of one token from their swizzled slot, as floats.
template <class A>
__device__ inline void staged_x16(const uint4* slot, int unit, float (&v)[2][8]) {
    if constexpr (std::is_same_v<A, __half>) {
        chunk8<kernels::kernel_format::f16> lo, hi;
        lo.bits = slot[x_swizzle<A>(2 * unit)];
        hi.bits = slot[x_swizzle<A>(2 * unit + 1)];
        lo.decode(v[0]);
        hi.decode(v[1]);
    } else {
        float4 p[4];
#pragma unroll
        for (int k = 0; k < 4; ++k) p[k] = reinterpret_cast<const float4*>(slot)[x_swizzle<A>(4 * unit + k)];
#pragma unroll
        for (int k = 0; k < 2; ++k) {
            v[k][0] = p[2 * k].x, v[k][1] = p[2 * k].y, v[k][2] = p[2 * k].z, v[k][3] = p[2 * k].w;
            v[k][4] = p[2 * k + 1].x, v[k][5] = p[2 * k + 1].y, v[k][6] = p[2 * k + 1].z, v[k][7] = p[2 * k + 1].w;
        }
    }
}

template <kernels::kernel_format F, class A, int Tokens, int Rows, int Values, int Stages>
__global__ void __launch_bounds__(staged_warps * 32)
    matmul_staged(const void* w, const A* x, float* y, std::uint64_t rows, std::uint64_t cols, std::uint64_t tokens) {
    using Q = quads<F>;
    using geo = staged_geometry<F, A, Tokens, Rows, Values, Stages>;
    extern __shared__ uint4 staged_shared[];
    __shared__ typename cub::WarpReduce<float>::TempStorage tmp[staged_warps];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const std::uint64_t r0 = (static_cast<std::uint64_t>(blockIdx.x) * staged_warps + warp) * Rows;
    const std::uint64_t t0 = static_cast<std::uint64_t>(blockIdx.y) * Tokens;
    // Warps past the last row still copy activations and meet the barriers.
    const int n_rows = r0 >= rows ? 0 : static_cast<int>(rows - r0 < Rows ? rows - r0 : Rows);
    const int n_tok = static_cast<int>(tokens - t0 < Tokens ? tokens - t0 : Tokens);
    const std::uint64_t blocks_per_row = cols / Q::values, row_bytes = blocks_per_row * geo::block_bytes;
    const std::uint64_t end = rows * row_bytes;
    const std::uint64_t stretches = (blocks_per_row + geo::blocks - 1) / geo::blocks;
    const auto* weight_bytes = static_cast<const std::uint8_t*>(w);
    const auto* x_bytes = reinterpret_cast<const std::uint8_t*>(x);
    auto weights_slot = [&](int stage, int r) {
        return staged_shared + stage * geo::stage_granules + (warp * Rows + r) * geo::granules;
    };
    auto x_slot = [&](int stage, int t) {
        return staged_shared + stage * geo::stage_granules + staged_warps * Rows * geo::granules + t * geo::x_granules;
    };
    // After the stages: the current stretch's activations rounded to int8 (four per word), each
    // 32-value group's scale, and each 16-value group's sum of integers.
    auto* x_words = reinterpret_cast<int*>(staged_shared + Stages * geo::stage_granules);
    auto* x_scale = reinterpret_cast<float*>(x_words + Tokens * (Values / 4));
    auto* x_sums = reinterpret_cast<int*>(x_scale + Tokens * (Values / 32));
    auto blocks_in = [&](std::uint64_t s) {
        const std::uint64_t left = blocks_per_row - s * geo::blocks;
        return static_cast<int>(left < geo::blocks ? left : geo::blocks);
    };
    auto issue = [&](std::uint64_t s) {
        const int stage = static_cast<int>(s % Stages), nb = blocks_in(s);
#pragma unroll
        for (int r = 0; r < Rows; ++r) {
            if (r >= n_rows) break;
            const std::uint64_t first = (r0 + r) * row_bytes + s * geo::blocks * geo::block_bytes;
            const std::uint64_t g0 = first / 16, count = (first + nb * geo::block_bytes + 15) / 16 - g0;
            for (std::uint64_t i = lane; i < count; i += 32) {
                const std::uint64_t g = g0 + i;
                if ((g + 1) * 16 <= end)
                    copy16_async(weights_slot(stage, r) + i, weight_bytes + 16 * g);
                else  // the tensor's last granule, cut at its end (read directly, before the barrier)
                    weights_slot(stage, r)[i] = load_tail_granule(weight_bytes + 16 * g, end - 16 * g);
            }
        }
        const int xg = nb * Q::values * static_cast<int>(sizeof(A)) / 16;
        for (int i = threadIdx.x; i < n_tok * xg; i += staged_warps * 32) {
            const int t = i / xg, k = i % xg;
            copy16_async(x_slot(stage, t) + x_swizzle<A>(k),
                         x_bytes + ((t0 + t) * cols + s * geo::blocks * Q::values) * sizeof(A) + 16 * k);
        }
        commit_async_copies();
    };
    float acc[Rows][Tokens] = {};
    for (int s = 0; s < Stages - 1; ++s) {
        if (s < static_cast<std::int64_t>(stretches))
            issue(s);
        else
            commit_async_copies();  // empty groups keep the count
    }
    for (std::uint64_t s = 0; s < stretches; ++s) {
        if (s + Stages - 1 < stretches)
            issue(s + Stages - 1);
        else
            commit_async_copies();  // an empty group keeps the count: stretch s is then old enough
        wait_async_copies<Stages - 1>();
        __syncthreads();  // every thread's copies of stretch s have landed
        const int stage = static_cast<int>(s % Stages), nb = blocks_in(s);
        // The stretch's activations as Q8_0 blocks, one block per thread.
        const int x_groups = nb * Q::values / 32;
        for (int i = threadIdx.x; i < n_tok * x_groups; i += staged_warps * 32) {
            const int t = i / x_groups, g = i % x_groups;
            float v[2][2][8];
            staged_x16<A>(x_slot(stage, t), 2 * g, v[0]);
            staged_x16<A>(x_slot(stage, t), 2 * g + 1, v[1]);
            float flat[32];
#pragma unroll
            for (int k = 0; k < 32; ++k) flat[k] = v[k / 16][k / 8 % 2][k % 8];
            const rounded_x32 q = round_x32(flat);
#pragma unroll
            for (int k = 0; k < 8; ++k) x_words[t * (Values / 4) + 8 * g + k] = q.words[k];
            x_scale[t * (Values / 32) + g] = q.d;
            x_sums[t * (Values / 16) + 2 * g] = q.sum[0];
            x_sums[t * (Values / 16) + 2 * g + 1] = q.sum[1];
        }
        __syncthreads();  // the rounded activations are in place
        for (int u = lane; u < nb * geo::groups && n_rows > 0; u += 32) {
            const int bi = u / geo::groups, j0 = (u % geo::groups) * 16;
            int4 xw[Tokens];
            float dx[Tokens];
            int xs[Tokens];
#pragma unroll
            for (int t = 0; t < Tokens; ++t) {
                xw[t] = reinterpret_cast<const int4*>(x_words + t * (Values / 4))[u];
                dx[t] = x_scale[t * (Values / 32) + u / 2];
                xs[t] = x_sums[t * (Values / 16) + u];
            }
#pragma unroll
            for (int r = 0; r < Rows; ++r) {
                if (r >= n_rows) break;
                const std::uint64_t first = (r0 + r) * row_bytes + s * geo::blocks * geo::block_bytes;
                const auto& b = *reinterpret_cast<const typename Q::block*>(
                    reinterpret_cast<const std::uint8_t*>(weights_slot(stage, r)) + first % 16 + bi * geo::block_bytes);
                const unsigned w0 = Q::quad(b, j0), w1 = Q::quad(b, j0 + 4), w2 = Q::quad(b, j0 + 8),
                               w3 = Q::quad(b, j0 + 12);
                const kernels::block_affine a = Q::affine(b, j0 / 16);
#pragma unroll
                for (int t = 0; t < Tokens; ++t) {
                    // sum (byte - bias) * q_x = sum byte * q_x - bias * sum q_x, all in integers.
                    const int dot =
                        dot4(w3, xw[t].w, dot4(w2, xw[t].z, dot4(w1, xw[t].y, dot4(w0, xw[t].x, 0)))) - Q::bias * xs[t];
                    acc[r][t] = fmaf(dx[t], fmaf(a.scale, static_cast<float>(dot), -a.min * static_cast<float>(xs[t])),
                                     acc[r][t]);
                }
            }
        }
        __syncthreads();  // stage s % Stages is refilled by the next issue
    }
#pragma unroll
    for (int r = 0; r < Rows; ++r)
        if (r < n_rows) store_row_sums(acc[r], tmp[warp], y, rows, r0 + r, t0, n_tok, lane);
}

// The staged kernel with a given shape of work (the benchmark compares shapes; launch_staged
// picks one). The caller has checked that it applies. Shared memory beyond the default 48 KiB is
// asked for once per device.
template <kernels::kernel_format F, class A, int Tokens, int Rows, int Values, int Stages = 2>
void launch_staged_as(const void* w, const A* x, float* y, std::uint64_t rows, std::uint64_t cols, std::uint64_t tokens,
                      cudaStream_t stream) {
    using geo = staged_geometry<F, A, Tokens, Rows, Values, Stages>;
    const auto kernel = &matmul_staged<F, A, Tokens, Rows, Values, Stages>;
    if constexpr (geo::shared_bytes > 48 * 1024) {
        static std::atomic<bool> raised[64];
        int device = 0;
        check(cudaGetDevice(&device), "cudaGetDevice");
        if (device >= 64 || !raised[device].load(std::memory_order_acquire)) {
            check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, geo::shared_bytes),
                  "cudaFuncSetAttribute");
            if (device < 64) raised[device].store(true, std::memory_order_release);
        }
    }
    const dim3 grid(static_cast<unsigned>((rows + staged_warps * Rows - 1) / (staged_warps * Rows)),
                    static_cast<unsigned>((tokens + Tokens - 1) / Tokens));
    kernel<<<grid, staged_warps * 32, geo::shared_bytes, stream>>>(w, x, y, rows, cols, tokens);
    check_launch("matmul_staged");
}

template <kernels::kernel_format F>
bool staged_applies(const void* w, const void* x, std::uint64_t cols) {
    if constexpr (!has_quads(F)) {
        return false;
    } else {
        auto aligned = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; };
        return aligned(w) && aligned(x) && cols % quads<F>::values == 0;
    }
}

// Whether matmul() takes the staged kernel, from side-by-side runs on an H200 (bench/REPORT-cuda.md):
// the K-quants always, Q4_0 for one token (0.44 of the read rate against the chunked kernel's
// 0.32; with four tokens the chunked one is ahead), Q8_0 never (chunked 0.63, staged at most 0.53).
// Weights and activations must be 16-byte aligned. The Q8_0 quad reader remains for the
// benchmark's comparison and is tested like the others. Callers that compare results need this:
// the staged kernel rounds the activations to int8, the others multiply them as they are.
template <kernels::kernel_format F>
bool staged_is_chosen(const void* w, const void* x, std::uint64_t cols, std::uint64_t tokens) {
    if (F == kernels::kernel_format::q8_0 || (F == kernels::kernel_format::q4_0 && tokens != 1)) return false;
    return staged_applies<F>(w, x, cols);
}

// Values per stretch, per format: Q4_0 and Q4_K went faster with 2048 (more bytes in flight per
// block), Q5_K and Q6_K with 1024 (more blocks per multiprocessor). Four rows per warp share each
// activation read in every format; three or four stages, and two or eight rows, were slower.
constexpr int staged_values_for(kernels::kernel_format f) {
    return f == kernels::kernel_format::q4_0 || f == kernels::kernel_format::q4_k ? 2048 : 1024;
}

// Launches the staged kernel when it is chosen; returns false otherwise. One token, or four
// tokens sharing each staged weight.
template <kernels::kernel_format F, class A>
bool launch_staged(const void* w, const A* x, float* y, std::uint64_t rows, std::uint64_t cols, std::uint64_t tokens,
                   cudaStream_t stream) {
    if constexpr (!has_quads(F)) {
        return false;
    } else {
        if (!staged_is_chosen<F>(w, x, cols, tokens)) return false;
        constexpr int values = staged_values_for(F);
        if (tokens == 1)
            launch_staged_as<F, A, 1, 4, values>(w, x, y, rows, cols, tokens, stream);
        else
            launch_staged_as<F, A, 4, 4, values>(w, x, y, rows, cols, tokens, stream);
        return true;
    }
}

}  // namespace vramplan::gpu
