// Quantized matrix products at the memory's read rate, on the file's own block layout. Blocks of
// 18, 34, 144, 176 or 210 bytes allow only 2-byte loads in place, and a kernel that reads its
// weights so (matmul_chunked) is bound by load instructions, not by the memory: on an H200 it read
// Q8_0 at 0.63 and Q4_0 at 0.32 of the rate of a plain 16-byte read kernel. Here the weights and
// the activations reach shared memory through 16-byte asynchronous copies (async_copy.cuh), two
// stages deep: while the block decodes one stretch of its rows (four values per word, quads.cuh),
// the copies of the next are in flight. A block's warps own different rows over the same columns,
// so each stretch of activations is copied once per block and read from shared memory by all.
//
// Why the copy is exact: a row stretch is a whole number of blocks starting at byte `first` of
// the tensor; the warp copies the 16-byte granules that cover [first, last) (the tensor starts
// 16-byte aligned, so granule g holds bytes [16g, 16g + 16)), granule g0 + i into slot i, and finds
// byte `first` at slot offset first % 16. The tensor's last granule may reach past its end; its
// copy reads only the bytes up to the end. Each lane then owns 16-value groups (one scale and
// minimum each, in every format here) and multiplies them with up to Tokens activations, applying
// the group's map once per group.
#pragma once

#include <cuda_fp16.h>
#include <cub/warp/warp_reduce.cuh>

#include <atomic>
#include <cstdint>
#include <type_traits>

#include "vramplan/kernels/cuda/async_copy.cuh"
#include "vramplan/kernels/cuda/check.cuh"
#include "vramplan/kernels/cuda/chunk8.cuh"
#include "vramplan/kernels/cuda/quads.cuh"
#include "vramplan/kernels/cuda/row_sums.cuh"

