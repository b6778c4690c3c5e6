// The K-quants (Q2_K to Q6_K, the formats of Q2_K to Q6_K_M files) as panels of sixteen rows, as
// int8_panel.hpp holds Q4_0 and Q8_0, times up to four tokens rounded to Q8_K blocks.
//
// Each super-block of 256 values keeps its file bytes, rearranged so that vector lane r is row r:
// the quantized values as 4-byte chunks of all sixteen rows side by side (one vpdpbusd multiplies
// sixteen rows by one broadcast chunk of x), and the sub-block scales as vectors of sixteen rows.
//  - Q4_K: a sub-block of 32 values is scale * q - min with 6-bit scale and min. The file packs
//    the sixteen 6-bit numbers of a super-block into 12 bytes; a panel holds, per sub-block j, one
//    byte per row with the low four bits of both (lo[j][r]: scale | min << 4), and per row one
//    32-bit word of the high two bits of both (bits 4j..4j+1 the scale's, 4j+2..4j+3 the min's):
//    the same 12 bytes a row, decoded for sixteen rows with a few vector operations.
//  - Q5_K: Q4_K's panel and the fifth bits (qh) as chunks of their own.
//  - Q2_K: sixteen sub-blocks of 16 values, 4-bit scale and min in a byte each, as in the file.
//  - Q3_K: sixteen sub-blocks of 16 with signed 6-bit scales, rearranged as Q4_K's are (the file's
//    eight bytes of low bits, then a 32-bit word of two high bits per sub-block), and the third
//    bits (hmask) as chunks.
//  - Q6_K: sixteen sub-blocks of 16 values with signed 8-bit scales; value = d * scale * (q - 32),
//    q's low four bits in ql and high two in qh, in the file's order within each chunk.
// The integer sum of a sub-block is exact (the offsets, Q4_K's and Q2_K's minimums, Q3_K's 4 and
// Q6_K's 32, meet Q8_K's precomputed activation sums in integers); scales are applied in f32 per
// sub-block.
#pragma once

#include <cstdint>
#include <cstring>

#include "vramplan/config.hpp"
#include "vramplan/kernels/block_math.hpp"
#include "vramplan/kernels/cpu/int8_panel.hpp"
#include "vramplan/kernels/cpu/isa.hpp"

