// Eight consecutive values of a stored row: the unit every bandwidth-bound CUDA kernel reads.
// fetch() issues the loads and keeps the raw bits; decode() turns them into floats later, so a
// kernel can put the next tile's loads in flight before it computes on the current one.
//
// Why eight: eight values starting at a multiple of 8 never straddle a 32-value quantization
// block, and they are 16 bytes of f16/bf16 (one 128-bit load) or 32 of f32; for Q8_0 and Q4_0
// they are 8 or 4 bytes at an even offset inside a block (34 and 18 bytes long, so 2-byte
// aligned), read as 16-bit words. The values equal kernels::load<F> element by element: same
// scales, same nibble order; the f16 scale goes through the hardware conversion, which is exact.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

#include "vramplan/format/blocks.hpp"
#include "vramplan/kernels/block_math.hpp"

namespace vramplan::gpu {

__device__ inline float half_to_float(std::uint16_t bits) { return __half2float(__ushort_as_half(bits)); }

// The formats with a chunk reader below; the others are read element by element.
constexpr bool has_chunk8(kernels::kernel_format f) {
    return f == kernels::kernel_format::f32 || f == kernels::kernel_format::f16 || f == kernels::kernel_format::bf16 ||
           f == kernels::kernel_format::q8_0 || f == kernels::kernel_format::q4_0;
}

template <kernels::kernel_format F>
struct chunk8;

template <>
struct chunk8<kernels::kernel_format::f32> {
    float4 lo, hi;
    __device__ void fetch(const void* row, std::uint64_t i) {
        const auto* p = reinterpret_cast<const float4*>(static_cast<const float*>(row) + i);
        lo = p[0];
        hi = p[1];
    }
    __device__ void decode(float (&v)[8]) const {
        v[0] = lo.x, v[1] = lo.y, v[2] = lo.z, v[3] = lo.w;
        v[4] = hi.x, v[5] = hi.y, v[6] = hi.z, v[7] = hi.w;
    }
};

// Eight 16-bit floats (f16 or bf16): one 128-bit load, two values per word.
template <kernels::kernel_format F>
struct chunk8_16bit {
    uint4 bits;
    __device__ void fetch(const void* row, std::uint64_t i) {
        bits = *reinterpret_cast<const uint4*>(static_cast<const std::uint16_t*>(row) + i);
    }
    __device__ static float widen(unsigned b) {
        if constexpr (F == kernels::kernel_format::f16)
            return half_to_float(static_cast<std::uint16_t>(b));
        else
            return __uint_as_float(b << 16);  // bf16 is the top half of an f32
    }
    __device__ void decode(float (&v)[8]) const {
        const unsigned w[4] = {bits.x, bits.y, bits.z, bits.w};
        for (int k = 0; k < 4; ++k) {
            v[2 * k] = widen(w[k] & 0xffffu);
            v[2 * k + 1] = widen(w[k] >> 16);
        }
    }
};
template <>
struct chunk8<kernels::kernel_format::f16> : chunk8_16bit<kernels::kernel_format::f16> {};
template <>
struct chunk8<kernels::kernel_format::bf16> : chunk8_16bit<kernels::kernel_format::bf16> {};

// Small integers become floats without the quarter-rate integer conversion: byte b placed under
// the exponent of 2^23 (__byte_perm into 0x4B000000) is the float 2^23 + b exactly, and one
// subtraction leaves b minus the format's offset, also exactly.
__device__ inline float byte_as_float(unsigned word, unsigned byte) {
    return __uint_as_float(__byte_perm(word, 0x4B000000u, 0x7540u | byte));
}

// A quantized chunk's values: its integers (values()) times the block scale it returns.
template <class Chunk>
__device__ void decode_scaled(const Chunk& c, float (&v)[8]) {
    const float scale = c.values(v);
    for (float& x : v) x *= scale;
}

template <>
struct chunk8<kernels::kernel_format::q8_0> {
    std::uint16_t q[4];  // eight int8 quants, two per word
    std::uint16_t d;
    __device__ void fetch(const void* row, std::uint64_t i) {
        const auto* b = static_cast<const blocks::q8_0*>(row) + i / blocks::qk;
        const auto* w = reinterpret_cast<const std::uint16_t*>(b->qs + i % blocks::qk);
        for (int k = 0; k < 4; ++k) q[k] = w[k];
        d = b->d.bits;
    }
    // The quants as floats; returns the block's scale.
    __device__ float values(float (&v)[8]) const {
        for (int k = 0; k < 2; ++k) {
            const unsigned word =
                (q[2 * k] | static_cast<unsigned>(q[2 * k + 1]) << 16) ^ 0x80808080u;        // int8 -> uint8 + 128
            for (int j = 0; j < 4; ++j) v[4 * k + j] = byte_as_float(word, j) - 8388736.0f;  // 2^23 + 128
        }
        return half_to_float(d);
    }
    __device__ void decode(float (&v)[8]) const { decode_scaled(*this, v); }
};

template <>
struct chunk8<kernels::kernel_format::q4_0> {
    std::uint16_t q[4];  // eight nibbles in the low or high halves of eight bytes
    std::uint16_t d;
    int shift;  // 0: elements 0..15 of the block (low nibbles); 4: elements 16..31 (high)
    __device__ void fetch(const void* row, std::uint64_t i) {
        const auto* b = static_cast<const blocks::q4_0*>(row) + i / blocks::qk;
        const int j = static_cast<int>(i % blocks::qk);
        const auto* w = reinterpret_cast<const std::uint16_t*>(b->qs + j % (blocks::qk / 2));
        for (int k = 0; k < 4; ++k) q[k] = w[k];
        d = b->d.bits;
        shift = j < blocks::qk / 2 ? 0 : 4;
    }
    __device__ float values(float (&v)[8]) const {
        for (int k = 0; k < 2; ++k) {
            const unsigned word = ((q[2 * k] | static_cast<unsigned>(q[2 * k + 1]) << 16) >> shift) & 0x0f0f0f0fu;
            for (int j = 0; j < 4; ++j) v[4 * k + j] = byte_as_float(word, j) - 8388616.0f;  // 2^23 + 8
        }
        return half_to_float(d);
    }
    __device__ void decode(float (&v)[8]) const { decode_scaled(*this, v); }
};

// Activations (f32, or f16 for W8A16/W4A16) as eight values, for rows of a multiple of 8 values.
template <class A>
struct act8 {
    chunk8<kernels::kernel_format::f32> c;
    __device__ void fetch(const A* x, std::uint64_t i) { c.fetch(x, i); }
    __device__ void decode(float (&v)[8]) const { c.decode(v); }
};
template <>
struct act8<__half> {
    chunk8<kernels::kernel_format::f16> c;
    __device__ void fetch(const __half* x, std::uint64_t i) { c.fetch(x, i); }
    __device__ void decode(float (&v)[8]) const { c.decode(v); }
};

}  // namespace vramplan::gpu
