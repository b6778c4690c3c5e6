// The K-quant panels' tile kernels on 256-bit vectors: AVX2, and AVX_VNNI's vpdpbusd on the
// avx2-vnni path (byte_dot.hpp). A vector holds eight rows, so each super-block is worked in two
// halves, rows 0..7 (the first 32 bytes of each chunk) and then rows 8..15, both before the next
// block: the panel is read once, front to back, as the AVX-512 kernels read it, and the prefetches
// of the block after next go out during the second half (k_prefetch_half says why). The sums are the
// AVX-512 kernels' (kquant_panel_avx512.hpp says why each is exact); without VNNI, vpmaddubsw's
// 16-bit pair sums of a sub-block add up in 16 bits as far as its values allow (byte_dot_widen)
// before vpmaddwd widens them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "vramplan/config.hpp"
#include "vramplan/kernels/cpu/byte_dot.hpp"
#include "vramplan/kernels/cpu/int8_panel.hpp"
#include "vramplan/kernels/cpu/kquant_panel_layout.hpp"

namespace vramplan::kernels::cpu {

#if VRAMPLAN_X86_SIMD
namespace simd {

// Eight rows' bytes (one per row, rows r0..r0 + 7 of a panel's row of sixteen) as 32-bit lanes.
VRAMPLAN_TARGET_AVX2 inline __m256i lanes_of(const std::uint8_t* row_bytes) {
    return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(row_bytes)));
}
VRAMPLAN_TARGET_AVX2 inline __m256i lanes_of(const std::int8_t* row_bytes) {
    return _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(row_bytes)));
}
VRAMPLAN_TARGET_AVX2 inline __m256 lanes_of(const half_bits* row_halves) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row_halves)));
}
// One load however many instructions use the vector (config.hpp: VRAMPLAN_KEEP_IN_REGISTER).
VRAMPLAN_TARGET_AVX2 inline __m256i load256(const void* p) {
    __m256i v = _mm256_loadu_si256(static_cast<const __m256i*>(p));
    VRAMPLAN_KEEP_IN_REGISTER(v);
    return v;
}

// Bit `from` of each byte (one bit per byte) moved to bit `to`.
VRAMPLAN_TARGET_AVX2 inline __m256i move_bit(__m256i h, int from, int to) {
    const __m256i bit = _mm256_and_si256(h, _mm256_set1_epi8(static_cast<char>(1 << from)));
    return from <= to ? _mm256_slli_epi16(bit, to - from) : _mm256_srli_epi16(bit, from - to);
}

// Q4_K's and Q5_K's scales and minimums of sub-blocks 2p and 2p + 1, rows r0..r0 + 7, each row's
// as 16-bit halves of its 32-bit lane, the shape vpmaddwd multiplies by: `scale0` and `scale1` hold
// a sub-block's scale in both halves (the weights of its pair sums), `mins` the two minimums (to
// meet x's two 32-value sums). The panel's bytes become these with byte shuffles and 16-bit
// shifts, a dozen instructions for two sub-blocks of eight rows, where widening each scale to a
// 32-bit lane and a float took as many for one.
struct k4_pair_scales {
    __m256i scale0, scale1, mins;
};

// Byte shuffles (vpshufb works within each 128-bit half: rows 0..3, then 4..7) and their masks.
// `twice`: of the eight bytes lo[j][r0..r0 + 7] broadcast to both halves, row i's in the low byte
// of both 16-bit halves of lane i. `high_byte[p]`: of the eight rows' 32-bit hi words, byte p (the
// high bits of sub-blocks 2p and 2p + 1) in the high byte of both halves of its lane.
struct k4_shuffle_masks {
    alignas(32) std::int8_t twice[32];
    alignas(32) std::int8_t high_byte[4][32];
};
constexpr k4_shuffle_masks make_k4_shuffle_masks() {
    k4_shuffle_masks m{};
    for (int i = 0; i < 32; ++i) {
        const int row = 4 * (i / 16) + i % 16 / 4;  // row of the lane byte i belongs to
        m.twice[i] = i % 2 == 0 ? static_cast<std::int8_t>(row) : std::int8_t{-128};
        for (int p = 0; p < 4; ++p)
            m.high_byte[p][i] = i % 2 == 1 ? static_cast<std::int8_t>(4 * (row % 4) + p) : std::int8_t{-128};
    }
    return m;
}
inline constexpr k4_shuffle_masks k4_masks = make_k4_shuffle_masks();

