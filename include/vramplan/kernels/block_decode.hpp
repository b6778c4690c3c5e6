// Decoding of the block formats llama.cpp's quantizer writes into the files people download: the
// K-quants (Q2_K to Q6_K, 256-value super-blocks of 16- or 32-value sub-blocks, each with its own
// scale and, for some, minimum) and the 32-value fallbacks it uses for rows that are not a
// multiple of 256 (Q4_1, Q5_0, Q5_1, IQ4_NL). Each format is three small functions: the integer
// value of element j, the affine map of its sub-block (value = scale * q - min), and the sub-block
// size; element access and whole-block decoding are both built from them, so they cannot disagree.
// The layouts follow GGUF's definitions (ggml's dequantize_row_* reference), cited per format.
#pragma once

#include <cstdint>

#include "vramplan/config.hpp"
#include "vramplan/format/blocks.hpp"
#include "vramplan/format/half.hpp"

namespace vramplan::kernels {

// A sub-block's values are scale * q - min for its integer values q.
struct block_affine {
    float scale;
    float min;
};

namespace detail {
// Q4_K and Q5_K pack eight 6-bit scales and eight 6-bit minimums into 12 bytes: sub-blocks 0-3
// keep theirs in the low 6 bits of bytes 0-3 (scales) and 4-7 (minimums); sub-blocks 4-7 take
// their low 4 bits from the nibbles of bytes 8-11 and their top 2 bits from the spare top bits of
// bytes 0-7 (ggml's get_scale_min_k4).
VRAMPLAN_HOST_DEVICE inline void scale_min_k4(const std::uint8_t* s, int sub, int& scale, int& min) {
    if (sub < 4) {
        scale = s[sub] & 63;
        min = s[sub + 4] & 63;
    } else {
        scale = (s[sub + 4] & 0x0f) | ((s[sub - 4] >> 6) << 4);
        min = (s[sub + 4] >> 4) | ((s[sub] >> 6) << 4);
    }
}
// Q4_K's and Q5_K's 4 low bits: in each 64 values, the first 32 are the low nibbles of 32 bytes
// and the next 32 their high nibbles.
VRAMPLAN_HOST_DEVICE inline int k_nibble(const std::uint8_t* qs, int j) {
    const int g = j / 64, w = j % 64;
    const std::uint8_t byte = qs[32 * g + w % 32];
    return w < 32 ? (byte & 0x0f) : (byte >> 4);
}
// Their sub-block's map: d * scale, dmin * min.
template <class Block>
VRAMPLAN_HOST_DEVICE inline block_affine k4_affine(const Block& b, int sub) {
    int scale = 0, min = 0;
    scale_min_k4(b.scales, sub, scale, min);
    return {to_float(b.d) * static_cast<float>(scale), to_float(b.dmin) * static_cast<float>(min)};
}
// The 5th bit of element j of a Q5_0/Q5_1 block: bit j of the little-endian 32-bit qh.
VRAMPLAN_HOST_DEVICE inline int high_bit_q5(const std::uint8_t* qh, int j) { return (qh[j / 8] >> (j % 8)) & 1; }
}  // namespace detail

// ---- Q4_1: x = d * q + m, q in [0, 16); element j < 16 in the low nibble of byte j ----
VRAMPLAN_HOST_DEVICE constexpr int sub_block_size(const blocks::q4_1*) { return 32; }
VRAMPLAN_HOST_DEVICE inline int quant_value(const blocks::q4_1& b, int j) {
    return j < 16 ? (b.qs[j] & 0x0f) : (b.qs[j - 16] >> 4);
}
VRAMPLAN_HOST_DEVICE inline block_affine sub_affine(const blocks::q4_1& b, int) {
    return {to_float(b.d), -to_float(b.m)};
}

// ---- Q5_0: x = d * (q - 16), the nibble of Q4_0's layout plus bit j of qh as the 5th bit ----
VRAMPLAN_HOST_DEVICE constexpr int sub_block_size(const blocks::q5_0*) { return 32; }
VRAMPLAN_HOST_DEVICE inline int quant_value(const blocks::q5_0& b, int j) {
    const int low = j < 16 ? (b.qs[j] & 0x0f) : (b.qs[j - 16] >> 4);
    return (low | (detail::high_bit_q5(b.qh, j) << 4)) - 16;
}
VRAMPLAN_HOST_DEVICE inline block_affine sub_affine(const blocks::q5_0& b, int) { return {to_float(b.d), 0.0f}; }

// ---- Q5_1: x = d * q + m, q the 5-bit value of Q5_0's layout without the offset ----
VRAMPLAN_HOST_DEVICE constexpr int sub_block_size(const blocks::q5_1*) { return 32; }
VRAMPLAN_HOST_DEVICE inline int quant_value(const blocks::q5_1& b, int j) {
    const int low = j < 16 ? (b.qs[j] & 0x0f) : (b.qs[j - 16] >> 4);
    return low | (detail::high_bit_q5(b.qh, j) << 4);
}
VRAMPLAN_HOST_DEVICE inline block_affine sub_affine(const blocks::q5_1& b, int) {
    return {to_float(b.d), -to_float(b.m)};
}

// ---- IQ4_NL: x = d * grid[q], a non-linear 16-entry grid (ggml's kvalues_iq4nl), q in Q4_0's
// nibble layout ----
VRAMPLAN_HOST_DEVICE constexpr int sub_block_size(const blocks::iq4_nl*) { return 32; }
VRAMPLAN_HOST_DEVICE inline int quant_value(const blocks::iq4_nl& b, int j) {
    constexpr std::int8_t grid[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
    return grid[j < 16 ? (b.qs[j] & 0x0f) : (b.qs[j - 16] >> 4)];
}
VRAMPLAN_HOST_DEVICE inline block_affine sub_affine(const blocks::iq4_nl& b, int) { return {to_float(b.d), 0.0f}; }

// ---- Q2_K: 16 sub-blocks of 16; scales[s] holds the 4-bit scale (low) and minimum (high) of
// sub-block s, x = d * scale * q - dmin * min, q 2 bits. Elements come in two halves of 128: in
// half h, element 32i + r (i < 4) is bits 2i..2i+1 of qs[32h + r], in sub-block 8h + 2i + r / 16 ----
VRAMPLAN_HOST_DEVICE constexpr int sub_block_size(const blocks::q2_k*) { return 16; }
VRAMPLAN_HOST_DEVICE inline int quant_value(const blocks::q2_k& b, int j) {
    const int h = j / 128, w = j % 128;
    return (b.qs[32 * h + w % 32] >> (2 * (w / 32))) & 3;
}
VRAMPLAN_HOST_DEVICE inline block_affine sub_affine(const blocks::q2_k& b, int sub) {
    return {to_float(b.d) * static_cast<float>(b.scales[sub] & 0x0f),
            to_float(b.dmin) * static_cast<float>(b.scales[sub] >> 4)};
}

// ---- Q3_K: 16 sub-blocks of 16 with signed 6-bit scales (minus 32); x = d * scale * q, q the
// 2 low bits (Q2_K's placement) minus 4 unless element r of the half's hmask bit (4h + i) is set.
// Scale s: low 4 bits from the nibble s / 8 of byte s % 8, top 2 bits from byte 8 + s % 4 at bit
// 2 (s / 4) (ggml unpacks the same through kmask1 / kmask2) ----
VRAMPLAN_HOST_DEVICE constexpr int sub_block_size(const blocks::q3_k*) { return 16; }
VRAMPLAN_HOST_DEVICE inline int quant_value(const blocks::q3_k& b, int j) {
    const int h = j / 128, w = j % 128, i = w / 32, r = w % 32;
    const int low = (b.qs[32 * h + r] >> (2 * i)) & 3;
    return low - ((b.hmask[r] >> (4 * h + i)) & 1 ? 0 : 4);
}
VRAMPLAN_HOST_DEVICE inline block_affine sub_affine(const blocks::q3_k& b, int sub) {
    const int low = sub < 8 ? (b.scales[sub] & 0x0f) : (b.scales[sub - 8] >> 4);
    const int high = (b.scales[8 + sub % 4] >> (2 * (sub / 4))) & 3;
    return {to_float(b.d) * static_cast<float>((low | (high << 4)) - 32), 0.0f};
}

// ---- Q4_K: 8 sub-blocks of 32 with 6-bit scales and minimums (detail::scale_min_k4); x = d *
// scale * q - dmin * min, q 4 bits (detail::k_nibble) ----
VRAMPLAN_HOST_DEVICE constexpr int sub_block_size(const blocks::q4_k*) { return 32; }
VRAMPLAN_HOST_DEVICE inline int quant_value(const blocks::q4_k& b, int j) { return detail::k_nibble(b.qs, j); }
VRAMPLAN_HOST_DEVICE inline block_affine sub_affine(const blocks::q4_k& b, int sub) {
    return detail::k4_affine(b, sub);
}

// ---- Q5_K: Q4_K plus a 5th bit: element 64g + w takes bit 2g + (w >= 32) of qh[w % 32] ----
VRAMPLAN_HOST_DEVICE constexpr int sub_block_size(const blocks::q5_k*) { return 32; }
VRAMPLAN_HOST_DEVICE inline int quant_value(const blocks::q5_k& b, int j) {
    const int g = j / 64, w = j % 64;
    return detail::k_nibble(b.qs, j) | (((b.qh[w % 32] >> (2 * g + (w < 32 ? 0 : 1))) & 1) << 4);
}
VRAMPLAN_HOST_DEVICE inline block_affine sub_affine(const blocks::q5_k& b, int sub) {
    return detail::k4_affine(b, sub);
}

// ---- Q6_K: 16 sub-blocks of 16 with signed 8-bit scales; x = d * scale * (q - 32), q 6 bits.
// In half h (128 values), quarter k (32 values) element r takes a nibble of ql[64h + r + 32 (k % 2)]
// (low for k < 2) and bits 2k..2k+1 of qh[32h + r] ----
VRAMPLAN_HOST_DEVICE constexpr int sub_block_size(const blocks::q6_k*) { return 16; }
VRAMPLAN_HOST_DEVICE inline int quant_value(const blocks::q6_k& b, int j) {
    const int h = j / 128, w = j % 128, k = w / 32, r = w % 32;
    const std::uint8_t byte = b.ql[64 * h + r + 32 * (k % 2)];
    const int low = k < 2 ? (byte & 0x0f) : (byte >> 4);
    return (low | (((b.qh[32 * h + r] >> (2 * k)) & 3) << 4)) - 32;
}
// Sub-block s holds elements [16 s, 16 s + 16): in ggml's order, scale index 8h + r / 16 + 2k.
VRAMPLAN_HOST_DEVICE inline block_affine sub_affine(const blocks::q6_k& b, int sub) {
    return {to_float(b.d) * static_cast<float>(b.scales[sub]), 0.0f};
}

// Element j of a block, and a whole block into out[0..elements): both from the three above.
template <class Block>
VRAMPLAN_HOST_DEVICE inline float decode_element(const Block& b, int j) {
    const block_affine a = sub_affine(b, j / sub_block_size(static_cast<const Block*>(nullptr)));
    return a.scale * static_cast<float>(quant_value(b, j)) - a.min;
}
template <class Block, int Elements>
VRAMPLAN_HOST_DEVICE inline void decode_block(const Block& b, float* out) {
    constexpr int sub = sub_block_size(static_cast<const Block*>(nullptr));
    for (int s = 0; s < Elements / sub; ++s) {
        const block_affine a = sub_affine(b, s);
        for (int j = s * sub; j < (s + 1) * sub; ++j) out[j] = a.scale * static_cast<float>(quant_value(b, j)) - a.min;
    }
}

}  // namespace vramplan::kernels
