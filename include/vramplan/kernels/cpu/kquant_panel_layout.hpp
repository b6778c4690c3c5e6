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
//  - Q5_K: Q4_K's panel and the fifth bits (qh), rearranged so that each pair of sub-blocks has its
//    own beside its values.
//  - Q2_K: sixteen sub-blocks of 16 values, 4-bit scale and min in a byte each, as in the file.
//  - Q3_K: sixteen sub-blocks of 16 with signed 6-bit scales, rearranged as Q4_K's are (the file's
//    eight bytes of low bits, then a 32-bit word of two high bits per sub-block), and each value's
//    two low bits (qs) and third (hmask) rebuilt into three-bit fields, in the order they are read.
//  - Q6_K: sixteen sub-blocks of 16 values with signed 8-bit scales; value = d * scale * (q - 32),
//    q's low four bits in ql and high two in qh, in the file's order within each chunk, the chunks
//    in the order the kernels read them (q6_ql, q6_qh say where each is).
// The integer sum of a sub-block is exact (the offsets, Q4_K's and Q2_K's minimums, Q3_K's 4 and
// Q6_K's 32, meet Q8_K's precomputed activation sums in integers); scales are applied in f32 per
// sub-block, except in the 256-bit kernels, which keep a half block's scaled sum an integer
// (kquant_panel_avx2.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "vramplan/config.hpp"
#include "vramplan/kernels/block_math.hpp"
#include "vramplan/kernels/cpu/int8_panel.hpp"

