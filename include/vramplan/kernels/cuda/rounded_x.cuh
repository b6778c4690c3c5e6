// Activations rounded to int8 for the integer matrix kernels (matmul_staged.cuh, matmul_planes.cuh),
// and the four-byte integer dot product they multiply with.
#pragma once

#include <cstdint>

#include "vramplan/format/blocks.hpp"
#include "vramplan/kernels/block_math.hpp"
#include "vramplan/kernels/cuda/quads.cuh"

namespace vramplan::gpu {

// 32 activations rounded to a Q8_0 block by the shared quantizer (block_math.hpp: d = max |x| /
// 127 stored in f16, q = x / d rounded half away from zero), as the CPU rounds the activations of
// its Q4_0 and Q8_0 products: the integers four per word, low byte first, the scale as a float,
// and the sums of the integers of each half.
struct rounded_x32 {
    int words[8];
    float d;
    int sum[2];
};
__device__ inline rounded_x32 round_x32(const float (&flat)[32]) {
    blocks::q8_0 b;
    kernels::quantize_block(flat, b);
    rounded_x32 out{};
    out.d = half_value(b.d);
#pragma unroll
    for (int i = 0; i < 32; ++i) {
        out.words[i / 4] |= static_cast<int>(static_cast<std::uint8_t>(b.qs[i])) << (8 * (i % 4));
        out.sum[i / 16] += b.qs[i];
    }
    return out;
}

// Four products of unsigned bytes (a) with signed bytes (b), added to c.
__device__ inline int dot4(unsigned a, int b, int c) {
    int d;
    asm("dp4a.u32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
}

}  // namespace vramplan::gpu
