// Q4_0 and Q8_0 weights sixteen rows at a time, block by block side by side ("panels"), and their
// products with up to four tokens' rounded activations in one pass: the layout and kernels of
// prefill, and of decode for the tensors the CPU backend repacks at load (runtime/weight_layout.hpp).
// Q5_0 and IQ4_NL rows are packed into Q8_0 panels for a prefill (pack_panel_as_q8_0).
//
// Why: a row kernel (int8_dot.hpp) holds one row's block across a vector, so each (row, token,
// block) pays for its own reduction and scale product, and a prefill unpacks every weight block
// again for every token: Q4_0 prefill ran at 0.58 of llama.cpp's on the AMD EPYC (bench/REPORT.md).
// In a panel, vector lane r belongs to row r: a block's bytes are stored as 4-byte chunks, chunk c
// of all sixteen rows together, so one vpdpbusd (or vpmaddubsw) multiplies sixteen rows by one
// broadcast chunk of x and each row's sum stays in its lane. One vector holds the sixteen rows'
// scales; the weights are unpacked once per block and serve every token of the tile.
//
// The layout keeps the file's bytes: a panel of sixteen rows of nb blocks is 16 nb sizeof(Block),
// as the rows were, so a repacked tensor fills exactly its planned slot.
#pragma once

#include <cstdint>
#include <cstring>

#include "vramplan/config.hpp"
#include "vramplan/kernels/block_math.hpp"
#include "vramplan/kernels/cpu/int8_dot.hpp"
#include "vramplan/kernels/cpu/isa.hpp"