// Eight rows' bytes, row i's in the low byte of both 16-bit halves of lane i.
VRAMPLAN_TARGET_AVX2 inline __m256i twice_per_lane(const std::uint8_t* row_bytes) {
    std::int64_t bytes;
    std::memcpy(&bytes, row_bytes, 8);
    return _mm256_shuffle_epi8(_mm256_set1_epi64x(bytes),
                               _mm256_load_si256(reinterpret_cast<const __m256i*>(k4_masks.twice)));
}

template <class Panel>
VRAMPLAN_TARGET_AVX2 inline k4_pair_scales k4_scales_of_pair(const Panel& pb, int p, int r0) {
    const __m256i l0 = twice_per_lane(pb.lo[2 * p] + r0), l1 = twice_per_lane(pb.lo[2 * p + 1] + r0);
    // Byte p of each row's hi word, times 256: scale 2p's bits at 8..9, min 2p's at 10..11, scale
    // 2p + 1's at 12..13, min 2p + 1's at 14..15; each is moved to bits 4..5 above its low four.
    const __m256i high = _mm256_shuffle_epi8(
        load256(pb.hi + r0), _mm256_load_si256(reinterpret_cast<const __m256i*>(k4_masks.high_byte[p])));
    const __m256i low4 = _mm256_set1_epi16(0x0f), top2 = _mm256_set1_epi16(0x30);
    k4_pair_scales s;
    s.scale0 = _mm256_or_si256(_mm256_and_si256(l0, low4), _mm256_and_si256(_mm256_srli_epi16(high, 4), top2));
    s.scale1 = _mm256_or_si256(_mm256_and_si256(l1, low4), _mm256_and_si256(_mm256_srli_epi16(high, 8), top2));
    // Minimums: the low four bits are the lo bytes' high nibbles (min 2p's in the low half, 2p + 1's
    // in the high); the top bits are shifted right 6 in the low half and 10 in the high at once, by
    // an unsigned multiply-high by 2^10 and 2^6.
    const __m256i lows = _mm256_srli_epi16(_mm256_blend_epi16(l0, l1, 0xaa), 4);
    const __m256i tops = _mm256_mulhi_epu16(high, _mm256_set1_epi32(1 << 10 | 1 << 22));
    s.mins = _mm256_or_si256(lows, _mm256_and_si256(tops, top2));
    return s;
}

// When a 256-bit tile prefetches: during its second half of each block (rows 8..15), which reads
// only lines the first half brought into L1 and so makes no misses of its own: without requests
// from the tile, memory works then only as far as the hardware prefetchers run ahead. The block after next goes out
// then, a quarter per step (prefetch_block_quarter), for every K-quant. Prefetched during the first half instead,
// beside that half's own misses, the requests held the core's few L1 miss buffers the loads needed: the Q4_K tile then
// ran faster with no prefetch at all (0.61-0.67 of the read loop against 0.51-0.52) and Q5_K's with its values' run
// only. A synthetic stream (a 2,304-byte block read as two passes of half lines with the same arithmetic per byte as
// the Q4_K tile) showed the idle second pass: 0.88 of its read loop with no prefetch, 0.88 with it in the first
// pass, 1.0-1.1 with it in the second. The kernels, measured on the AMD EPYC (Zen 3, bench/REPORT.md), 4096 x 14336
// over 512 MiB, two threads, share of the read loop over four rounds in turn, first-half prefetches (none for Q4_K, the
// values' run for Q5_K) against second-half ones: Q5_K 0.46-0.50 against 0.51-0.56, Q2_K 0.58-0.64 against 0.58-0.70,
// Q3_K 0.44-0.52 against 0.46-0.60; Q4_K (0.60-0.70 against 0.64-0.68) and Q6_K (0.52-0.55 against 0.50-0.54)
// unchanged, so one rule serves all.
inline constexpr int k_prefetch_half = 1;

