// The K-quant panels' tile kernels with AVX-512 VNNI: sixteen rows in one 512-bit vector
// (kquant_panel_layout.hpp holds the layout and says why).
#pragma once

#include <cstdint>
#include <cstring>

#include "vramplan/config.hpp"
#include "vramplan/kernels/cpu/int8_panel.hpp"
#include "vramplan/kernels/cpu/kquant_panel_layout.hpp"

namespace vramplan::kernels::cpu {

#if VRAMPLAN_X86_SIMD
VRAMPLAN_AVX512_WARNINGS_OFF
namespace simd {

// The 512-bit tiles read each panel front to back and leave the lines ahead to the hardware
// prefetchers, whose requests do not take the core's miss buffers from the tile's own loads. A
// software prefetch of the block after next (prefetch_block_quarter, as the 256-bit tiles do) slowed
// Q3_K to Q6_K once their arithmetic kept up with memory, and left Q2_K level. Measured on two cores of the AMD EPYC (Zen 4,
// AVX-512 VNNI), 4096 x 14336 over 512 MiB, without against with, rounds in turn, GB/s of the
// one-token product: Q4_K 29.0 / 28.3 against 25.5 / 25.0, Q6_K 35.5 / 30.5 against 22.6 / 24.1,
// Q5_K 32.7 / 38.8 / 35.7 against 24.5 / 25.1 / 26.0; and once Q3_K's three-bit fields ran its
// one-token tile at 35 GB/s a core in L2 (against 25), share of the read loop, Q3_K 0.92 / 0.88
// against 0.78 / 0.79 and Q2_K 0.81 / 0.76 / 0.77 / 0.79 against 0.76 / 0.79 / 0.78 / 0.75 / 0.83
// (bench/REPORT.md).

// Sub-block j's low bits of scale (0..3) and min (4..7) for the sixteen rows, one per lane.
template <class Panel>
VRAMPLAN_TARGET_AVX512_VNNI inline __m512i k4_low_bits(const Panel& p, int j) {
    return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p.lo[j])));
}

// Bit `from` of each byte (one bit per byte) moved to bit `to`: 16-bit shifts keep it in its byte.
VRAMPLAN_TARGET_AVX512_VNNI inline __m512i move_bit(__m512i h, int from, int to) {
    const __m512i bit = _mm512_and_si512(h, _mm512_set1_epi8(static_cast<char>(1 << from)));
    return from <= to ? _mm512_slli_epi16(bit, static_cast<unsigned>(to - from))
                      : _mm512_srli_epi16(bit, static_cast<unsigned>(from - to));
}