namespace vramplan::kernels::cpu {

inline constexpr int panel_rows = 16;
inline constexpr int panel_tokens = 4;  // tokens per tile: their accumulators and the block's weights fit the registers
// Panels per decode step, read side by side from as many places in memory (matmul.hpp's panel_matmul
// gives each stream a quarter of the thread's panels). One stream through memory per core is not
// enough to reach its read rate: the hardware prefetchers follow each stream only so far ahead.
// Measured on two cores of the AMD EPYC (AVX-512 VNNI) with a test loop written for the purpose
// (not kept), a 4096 x 14336 Q4_0 matrix-vector product over 512 MiB of copies: one panel at a time
// 34-44 GB/s against a read loop's 55-63; two streams 40-44; four 52-71; four streams switched every
// 1, 4 or 8 blocks (288 bytes to 2.3 KB, as a K-quant block) all as fast; software prefetch of one
// stream from 4 KB up to a whole panel ahead 40-45. In the library (BM_matvec, before and after in
// turn): Q4_0 panels 0.61-0.66 -> 0.76-0.89 of the read loop, Q8_0 0.71-0.74 -> 0.83-0.93.
inline constexpr int panel_streams = 4;

// Block b of sixteen rows: their scales, then chunk c (the block's bytes 4c..4c+3) of row r at
// qs[c][r]. Q4_0's byte j holds elements j (low nibble) and j + 16 (high), as in the file.
template <class Block>
struct panel_block {
    static constexpr int chunks = static_cast<int>(sizeof(Block::qs)) / 4;
    half_bits d[panel_rows];
    std::uint8_t qs[chunks][panel_rows][4];
};
static_assert(sizeof(panel_block<blocks::q4_0>) == panel_rows * sizeof(blocks::q4_0), "a panel keeps the bytes");
static_assert(sizeof(panel_block<blocks::q8_0>) == panel_rows * sizeof(blocks::q8_0), "a panel keeps the bytes");

// Blocks [b0, b0 + n) of rows[0..16) into out[0..n).
template <class Block>
inline void pack_panel(const Block* const* rows, std::uint64_t b0, std::uint64_t n, panel_block<Block>* out) {
    for (std::uint64_t b = 0; b < n; ++b)
        for (int r = 0; r < panel_rows; ++r) {
            const Block& src = rows[r][b0 + b];
            out[b].d[r] = src.d;
            for (int c = 0; c < panel_block<Block>::chunks; ++c) std::memcpy(out[b].qs[c][r], src.qs + 4 * c, 4);
        }
}

// The inverse: row r's block b as the file stores it.
template <class Block>
inline Block unpack_panel(const panel_block<Block>& p, int r) {
    Block out;
    out.d = p.d[r];
    for (int c = 0; c < panel_block<Block>::chunks; ++c) std::memcpy(out.qs + 4 * c, p.qs[c][r], 4);
    return out;
}

// Blocks [b0, b0 + n) of sixteen rows of a format whose values are d times signed bytes with no
// minimum (Q5_0, IQ4_NL) into Q8_0 panels: the same d, each value as an int8, so the Q8_0 tile
// kernels compute their products exactly. Packing costs one unpacking per block and pass (AVX2
// through block_values where the processor has it), shared by the pass's tokens.
template <class Block>
inline void pack_panel_as_q8_0(const Block* const* rows, std::uint64_t b0, std::uint64_t n,
                               panel_block<blocks::q8_0>* out) {
    static_assert(!has_block_min<Block>, "a minimum has no place in a Q8_0 block");
    for (std::uint64_t b = 0; b < n; ++b)
        for (int r = 0; r < panel_rows; ++r) {
            const Block& src = rows[r][b0 + b];
            alignas(32) std::int8_t v[blocks::qk];
#if VRAMPLAN_X86_SIMD
            if (has_avx2()) {
                simd::store_signed_values(src, v);
            } else
#endif
            {
                for (int j = 0; j < blocks::qk; ++j) v[j] = static_cast<std::int8_t>(quant_value(src, j));
            }
            out[b].d[r] = src.d;
            for (int c = 0; c < panel_block<blocks::q8_0>::chunks; ++c) std::memcpy(out[b].qs[c][r], v + 4 * c, 4);
        }
}

// A tensor's first rows / 16 * 16 rows as panels, in place; scratch holds sixteen rows' bytes.
// The rows after the last whole panel stay as stored.
template <class Block>
inline void pack_tensor_panels(std::uint8_t* data, std::uint64_t rows, std::uint64_t cols, std::uint8_t* scratch) {
    const std::uint64_t nblocks = cols / blocks::qk, row_bytes = nblocks * sizeof(Block);
    for (std::uint64_t g = 0; g < rows / panel_rows; ++g) {
        std::uint8_t* at = data + g * panel_rows * row_bytes;
        std::memcpy(scratch, at, panel_rows * row_bytes);
        const Block* src[panel_rows];
        for (int r = 0; r < panel_rows; ++r) src[r] = reinterpret_cast<const Block*>(scratch + r * row_bytes);
        pack_panel(src, 0, nblocks, reinterpret_cast<panel_block<Block>*>(at));
    }
}

// out[(k * Tokens + t) * 16 + r] = row r of panel k's nblocks blocks times token t of x, for the
// kernel's Streams panels k, panel k's blocks at p + k * panel_stride, and its Tokens tokens t,
// token t's block b at index t * stride + b of the view. A kernel is a tile (Streams 1, up to
// panel_tokens tokens) or a decode step (one token, panel_streams panels).
template <class Block>
using panel_tile_fn = void (*)(const panel_block<Block>* p, std::uint64_t panel_stride, rounded_view x,
                               std::uint64_t stride, std::uint64_t nblocks, float* out);

// The portable path: each block's integer dot product, times both scales, as int8_rows_portable.
template <class Block, int Tokens, int Streams>
inline void panel_tile_portable(const panel_block<Block>* p, std::uint64_t panel_stride, rounded_view x,
                                std::uint64_t stride, std::uint64_t nblocks, float* out) {
    for (int i = 0; i < Streams * Tokens * panel_rows; ++i) out[i] = 0.0f;
    for (int k = 0; k < Streams; ++k)
        for (std::uint64_t b = 0; b < nblocks; ++b)
            for (int r = 0; r < panel_rows; ++r) {
                const Block w = unpack_panel(p[k * panel_stride + b], r);
                const float dw = to_float(w.d);
                for (int t = 0; t < Tokens; ++t) {
                    const std::uint64_t i = t * stride + b;
                    std::int32_t sum = 0;
                    for (int j = 0; j < blocks::qk; ++j) sum += quant_value(w, j) * x.qs[i * blocks::qk + j];
                    out[(k * Tokens + t) * panel_rows + r] += dw * x.d[i] * static_cast<float>(sum);
                }
            }
}

#if VRAMPLAN_X86_SIMD
VRAMPLAN_AVX512_WARNINGS_OFF
namespace simd {

inline std::int32_t x_chunk(const std::int8_t* q, int c) {
    std::int32_t v;
    std::memcpy(&v, q + 4 * c, 4);
    return v;
}

// AVX2: the panel in two halves of eight rows (the low and high 32 bytes of each chunk), so the
// accumulators, the chunk's weights and x fit sixteen registers. A tile takes each half in a pass
// over the blocks; a decode step (one token, Streams panels) takes both halves of a block before
// the next, so each line comes from memory once and is used whole. In two passes the second read
// the lines again from L2: 4096 x 14336 decode on two Zen 3 cores (AVX2), BM_matvec, old and new
// binaries in turn, two rounds: Q8_0 panels 0.71-0.72 of the read loop in two passes, 0.87-0.91
// in one; Q4_0 panels 0.73-0.78 and 0.93-0.94.
// Q4_0: the nibbles unsigned (0..15) against signed x in vpmaddubsw; the eight chunks' 16-bit
// pair sums add up to at most 8 * 2 * 15 * 128 = 30720, so they are summed before one vpmaddwd;
// a lane then holds its row's whole block, and the -8 offset comes out as 8 sum(x), in integers.
// Q8_0: signed weights made unsigned by moving their sign onto x (as block_products in
// int8_dot.hpp); a pair sum can reach 2 * 128 * 127, so each chunk goes through vpmaddwd.
template <class Block, int Tokens>
VRAMPLAN_TARGET_AVX2 inline void panel_half_avx2(const panel_block<Block>& pb, int h, rounded_view x,
                                                 std::uint64_t stride, std::uint64_t b, __m256* acc) {
    constexpr bool q4 = std::is_same_v<Block, blocks::q4_0>;
    const __m256i low = _mm256_set1_epi8(0x0f), ones = _mm256_set1_epi16(1);
    __m256i s[Tokens];
    VRAMPLAN_UNROLL
    for (int t = 0; t < Tokens; ++t) s[t] = _mm256_setzero_si256();
    if constexpr (q4) {
        VRAMPLAN_UNROLL
        for (int c = 0; c < 4; ++c) {
            __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pb.qs[c][8 * h]));
            VRAMPLAN_KEEP_IN_REGISTER(v);
            const __m256i lo = _mm256_and_si256(v, low), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low);
            VRAMPLAN_UNROLL
            for (int t = 0; t < Tokens; ++t) {
                const std::int8_t* xq = x.qs + (t * stride + b) * blocks::qk;
                s[t] = _mm256_add_epi16(s[t], _mm256_maddubs_epi16(lo, _mm256_set1_epi32(x_chunk(xq, c))));
                s[t] = _mm256_add_epi16(s[t], _mm256_maddubs_epi16(hi, _mm256_set1_epi32(x_chunk(xq, 4 + c))));
            }
        }
        VRAMPLAN_UNROLL
        for (int t = 0; t < Tokens; ++t)
            s[t] = _mm256_sub_epi32(_mm256_madd_epi16(s[t], ones), _mm256_set1_epi32(8 * x.sum[t * stride + b]));
    } else {
        VRAMPLAN_UNROLL
        for (int c = 0; c < 8; ++c) {
            const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pb.qs[c][8 * h]));
            const __m256i a = _mm256_abs_epi8(v);
            VRAMPLAN_UNROLL
            for (int t = 0; t < Tokens; ++t) {
                const std::int8_t* xq = x.qs + (t * stride + b) * blocks::qk;
                const __m256i sx = _mm256_sign_epi8(_mm256_set1_epi32(x_chunk(xq, c)), v);
                s[t] = _mm256_add_epi32(s[t], _mm256_madd_epi16(_mm256_maddubs_epi16(a, sx), ones));
            }
        }
    }
    const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(&pb.d[8 * h])));
    VRAMPLAN_UNROLL
    for (int t = 0; t < Tokens; ++t)
        acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[t]), _mm256_mul_ps(dw, _mm256_set1_ps(x.d[t * stride + b])),
                                 acc[t]);
}