namespace vramplan::kernels::cpu {

struct panel_q4_k {
    half_bits d[panel_rows];
    half_bits dmin[panel_rows];
    std::uint8_t lo[8][panel_rows];      // sub-block j's scale (bits 0..3) and min (4..7), low bits
    std::uint32_t hi[panel_rows];        // row r's high bits of all eight scales and mins
    std::uint8_t qs[32][panel_rows][4];  // chunk c: the file's qs bytes 4c..4c+3
};
struct panel_q5_k {  // Q4_K's panel with the fifth bits: qh chunk c is the file's qh bytes 4c..4c+3
    half_bits d[panel_rows];
    half_bits dmin[panel_rows];
    std::uint8_t lo[8][panel_rows];
    std::uint32_t hi[panel_rows];
    std::uint8_t qh[8][panel_rows][4];
    std::uint8_t qs[32][panel_rows][4];
};
struct panel_q2_k {
    half_bits d[panel_rows];
    half_bits dmin[panel_rows];
    std::uint8_t scales[16][panel_rows];  // sub-block s: scale (bits 0..3) and min (4..7), as in the file
    std::uint8_t qs[16][panel_rows][4];
};
struct panel_q3_k {
    half_bits d[panel_rows];
    std::uint8_t lo[8][panel_rows];  // the file's scale bytes 0..7: low bits of sub-blocks j and j + 8
    std::uint32_t hi[panel_rows];    // sub-block s's top two bits at bits 2s..2s+1
    std::uint8_t hmask[8][panel_rows][4];
    std::uint8_t qs[16][panel_rows][4];
};
struct panel_q6_k {
    half_bits d[panel_rows];
    std::int8_t scales[16][panel_rows];
    std::uint8_t ql[32][panel_rows][4];
    std::uint8_t qh[16][panel_rows][4];
};
static_assert(sizeof(panel_q2_k) == panel_rows * sizeof(blocks::q2_k), "a panel keeps the bytes");
static_assert(sizeof(panel_q3_k) == panel_rows * sizeof(blocks::q3_k), "a panel keeps the bytes");
static_assert(sizeof(panel_q4_k) == panel_rows * sizeof(blocks::q4_k), "a panel keeps the bytes");
static_assert(sizeof(panel_q5_k) == panel_rows * sizeof(blocks::q5_k), "a panel keeps the bytes");
static_assert(sizeof(panel_q6_k) == panel_rows * sizeof(blocks::q6_k), "a panel keeps the bytes");

template <class Block>
struct k_panel_of;
template <>
struct k_panel_of<blocks::q2_k> {
    using type = panel_q2_k;
};
template <>
struct k_panel_of<blocks::q3_k> {
    using type = panel_q3_k;
};
template <>
struct k_panel_of<blocks::q4_k> {
    using type = panel_q4_k;
};
template <>
struct k_panel_of<blocks::q5_k> {
    using type = panel_q5_k;
};
template <>
struct k_panel_of<blocks::q6_k> {
    using type = panel_q6_k;
};

namespace detail {
// The inverse of block_decode.hpp's scale_min_k4: eight 6-bit scales and minimums into 12 bytes.
inline void k4_pack_scales(const int* scale, const int* min, std::uint8_t* s) {
    for (int j = 0; j < 12; ++j) s[j] = 0;
    for (int j = 0; j < 4; ++j) {
        s[j] = static_cast<std::uint8_t>(scale[j] | ((scale[j + 4] >> 4) << 6));
        s[j + 4] = static_cast<std::uint8_t>(min[j] | ((min[j + 4] >> 4) << 6));
        s[j + 8] = static_cast<std::uint8_t>((scale[j + 4] & 0x0f) | ((min[j + 4] & 0x0f) << 4));
    }
}
}  // namespace detail

// Q4_K and Q5_K: the scales rearranged as the panel says, the values' bytes as chunks.
template <class Block, class Panel>
inline void pack_k4_panel(const Block* const* rows, std::uint64_t b0, std::uint64_t n, Panel* out) {
    for (std::uint64_t b = 0; b < n; ++b)
        for (int r = 0; r < panel_rows; ++r) {
            const Block& src = rows[r][b0 + b];
            Panel& p = out[b];
            p.d[r] = src.d;
            p.dmin[r] = src.dmin;
            p.hi[r] = 0;
            for (int j = 0; j < 8; ++j) {
                int scale = 0, min = 0;
                kernels::detail::scale_min_k4(src.scales, j, scale, min);
                p.lo[j][r] = static_cast<std::uint8_t>((scale & 15) | (min & 15) << 4);
                p.hi[r] |= static_cast<std::uint32_t>((scale >> 4) | (min >> 4) << 2) << (4 * j);
            }
            for (int c = 0; c < 32; ++c) std::memcpy(p.qs[c][r], src.qs + 4 * c, 4);
            if constexpr (requires { src.qh; })
                for (int c = 0; c < 8; ++c) std::memcpy(p.qh[c][r], src.qh + 4 * c, 4);
        }
}
template <class Block, class Panel>
inline Block unpack_k4_panel(const Panel& p, int r) {
    Block out;
    out.d = p.d[r];
    out.dmin = p.dmin[r];
    int scale[8], min[8];
    for (int j = 0; j < 8; ++j) {
        const std::uint32_t high = p.hi[r] >> (4 * j);
        scale[j] = (p.lo[j][r] & 15) | static_cast<int>(high & 3) << 4;
        min[j] = (p.lo[j][r] >> 4) | static_cast<int>((high >> 2) & 3) << 4;
    }
    detail::k4_pack_scales(scale, min, out.scales);
    for (int c = 0; c < 32; ++c) std::memcpy(out.qs + 4 * c, p.qs[c][r], 4);
    if constexpr (requires { out.qh; })
        for (int c = 0; c < 8; ++c) std::memcpy(out.qh + 4 * c, p.qh[c][r], 4);
    return out;
}
inline void pack_k_panel(const blocks::q4_k* const* rows, std::uint64_t b0, std::uint64_t n, panel_q4_k* out) {
    pack_k4_panel(rows, b0, n, out);
}
inline void pack_k_panel(const blocks::q5_k* const* rows, std::uint64_t b0, std::uint64_t n, panel_q5_k* out) {
    pack_k4_panel(rows, b0, n, out);
}
inline blocks::q4_k unpack_k_panel(const panel_q4_k& p, int r) { return unpack_k4_panel<blocks::q4_k>(p, r); }
inline blocks::q5_k unpack_k_panel(const panel_q5_k& p, int r) { return unpack_k4_panel<blocks::q5_k>(p, r); }

inline void pack_k_panel(const blocks::q2_k* const* rows, std::uint64_t b0, std::uint64_t n, panel_q2_k* out) {
    for (std::uint64_t b = 0; b < n; ++b)
        for (int r = 0; r < panel_rows; ++r) {
            const blocks::q2_k& src = rows[r][b0 + b];
            panel_q2_k& p = out[b];
            p.d[r] = src.d;
            p.dmin[r] = src.dmin;
            for (int s = 0; s < 16; ++s) p.scales[s][r] = src.scales[s];
            for (int c = 0; c < 16; ++c) std::memcpy(p.qs[c][r], src.qs + 4 * c, 4);
        }
}
inline blocks::q2_k unpack_k_panel(const panel_q2_k& p, int r) {
    blocks::q2_k out;
    out.d = p.d[r];
    out.dmin = p.dmin[r];
    for (int s = 0; s < 16; ++s) out.scales[s] = p.scales[s][r];
    for (int c = 0; c < 16; ++c) std::memcpy(out.qs + 4 * c, p.qs[c][r], 4);
    return out;
}

// Q3_K's file scales: bytes 0..7 hold the low four bits of sub-blocks j (low nibble) and j + 8
// (high); byte 8 + s % 4 holds sub-block s's top two bits at bit 2 (s / 4) (block_decode.hpp).
inline void pack_k_panel(const blocks::q3_k* const* rows, std::uint64_t b0, std::uint64_t n, panel_q3_k* out) {
    for (std::uint64_t b = 0; b < n; ++b)
        for (int r = 0; r < panel_rows; ++r) {
            const blocks::q3_k& src = rows[r][b0 + b];
            panel_q3_k& p = out[b];
            p.d[r] = src.d;
            for (int j = 0; j < 8; ++j) p.lo[j][r] = src.scales[j];
            p.hi[r] = 0;
            for (int sub = 0; sub < 16; ++sub)
                p.hi[r] |= static_cast<std::uint32_t>((src.scales[8 + sub % 4] >> (2 * (sub / 4))) & 3) << (2 * sub);
            for (int c = 0; c < 8; ++c) std::memcpy(p.hmask[c][r], src.hmask + 4 * c, 4);
            for (int c = 0; c < 16; ++c) std::memcpy(p.qs[c][r], src.qs + 4 * c, 4);
        }
}
inline blocks::q3_k unpack_k_panel(const panel_q3_k& p, int r) {
    blocks::q3_k out;
    out.d = p.d[r];
    for (int j = 0; j < 8; ++j) out.scales[j] = p.lo[j][r];
    for (int k = 0; k < 4; ++k) {
        std::uint32_t byte = 0;
        for (int q = 0; q < 4; ++q) byte |= ((p.hi[r] >> (2 * (4 * q + k))) & 3) << (2 * q);
        out.scales[8 + k] = static_cast<std::uint8_t>(byte);
    }
    for (int c = 0; c < 8; ++c) std::memcpy(out.hmask + 4 * c, p.hmask[c][r], 4);
    for (int c = 0; c < 16; ++c) std::memcpy(out.qs + 4 * c, p.qs[c][r], 4);
    return out;
}

inline void pack_k_panel(const blocks::q6_k* const* rows, std::uint64_t b0, std::uint64_t n, panel_q6_k* out) {
    for (std::uint64_t b = 0; b < n; ++b)
        for (int r = 0; r < panel_rows; ++r) {
            const blocks::q6_k& src = rows[r][b0 + b];
            panel_q6_k& p = out[b];
            for (int c = 0; c < 32; ++c) std::memcpy(p.ql[c][r], src.ql + 4 * c, 4);
            for (int c = 0; c < 16; ++c) std::memcpy(p.qh[c][r], src.qh + 4 * c, 4);
            for (int s = 0; s < 16; ++s) p.scales[s][r] = src.scales[s];
            p.d[r] = src.d;
        }
}
inline blocks::q6_k unpack_k_panel(const panel_q6_k& p, int r) {
    blocks::q6_k out;
    for (int c = 0; c < 32; ++c) std::memcpy(out.ql + 4 * c, p.ql[c][r], 4);
    for (int c = 0; c < 16; ++c) std::memcpy(out.qh + 4 * c, p.qh[c][r], 4);
    for (int s = 0; s < 16; ++s) out.scales[s] = p.scales[s][r];
    out.d = p.d[r];
    return out;
}

// A tensor's first rows / 16 * 16 rows as panels, in place (pack_tensor_panels' twin).
template <class Block>
inline void pack_tensor_k_panels(std::uint8_t* data, std::uint64_t rows, std::uint64_t cols, std::uint8_t* scratch) {
    using P = typename k_panel_of<Block>::type;
    const std::uint64_t nblocks = cols / blocks::qk_k, row_bytes = nblocks * sizeof(Block);
    for (std::uint64_t g = 0; g < rows / panel_rows; ++g) {
        std::uint8_t* at = data + g * panel_rows * row_bytes;
        std::memcpy(scratch, at, panel_rows * row_bytes);
        const Block* src[panel_rows];
        for (int r = 0; r < panel_rows; ++r) src[r] = reinterpret_cast<const Block*>(scratch + r * row_bytes);
        pack_k_panel(src, 0, nblocks, reinterpret_cast<P*>(at));
    }
}

// out[t * 16 + r] = row r of the panel's nblocks super-blocks times token t's Q8_K blocks
// x[t * stride ..].
template <class Block>
using k_panel_tile_fn = void (*)(const typename k_panel_of<Block>::type* p, const blocks::q8_k* x, std::uint64_t stride,
                                 std::uint64_t nblocks, float* out);

// The portable path: each row's super-block decoded by block_decode.hpp's element functions and
// multiplied as dot_q8_k_portable does.
template <class Block, int Tokens>
inline void k_panel_tile_portable(const typename k_panel_of<Block>::type* p, const blocks::q8_k* x,
                                  std::uint64_t stride, std::uint64_t nblocks, float* out) {
    constexpr int sub = sub_block_size(static_cast<const Block*>(nullptr));
    for (int i = 0; i < Tokens * panel_rows; ++i) out[i] = 0.0f;
    for (std::uint64_t b = 0; b < nblocks; ++b)
        for (int r = 0; r < panel_rows; ++r) {
            const Block w = unpack_k_panel(p[b], r);
            for (int t = 0; t < Tokens; ++t) {
                const blocks::q8_k& y = x[t * stride + b];
                float block = 0.0f;
                for (int s = 0; s < blocks::qk_k / sub; ++s) {
                    std::int32_t products = 0, sum = 0;
                    for (int j = s * sub; j < (s + 1) * sub; ++j) {
                        products += quant_value(w, j) * y.qs[j];
                        sum += y.qs[j];
                    }
                    const block_affine a = sub_affine(w, s);
                    block += a.scale * static_cast<float>(products) - a.min * static_cast<float>(sum);
                }
                out[t * panel_rows + r] += y.d * block;
            }
        }
}

#if VRAMPLAN_X86_SIMD
VRAMPLAN_AVX512_WARNINGS_OFF
namespace simd {

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
// of both, then their f32 scales. Q5_K's pair p takes bit 2p of the qh chunk for its low values
// and bit 2p + 1 for its high ones. The minimums: sum_j min_j * (x's 32-value sum j), as 16-bit
// pairs in vpdpwssd (min < 64, |sum| <= 32 * 127), subtracted in f32 after the scales.
template <class Panel, int Tokens>
VRAMPLAN_TARGET_AVX512_VNNI inline void k_panel_tile_k4_avx512_vnni(const Panel* p, const blocks::q8_k* x,
                                                                    std::uint64_t stride, std::uint64_t nblocks,
                                                                    float* out) {
    const __m512i nibble = _mm512_set1_epi8(0x0f), three = _mm512_set1_epi32(3);
    __m512 acc[Tokens];
    VRAMPLAN_UNROLL
    for (int t = 0; t < Tokens; ++t) acc[t] = _mm512_setzero_ps();
    for (std::uint64_t b = 0; b < nblocks; ++b) {
        const Panel& pb = p[b];
        const __m512i hi = _mm512_loadu_si512(pb.hi);
        const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(pb.d)));
        __m512 sb[Tokens];
        VRAMPLAN_UNROLL
        for (int t = 0; t < Tokens; ++t) sb[t] = _mm512_setzero_ps();
        const auto* ahead = reinterpret_cast<const char*>(reinterpret_cast<std::uintptr_t>(p + b) + 2 * sizeof(Panel));
        VRAMPLAN_UNROLL
        for (int pair = 0; pair < 4; ++pair) {
            // The block after next into L2, a quarter per step (as the Q6_K kernel says why).
            constexpr int lines = (sizeof(Panel) + 255) / 256;  // a quarter of the block's cache lines
            for (int i = 0; i < lines; ++i) _mm_prefetch(ahead + 64 * (lines * pair + i), _MM_HINT_T1);
            __m512i lo_sum[Tokens], hi_sum[Tokens];
            VRAMPLAN_UNROLL
            for (int t = 0; t < Tokens; ++t) lo_sum[t] = hi_sum[t] = _mm512_setzero_si512();
            VRAMPLAN_UNROLL
            for (int c = 0; c < 8; ++c) {
                const __m512i v = _mm512_loadu_si512(pb.qs[8 * pair + c]);
                __m512i lo = _mm512_and_si512(v, nibble), hv = _mm512_and_si512(_mm512_srli_epi16(v, 4), nibble);
                if constexpr (std::is_same_v<Panel, panel_q5_k>) {
                    const __m512i h = _mm512_loadu_si512(pb.qh[c]);
                    lo = _mm512_or_si512(lo, move_bit(h, 2 * pair, 4));
                    hv = _mm512_or_si512(hv, move_bit(h, 2 * pair + 1, 4));
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
            const __m512 ds0 = _mm512_mul_ps(d, _mm512_cvtepi32_ps(s0)), ds1 = _mm512_mul_ps(d, _mm512_cvtepi32_ps(s1));
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

// The formats of sixteen-value sub-blocks (Q2_K, Q3_K, Q6_K) with AVX-512 VNNI. A chunk position
// (half n of the block, bytes 4l..4l+3 of its 32) gives four groups of four values, group g's in
// sub-block 8n + 2g + l / 4 at element 128n + 32g + 4l, from the chunks that format keeps:
//  - Q2_K: two bits per value, group g at bits 2g of the qs chunk; value = d scale q - dmin min;
//  - Q3_K: those two bits plus bit 4n + g of the hmask chunk as the third; value = d scale (q - 4);
//  - Q6_K: four bits from ql chunks l (groups 0, 2) and l + 8 (1, 3) and two from the qh chunk,
//    in the file's bit order; value = d scale (q - 32).
// q is unsigned in vpdpbusd; each sub-block's lanes start at minus the offset times x's 16-value
// sum, so the offset is exact before the signed scale. Q2_K's minimums meet x's sums as 16-bit
// pairs in vpdpwssd.
template <class Panel>
inline constexpr int k_small_offset = std::is_same_v<Panel, panel_q6_k>   ? 32
                                      : std::is_same_v<Panel, panel_q3_k> ? 4
                                                                          : 0;

template <class Panel>
VRAMPLAN_TARGET_AVX512_VNNI inline void k_small_values(const Panel& pb, int n, int l, __m512i* q) {
    const __m512i two = _mm512_set1_epi8(0x03);
    if constexpr (std::is_same_v<Panel, panel_q6_k>) {
        const __m512i nibble = _mm512_set1_epi8(0x0f), b23 = _mm512_set1_epi8(0x0c), b45 = _mm512_set1_epi8(0x30);
        const __m512i a = _mm512_loadu_si512(pb.ql[16 * n + l]);
        const __m512i c = _mm512_loadu_si512(pb.ql[16 * n + 8 + l]);
        const __m512i h = _mm512_loadu_si512(pb.qh[8 * n + l]);
        q[0] = _mm512_or_si512(_mm512_and_si512(a, nibble), _mm512_slli_epi16(_mm512_and_si512(h, two), 4));
        q[1] = _mm512_or_si512(_mm512_and_si512(c, nibble), _mm512_slli_epi16(_mm512_and_si512(h, b23), 2));
        q[2] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(a, 4), nibble), _mm512_and_si512(h, b45));
        q[3] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(c, 4), nibble),
                               _mm512_and_si512(_mm512_srli_epi16(h, 2), b45));
    } else {
        const __m512i v = _mm512_loadu_si512(pb.qs[8 * n + l]);
        q[0] = _mm512_and_si512(v, two);
        q[1] = _mm512_and_si512(_mm512_srli_epi16(v, 2), two);
        q[2] = _mm512_and_si512(_mm512_srli_epi16(v, 4), two);
        q[3] = _mm512_and_si512(_mm512_srli_epi16(v, 6), two);
        if constexpr (std::is_same_v<Panel, panel_q3_k>) {
            const __m512i h = _mm512_loadu_si512(pb.hmask[l]);
            VRAMPLAN_UNROLL
            for (int g = 0; g < 4; ++g) q[g] = _mm512_or_si512(q[g], move_bit(h, 4 * n + g, 2));
        }
    }
}

// Sub-block s's sixteen scales as integers, one per lane.
template <class Panel>
VRAMPLAN_TARGET_AVX512_VNNI inline __m512i k_small_scales(const Panel& pb, int s) {
    if constexpr (std::is_same_v<Panel, panel_q6_k>) {
        return _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(pb.scales[s])));
    } else if constexpr (std::is_same_v<Panel, panel_q2_k>) {
        return _mm512_and_si512(_mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(pb.scales[s]))),
                                _mm512_set1_epi32(15));
    } else {
        const __m512i lo = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(pb.lo[s % 8])));
        const __m512i low = s < 8 ? _mm512_and_si512(lo, _mm512_set1_epi32(15)) : _mm512_srli_epi32(lo, 4);
        const __m512i high =
            _mm512_and_si512(_mm512_srli_epi32(_mm512_loadu_si512(pb.hi), 2 * s), _mm512_set1_epi32(3));
        return _mm512_sub_epi32(_mm512_or_si512(low, _mm512_slli_epi32(high, 4)), _mm512_set1_epi32(32));
    }
}