// Q4_K (and Q5_K, with its fifth bits) with AVX-512 VNNI. Per pair of sub-blocks (64 values, 32
// bytes a row): the low nibbles are sub-block 2p, the high ones 2p + 1; each token's integer sums
// of both, then their f32 scales. Q5_K's value chunk c of a pair takes bits 2 (c % 4) and
// 2 (c % 4) + 1 of the pair's fifth-bit chunk c / 4 for its low and high values. The minimums: sum_j min_j * (x's 32-value sum j), as 16-bit
// pairs in vpdpwssd (min < 64, |sum| <= 32 * 127), subtracted in f32 after the scales.
template <class Panel, int Tokens>
VRAMPLAN_TARGET_AVX512_VNNI inline void k_panel_tile_k4_avx512_vnni(const Panel* p, std::uint64_t /*one panel*/,
                                                                    const blocks::q8_k* x, std::uint64_t stride,
                                                                    std::uint64_t nblocks, float* out) {
    constexpr bool q5 = std::is_same_v<Panel, panel_q5_k>;
    const __m512i nibble = _mm512_set1_epi8(0x0f), three = _mm512_set1_epi32(3);
    __m512 acc[Tokens];
    VRAMPLAN_UNROLL
    for (int t = 0; t < Tokens; ++t) acc[t] = _mm512_setzero_ps();
    for (std::uint64_t b = 0; b < nblocks; ++b) {
        const Panel& pb = p[b];
        const __m512i hi = _mm512_loadu_si512(pb.hi);
        const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(pb.d)));
        const __m512 d16 = _mm512_mul_ps(d, _mm512_set1_ps(1.0f / 16.0f));
        __m512 sb[Tokens];
        VRAMPLAN_UNROLL
        for (int t = 0; t < Tokens; ++t) sb[t] = _mm512_setzero_ps();
        VRAMPLAN_UNROLL
        for (int pair = 0; pair < 4; ++pair) {
            __m512i lo_sum[Tokens], hi_sum[Tokens];
            VRAMPLAN_UNROLL
            for (int t = 0; t < Tokens; ++t) lo_sum[t] = hi_sum[t] = _mm512_setzero_si512();
            VRAMPLAN_UNROLL
            for (int c = 0; c < 8; ++c) {
                __m512i v = _mm512_loadu_si512(qs_chunk(pb, 8 * pair + c));
                VRAMPLAN_KEEP_IN_REGISTER(v);
                // Q4_K's high nibbles are taken in place, sixteen times their value (undone in the
                // scale); Q5_K's move down to meet their fifth bits.
                __m512i lo = _mm512_and_si512(v, nibble),
                        hv = q5 ? _mm512_and_si512(_mm512_srli_epi16(v, 4), nibble)
                                : _mm512_and_si512(v, _mm512_set1_epi8(static_cast<char>(0xf0)));
                if constexpr (q5) {
                    __m512i h = _mm512_loadu_si512(pb.pairs[pair].fifth[c / 4]);
                    VRAMPLAN_KEEP_IN_REGISTER(h);
                    lo = _mm512_or_si512(lo, move_bit(h, 2 * (c % 4), 4));
                    hv = _mm512_or_si512(hv, move_bit(h, 2 * (c % 4) + 1, 4));
                }
                VRAMPLAN_UNROLL
                for (int t = 0; t < Tokens; ++t) {
                    const std::int8_t* xq = x[t * stride + b].qs + 64 * pair;
                    lo_sum[t] = _mm512_dpbusd_epi32(lo_sum[t], lo, _mm512_set1_epi32(x_chunk(xq, c)));
                    hi_sum[t] = _mm512_dpbusd_epi32(hi_sum[t], hv, _mm512_set1_epi32(x_chunk(xq, 8 + c)));
                }
            }
            const int j = 2 * pair;
            const __m512i s0 =
                _mm512_or_si512(_mm512_and_si512(k4_low_bits(pb, j), nibble),
                                _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(hi, 4 * j), three), 4));
            const __m512i s1 =
                _mm512_or_si512(_mm512_and_si512(k4_low_bits(pb, j + 1), nibble),
                                _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(hi, 4 * j + 4), three), 4));
            // Q4_K's high sums are sixteen times their value: d / 16, exact as a power of two, is
            // their d (16 times the sum stays below 2^24, so exact in f32 too).
            const __m512 ds0 = _mm512_mul_ps(d, _mm512_cvtepi32_ps(s0)),
                         ds1 = _mm512_mul_ps(q5 ? d : d16, _mm512_cvtepi32_ps(s1));
            VRAMPLAN_UNROLL
            for (int t = 0; t < Tokens; ++t) {
                sb[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(lo_sum[t]), ds0, sb[t]);
                sb[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(hi_sum[t]), ds1, sb[t]);
            }
        }
        // Minimums as 16-bit pairs (min_2k, min_2k+1) per row.
        __m512i mins[4];
        VRAMPLAN_UNROLL
        for (int k = 0; k < 4; ++k) {
            const int j = 2 * k;
            const __m512i m0 =
                _mm512_or_si512(_mm512_srli_epi32(k4_low_bits(pb, j), 4),
                                _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(hi, 4 * j + 2), three), 4));
            const __m512i m1 =
                _mm512_or_si512(_mm512_srli_epi32(k4_low_bits(pb, j + 1), 4),
                                _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(hi, 4 * j + 6), three), 4));
            mins[k] = _mm512_or_si512(m0, _mm512_slli_epi32(m1, 16));
        }
        const __m512 dmin = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(pb.dmin)));
        VRAMPLAN_UNROLL
        for (int t = 0; t < Tokens; ++t) {
            const blocks::q8_k& y = x[t * stride + b];
            // x's eight 32-value sums, packed as 16-bit pairs in four words.
            const __m256i sums =
                _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(y.bsums)), _mm256_set1_epi16(1));
            const __m256i pairs = _mm256_packs_epi32(sums, sums);  // lane 0: s0..s3 twice, lane 1: s4..s7 twice
            __m512i m = _mm512_setzero_si512();
            m = _mm512_dpwssd_epi32(m, mins[0], _mm512_set1_epi32(_mm256_extract_epi32(pairs, 0)));
            m = _mm512_dpwssd_epi32(m, mins[1], _mm512_set1_epi32(_mm256_extract_epi32(pairs, 1)));
            m = _mm512_dpwssd_epi32(m, mins[2], _mm512_set1_epi32(_mm256_extract_epi32(pairs, 4)));
            m = _mm512_dpwssd_epi32(m, mins[3], _mm512_set1_epi32(_mm256_extract_epi32(pairs, 5)));
            sb[t] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(m), dmin, sb[t]);
            acc[t] = _mm512_fmadd_ps(sb[t], _mm512_set1_ps(y.d), acc[t]);
        }
    }
    VRAMPLAN_UNROLL
    for (int t = 0; t < Tokens; ++t) _mm512_storeu_ps(out + t * panel_rows, acc[t]);
}

