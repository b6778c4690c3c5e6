// Thirty-two values of a weight held in planes (weight_planes.hpp), read with 16-byte loads: the
// unit of the CUDA plane matrix kernel (kernels/cuda/matmul_planes.cuh). A block has `units` units;
// unit u is two halves of 16 values, half h starting at value x_at(u, h) of the block, each with its
// affine map (element = scale * (byte - bias) - min) and its values four per word, low byte first,
// each offset by `bias` so that it is unsigned. One unit is one 16-byte load of plane 0 (two for
// Q8_0 and for the formats whose high bits sit in a second range of plane 0), and its scales come
// from the planes after it.
//
// Shared by host and device, so the CPU tests check every unit of every format against the
// element-by-element decoding of the file's blocks (block_math.hpp's load, block_decode.hpp)
// before any GPU runs them; on the device the loads go through the read-only cache and f16 scales
// through the hardware conversion (exact, like to_float).
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#endif

#include "vramplan/config.hpp"
#include "vramplan/format/blocks.hpp"
#include "vramplan/format/half.hpp"
#include "vramplan/kernels/block_decode.hpp"
#include "vramplan/kernels/weight_planes.hpp"

namespace vramplan::kernels {

// Where each plane of a tensor of n_blocks blocks starts.
struct plane_ptrs {
    const std::uint8_t* p[3];
};
template <kernel_format F>
VRAMPLAN_HOST_DEVICE inline plane_ptrs planes_at(const void* w, std::uint64_t n_blocks) {
    constexpr plane_split s = planes_of(F);
    const auto* base = static_cast<const std::uint8_t*>(w);
    plane_ptrs out{};
    for (int i = 0; i < s.count; ++i) out.p[i] = base + plane_start(s, i, n_blocks);
    return out;
}

// Sixteen bytes (16-byte aligned on the device) as four little-endian words.
struct words16 {
    std::uint32_t w[4];
};
VRAMPLAN_HOST_DEVICE inline words16 load_words16(const std::uint8_t* p) {
#if VRAMPLAN_DEVICE_PASS
    const uint4 v = __ldg(reinterpret_cast<const uint4*>(p));
    return {{v.x, v.y, v.z, v.w}};
#else
    words16 out;
    std::memcpy(out.w, p, 16);
    return out;
#endif
}
VRAMPLAN_HOST_DEVICE inline float half_value(half_bits h) {
#if VRAMPLAN_DEVICE_PASS
    return __half2float(__ushort_as_half(h.bits));
#else
    return to_float(h);
#endif
}
// Element i of a plane of f16 values.
VRAMPLAN_HOST_DEVICE inline float plane_half(const std::uint8_t* plane, std::uint64_t i) {
#if VRAMPLAN_DEVICE_PASS
    return __half2float(__ushort_as_half(__ldg(reinterpret_cast<const unsigned short*>(plane) + i)));
#else
    half_bits h;
    std::memcpy(&h, plane + 2 * i, 2);
    return to_float(h);
#endif
}

struct plane_unit {
    std::uint32_t q[2][4];
    block_affine a[2];
};

// The four words of a load with a shift and a mask applied, into one half.
VRAMPLAN_HOST_DEVICE inline void words_of(const words16& v, int shift, std::uint32_t mask, std::uint32_t (&out)[4]) {
    for (int k = 0; k < 4; ++k) out[k] = v.w[k] >> shift & mask;
}

// Q4_K's and Q5_K's plane 1: the block's first 16 bytes (d, dmin, the packed 6-bit scales).
struct k4_head {
    half_bits d, dmin;
    std::uint8_t scales[12];
};
static_assert(sizeof(k4_head) == 16);
VRAMPLAN_HOST_DEVICE inline block_affine k4_plane_affine(const k4_head& h, int sub) {
    int scale = 0, min = 0;
    detail::scale_min_k4(h.scales, sub, scale, min);
    return {half_value(h.d) * static_cast<float>(scale), half_value(h.dmin) * static_cast<float>(min)};
}

template <kernel_format F>
struct plane_units;  // formats without planes are never held in them

// Q4_0: a unit is a block; half 0 is the low nibbles of its 16 bytes, half 1 the high ones.
template <>
struct plane_units<kernel_format::q4_0> {
    static constexpr int values = blocks::qk, units = 1, bias = 8;
    VRAMPLAN_HOST_DEVICE static int x_at(int, int h) { return 16 * h; }
    VRAMPLAN_HOST_DEVICE static plane_unit read(const plane_ptrs& p, std::uint64_t b, int) {
        const words16 v = load_words16(p.p[0] + 16 * b);
        plane_unit u;
        words_of(v, 0, 0x0f0f0f0fu, u.q[0]);
        words_of(v, 4, 0x0f0f0f0fu, u.q[1]);
        u.a[0] = u.a[1] = block_affine{plane_half(p.p[1], b), 0.0f};
        return u;
    }
};

// Q8_0: a unit is a block, two loads; int8 -> uint8 by flipping the sign bit.
template <>
struct plane_units<kernel_format::q8_0> {
    static constexpr int values = blocks::qk, units = 1, bias = 128;
    VRAMPLAN_HOST_DEVICE static int x_at(int, int h) { return 16 * h; }
    VRAMPLAN_HOST_DEVICE static plane_unit read(const plane_ptrs& p, std::uint64_t b, int) {
        plane_unit u;
        words_of(load_words16(p.p[0] + 32 * b), 0, 0xffffffffu, u.q[0]);
        words_of(load_words16(p.p[0] + 32 * b + 16), 0, 0xffffffffu, u.q[1]);
        for (int k = 0; k < 4; ++k) u.q[0][k] ^= 0x80808080u, u.q[1][k] ^= 0x80808080u;
        u.a[0] = u.a[1] = block_affine{plane_half(p.p[1], b), 0.0f};
        return u;
    }
};

// Q4_K and Q5_K: plane 1 is the block's first 16 bytes (d, dmin, the packed 6-bit scales). In each
// 64 values (g) the first 32 are the low nibbles of 32 bytes of qs and the next 32 their high
// nibbles: unit u = 2g + k reads bytes 32g + 16k..+16 of qs, half 0 being values 64g + 16k.. (sub-block
// 2g) and half 1 values 64g + 32 + 16k.. (sub-block 2g + 1).
template <kernel_format F, int QsOffset>
struct k4_plane_units {
    static constexpr int values = blocks::qk_k, units = 8, bias = 0;
    static constexpr int plane_bytes = planes_of(F).plane[0].bytes;
    VRAMPLAN_HOST_DEVICE static int x_at(int u, int h) { return 64 * (u / 2) + 16 * (u % 2) + 32 * h; }
    VRAMPLAN_HOST_DEVICE static words16 qs(const plane_ptrs& p, std::uint64_t b, int u) {
        return load_words16(p.p[0] + plane_bytes * b + QsOffset + 32 * (u / 2) + 16 * (u % 2));
    }
    VRAMPLAN_HOST_DEVICE static void affines(const plane_ptrs& p, std::uint64_t b, int u, plane_unit& out) {
        const auto& head = *reinterpret_cast<const k4_head*>(p.p[1] + 16 * b);
        out.a[0] = k4_plane_affine(head, u / 2 * 2);
        out.a[1] = k4_plane_affine(head, u / 2 * 2 + 1);
    }
};

template <>
struct plane_units<kernel_format::q4_k> : k4_plane_units<kernel_format::q4_k, 0> {
    VRAMPLAN_HOST_DEVICE static plane_unit read(const plane_ptrs& p, std::uint64_t b, int u) {
        const words16 v = qs(p, b, u);
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
struct plane_units<kernel_format::q5_k> : k4_plane_units<kernel_format::q5_k, 32> {
    VRAMPLAN_HOST_DEVICE static plane_unit read(const plane_ptrs& p, std::uint64_t b, int u) {
        const words16 v = qs(p, b, u), high = load_words16(p.p[0] + plane_bytes * b + 16 * (u % 2));
        const int g = u / 2;
        plane_unit out;
        std::uint32_t h0[4], h1[4];
        words_of(v, 0, 0x0f0f0f0fu, out.q[0]);
        words_of(v, 4, 0x0f0f0f0fu, out.q[1]);
        words_of(high, 2 * g, 0x01010101u, h0);
        words_of(high, 2 * g + 1, 0x01010101u, h1);
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
struct plane_units<kernel_format::q6_k> {
    static constexpr int values = blocks::qk_k, units = 8, bias = 32;
    VRAMPLAN_HOST_DEVICE static int x_at(int u, int h) { return 128 * (u / 4) + 32 * ((u / 2) % 2 + 2 * h) + 16 * (u % 2); }
    VRAMPLAN_HOST_DEVICE static plane_unit read(const plane_ptrs& p, std::uint64_t b, int u) {
        const int H = u / 4, j = (u / 2) % 2, m = u % 2;
        const words16 low = load_words16(p.p[0] + 192 * b + 64 * H + 32 * j + 16 * m);
        const words16 high = load_words16(p.p[0] + 192 * b + 128 + 32 * H + 16 * m);
        const auto* scales = reinterpret_cast<const std::int8_t*>(p.p[1] + 16 * b);
        const float d = plane_half(p.p[2], b);
        plane_unit out;
        for (int h = 0; h < 2; ++h) {
            const int k = j + 2 * h;
            std::uint32_t hi[4];
            words_of(low, 4 * h, 0x0f0f0f0fu, out.q[h]);
            words_of(high, 2 * k, 0x03030303u, hi);
            for (int w = 0; w < 4; ++w) out.q[h][w] |= hi[w] << 4;
            out.a[h] = block_affine{d * static_cast<float>(scales[8 * H + 2 * k + m]), 0.0f};
        }
        return out;
    }
};

}  // namespace vramplan::kernels