template <class Panel, int Tokens>
VRAMPLAN_TARGET_AVX512_VNNI inline void k_panel_tile_small_avx512_vnni(const Panel* p, const blocks::q8_k* x,
                                                                       std::uint64_t stride, std::uint64_t nblocks,
                                                                       float* out) {
    constexpr int offset = k_small_offset<Panel>;
    __m512 acc[Tokens];
    VRAMPLAN_UNROLL
    for (int t = 0; t < Tokens; ++t) acc[t] = _mm512_setzero_ps();
    for (std::uint64_t b = 0; b < nblocks; ++b) {
        const Panel& pb = p[b];
        const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(pb.d)));
        __m512 sb[Tokens];
        VRAMPLAN_UNROLL
        for (int t = 0; t < Tokens; ++t) sb[t] = _mm512_setzero_ps();
        // The block after next into L2, a quarter per step: Q6_K's three runs of lines (ql's two
        // halves and qh) are read interleaved, which the hardware prefetchers follow poorly.
        // Measured on two cores of the AMD EPYC over 400 MB of 2048 x 5632 Q6_K copies: 12-17
        // GB/s without, 17-21 into L1 (prefetcht0: the core's miss buffers fill), 28-41 into L2;
        // further ahead (8 blocks) 26-36. Q4_K gains less (about 5%), and takes it too.
        const auto* ahead = reinterpret_cast<const char*>(reinterpret_cast<std::uintptr_t>(p + b) + 2 * sizeof(Panel));
        constexpr int lines = (sizeof(Panel) + 255) / 256;  // a quarter of the block's cache lines
        VRAMPLAN_UNROLL
        for (int step = 0; step < 4; ++step) {
            const int n = step / 2, half = step % 2;
            for (int i = 0; i < lines; ++i) _mm_prefetch(ahead + 64 * (lines * step + i), _MM_HINT_T1);
            // Sub-blocks 8n + 2g + half for the four groups g.
            __m512i sum[4][Tokens];
            VRAMPLAN_UNROLL
            for (int g = 0; g < 4; ++g) {
                VRAMPLAN_UNROLL
                for (int t = 0; t < Tokens; ++t)
                    sum[g][t] = _mm512_set1_epi32(-offset * x[t * stride + b].bsums[8 * n + 2 * g + half]);
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
            VRAMPLAN_UNROLL
            for (int g = 0; g < 4; ++g) {
                const __m512 ds = _mm512_mul_ps(d, _mm512_cvtepi32_ps(k_small_scales(pb, 8 * n + 2 * g + half)));
                VRAMPLAN_UNROLL
                for (int t = 0; t < Tokens; ++t) sb[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum[g][t]), ds, sb[t]);
            }
        }
        if constexpr (std::is_same_v<Panel, panel_q2_k>) {
            // Minimums as 16-bit pairs (min_2k, min_2k+1) per row, against x's pairs of sums.
            __m512i mins[8];
            VRAMPLAN_UNROLL
            for (int k = 0; k < 8; ++k) {
                const __m512i m0 = _mm512_srli_epi32(
                    _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(pb.scales[2 * k]))), 4);
                const __m512i m1 = _mm512_srli_epi32(
                    _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(pb.scales[2 * k + 1]))), 4);
                mins[k] = _mm512_or_si512(m0, _mm512_slli_epi32(m1, 16));
            }
            const __m512 dmin = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(pb.dmin)));
            VRAMPLAN_UNROLL
            for (int t = 0; t < Tokens; ++t) {
                const std::int16_t* sums = x[t * stride + b].bsums;
                __m512i m = _mm512_setzero_si512();
                VRAMPLAN_UNROLL
                for (int k = 0; k < 8; ++k) {
                    std::int32_t pair;
                    std::memcpy(&pair, sums + 2 * k, 4);
                    m = _mm512_dpwssd_epi32(m, mins[k], _mm512_set1_epi32(pair));
                }
                sb[t] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(m), dmin, sb[t]);
            }
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