// Q4_K and Q5_K: per pair of sub-blocks, the low nibbles are sub-block 2p and the high ones
// 2p + 1 (Q5_K's fifth bits from the pair's own chunks, as in kquant_panel_avx512.hpp). A half block's sum stays an
// integer, sum over sub-blocks of scale * (q . x) (vpmaddwd weights the pair sums by the scale as
// it widens them; with VNNI a vpmulld does), less sum of min * (x's 32-value sum); d and dmin
// apply once. Bounds: |q . x| <= 32 * 31 * 128 and scales are below 64, so eight sub-blocks stay
// under 2^26; the minimums' sum is smaller.
template <bool Vnni, class Panel, int Tokens>
VRAMPLAN_TARGET_AVX2 inline void k_panel_tile_k4_avx2(const Panel* p, std::uint64_t /*one panel*/,
                                                      const blocks::q8_k* x, std::uint64_t stride,
                                                      std::uint64_t nblocks, float* out) {
    constexpr bool q5 = std::is_same_v<Panel, panel_q5_k>;
    constexpr int widen = byte_dot_widen(q5 ? 31 : 15);
    const __m256i nibble = _mm256_set1_epi8(0x0f);
    __m256 acc[2][Tokens];
    VRAMPLAN_UNROLL
    for (int t = 0; t < Tokens; ++t) acc[0][t] = acc[1][t] = _mm256_setzero_ps();
    for (std::uint64_t b = 0; b < nblocks; ++b) {
        const Panel& pb = p[b];
        // x's 32-value sums of sub-blocks 2p and 2p + 1 as the 16-bit halves of one word (each is
        // at most 32 * 128 in size), worked out once for both halves in the scalar units.
        std::int32_t x_sums[Tokens][4];
        VRAMPLAN_UNROLL
        for (int t = 0; t < Tokens; ++t) {
            const std::int16_t* bs = x[t * stride + b].bsums;
            VRAMPLAN_UNROLL
            for (int k = 0; k < 4; ++k)
                x_sums[t][k] =
                    static_cast<std::int32_t>(static_cast<std::uint16_t>(bs[4 * k] + bs[4 * k + 1]) |
                                              static_cast<std::uint32_t>(bs[4 * k + 2] + bs[4 * k + 3]) << 16);
        }
        VRAMPLAN_UNROLL
        for (int h = 0; h < 2; ++h) {
            const int r0 = 8 * h;
            // This half's activations, read again rather than kept from the other half (config.hpp).
            const blocks::q8_k* xh = x;
            VRAMPLAN_READ_AGAIN(xh);
            __m256i dot[Tokens], min_dot[Tokens];
            VRAMPLAN_UNROLL
            for (int t = 0; t < Tokens; ++t) dot[t] = min_dot[t] = _mm256_setzero_si256();
            VRAMPLAN_UNROLL
            for (int pair = 0; pair < 4; ++pair) {
                if (h == k_prefetch_half) prefetch_block_quarter(p + b, pair);
                const k4_pair_scales sc = k4_scales_of_pair(pb, pair, r0);
                // Without VNNI the scaled pair sums go straight into dot; with it, the two raw sums.
                __m256i lo_sum[Tokens], hi_sum[Tokens], lo16[Tokens], hi16[Tokens];
                VRAMPLAN_UNROLL
                for (int t = 0; t < Tokens; ++t) {
                    lo_sum[t] = Vnni ? _mm256_setzero_si256() : dot[t];
                    hi_sum[t] = lo16[t] = hi16[t] = _mm256_setzero_si256();
                }
                VRAMPLAN_UNROLL
                for (int c = 0; c < 8; ++c) {
                    const __m256i v = load256(qs_chunk(pb, 8 * pair + c)[r0]);
                    __m256i lo = _mm256_and_si256(v, nibble), hv = _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble);
                    if constexpr (q5) {
                        const __m256i fifth = load256(pb.pairs[pair].fifth[c / 4][r0]);
                        lo = _mm256_or_si256(lo, move_bit(fifth, 2 * (c % 4), 4));
                        hv = _mm256_or_si256(hv, move_bit(fifth, 2 * (c % 4) + 1, 4));
                    }
                    VRAMPLAN_UNROLL
                    for (int t = 0; t < Tokens; ++t) {
                        const std::int8_t* xq = xh[t * stride + b].qs + 64 * pair;
                        byte_dot_step<Vnni, widen, 8>(c, lo_sum[t], lo16[t], lo, _mm256_set1_epi32(x_chunk(xq, c)),
                                                      sc.scale0);
                        byte_dot_step<Vnni, widen, 8>(c, hi_sum[t], hi16[t], hv, _mm256_set1_epi32(x_chunk(xq, 8 + c)),
                                                      sc.scale1);
                    }
                }
                VRAMPLAN_UNROLL
                for (int t = 0; t < Tokens; ++t) {
                    if constexpr (Vnni) {
                        const __m256i low16 = _mm256_set1_epi32(0xffff);
                        dot[t] =
                            _mm256_add_epi32(dot[t], _mm256_mullo_epi32(lo_sum[t], _mm256_and_si256(sc.scale0, low16)));
                        dot[t] =
                            _mm256_add_epi32(dot[t], _mm256_mullo_epi32(hi_sum[t], _mm256_and_si256(sc.scale1, low16)));
                    } else {
                        dot[t] = _mm256_add_epi32(lo_sum[t], hi_sum[t]);
                    }
                    min_dot[t] =
                        _mm256_add_epi32(min_dot[t], _mm256_madd_epi16(sc.mins, _mm256_set1_epi32(x_sums[t][pair])));
                }
            }
            const __m256 d = lanes_of(pb.d + r0), dmin = lanes_of(pb.dmin + r0);
            VRAMPLAN_UNROLL
            for (int t = 0; t < Tokens; ++t) {
                const __m256 v = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(min_dot[t]), dmin,
                                                  _mm256_mul_ps(_mm256_cvtepi32_ps(dot[t]), d));
                acc[h][t] = _mm256_fmadd_ps(v, _mm256_set1_ps(xh[t * stride + b].d), acc[h][t]);
            }
        }
    }
    VRAMPLAN_UNROLL
    for (int t = 0; t < Tokens; ++t) {
        _mm256_storeu_ps(out + t * panel_rows, acc[0][t]);
        _mm256_storeu_ps(out + t * panel_rows + 8, acc[1][t]);
    }
}

