// Thirty-two values of a weight held in planes (kernels/weight_planes.hpp), read with 16-byte
// loads: the unit of the plane matrix kernel (matmul_planes.cuh). A block has `units` units; unit
// u is two halves of 16 values, half h starting at value x_at(u, h) of the block, each with its
// affine map (element = scale * (byte - bias) - min) and its values four per word, low byte first,
// each offset by `bias` so that it is unsigned. One lane reads one unit from one 16-byte load of
// plane 0 (two for Q8_0 and for the formats whose high bits sit in a second range of plane 0),
// and its scales from the planes after it.
//
// The bit placement is quads.cuh's (which follows block_decode.hpp's quant_value), regrouped so a
// unit is 16 consecutive bytes of values; the CUDA matmul test compares every format in planes with
// the reference built from quant_value() and sub_affine(), so a disagreement fails there.
#pragma once

#include <cstdint>

#include "vramplan/format/blocks.hpp"
#include "vramplan/kernels/block_decode.hpp"
#include "vramplan/kernels/cuda/quads.cuh"
#include "vramplan/kernels/weight_planes.hpp"

namespace vramplan::gpu {

// Where each plane of a tensor of n_blocks blocks starts.
struct plane_ptrs {
    const std::uint8_t* p[3];
};
template <kernels::kernel_format F>
__device__ inline plane_ptrs planes_at(const void* w, std::uint64_t n_blocks) {
    constexpr kernels::plane_split s = kernels::planes_of(F);
    const auto* base = static_cast<const std::uint8_t*>(w);
    plane_ptrs out{};
#pragma unroll
    for (int i = 0; i < s.count; ++i) out.p[i] = base + kernels::plane_start(s, i, n_blocks);
    return out;
}

__device__ inline uint4 load16(const std::uint8_t* p) { return __ldg(reinterpret_cast<const uint4*>(p)); }
__device__ inline float half_at(const std::uint8_t* plane, std::uint64_t i) {
    return half_to_float(__ldg(reinterpret_cast<const unsigned short*>(plane) + i));
}

struct plane_unit {
    unsigned q[2][4];
    kernels::block_affine a[2];
};

// The four words of a load with a mask and shift applied, into one half.
__device__ inline void words_of(uint4 v, int shift, unsigned mask, unsigned (&out)[4]) {
    out[0] = v.x >> shift & mask, out[1] = v.y >> shift & mask, out[2] = v.z >> shift & mask,
    out[3] = v.w >> shift & mask;
}

template <kernels::kernel_format F>
struct plane_units;  // formats without planes are never held in them

// Q4_0: a unit is a block; half 0 is the low nibbles of its 16 bytes, half 1 the high ones.
template <>
struct plane_units<kernels::kernel_format::q4_0> {
    static constexpr int values = blocks::qk, units = 1, bias = 8;
    __device__ static int x_at(int, int h) { return 16 * h; }
    __device__ static plane_unit read(const plane_ptrs& p, std::uint64_t b, int) {
        const uint4 v = load16(p.p[0] + 16 * b);
        plane_unit u;
        words_of(v, 0, 0x0f0f0f0fu, u.q[0]);
        words_of(v, 4, 0x0f0f0f0fu, u.q[1]);
        u.a[0] = u.a[1] = {half_at(p.p[1], b), 0.0f};
        return u;
    }
};

// Q8_0: a unit is a block, two loads; int8 -> uint8 by flipping the sign bit.
template <>
struct plane_units<kernels::kernel_format::q8_0> {
    static constexpr int values = blocks::qk, units = 1, bias = 128;
    __device__ static int x_at(int, int h) { return 16 * h; }
    __device__ static plane_unit read(const plane_ptrs& p, std::uint64_t b, int) {
        plane_unit u;
        words_of(load16(p.p[0] + 32 * b), 0, 0xffffffffu, u.q[0]);
        words_of(load16(p.p[0] + 32 * b + 16), 0, 0xffffffffu, u.q[1]);
#pragma unroll
        for (int k = 0; k < 4; ++k) u.q[0][k] ^= 0x80808080u, u.q[1][k] ^= 0x80808080u;
        u.a[0] = u.a[1] = {half_at(p.p[1], b), 0.0f};
        return u;
    }
};

// Q4_K and Q5_K: plane 1 is the block's first 16 bytes (d, dmin, the packed 6-bit scales). In each
// 64 values (g) the first 32 are the low nibbles of 32 bytes of qs and the next 32 their high
// nibbles: unit u = 2g + k reads bytes 32g + 16k..+16 of qs, half 0 being values 64g + 16k.. (sub-block
// 2g) and half 1 values 64g + 32 + 16k.. (sub-block 2g + 1).
struct k4_head {
    half_bits d, dmin;
    std::uint8_t scales[12];
};
static_assert(sizeof(k4_head) == 16);

template <kernels::kernel_format F, int QsOffset>
struct k4_plane_units {
    static constexpr int values = blocks::qk_k, units = 8, bias = 0;
    static constexpr int plane_bytes = kernels::planes_of(F).plane[0].bytes;
    __device__ static int x_at(int u, int h) { return 64 * (u / 2) + 16 * (u % 2) + 32 * h; }
    __device__ static uint4 qs(const plane_ptrs& p, std::uint64_t b, int u) {
        return load16(p.p[0] + plane_bytes * b + QsOffset + 32 * (u / 2) + 16 * (u % 2));
    }
    __device__ static void affines(const plane_ptrs& p, std::uint64_t b, int u, plane_unit& out) {
        const auto& head = *reinterpret_cast<const k4_head*>(p.p[1] + 16 * b);
        out.a[0] = k4_affine(head, u / 2 * 2);
        out.a[1] = k4_affine(head, u / 2 * 2 + 1);
    }
};

template <>
struct plane_units<kernels::kernel_format::q4_k> : k4_plane_units<kernels::kernel_format::q4_k, 0> {
    __device__ static plane_unit read(const plane_ptrs& p, std::uint64_t b, int u) {
        const uint4 v = qs(p, b, u);
        plane_unit out;
        words_of(v, 0, 0x0f0f0f0fu, out.q[0]);
        words_of(v, 4, 0x0f0f0f0fu, out.q[1]);
        affines(p, b, u, out);
        return out;
    }
};

// Q5_K's plane 0 is qh (32 bytes) then qs: the fifth bit of value 64g + w is bit 2g + (w >= 32) of
// qh[w % 32], so unit 2g + k takes bits 2g and 2g + 1 of qh[16k..16k + 16).
template <>
struct plane_units<kernels::kernel_format::q5_k> : k4_plane_units<kernels::kernel_format::q5_k, 32> {
    __device__ static plane_unit read(const plane_ptrs& p, std::uint64_t b, int u) {
        const uint4 v = qs(p, b, u), high = load16(p.p[0] + plane_bytes * b + 16 * (u % 2));
        const int g = u / 2;
        plane_unit out;
        unsigned h0[4], h1[4];
        words_of(v, 0, 0x0f0f0f0fu, out.q[0]);
        words_of(v, 4, 0x0f0f0f0fu, out.q[1]);
        words_of(high, 2 * g, 0x01010101u, h0);
        words_of(high, 2 * g + 1, 0x01010101u, h1);
#pragma unroll
        for (int k = 0; k < 4; ++k) out.q[0][k] |= h0[k] << 4, out.q[1][k] |= h1[k] << 4;
        affines(p, b, u, out);
        return out;
    }
};

// Q6_K: plane 0 is ql (128 bytes) then qh (64), plane 1 the 16 int8 scales, plane 2 d. In half H
// (128 values), quarter k (32 values), element r takes a nibble of ql[64H + r + 32 (k % 2)] (low for
// k < 2) and bits 2k..2k+1 of qh[32H + r]. Unit u = 4H + 2j + m reads ql[64H + 32j + 16m..+16] and
// qh[32H + 16m..+16]: half 0 is quarter j (low nibbles), half 1 quarter j + 2 (high nibbles), each
// values r = 16m..16m + 16 of its quarter.
template <>
struct plane_units<kernels::kernel_format::q6_k> {
    static constexpr int values = blocks::qk_k, units = 8, bias = 32;
    __device__ static int x_at(int u, int h) { return 128 * (u / 4) + 32 * ((u / 2) % 2 + 2 * h) + 16 * (u % 2); }
    __device__ static plane_unit read(const plane_ptrs& p, std::uint64_t b, int u) {
        const int H = u / 4, j = (u / 2) % 2, m = u % 2;
        const uint4 low = load16(p.p[0] + 192 * b + 64 * H + 32 * j + 16 * m);
        const uint4 high = load16(p.p[0] + 192 * b + 128 + 32 * H + 16 * m);
        const auto* scales = reinterpret_cast<const std::int8_t*>(p.p[1] + 16 * b);
        const float d = half_at(p.p[2], b);
        plane_unit out;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int k = j + 2 * h;
            unsigned hi[4];
            words_of(low, 4 * h, 0x0f0f0f0fu, out.q[h]);
            words_of(high, 2 * k, 0x03030303u, hi);
#pragma unroll
            for (int w = 0; w < 4; ++w) out.q[h][w] |= hi[w] << 4;
            out.a[h] = {d * static_cast<float>(scales[8 * H + 2 * k + m]), 0.0f};
        }
        return out;
    }
};

}  // namespace vramplan::gpu