// vpternlogd's tables for (a | b) & c, a | (b & c), and c ? a : b (bit by bit).
inline constexpr int k_or_and = 0xa8, k_or_masked = 0xf8, k_select = 0xe4;

// The formats of sixteen-value sub-blocks (Q2_K, Q3_K, Q6_K) with AVX-512 VNNI. A chunk position
// (half n of the block, bytes 4l..4l+3 of its 32) gives four groups of four values, group g's in
// sub-block 8n + 2g + l / 4 at element 128n + 32g + 4l, each as 2^k_small_shift(g) times its q:
//  - Q2_K: two bits per value, group g at bits 2g of the qs chunk, taken in place (an AND, where
//    moving them down took a shift and an AND): 4^g q; value = d scale q - dmin min;
//  - Q3_K: three-bit fields (kquant_panel_layout.hpp's panel_q3_k): of a pair of positions, six
//    values an AND of one chunk (q, or 8 q for those at bits 3..5), two a select of two shifted
//    chunks and an AND; value = d scale (q - 4);
//  - Q6_K: four bits from ql chunks l (groups 0, 2) and l + 8 (1, 3) and two from the qh chunk,
//    in the file's bit order, moved down: q; value = d scale (q - 32).
// q is unsigned in vpdpbusd; each sub-block's lanes start at minus the offset times x's 16-value
// sum (times 2^k_small_shift), so the offset is exact before the signed scale. Q2_K's minimums
// meet x's sums as 16-bit pairs in vpdpwssd.
template <class Panel>
constexpr int k_small_shift(int g) {
    if constexpr (std::is_same_v<Panel, panel_q2_k>)
        return 2 * g;
    else if constexpr (std::is_same_v<Panel, panel_q3_k>)
        return g % 2 == 1 ? 3 : 0;
    else
        return 0;
}
template <class Panel>
VRAMPLAN_TARGET_AVX512_VNNI inline void k_small_values(const Panel& pb, int n, int l, __m512i* q) {
    if constexpr (std::is_same_v<Panel, panel_q6_k>) {
        const __m512i two = _mm512_set1_epi8(0x03), nibble = _mm512_set1_epi8(0x0f), b23 = _mm512_set1_epi8(0x0c),
                      b45 = _mm512_set1_epi8(0x30);
        __m512i a = _mm512_loadu_si512(q6_ql(pb, 16 * n + l)), c = _mm512_loadu_si512(q6_ql(pb, 16 * n + 8 + l)),
                h = _mm512_loadu_si512(q6_qh(pb, 8 * n + l));
        VRAMPLAN_KEEP_IN_REGISTER(a);
        VRAMPLAN_KEEP_IN_REGISTER(c);
        VRAMPLAN_KEEP_IN_REGISTER(h);
        q[0] = _mm512_or_si512(_mm512_and_si512(a, nibble), _mm512_slli_epi16(_mm512_and_si512(h, two), 4));
        q[1] = _mm512_or_si512(_mm512_and_si512(c, nibble), _mm512_slli_epi16(_mm512_and_si512(h, b23), 2));
        q[2] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(a, 4), nibble), _mm512_and_si512(h, b45));
        q[3] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(c, 4), nibble),
                               _mm512_and_si512(_mm512_srli_epi16(h, 2), b45));
    } else if constexpr (std::is_same_v<Panel, panel_q3_k>) {
        const auto& chunks = pb.values[n][l / 2];
        const __m512i low3 = _mm512_set1_epi8(0x07), high3 = _mm512_set1_epi8(0x38);
        __m512i a = _mm512_loadu_si512(chunks[0]), c = _mm512_loadu_si512(chunks[2]);
        VRAMPLAN_KEEP_IN_REGISTER(a);
        VRAMPLAN_KEEP_IN_REGISTER(c);
        if (l % 2 == 0) {
            q[0] = _mm512_and_si512(a, low3);
            q[1] = _mm512_and_si512(a, high3);
            q[2] = _mm512_and_si512(c, low3);
            q[3] = _mm512_and_si512(c, high3);
        } else {
            __m512i b = _mm512_loadu_si512(chunks[1]);
            VRAMPLAN_KEEP_IN_REGISTER(b);
            q[0] = _mm512_and_si512(b, low3);
            q[1] = _mm512_and_si512(b, high3);
            // Group 2: a's bits 6..7 and c's bit 6 to bits 0..2; group 3: b's 6..7 and c's 7 to 3..5.
            q[2] = _mm512_and_si512(_mm512_ternarylogic_epi32(_mm512_srli_epi16(a, 6), _mm512_srli_epi16(c, 4),
                                                              _mm512_set1_epi8(0x03), k_select),
                                    low3);
            q[3] = _mm512_and_si512(_mm512_ternarylogic_epi32(_mm512_srli_epi16(b, 3), _mm512_srli_epi16(c, 2),
                                                              _mm512_set1_epi8(0x18), k_select),
                                    high3);
        }
    } else {
        __m512i v = _mm512_loadu_si512(qs_chunk(pb, 8 * n + l));
        VRAMPLAN_KEEP_IN_REGISTER(v);
        VRAMPLAN_UNROLL
        for (int g = 0; g < 4; ++g) q[g] = _mm512_and_si512(v, _mm512_set1_epi8(static_cast<char>(3 << (2 * g))));
    }
}