// Q2_K, Q3_K and Q6_K: group g (0..3) of chunk position l of half n of the block, rows r0..r0 + 7
// (kquant_panel_avx512.hpp's k_small_values says which sub-block each group is of), one group per
// call so that a kernel chooses how many groups' sums are live (k_small_groups_at_once).
template <class Panel>
VRAMPLAN_TARGET_AVX2 inline __m256i k_small_group(const Panel& pb, int n, int l, int g, int r0) {
    if constexpr (std::is_same_v<Panel, panel_q6_k>) {
        // Low four bits: groups 0 and 1 in the low nibbles of ql chunks l and l + 8, groups 2 and 3
        // in their high nibbles; high two: bits 2g..2g + 1 of the qh chunk, moved to bits 4..5.
        const __m256i nibble = _mm256_set1_epi8(0x0f);
        const __m256i low = load256(q6_ql(pb, 16 * n + 8 * (g % 2) + l)[r0]);
        const __m256i h =
            _mm256_and_si256(load256(q6_qh(pb, 8 * n + l)[r0]), _mm256_set1_epi8(static_cast<char>(3 << 2 * g)));
        const __m256i low4 = _mm256_and_si256(g < 2 ? low : _mm256_srli_epi16(low, 4), nibble);
        const __m256i high2 = g < 2 ? _mm256_slli_epi16(h, 4 - 2 * g) : _mm256_srli_epi16(h, 2 * g - 4);
        return _mm256_or_si256(low4, high2);
    } else if constexpr (std::is_same_v<Panel, panel_q3_k>) {
        // Three-bit fields (kquant_panel_layout.hpp's panel_q3_k), moved down to bits 0..2: every
        // group of the pair's first position and groups 0 and 1 of its second are whole in one
        // chunk; groups 2 and 3 of the second take their low bits from a or b, the third from c.
        const auto& chunks = pb.values[n][l / 2];
        const int c = l % 2;
        if (c == 0 || g < 2) {
            const __m256i whole = load256((g < 2 ? chunks[c] : chunks[2])[r0]);
            return _mm256_and_si256(g % 2 == 1 ? _mm256_srli_epi16(whole, 3) : whole, _mm256_set1_epi8(0x07));
        }
        const __m256i low = _mm256_and_si256(_mm256_srli_epi16(load256(chunks[g - 2][r0]), 6), _mm256_set1_epi8(0x03));
        const __m256i third = _mm256_and_si256(_mm256_srli_epi16(load256(chunks[2][r0]), 4 + (g - 2)), _mm256_set1_epi8(0x04));
        return _mm256_or_si256(low, third);
    } else {
        return _mm256_and_si256(_mm256_srli_epi16(load256(qs_chunk(pb, 8 * n + l)[r0]), 2 * g), _mm256_set1_epi8(0x03));
    }
}