template <class Block, int Tokens, int Streams>
VRAMPLAN_TARGET_AVX2 inline void panel_tile_avx2(const panel_block<Block>* p, std::uint64_t panel_stride,
                                                 rounded_view x, std::uint64_t stride, std::uint64_t nblocks,
                                                 float* out) {
    constexpr int n = Streams * Tokens;  // accumulators: (panel k, token t) at k * Tokens + t, per half
    constexpr bool one_pass = Streams > 1;
    constexpr int halves = one_pass ? 2 : 1;
    for (int pass = 0; pass < 2 / halves; ++pass) {
        __m256 acc[halves][n];
        VRAMPLAN_UNROLL
        for (int a = 0; a < n; ++a) {
            VRAMPLAN_UNROLL
            for (int h = 0; h < halves; ++h) acc[h][a] = _mm256_setzero_ps();
        }
        for (std::uint64_t b = 0; b < nblocks; ++b) {
            VRAMPLAN_UNROLL
            for (int k = 0; k < Streams; ++k) {
                VRAMPLAN_UNROLL
                for (int h = 0; h < halves; ++h)
                    panel_half_avx2<Block, Tokens>(p[k * panel_stride + b], pass + h, x, stride, b,
                                                   acc[h] + k * Tokens);
            }
        }
        VRAMPLAN_UNROLL
        for (int a = 0; a < n; ++a) {
            VRAMPLAN_UNROLL
            for (int h = 0; h < halves; ++h) _mm256_storeu_ps(out + a * panel_rows + 8 * (pass + h), acc[h][a]);
        }
    }
}