template <class Block>
struct k_panel_kernels {
    k_panel_tile_fn<Block> tile[panel_tokens];
};

// The tile kernels for 1..panel_tokens tokens on the path the processor takes now; AVX2 alone
// takes the portable path here, so the CPU backend holds K-quant panels only where VNNI runs them
// (runtime/weight_layout.hpp) and leaves AVX2 machines the row kernels of kquant_dot.hpp.
template <class Block>
inline k_panel_kernels<Block> find_k_panel_kernels() {
    static_assert(panel_tokens == 4, "one kernel per tile width");
#if VRAMPLAN_X86_SIMD
    if (has_avx512_vnni()) {
        using P = typename k_panel_of<Block>::type;
        if constexpr (std::is_same_v<Block, blocks::q4_k> || std::is_same_v<Block, blocks::q5_k>)
            return {{&simd::k_panel_tile_k4_avx512_vnni<P, 1>, &simd::k_panel_tile_k4_avx512_vnni<P, 2>,
                     &simd::k_panel_tile_k4_avx512_vnni<P, 3>, &simd::k_panel_tile_k4_avx512_vnni<P, 4>}};
        else
            return {{&simd::k_panel_tile_small_avx512_vnni<P, 1>, &simd::k_panel_tile_small_avx512_vnni<P, 2>,
                     &simd::k_panel_tile_small_avx512_vnni<P, 3>, &simd::k_panel_tile_small_avx512_vnni<P, 4>}};
    }
#endif
    return {{&k_panel_tile_portable<Block, 1>, &k_panel_tile_portable<Block, 2>, &k_panel_tile_portable<Block, 3>,
             &k_panel_tile_portable<Block, 4>}};
}

// Whether this processor runs K-quant panels faster than rows (VNNI; see find_k_panel_kernels).
inline bool k_panels_pay() { return has_avx512_vnni(); }

}  // namespace vramplan::kernels::cpu