// Sub-block s's scales of rows r0..r0 + 7 as integers, one per lane.
template <class Panel>
VRAMPLAN_TARGET_AVX2 inline __m256i k_small_scales(const Panel& pb, int s, int r0) {
    if constexpr (std::is_same_v<Panel, panel_q6_k>) {
        return lanes_of(pb.scales[s] + r0);
    } else if constexpr (std::is_same_v<Panel, panel_q2_k>) {
        return _mm256_and_si256(lanes_of(pb.scales[s] + r0), _mm256_set1_epi32(15));
    } else {
        const __m256i lo = lanes_of(pb.lo[s % 8] + r0);
        const __m256i low = s < 8 ? _mm256_and_si256(lo, _mm256_set1_epi32(15)) : _mm256_srli_epi32(lo, 4);
        const __m256i high = _mm256_and_si256(_mm256_srli_epi32(load256(pb.hi + r0), 2 * s), _mm256_set1_epi32(3));
        return _mm256_sub_epi32(_mm256_or_si256(low, _mm256_slli_epi32(high, 4)), _mm256_set1_epi32(32));
    }
}

// Lanes of 16-bit-sized integers with the low half copied into the high: the weight that vpmaddwd
// multiplies both pair sums of a lane by.
VRAMPLAN_TARGET_AVX2 inline __m256i in_both_halves(__m256i lanes) {
    return _mm256_shuffle_epi8(lanes, _mm256_setr_epi8(0, 1, 0, 1, 4, 5, 4, 5, 8, 9, 8, 9, 12, 13, 12, 13, 0, 1, 0, 1,
                                                       4, 5, 4, 5, 8, 9, 8, 9, 12, 13, 12, 13));
}

// How many of a chunk's four groups a kernel works at once: a group's sums are Tokens registers
// (two sets with VNNI's raw sums), and a chunk read for several groups is read once. Measured on
// the AMD EPYC (Zen 3, bench/REPORT.md): Q2_K's and Q3_K's one qs chunk holds all four groups, and
// at one token four at once read Q3_K fastest (matvec 0.56-0.58 of the read loop against 0.47-0.50
// for one or two); Q6_K's groups 0 and 2 share a ql chunk (1 and 3 the other), and two at once ran
// its one-token tile at 26-31 GB/s in cache against 21-22 for one and 26-28 for four, and its
// four-token tile as fast as one at a time. Past one token Q2_K and Q3_K take one group, chosen by
// the stack accesses GCC 12 leaves (Q3_K four tokens: 166 with one, 868 with two), not timed.
template <class Panel>
constexpr int k_small_groups_at_once(int tokens) {
    if constexpr (std::is_same_v<Panel, panel_q6_k>)
        return 2;
    else
        return tokens == 1 ? 4 : 1;
}