// AVX-512 VNNI: all sixteen rows in one vector. The weights enter vpdpbusd unsigned: Q4_0's
// nibbles as they are, Q8_0's bytes plus 128 (w ^ 0x80); each row's lane starts at minus that
// offset times sum(x), so the block's integer sum is exact before its scales. The low and high
// halves of a block's chunks accumulate apart (two chains per token) to hide vpdpbusd's latency.
template <class Block, int Tokens, int Streams>
VRAMPLAN_TARGET_AVX512_VNNI inline void panel_tile_avx512_vnni(const panel_block<Block>* p, std::uint64_t panel_stride,
                                                               rounded_view x, std::uint64_t stride,
                                                               std::uint64_t nblocks, float* out) {
    constexpr bool q4 = std::is_same_v<Block, blocks::q4_0>;
    constexpr int offset = q4 ? 8 : 128, n = Streams * Tokens;
    const __m512i low = _mm512_set1_epi8(0x0f), flip = _mm512_set1_epi8(static_cast<char>(0x80));
    __m512 acc[n];
    VRAMPLAN_UNROLL
    for (int a = 0; a < n; ++a) acc[a] = _mm512_setzero_ps();
    for (std::uint64_t b = 0; b < nblocks; ++b) {
        VRAMPLAN_UNROLL
        for (int k = 0; k < Streams; ++k) {
            const panel_block<Block>& pb = p[k * panel_stride + b];
            __m512i s0[Tokens], s1[Tokens];
            VRAMPLAN_UNROLL
            for (int t = 0; t < Tokens; ++t) {
                s0[t] = _mm512_set1_epi32(-offset * x.sum[t * stride + b]);
                s1[t] = _mm512_setzero_si512();
            }
            if constexpr (q4) {
                VRAMPLAN_UNROLL
                for (int c = 0; c < 4; ++c) {
                    __m512i v = _mm512_loadu_si512(pb.qs[c]);
                    VRAMPLAN_KEEP_IN_REGISTER(v);
                    const __m512i lo = _mm512_and_si512(v, low), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), low);
                    VRAMPLAN_UNROLL
                    for (int t = 0; t < Tokens; ++t) {
                        const std::int8_t* xq = x.qs + (t * stride + b) * blocks::qk;
                        s0[t] = _mm512_dpbusd_epi32(s0[t], lo, _mm512_set1_epi32(x_chunk(xq, c)));
                        s1[t] = _mm512_dpbusd_epi32(s1[t], hi, _mm512_set1_epi32(x_chunk(xq, 4 + c)));
                    }
                }
            } else {
                VRAMPLAN_UNROLL
                for (int c = 0; c < 8; c += 2) {
                    const __m512i v0 = _mm512_xor_si512(_mm512_loadu_si512(pb.qs[c]), flip);
                    const __m512i v1 = _mm512_xor_si512(_mm512_loadu_si512(pb.qs[c + 1]), flip);
                    VRAMPLAN_UNROLL
                    for (int t = 0; t < Tokens; ++t) {
                        const std::int8_t* xq = x.qs + (t * stride + b) * blocks::qk;
                        s0[t] = _mm512_dpbusd_epi32(s0[t], v0, _mm512_set1_epi32(x_chunk(xq, c)));
                        s1[t] = _mm512_dpbusd_epi32(s1[t], v1, _mm512_set1_epi32(x_chunk(xq, c + 1)));
                    }
                }
            }
            const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(pb.d)));
            VRAMPLAN_UNROLL
            for (int t = 0; t < Tokens; ++t)
                acc[k * Tokens + t] =
                    _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(s0[t], s1[t])),
                                    _mm512_mul_ps(dw, _mm512_set1_ps(x.d[t * stride + b])), acc[k * Tokens + t]);
        }
    }
    VRAMPLAN_UNROLL
    for (int a = 0; a < n; ++a) _mm512_storeu_ps(out + a * panel_rows, acc[a]);
}

}  // namespace simd
VRAMPLAN_AVX512_WARNINGS_ON
#endif