// Sixteen rows' bytes (one per row) as 32-bit lanes.
template <class Byte>
VRAMPLAN_TARGET_AVX512_VNNI inline __m512i row_bytes_as_lanes(const Byte* bytes) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes));
    return std::is_signed_v<Byte> ? _mm512_cvtepi8_epi32(v) : _mm512_cvtepu8_epi32(v);
}

// Q2_K's and Q3_K's scales of sub-blocks a and b (the same half of the block) as the 16-bit halves
// of each row's lane, a's low: the shape vpdpwssd multiplies two sub-blocks' integer sums by (each
// fits 16 bits: |sum (q - offset) x| <= 16 * 4 * 128). Q2_K's minimums of a and b likewise in
// `mins`. Both from the panel's bytes with shifts and vpternlogd, a third of the work of widening
// each sub-block's scale to a float: on one core of the AMD EPYC (Zen 4), panels in L2, two runs,
// Q2_K 30.3-30.8 GB/s against 25.3-26.6 and Q3_K 24.2-25.8 against 22.0-23.1; over 512 MiB on
// two cores memory bound both ways then (0.78-0.83 of the read loop).
struct k_small_pair {
    __m512i scales, mins;
};
template <class Panel>
VRAMPLAN_TARGET_AVX512_VNNI inline k_small_pair k_small_scale_pair(const Panel& pb, int a, int b) {
    const __m512i low4 = _mm512_set1_epi32(0x000f000f);
    k_small_pair out;
    if constexpr (std::is_same_v<Panel, panel_q2_k>) {
        const __m512i sa = row_bytes_as_lanes(pb.scales[a]), sb = row_bytes_as_lanes(pb.scales[b]);
        out.scales = _mm512_ternarylogic_epi32(sa, _mm512_slli_epi32(sb, 16), low4, k_or_and);
        out.mins = _mm512_ternarylogic_epi32(_mm512_srli_epi32(sa, 4), _mm512_slli_epi32(sb, 12), low4, k_or_and);
    } else {
        // Low four bits: sub-block s's in nibble s / 8 of byte s % 8; top two at bits 2s of hi.
        const int nibble = 4 * (a / 8);
        const __m512i la = _mm512_srli_epi32(row_bytes_as_lanes(pb.lo[a % 8]), static_cast<unsigned>(nibble));
        const __m512i lb = _mm512_slli_epi32(row_bytes_as_lanes(pb.lo[b % 8]), static_cast<unsigned>(16 - nibble));
        const __m512i hi = _mm512_loadu_si512(pb.hi);
        const __m512i ha = _mm512_and_si512(_mm512_srli_epi32(hi, static_cast<unsigned>(2 * a)), _mm512_set1_epi32(3));
        const __m512i hb = 2 * b <= 16 ? _mm512_slli_epi32(hi, static_cast<unsigned>(16 - 2 * b))
                                       : _mm512_srli_epi32(hi, static_cast<unsigned>(2 * b - 16));
        const __m512i low = _mm512_ternarylogic_epi32(la, lb, low4, k_or_and);
        const __m512i top = _mm512_ternarylogic_epi32(ha, hb, _mm512_set1_epi32(0x00030000), k_or_masked);
        out.scales = _mm512_sub_epi16(_mm512_or_si512(low, _mm512_slli_epi32(top, 4)), _mm512_set1_epi16(32));
    }
    return out;
}