// Q2_K, Q3_K and Q6_K. A half block's sum stays an integer, as in the Q4_K tile: sum over
// sub-blocks of scale * (q . x) (vpmaddwd weights the pair sums by the scale as it widens them;
// with VNNI a vpmulld does), less the offset's share, offset * sum of scale * (x's 16-value sum),
// which one vpmaddwd works out for two sub-blocks from their scales as 16-bit pairs, times the
// offset; d (and Q2_K's minimums, with dmin) apply once. The sub-blocks of a few groups are worked
// at a time (k_small_groups_at_once), so that few sums are live; without VNNI all of a token's go
// into one chain of vpaddd, kept as written.
// Bounds: Q6_K's |q . x| <= 16 * 63 * 128 and |scale| <= 128, so sixteen sub-blocks stay under
// 2^29, and the offset's share, 32 * 16 * 128 * 2048, under 2^28; 32 times a scale fits 16 bits.
template <bool Vnni, class Panel, int Tokens>
VRAMPLAN_TARGET_AVX2 inline void k_panel_tile_small_avx2(const Panel* p, std::uint64_t /*one panel*/,
                                                         const blocks::q8_k* x, std::uint64_t stride,
                                                         std::uint64_t nblocks, float* out) {
    constexpr int offset = k_small_offset<Panel>;
    constexpr int offset_shift = offset == 32 ? 5 : offset == 4 ? 2 : 0;
    static_assert(offset == (offset_shift == 0 ? 0 : 1 << offset_shift), "the offset is a shift");
    constexpr int largest = std::is_same_v<Panel, panel_q6_k> ? 63 : std::is_same_v<Panel, panel_q3_k> ? 7 : 3;
    constexpr int widen = byte_dot_widen(largest);
    constexpr int Groups = k_small_groups_at_once<Panel>(Tokens);
    __m256 acc[2][Tokens];
    VRAMPLAN_UNROLL
    for (int t = 0; t < Tokens; ++t) acc[0][t] = acc[1][t] = _mm256_setzero_ps();
    for (std::uint64_t b = 0; b < nblocks; ++b) {
        const Panel& pb = p[b];
        VRAMPLAN_UNROLL
        for (int h = 0; h < 2; ++h) {
            const int r0 = 8 * h;
            // This half's activations, read again rather than kept from the other half (config.hpp).
            const blocks::q8_k* xh = x;
            VRAMPLAN_READ_AGAIN(xh);
            __m256i dot[Tokens];
            VRAMPLAN_UNROLL
            for (int t = 0; t < Tokens; ++t) dot[t] = _mm256_setzero_si256();
            VRAMPLAN_UNROLL
            for (int n = 0; n < 2; ++n) {
                VRAMPLAN_UNROLL
                for (int set = 0; set < 4 / Groups; ++set) {
                    // Groups set + 4 / Groups * j: sub-blocks 8n + 2g and 8n + 2g + 1 of each.
                    int g[Groups];
                    VRAMPLAN_UNROLL
                    for (int j = 0; j < Groups; ++j) g[j] = set + 4 / Groups * j;
                    // The block read again for each set: a chunk kept from one set for the next
                    // is a register the kernel does not have (config.hpp).
                    const Panel* pk = p + b;
                    VRAMPLAN_READ_AGAIN(pk);
                    __m256i weight[Groups][2];
                    VRAMPLAN_UNROLL
                    for (int half = 0; half < 2; ++half) {
                        if (h == k_prefetch_half && set == 0) prefetch_block_quarter(p + b, 2 * n + half);
                        __m256i scale[Groups], sum[Groups][Tokens], narrow[Groups][Tokens];
                        VRAMPLAN_UNROLL
                        for (int j = 0; j < Groups; ++j) {
                            scale[j] = k_small_scales(*pk, 8 * n + 2 * g[j] + half, r0);
                            weight[j][half] = in_both_halves(scale[j]);
                            VRAMPLAN_UNROLL
                            for (int t = 0; t < Tokens; ++t) sum[j][t] = narrow[j][t] = _mm256_setzero_si256();
                        }
                        VRAMPLAN_UNROLL
                        for (int i = 0; i < 4; ++i) {
                            const int l = 4 * half + i;  // chunk within the half's 32 bytes
                            __m256i q[Groups];
                            VRAMPLAN_UNROLL
                            for (int j = 0; j < Groups; ++j) q[j] = k_small_group(*pk, n, l, g[j], r0);
                            VRAMPLAN_UNROLL
                            for (int t = 0; t < Tokens; ++t) {
                                const std::int8_t* xq = xh[t * stride + b].qs + 128 * n + 4 * l;
                                VRAMPLAN_UNROLL
                                for (int j = 0; j < Groups; ++j) {
                                    // Without VNNI the scaled pair sums go straight into dot; with
                                    // it, each sub-block's raw sum.
                                    byte_dot_step<Vnni, widen, 4>(i, Vnni ? sum[j][t] : dot[t], narrow[j][t], q[j],
                                                                  _mm256_set1_epi32(x_chunk(xq, 8 * g[j])),
                                                                  weight[j][half]);
                                    // A chain, as written: regrouped, the products wait in memory.
                                    VRAMPLAN_KEEP_IN_REGISTER(dot[t]);
                                }
                            }
                        }
                        if constexpr (Vnni) {
                            VRAMPLAN_UNROLL
                            for (int t = 0; t < Tokens; ++t) {
                                VRAMPLAN_UNROLL
                                for (int j = 0; j < Groups; ++j)
                                    dot[t] = _mm256_add_epi32(dot[t], _mm256_mullo_epi32(sum[j][t], scale[j]));
                            }
                        }
                    }
                    if constexpr (offset != 0) {
                        VRAMPLAN_UNROLL
                        for (int j = 0; j < Groups; ++j) {
                            // (scale, scale of the next sub-block) * offset per row, against x's
                            // sums of the two.
                            const __m256i pair =
                                _mm256_slli_epi16(_mm256_blend_epi16(weight[j][0], weight[j][1], 0xaa), offset_shift);
                            VRAMPLAN_UNROLL
                            for (int t = 0; t < Tokens; ++t) {
                                std::int32_t sums;
                                std::memcpy(&sums, xh[t * stride + b].bsums + 8 * n + 2 * g[j], 4);
                                dot[t] = _mm256_sub_epi32(dot[t], _mm256_madd_epi16(pair, _mm256_set1_epi32(sums)));
                            }
                        }
                    }
                }
            }
            const __m256 d = lanes_of(pb.d + r0);
            __m256 sb[Tokens];
            VRAMPLAN_UNROLL
            for (int t = 0; t < Tokens; ++t) sb[t] = _mm256_mul_ps(_mm256_cvtepi32_ps(dot[t]), d);
            if constexpr (std::is_same_v<Panel, panel_q2_k>) {
                // Minimums as 16-bit pairs (min_2k, min_2k+1) per row, against x's pairs of sums.
                __m256i mins[8];
                VRAMPLAN_UNROLL
                for (int k = 0; k < 8; ++k)
                    mins[k] = _mm256_or_si256(
                        _mm256_srli_epi32(lanes_of(pb.scales[2 * k] + r0), 4),
                        _mm256_slli_epi32(_mm256_srli_epi32(lanes_of(pb.scales[2 * k + 1] + r0), 4), 16));
                const __m256 dmin = lanes_of(pb.dmin + r0);
                VRAMPLAN_UNROLL
                for (int t = 0; t < Tokens; ++t) {
                    const std::int16_t* sums = xh[t * stride + b].bsums;
                    __m256i m = _mm256_setzero_si256();
                    VRAMPLAN_UNROLL
                    for (int k = 0; k < 8; ++k) {
                        std::int32_t pair;
                        std::memcpy(&pair, sums + 2 * k, 4);
                        m = _mm256_add_epi32(m, _mm256_madd_epi16(mins[k], _mm256_set1_epi32(pair)));
                    }
                    sb[t] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(m), dmin, sb[t]);
                }
            }
            VRAMPLAN_UNROLL
            for (int t = 0; t < Tokens; ++t)
                acc[h][t] = _mm256_fmadd_ps(sb[t], _mm256_set1_ps(xh[t * stride + b].d), acc[h][t]);
        }
    }
    VRAMPLAN_UNROLL
    for (int t = 0; t < Tokens; ++t) {
        _mm256_storeu_ps(out + t * panel_rows, acc[0][t]);
        _mm256_storeu_ps(out + t * panel_rows + 8, acc[1][t]);
    }
}

}  // namespace simd
#endif

}  // namespace vramplan::kernels::cpu