// The tile kernels for 1..panel_tokens tokens, and the decode step over panel_streams panels, on
// the path the processor takes now.
template <class Block>
struct panel_kernels {
    panel_tile_fn<Block> tile[panel_tokens];
    panel_tile_fn<Block> streams;
};

template <class Block>
inline panel_kernels<Block> find_panel_kernels() {
    static_assert(panel_tokens == 4, "one kernel per tile width");
#if VRAMPLAN_X86_SIMD
    if (has_avx512_vnni())
        return {{&simd::panel_tile_avx512_vnni<Block, 1, 1>, &simd::panel_tile_avx512_vnni<Block, 2, 1>,
                 &simd::panel_tile_avx512_vnni<Block, 3, 1>, &simd::panel_tile_avx512_vnni<Block, 4, 1>},
                &simd::panel_tile_avx512_vnni<Block, 1, panel_streams>};
    if (has_avx2())
        return {{&simd::panel_tile_avx2<Block, 1, 1>, &simd::panel_tile_avx2<Block, 2, 1>,
                 &simd::panel_tile_avx2<Block, 3, 1>, &simd::panel_tile_avx2<Block, 4, 1>},
                &simd::panel_tile_avx2<Block, 1, panel_streams>};
#endif
    return {{&panel_tile_portable<Block, 1, 1>, &panel_tile_portable<Block, 2, 1>, &panel_tile_portable<Block, 3, 1>,
             &panel_tile_portable<Block, 4, 1>},
            &panel_tile_portable<Block, 1, panel_streams>};
}

}  // namespace vramplan::kernels::cpu