namespace vramplan::gpu {

inline constexpr int staged_warps = 4;  // warps per block

// Tokens: tokens sharing each staged weight. Rows: rows per warp. Values: columns per stretch.
template <kernels::kernel_format F, class A, int Tokens, int Rows, int Values>
struct staged_geometry {
    using Q = quads<F>;
    static constexpr int block_bytes = sizeof(typename Q::block);
    static constexpr int blocks = Values / Q::values;                             // per row and stretch
    static constexpr int granules = (blocks * block_bytes + 15 + 15) / 16;        // the stretch may start mid-granule
    static constexpr int groups = Q::values / 16;                                 // 16-value groups per block
    static constexpr int x_granules = Values * static_cast<int>(sizeof(A)) / 16;  // per token
    // One stage: each warp's rows, then each token's activations.
    static constexpr int stage_granules = staged_warps * Rows * granules + Tokens * x_granules;
    static constexpr int shared_bytes = 2 * stage_granules * 16;
    static_assert(Values % Q::values == 0 && block_bytes % 2 == 0 && Values * sizeof(A) % 16 == 0);
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

template <kernels::kernel_format F, class A, int Tokens, int Rows, int Values>
__global__ void __launch_bounds__(staged_warps * 32)
    matmul_staged(const void* w, const A* x, float* y, std::uint64_t rows, std::uint64_t cols, std::uint64_t tokens) {
    using Q = quads<F>;
    using geo = staged_geometry<F, A, Tokens, Rows, Values>;
    constexpr bool has_min = F == kernels::kernel_format::q4_k || F == kernels::kernel_format::q5_k;
    constexpr float offset = 8388608.0f + Q::bias;  // byte_as_float(b) - offset = b - bias, exactly
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
    auto blocks_in = [&](std::uint64_t s) {
        const std::uint64_t left = blocks_per_row - s * geo::blocks;
        return static_cast<int>(left < geo::blocks ? left : geo::blocks);
    };
    auto issue = [&](std::uint64_t s) {
        const int stage = static_cast<int>(s % 2), nb = blocks_in(s);
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
    issue(0);
    for (std::uint64_t s = 0; s < stretches; ++s) {
        if (s + 1 < stretches)
            issue(s + 1);
        else
            commit_async_copies();  // an empty group keeps the count: stretch s is then the older one
        wait_async_copies<1>();
        __syncthreads();  // every thread's copies of stretch s have landed
        const int stage = static_cast<int>(s % 2), nb = blocks_in(s);
        for (int u = lane; u < nb * geo::groups && n_rows > 0; u += 32) {
            const int bi = u / geo::groups, j0 = (u % geo::groups) * 16;
            float xv[Tokens][2][8] = {}, sx[Tokens] = {};  // tokens past n_tok stay 0
#pragma unroll
            for (int t = 0; t < Tokens; ++t) {
                if (t >= n_tok) break;
                staged_x16<A>(x_slot(stage, t), u, xv[t]);
                if constexpr (has_min) {
#pragma unroll
                    for (int k = 0; k < 16; ++k) sx[t] += xv[t][k / 8][k % 8];
                }
            }
#pragma unroll
            for (int r = 0; r < Rows; ++r) {
                if (r >= n_rows) break;
                const std::uint64_t first = (r0 + r) * row_bytes + s * geo::blocks * geo::block_bytes;
                const auto& b = *reinterpret_cast<const typename Q::block*>(
                    reinterpret_cast<const std::uint8_t*>(weights_slot(stage, r)) + first % 16 + bi * geo::block_bytes);
                const kernels::block_affine a = Q::affine(b, j0 / 16);
                float dot[Tokens] = {};
#pragma unroll
                for (int q = 0; q < 4; ++q) {
                    const unsigned word = Q::quad(b, j0 + 4 * q);
#pragma unroll
                    for (int k = 0; k < 4; ++k) {
                        const float f = byte_as_float(word, k) - offset;
#pragma unroll
                        for (int t = 0; t < Tokens; ++t) dot[t] = fmaf(f, xv[t][q / 2][(q % 2) * 4 + k], dot[t]);
                    }
                }
#pragma unroll
                for (int t = 0; t < Tokens; ++t) {
                    acc[r][t] = fmaf(a.scale, dot[t], acc[r][t]);
                    if constexpr (has_min) acc[r][t] = fmaf(-a.min, sx[t], acc[r][t]);
                }
            }
        }
        __syncthreads();  // stage s % 2 is refilled by the next issue
    }
#pragma unroll
    for (int r = 0; r < Rows; ++r)
        if (r < n_rows) store_row_sums(acc[r], tmp[warp], y, rows, r0 + r, t0, n_tok, lane);
}

// The staged kernel with a given shape of work (the benchmark compares shapes; launch_staged
// picks one). The caller has checked that it applies. Shared memory beyond the default 48 KiB is
// asked for once per device.
template <kernels::kernel_format F, class A, int Tokens, int Rows, int Values>
void launch_staged_as(const void* w, const A* x, float* y, std::uint64_t rows, std::uint64_t cols, std::uint64_t tokens,
                      cudaStream_t stream) {
    using geo = staged_geometry<F, A, Tokens, Rows, Values>;
    const auto kernel = &matmul_staged<F, A, Tokens, Rows, Values>;
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

// Launches the staged kernel when it is the faster one and applies (the K-quants, 16-byte aligned
// weights and activations); returns false otherwise. Four rows per warp share each activation
// read; one token, or four tokens sharing each staged weight. On an H200 the chunked kernel stays
// ahead for Q8_0 and Q4_0 (bench/REPORT-cuda.md), so those take it; their quad readers remain for
// the benchmark's side-by-side comparison and are tested like the others.
template <kernels::kernel_format F, class A>
bool launch_staged(const void* w, const A* x, float* y, std::uint64_t rows, std::uint64_t cols, std::uint64_t tokens,
                   cudaStream_t stream) {
    if constexpr (!has_quads(F)) {
        return false;
    } else {
        if (F == kernels::kernel_format::q8_0 || F == kernels::kernel_format::q4_0 || !staged_applies<F>(w, x, cols))
            return false;
        if (tokens == 1)
            launch_staged_as<F, A, 1, 4, 1024>(w, x, y, rows, cols, tokens, stream);
        else
            launch_staged_as<F, A, 4, 4, 1024>(w, x, y, rows, cols, tokens, stream);
        return true;
    }
}

}  // namespace vramplan::gpu