namespace vramplan::kernels::cpu {

struct panel_q4_k {
    half_bits d[panel_rows];
    half_bits dmin[panel_rows];
    std::uint8_t lo[8][panel_rows];      // sub-block j's scale (bits 0..3) and min (4..7), low bits
    std::uint32_t hi[panel_rows];        // row r's high bits of all eight scales and mins
    std::uint8_t qs[32][panel_rows][4];  // chunk c: the file's qs bytes 4c..4c+3
};
// Q4_K's panel with the fifth bits, each pair p of sub-blocks' (eight value chunks) just before its
// value chunks, so that a block is read front to back: byte i of row r of fifth[k] holds, at bits
// 2c and 2c + 1, the fifth bits of the low and high nibbles of byte i of the pair's value chunk
// 4k + c (the file's qh bits 2p and 2p + 1 of qh byte 4 (4k + c) + i). The file's qh, read by
// every pair, was a second run of lines beside the values' (measured in bench/REPORT.md).
struct panel_q5_k {
    half_bits d[panel_rows];
    half_bits dmin[panel_rows];
    std::uint8_t lo[8][panel_rows];
    std::uint32_t hi[panel_rows];
    struct pair_bytes {
        std::uint8_t fifth[2][panel_rows][4];
        std::uint8_t qs[8][panel_rows][4];
    } pairs[4];
};
struct panel_q2_k {
    half_bits d[panel_rows];
    half_bits dmin[panel_rows];
    std::uint8_t scales[16][panel_rows];  // sub-block s: scale (bits 0..3) and min (4..7), as in the file
    std::uint8_t qs[16][panel_rows][4];
};
// Q3_K's three-bit values (the two low bits from qs, the third from hmask) rebuilt so that most
// are one AND away. Each pair k of chunk positions l = 2k + c (c = 0, 1) of half n of the block has
// three chunks, whose byte i of row r holds the values of byte i of both positions (group g's of
// position l: element 128n + 32g + 4l + i), at bits (q3_value_bits):
//   a: g0 of 2k at 0..2, g1 of 2k at 3..5, the low two bits of g2 of 2k + 1 at 6..7;
//   b: g0 of 2k + 1 at 0..2, g1 of 2k + 1 at 3..5, the low two bits of g3 of 2k + 1 at 6..7;
//   c: g2 of 2k at 0..2, g3 of 2k at 3..5, the third bits of g2 and g3 of 2k + 1 at 6 and 7.
// Six of the eight values are an AND of one chunk (one at bits 3..5 is eight times itself, which
// the 512-bit kernel takes out of the integer sums), the other two two shifts, a select and an AND:
// fourteen operations for eight values where the file's layout took up to a shift, two ANDs, a
// shift and an OR for each (37). A group's values sit at the same bits in both positions, so one
// sum holds both.
struct panel_q3_k {
    half_bits d[panel_rows];
    std::uint8_t lo[8][panel_rows];  // the file's scale bytes 0..7: low bits of sub-blocks j and j + 8
    std::uint32_t hi[panel_rows];    // sub-block s's top two bits at bits 2s..2s+1
    std::uint8_t values[2][4][3][panel_rows][4];  // [n][k]: chunks a, b, c
};
// Where the bits of group g's value at position 2k + c are: the low two at chunk `low_chunk`'s bits
// low_bit and low_bit + 1, the third at chunk `third_chunk`'s bit third_bit (0: a, 1: b, 2: c).
struct q3_bits {
    int low_chunk, low_bit, third_chunk, third_bit;
};
inline constexpr q3_bits q3_value_bits[4][2] = {
    {{0, 0, 0, 2}, {1, 0, 1, 2}},
    {{0, 3, 0, 5}, {1, 3, 1, 5}},
    {{2, 0, 2, 2}, {0, 6, 2, 6}},
    {{2, 3, 2, 5}, {1, 6, 2, 7}},
};
// Each of the three chunks' 24 bits holds exactly one of the eight values' bits.
constexpr bool q3_value_bits_fill_the_chunks() {
    int used[3] = {};
    for (const auto& group : q3_value_bits)
        for (const q3_bits& v : group) {
            const int low = 3 << v.low_bit, third = 1 << v.third_bit;
            if (v.low_bit > 6 || (used[v.low_chunk] & low) != 0) return false;
            used[v.low_chunk] |= low;
            if ((used[v.third_chunk] & third) != 0) return false;
            used[v.third_chunk] |= third;
        }
    return used[0] == 0xff && used[1] == 0xff && used[2] == 0xff;
}
static_assert(q3_value_bits_fill_the_chunks(), "Q3_K's value bits fill its three chunks");
// Q6_K's value chunks as the kernels read them: for each half n of the block and chunk position l,
// the ql chunks 16n + l and 16n + 8 + l (a value's low bits, groups 0, 2 and 1, 3) and the qh chunk
// 8n + l (its high bits), so a block is read front to back. In the file's order (all of ql, then
// qh) the kernels read three runs of lines interleaved, which the hardware prefetchers follow
// poorly: measured on two cores of the AMD EPYC (Zen 4, AVX-512 VNNI), 4096 x 14336 over 512 MiB,
// two rounds in turn, the one-token product ran at 19.9 GB/s in the file's order (with the
// software prefetch it needed there), 22.6-24.1 in this order with it, and 30.5-35.5 in this order
// without it, 1.02-1.03 of the read loop in the same runs (bench/REPORT.md).
struct panel_q6_k {
    half_bits d[panel_rows];
    std::int8_t scales[16][panel_rows];
    std::uint8_t q[2][8][3][panel_rows][4];  // [n][l]: ql 16n + l, ql 16n + 8 + l, qh 8n + l
};
// Where ql chunk c (the file's ql bytes 4c..4c+3 of each row) and qh chunk c are.
inline const std::uint8_t (*q6_ql(const panel_q6_k& p, int c))[4] { return p.q[c / 16][c % 8][c % 16 / 8]; }
inline const std::uint8_t (*q6_qh(const panel_q6_k& p, int c))[4] { return p.q[c / 8][c % 8][2]; }
inline std::uint8_t (*q6_ql(panel_q6_k& p, int c))[4] { return p.q[c / 16][c % 8][c % 16 / 8]; }
inline std::uint8_t (*q6_qh(panel_q6_k& p, int c))[4] { return p.q[c / 8][c % 8][2]; }
// Where value chunk c (the file's qs bytes 4c..4c+3 of each row) is, for Q2_K, Q4_K and Q5_K.
template <class Panel>
inline auto* qs_chunk(Panel& p, int c) {
    if constexpr (requires { p.pairs; })
        return p.pairs[c / 8].qs[c % 8];
    else
        return p.qs[c];
}
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
// Q5_K's fifth bits: the file's `width` bits at bit width * part of byte 4c + i of its 32
// high-bit bytes are bits width * (c % per) of byte i of row r of the part's chunk c / per (per = 8
// / width values a byte).
inline void gather_high_bits(const std::uint8_t* file, int part, int width, std::uint8_t (*chunks)[panel_rows][4],
                             int r) {
    const int per = 8 / width, mask = (1 << width) - 1;
    for (int c = 0; c < 8; ++c)
        for (int i = 0; i < 4; ++i) {
            std::uint8_t& to = chunks[c / per][r][i];
            if (c % per == 0) to = 0;
            to |= static_cast<std::uint8_t>(((file[4 * c + i] >> (width * part)) & mask) << (width * (c % per)));
        }
}
inline void scatter_high_bits(const std::uint8_t (*chunks)[panel_rows][4], int part, int width, int r,
                              std::uint8_t* file) {
    const int per = 8 / width, mask = (1 << width) - 1;
    for (int c = 0; c < 8; ++c)
        for (int i = 0; i < 4; ++i)
            file[4 * c + i] |=
                static_cast<std::uint8_t>(((chunks[c / per][r][i] >> (width * (c % per))) & mask) << (width * part));
}
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
            for (int c = 0; c < 32; ++c) std::memcpy(qs_chunk(p, c)[r], src.qs + 4 * c, 4);
            if constexpr (requires { src.qh; })
                for (int pair = 0; pair < 4; ++pair) detail::gather_high_bits(src.qh, pair, 2, p.pairs[pair].fifth, r);
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
    for (int c = 0; c < 32; ++c) std::memcpy(out.qs + 4 * c, qs_chunk(p, c)[r], 4);
    if constexpr (requires { out.qh; }) {
        for (auto& byte : out.qh) byte = 0;
        for (int pair = 0; pair < 4; ++pair) detail::scatter_high_bits(p.pairs[pair].fifth, pair, 2, r, out.qh);
    }
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
            for (int n = 0; n < 2; ++n)
                for (int k = 0; k < 4; ++k)
                    for (int i = 0; i < 4; ++i) {
                        std::uint8_t* to[3];
                        for (int chunk = 0; chunk < 3; ++chunk) {
                            to[chunk] = &p.values[n][k][chunk][r][i];
                            *to[chunk] = 0;
                        }
                        for (int c = 0; c < 2; ++c)
                            for (int g = 0; g < 4; ++g) {
                                const int at = 4 * (2 * k + c) + i;  // byte of qs's half n and of hmask
                                const q3_bits where = q3_value_bits[g][c];
                                *to[where.low_chunk] |=
                                    static_cast<std::uint8_t>(((src.qs[32 * n + at] >> (2 * g)) & 3) << where.low_bit);
                                *to[where.third_chunk] |=
                                    static_cast<std::uint8_t>(((src.hmask[at] >> (4 * n + g)) & 1) << where.third_bit);
                            }
                    }
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
    for (auto& byte : out.qs) byte = 0;
    for (auto& byte : out.hmask) byte = 0;
    for (int n = 0; n < 2; ++n)
        for (int k = 0; k < 4; ++k)
            for (int i = 0; i < 4; ++i)
                for (int c = 0; c < 2; ++c)
                    for (int g = 0; g < 4; ++g) {
                        const int at = 4 * (2 * k + c) + i;
                        const q3_bits where = q3_value_bits[g][c];
                        const auto& chunks = p.values[n][k];
                        out.qs[32 * n + at] |=
                            static_cast<std::uint8_t>(((chunks[where.low_chunk][r][i] >> where.low_bit) & 3) << (2 * g));
                        out.hmask[at] |=
                            static_cast<std::uint8_t>(((chunks[where.third_chunk][r][i] >> where.third_bit) & 1) << (4 * n + g));
                    }
    return out;
}