// The tile. Per step (half n of the block, chunks 4 half..4 half + 3 of its eight positions), each
// group's sums of sub-blocks 8n + 2g + half. Q6_K widens each sub-block's scale to f32 (its sums
// exceed 16 bits); Q2_K and Q3_K pair groups g and g + 1 into one vpdpwssd with their scales
// (k_small_scale_pair), keep the block's scaled sum an integer (|sum| <= 16 * 32 * 8192 < 2^23,
// exact in f32) and apply d once, and take Q2_K's minimums against the same pairs of x's sums.
template <class Panel, int Tokens>
VRAMPLAN_TARGET_AVX512_VNNI inline void k_panel_tile_small_avx512_vnni(const Panel* p, std::uint64_t /*one panel*/,
                                                                       const blocks::q8_k* x, std::uint64_t stride,
                                                                       std::uint64_t nblocks, float* out) {
    constexpr int offset = k_small_offset<Panel>;
    constexpr bool paired = !std::is_same_v<Panel, panel_q6_k>;
    constexpr bool has_mins = std::is_same_v<Panel, panel_q2_k>;
    __m512 acc[Tokens];
    VRAMPLAN_UNROLL
    for (int t = 0; t < Tokens; ++t) acc[t] = _mm512_setzero_ps();
    for (std::uint64_t b = 0; b < nblocks; ++b) {
        const Panel& pb = p[b];
        const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(pb.d)));
        __m512 sb[Tokens];
        __m512i scaled[Tokens], min_sum[Tokens];
        VRAMPLAN_UNROLL
        for (int t = 0; t < Tokens; ++t) {
            sb[t] = _mm512_setzero_ps();
            scaled[t] = min_sum[t] = _mm512_setzero_si512();
        }
        VRAMPLAN_UNROLL
        for (int step = 0; step < 4; ++step) {
            const int n = step / 2, half = step % 2;
            // Sub-blocks 8n + 2g + half for the four groups g.
            __m512i sum[4][Tokens];
            VRAMPLAN_UNROLL
            for (int g = 0; g < 4; ++g) {
                VRAMPLAN_UNROLL
                for (int t = 0; t < Tokens; ++t)
                    sum[g][t] = _mm512_set1_epi32(-(offset << k_small_shift<Panel>(g)) *
                                                  x[t * stride + b].bsums[8 * n + 2 * g + half]);
            }
            VRAMPLAN_UNROLL
            for (int i = 0; i < 4; ++i) {
                const int l = 4 * half + i;  // chunk within the half's 32 bytes
                __m512i q[4];
                k_small_values(pb, n, l, q);
                VRAMPLAN_UNROLL
                for (int t = 0; t < Tokens; ++t) {
                    const std::int8_t* xq = x[t * stride + b].qs + 128 * n + 4 * l;
                    VRAMPLAN_UNROLL
                    for (int g = 0; g < 4; ++g)
                        sum[g][t] = _mm512_dpbusd_epi32(sum[g][t], q[g], _mm512_set1_epi32(x_chunk(xq, 8 * g)));
                }
            }
            if constexpr (paired) {
                VRAMPLAN_UNROLL
                for (int gp = 0; gp < 2; ++gp) {
                    const int sa = 8 * n + 4 * gp + half, sb2 = sa + 2;  // groups 2 gp and 2 gp + 1
                    const k_small_pair pair = k_small_scale_pair(pb, sa, sb2);
                    VRAMPLAN_UNROLL
                    for (int t = 0; t < Tokens; ++t) {
                        // Each sum is 2^shift times the sub-block's, a 16-bit integer: moved to its half.
                        const int lo_shift = k_small_shift<Panel>(2 * gp), hi_shift = k_small_shift<Panel>(2 * gp + 1);
                        const __m512i low = lo_shift == 0 ? sum[2 * gp][t] : _mm512_srli_epi32(sum[2 * gp][t], lo_shift);
                        const __m512i sums = _mm512_mask_blend_epi16(
                            0xaaaaaaaa, low, _mm512_slli_epi32(sum[2 * gp + 1][t], 16 - hi_shift));
                        scaled[t] = _mm512_dpwssd_epi32(scaled[t], sums, pair.scales);
                        if constexpr (has_mins) {
                            const std::int16_t* bs = x[t * stride + b].bsums;
                            const std::uint32_t x_pair = static_cast<std::uint16_t>(bs[sa]) |
                                                         static_cast<std::uint32_t>(static_cast<std::uint16_t>(bs[sb2])) << 16;
                            min_sum[t] = _mm512_dpwssd_epi32(min_sum[t], pair.mins,
                                                             _mm512_set1_epi32(static_cast<std::int32_t>(x_pair)));
                        }
                    }
                }
            } else {
                VRAMPLAN_UNROLL
                for (int g = 0; g < 4; ++g) {
                    const __m512 ds =
                        _mm512_mul_ps(d, _mm512_cvtepi32_ps(row_bytes_as_lanes(pb.scales[8 * n + 2 * g + half])));
                    VRAMPLAN_UNROLL
                    for (int t = 0; t < Tokens; ++t) sb[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum[g][t]), ds, sb[t]);
                }
            }
        }
        if constexpr (paired) {
            VRAMPLAN_UNROLL
            for (int t = 0; t < Tokens; ++t) sb[t] = _mm512_mul_ps(_mm512_cvtepi32_ps(scaled[t]), d);
        }
        if constexpr (has_mins) {
            const __m512 dmin = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(pb.dmin)));
            VRAMPLAN_UNROLL
            for (int t = 0; t < Tokens; ++t) sb[t] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(min_sum[t]), dmin, sb[t]);
        }
        VRAMPLAN_UNROLL
        for (int t = 0; t < Tokens; ++t) acc[t] = _mm512_fmadd_ps(sb[t], _mm512_set1_ps(x[t * stride + b].d), acc[t]);
    }
    VRAMPLAN_UNROLL
    for (int t = 0; t < Tokens; ++t) _mm512_storeu_ps(out + t * panel_rows, acc[t]);
}

}  // namespace simd
VRAMPLAN_AVX512_WARNINGS_ON
#endif

}  // namespace vramplan::kernels::cpu
