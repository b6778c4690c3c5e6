// Block layouts bit-compatible with GGUF (ggml's block_q8_0 etc.). The kernels compute on the
// first five; the K and IQ layouts are here so their footprints are anchored to real structs.
// Every size is static_asserted against the format table, so the two cannot drift apart.
#pragma once

#include <cstdint>

#include "vramplan/format/format.hpp"
#include "vramplan/format/half.hpp"

namespace vramplan::blocks {

inline constexpr int qk = 32;     // elements per block of the 32-element formats
inline constexpr int qk_k = 256;  // elements per K-quant super-block

struct q8_0 {
    half_bits d;
    std::int8_t qs[qk];
};  // x = d * q
struct q4_0 {
    half_bits d;
    std::uint8_t qs[qk / 2];
};  // x = d * (q - 8)
struct q4_1 {
    half_bits d;
    half_bits m;
    std::uint8_t qs[qk / 2];
};  // x = d * q + m
struct q5_0 {
    half_bits d;
    std::uint8_t qh[4];
    std::uint8_t qs[qk / 2];
};
struct q5_1 {
    half_bits d;
    half_bits m;
    std::uint8_t qh[4];
    std::uint8_t qs[qk / 2];
};
struct q8_1 {
    half_bits d;
    half_bits s;
    std::int8_t qs[qk];
};

struct q2_k {
    std::uint8_t scales[qk_k / 16];
    std::uint8_t qs[qk_k / 4];
    half_bits d;
    half_bits dmin;
};
struct q3_k {
    std::uint8_t hmask[qk_k / 8];
    std::uint8_t qs[qk_k / 4];
    std::uint8_t scales[12];
    half_bits d;
};
struct q4_k {
    half_bits d;
    half_bits dmin;
    std::uint8_t scales[12];
    std::uint8_t qs[qk_k / 2];
};
struct q5_k {
    half_bits d;
    half_bits dmin;
    std::uint8_t scales[12];
    std::uint8_t qh[qk_k / 8];
    std::uint8_t qs[qk_k / 2];
};
struct q6_k {
    std::uint8_t ql[qk_k / 2];
    std::uint8_t qh[qk_k / 4];
    std::int8_t scales[qk_k / 16];
    half_bits d;
};
struct q8_k {
    float d;
    std::int8_t qs[qk_k];
    std::int16_t bsums[qk_k / 16];
};
struct iq2_xxs {
    half_bits d;
    std::uint16_t qs[qk_k / 8];
};
struct iq2_xs {
    half_bits d;
    std::uint16_t qs[qk_k / 8];
    std::uint8_t scales[qk_k / 32];
};
struct iq2_s {
    half_bits d;
    std::uint8_t qs[qk_k / 4];
    std::uint8_t qh[qk_k / 32];
    std::uint8_t scales[qk_k / 32];
};
struct iq3_xxs {
    half_bits d;
    std::uint8_t qs[3 * qk_k / 8];
};
struct iq3_s {
    half_bits d;
    std::uint8_t qs[qk_k / 4];
    std::uint8_t qh[qk_k / 32];
    std::uint8_t signs[qk_k / 8];
    std::uint8_t scales[qk_k / 64];
};
struct iq1_s {
    half_bits d;
    std::uint8_t qs[qk_k / 8];
    std::uint16_t qh[qk_k / 32];
};
struct iq1_m {
    std::uint8_t qs[qk_k / 8];
    std::uint8_t qh[qk_k / 16];
    std::uint8_t scales[qk_k / 32];
};
struct iq4_nl {
    half_bits d;
    std::uint8_t qs[qk / 2];
};
struct iq4_xs {
    half_bits d;
    std::uint16_t scales_h;
    std::uint8_t scales_l[qk_k / 64];
    std::uint8_t qs[qk_k / 2];
};
struct tq1_0 {
    std::uint8_t qs[(qk_k - 4 * qk_k / 64) / 5];
    std::uint8_t qh[qk_k / 64];
    half_bits d;
};
struct tq2_0 {
    std::uint8_t qs[qk_k / 4];
    half_bits d;
};
struct mxfp4 {
    std::uint8_t e;
    std::uint8_t qs[qk / 2];
};

// The layout itself (no padding), and agreement with the table the planner uses.
template <class Block>
constexpr bool matches(format_id id, std::size_t elements, std::size_t size) {
    const format f{id};
    return sizeof(Block) == size && traits(f).block_bytes == size && traits(f).block_elems == elements;
}
static_assert(matches<q8_0>(format_id::q8_0, qk, 34));
static_assert(matches<q4_0>(format_id::q4_0, qk, 18));
static_assert(matches<q4_1>(format_id::q4_1, qk, 20));
static_assert(matches<q5_0>(format_id::q5_0, qk, 22));
static_assert(matches<q5_1>(format_id::q5_1, qk, 24));
static_assert(matches<q8_1>(format_id::q8_1, qk, 36));
static_assert(matches<q2_k>(format_id::q2_k, qk_k, 84));
static_assert(matches<q3_k>(format_id::q3_k, qk_k, 110));
static_assert(matches<q4_k>(format_id::q4_k, qk_k, 144));
static_assert(matches<q5_k>(format_id::q5_k, qk_k, 176));
static_assert(matches<q6_k>(format_id::q6_k, qk_k, 210));
static_assert(matches<q8_k>(format_id::q8_k, qk_k, 292));
static_assert(matches<iq2_xxs>(format_id::iq2_xxs, qk_k, 66));
static_assert(matches<iq2_xs>(format_id::iq2_xs, qk_k, 74));
static_assert(matches<iq2_s>(format_id::iq2_s, qk_k, 82));
static_assert(matches<iq3_xxs>(format_id::iq3_xxs, qk_k, 98));
static_assert(matches<iq3_s>(format_id::iq3_s, qk_k, 110));
static_assert(matches<iq1_s>(format_id::iq1_s, qk_k, 50));
static_assert(matches<iq1_m>(format_id::iq1_m, qk_k, 56));
static_assert(matches<iq4_nl>(format_id::iq4_nl, qk, 18));
static_assert(matches<iq4_xs>(format_id::iq4_xs, qk_k, 136));
static_assert(matches<tq1_0>(format_id::tq1_0, qk_k, 54));
static_assert(matches<tq2_0>(format_id::tq2_0, qk_k, 66));
static_assert(matches<mxfp4>(format_id::mxfp4, qk, 17));

}  // namespace vramplan::blocks