inline void pack_k_panel(const blocks::q6_k* const* rows, std::uint64_t b0, std::uint64_t n, panel_q6_k* out) {
    for (std::uint64_t b = 0; b < n; ++b)
        for (int r = 0; r < panel_rows; ++r) {
            const blocks::q6_k& src = rows[r][b0 + b];
            panel_q6_k& p = out[b];
            for (int c = 0; c < 32; ++c) std::memcpy(q6_ql(p, c)[r], src.ql + 4 * c, 4);
            for (int c = 0; c < 16; ++c) std::memcpy(q6_qh(p, c)[r], src.qh + 4 * c, 4);
            for (int s = 0; s < 16; ++s) p.scales[s][r] = src.scales[s];
            p.d[r] = src.d;
        }
}
inline blocks::q6_k unpack_k_panel(const panel_q6_k& p, int r) {
    blocks::q6_k out;
    for (int c = 0; c < 32; ++c) std::memcpy(out.ql + 4 * c, q6_ql(p, c)[r], 4);
    for (int c = 0; c < 16; ++c) std::memcpy(out.qh + 4 * c, q6_qh(p, c)[r], 4);
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
// x[t * stride ..]. The second argument is panel_tile_fn's panel stride (int8_panel.hpp), so that
// one panel product serves both families; the K-quant kernels multiply one panel, and a decode step
// reads one panel at a time (matmul.hpp's k_panels says why).
template <class Block>
using k_panel_tile_fn = void (*)(const typename k_panel_of<Block>::type* p, std::uint64_t panel_stride,
                                 const blocks::q8_k* x, std::uint64_t stride, std::uint64_t nblocks, float* out);

// The portable path: each row's super-block decoded by block_decode.hpp's element functions and
// multiplied as dot_q8_k_portable does.
template <class Block, int Tokens>
inline void k_panel_tile_portable(const typename k_panel_of<Block>::type* p, std::uint64_t /*one panel*/,
                                  const blocks::q8_k* x, std::uint64_t stride, std::uint64_t nblocks, float* out) {
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

// The constant that the values of the sixteen-value formats are stored above: value = d scale (q -
// offset) for Q3_K and Q6_K; Q2_K's minimums are apart.
template <class Panel>
inline constexpr int k_small_offset = std::is_same_v<Panel, panel_q6_k>   ? 32
                                      : std::is_same_v<Panel, panel_q3_k> ? 4
                                                                          : 0;

// Quarter `step` (0..3) of the cache lines of the super-block after next into L2, one quarter per
// step of a kernel's work on this one, so the requests stay in flight beside the arithmetic.
// In the file's order of chunks Q6_K's three runs of lines (ql's two halves and qh) were read
// interleaved, which the hardware prefetchers follow poorly. Measured then on two cores of the AMD
// EPYC over 400 MB of 2048 x 5632 Q6_K copies: 12-17 GB/s without, 17-21 into L1 (prefetcht0: the
// core's miss buffers fill), 28-41 into L2; further ahead (8 blocks) 26-36. The 256-bit tiles,
// which work a block in two halves, prefetch during the second (kquant_panel_avx2.hpp's
// k_prefetch_half); the 512-bit tiles, which read panels front to back, no longer gain from it
// (kquant_panel_avx512.hpp).
// The address is formed as an integer: two blocks past a tensor's last is past its end.
// From and Bytes: the part of the block prefetched (whole lines: the panels' parts start on them).
template <class Panel, std::size_t From = 0, std::size_t Bytes = sizeof(Panel)>
inline void prefetch_block_quarter(const Panel* block, int step) {
    static_assert(From % 64 == 0 && From + Bytes <= sizeof(Panel), "whole lines of the block");
    constexpr int lines = static_cast<int>((Bytes + 255) / 256);
    const std::uintptr_t ahead = reinterpret_cast<std::uintptr_t>(block) + 2 * sizeof(Panel) + From + 64 * lines * step;
    for (int i = 0; i < lines; ++i) __builtin_prefetch(reinterpret_cast<const void*>(ahead + 64 * i), 0, 2);
}

}  // namespace vramplan::kernels::cpu
