// Four consecutive values of a quantized block at a time, read from a copy of the block in shared
// memory: the unit of the staged matrix kernels (matmul_staged.cuh). For each format, quad(b, j)
// returns the integer values of elements j..j+3 (j a multiple of 4) as the four bytes of a word,
// each offset by `bias` so that it is unsigned (value = byte - bias), and affine(b, s) the map of
// the 16-value group s: element = scale * (byte - bias) - min; `values` is the block's length.
// The maps unpack scales as the shared block math does (block_decode.hpp: kernels::detail's
// scale_min_k4, sub_affine's placement), and quad() follows the placement of bits quant_value()
// decodes element by element; the CUDA matmul test compares every format with a double reference
// built from quant_value() and sub_affine(), so a disagreement fails there.
//
// Blocks in a staged row start at even addresses (every block size here is even and the stage
// keeps the row's offset modulo 16), so words are assembled from two 16-bit reads.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

#include "vramplan/format/blocks.hpp"
#include "vramplan/kernels/block_decode.hpp"
#include "vramplan/kernels/cuda/chunk8.cuh"
#include "vramplan/kernels/kernel_format.hpp"

namespace vramplan::gpu {

// Bytes p[0..3] as a little-endian word, p 2-byte aligned.
__device__ inline unsigned word_at(const std::uint8_t* p) {
    const auto* h = reinterpret_cast<const std::uint16_t*>(p);
    return h[0] | static_cast<unsigned>(h[1]) << 16;
}

// The hardware's f16 conversion (chunk8.cuh's half_to_float), exact like the shared to_float, which
// works bit by bit.
__device__ inline float half_value(half_bits h) { return half_to_float(h.bits); }

// Q4_K's and Q5_K's sub-block map, from the shared 6-bit unpacking (kernels::detail::scale_min_k4).
template <class Block>
__device__ inline kernels::block_affine k4_affine(const Block& b, int sub) {
    int scale = 0, min = 0;
    kernels::detail::scale_min_k4(b.scales, sub, scale, min);
    return {half_value(b.d) * static_cast<float>(scale), half_value(b.dmin) * static_cast<float>(min)};
}

template <kernels::kernel_format F>
struct quads;  // formats without a staged reader take the other matmul paths

// Q8_0 and Q4_0: 32 values and one f16 scale per block, no minimum.
template <class Block>
struct one_scale_block {
    using block = Block;
    static constexpr int values = blocks::qk;
    __device__ static kernels::block_affine affine(const Block& b, int) { return {half_value(b.d), 0.0f}; }
};

template <>
struct quads<kernels::kernel_format::q8_0> : one_scale_block<blocks::q8_0> {
    static constexpr int bias = 128;  // int8 -> uint8 by flipping the sign bit
    __device__ static unsigned quad(const block& b, int j) {
        return word_at(reinterpret_cast<const std::uint8_t*>(b.qs) + j) ^ 0x80808080u;
    }
};

template <>
struct quads<kernels::kernel_format::q4_0> : one_scale_block<blocks::q4_0> {
    static constexpr int bias = 8;
    // Elements 0-15 are the low nibbles of qs[0..15], 16-31 their high nibbles.
    __device__ static unsigned quad(const block& b, int j) {
        return (word_at(b.qs + j % 16) >> (j < 16 ? 0 : 4)) & 0x0f0f0f0fu;
    }
};

// Q4_K and Q5_K: 6-bit scales and minimums per 32 values, and four low bits of each value: in each
// 64 values the first 32 are the low nibbles of 32 bytes of qs, the next 32 their high nibbles
// (detail::k_nibble).
template <class Block>
struct k4_block {
    using block = Block;
    static constexpr int values = blocks::qk_k;
    static constexpr int bias = 0;
    __device__ static kernels::block_affine affine(const Block& b, int s16) { return k4_affine(b, s16 / 2); }
    __device__ static unsigned low_bits(const Block& b, int j) {
        const int g = j / 64, w = j % 64;
        return (word_at(b.qs + 32 * g + w % 32) >> (w < 32 ? 0 : 4)) & 0x0f0f0f0fu;
    }
};

template <>
struct quads<kernels::kernel_format::q4_k> : k4_block<blocks::q4_k> {
    __device__ static unsigned quad(const block& b, int j) { return low_bits(b, j); }
};

// Q5_K's fifth bit of element 64g + w is bit 2g + (w >= 32) of qh[w % 32].
template <>
struct quads<kernels::kernel_format::q5_k> : k4_block<blocks::q5_k> {
    __device__ static unsigned quad(const block& b, int j) {
        const int g = j / 64, w = j % 64;
        const unsigned high = (word_at(b.qh + w % 32) >> (2 * g + (w < 32 ? 0 : 1))) & 0x01010101u;
        return low_bits(b, j) | high << 4;
    }
};

// Q6_K: in half h (128 values), quarter k (32 values), element r takes a nibble of
// ql[64h + r + 32 (k % 2)] (low for k < 2) and bits 2k..2k+1 of qh[32h + r]; value = q - 32.
template <>
struct quads<kernels::kernel_format::q6_k> {
    using block = blocks::q6_k;
    static constexpr int values = blocks::qk_k;
    static constexpr int bias = 32;
    __device__ static unsigned quad(const block& b, int j) {
        const int h = j / 128, w = j % 128, k = w / 32, r = w % 32;
        const unsigned low = (word_at(b.ql + 64 * h + r + 32 * (k % 2)) >> (k < 2 ? 0 : 4)) & 0x0f0f0f0fu;
        const unsigned high = (word_at(b.qh + 32 * h + r) >> (2 * k)) & 0x03030303u;
        return low | high << 4;
    }
    __device__ static kernels::block_affine affine(const block& b, int s16) {
        return {half_value(b.d) * static_cast<float>(b.scales[s16]), 0.0f};
    }
};

constexpr bool has_quads(kernels::kernel_format f) {
    return f == kernels::kernel_format::q8_0 || f == kernels::kernel_format::q4_0 ||
           f == kernels::kernel_format::q4_k || f == kernels::kernel_format::q5_k || f == kernels::kernel_format::q6_k;
}

}  // namespace vramplan::gpu
