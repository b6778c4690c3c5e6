// Rows of 32-value blocks (Q4_0, Q8_0, and the fallbacks llama.cpp's quantizer writes into K-quant
// files: Q4_1, Q5_0, Q5_1, IQ4_NL) times activations rounded to Q8_0 blocks (rounded_blocks),
// several rows at a time, multiplied in integers: W4A8 and W8A8, as llama.cpp's CPU backend
// computes them. Every path computes each block's integer dot product exactly, so paths differ
// only in the order of f32 additions.
//
// Each such block is d times 32 small integers q (Q4_1 and Q5_1 plus a minimum m), and a rounded
// block of x is dx times 32 int8 xq summing to sx, so their product is d dx sum(q xq) + m dx sx:
// one integer dot product and two scales.
//
// Why integers: converting weights to f32 costs more instructions per byte than memory delivers
// bytes, so a float kernel is compute-bound on a core (Q8_0 read at 0.36 of the read loop that
// way, bench/REPORT.md). Whole blocks multiply in one or two instructions instead.
//  - AVX2: vpmaddubsw (unsigned bytes times signed bytes, in pairs) then vpmaddwd.
//  - AVX-512 VNNI: vpdpbusd, two blocks per 512-bit vector; Q8_0 weights take an offset of 128
//    (w ^ 0x80 is w + 128 as an unsigned byte) that the blocks' integer sums take back out, in
//    integers, before the block's sum meets its scales.
// The scales of one block of all rows are gathered and converted as one vector, so a row pays one
// permute for its scale instead of a scalar conversion per block.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "vramplan/config.hpp"
#include "vramplan/kernels/block_math.hpp"
#include "vramplan/kernels/cpu/dot.hpp"
#include "vramplan/kernels/cpu/isa.hpp"

namespace vramplan::kernels::cpu {

// The block formats the row kernels here take.
template <class Block>
inline constexpr bool int8_block =
    std::is_same_v<Block, blocks::q4_0> || std::is_same_v<Block, blocks::q8_0> || std::is_same_v<Block, blocks::q4_1> ||
    std::is_same_v<Block, blocks::q5_0> || std::is_same_v<Block, blocks::q5_1> || std::is_same_v<Block, blocks::iq4_nl>;

// Q4_1 and Q5_1 add a minimum m to d q.
template <class Block>
inline constexpr bool has_block_min = requires(const Block& b) { b.m; };

// How the vector paths hold a block's 32 values as bytes: signed (Q8_0, and IQ4_NL's grid
// values), or unsigned with an offset that the values are less (Q4_0: q - 8, Q5_0: q - 16; Q4_1's
// and Q5_1's q are their values).
template <class Block>
inline constexpr bool signed_values = std::is_same_v<Block, blocks::q8_0> || std::is_same_v<Block, blocks::iq4_nl>;
template <class Block>
inline constexpr int value_offset = std::is_same_v<Block, blocks::q4_0> ? 8 : std::is_same_v<Block, blocks::q5_0> ? 16 : 0;

// Activations as the row kernels read them: block b's integers at qs + 32 b, its scale d[b] and
// the sum of its integers sum[b]. An odd count is followed by one zero block (rounded_blocks::
// clear) that the AVX-512 path reads as the partner of the last block.
struct rounded_view {
    const std::int8_t* qs = nullptr;
    const float* d = nullptr;
    const std::int32_t* sum = nullptr;
};

// The bytes the next call will read, requested a few cache lines per step of this one. Without
// it, 2048-wide Q4_0 products (eight rows of 18 lines per group, Llama's 2048-wide projections)
// read 8 GB/s on two cores where 14336-wide rows read 21 (matmul.hpp says where it is used).
// Paced over the steps, the requests stay in flight beside the arithmetic instead of stalling it
// as a burst would (prefetch.hpp says why).
struct paced_prefetch {
    const std::uint8_t* at = nullptr;
    const std::uint8_t* end = nullptr;
    std::uint64_t per_step = 0;
    paced_prefetch() = default;
    paced_prefetch(const void* begin, std::uint64_t bytes, std::uint64_t steps)
        : at(static_cast<const std::uint8_t*>(begin)),
          end(at + bytes),
          per_step(steps ? (bytes / 64 + steps - 1) / steps + 1 : bytes / 64 + 1) {}
    void step() {
        for (std::uint64_t i = 0; i < per_step && at < end; ++i, at += 64) __builtin_prefetch(at, 0, 3);
    }
};

// Rows int8 rows (at most eight: one vector holds a block's scales of all of them) times x.
template <class Block, int Rows>
using int8_rows_fn = void (*)(const Block* const* w, rounded_view x, std::uint64_t nblocks, float* out,
                              paced_prefetch& next);

// The portable path: each block's integer dot product, times both scales, plus the minimum's term.
template <class Block, int Rows>
inline void int8_rows_portable(const Block* const* w, rounded_view x, std::uint64_t nblocks, float* out,
                               paced_prefetch& /*next: the portable path leaves memory to the hardware*/) {
    for (int r = 0; r < Rows; ++r) {
        out[r] = 0.0f;
        for (std::uint64_t b = 0; b < nblocks; ++b) {
            std::int32_t sum = 0;
            for (int j = 0; j < blocks::qk; ++j) sum += quant_value(w[r][b], j) * x.qs[b * blocks::qk + j];
            out[r] += to_float(w[r][b].d) * x.d[b] * static_cast<float>(sum);
            if constexpr (has_block_min<Block>)
                out[r] += to_float(w[r][b].m) * x.d[b] * static_cast<float>(x.sum[b]);
        }
    }
}

#if VRAMPLAN_X86_SIMD
VRAMPLAN_AVX512_WARNINGS_OFF
namespace simd {

// Block b's scales (Field = &Block::d) or minimums (&Block::m) of rows R... as eight halves, lane r
// for row r.
template <auto Field, class Block, std::size_t... R>
VRAMPLAN_TARGET_AVX2 inline __m128i row_halves(const Block* const* w, std::uint64_t b, std::index_sequence<R...>) {
    __m128i h = _mm_setzero_si128();
    ((h = _mm_insert_epi16(h, (w[R][b].*Field).bits, static_cast<int>(R))), ...);
    return h;
}
template <class Block, std::size_t... R>
VRAMPLAN_TARGET_AVX2 inline __m128i row_scales(const Block* const* w, std::uint64_t b, std::index_sequence<R...> rows) {
    return row_halves<&Block::d>(w, b, rows);
}

// Q5_0's and Q5_1's fifth bits as 16 in byte j where bit j of the little-endian qh is set: each
// byte of qh goes to the eight bytes of its elements, and each of those keeps its own bit.
VRAMPLAN_TARGET_AVX2 inline __m256i fifth_bits(const std::uint8_t* qh) {
    std::int32_t bits;
    std::memcpy(&bits, qh, 4);
    const __m256i spread = _mm256_shuffle_epi8(
        _mm256_set1_epi32(bits), _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0));
    const __m256i bit = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ull));
    return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit), _mm256_set1_epi8(0x10));
}

// IQ4_NL's sixteen grid values as block_decode.hpp defines them, read once through quant_value.
inline const std::array<std::int8_t, 16> iq4_nl_grid = [] {
    std::array<std::int8_t, 16> grid{};
    blocks::iq4_nl b{};
    for (int q = 0; q < 16; ++q) {
        b.qs[0] = static_cast<std::uint8_t>(q);
        grid[q] = static_cast<std::int8_t>(quant_value(b, 0));
    }
    return grid;
}();

// A block's 32 values in element order as bytes, as signed_values and value_offset describe them.
VRAMPLAN_TARGET_AVX2 inline __m256i block_values(const blocks::q8_0& w) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.qs));
}
VRAMPLAN_TARGET_AVX2 inline __m256i block_values(const blocks::q4_0& w) { return nibbles_in_order(w.qs); }
VRAMPLAN_TARGET_AVX2 inline __m256i block_values(const blocks::q4_1& w) { return nibbles_in_order(w.qs); }
VRAMPLAN_TARGET_AVX2 inline __m256i block_values(const blocks::q5_0& w) {
    return _mm256_or_si256(nibbles_in_order(w.qs), fifth_bits(w.qh));
}
VRAMPLAN_TARGET_AVX2 inline __m256i block_values(const blocks::q5_1& w) {
    return _mm256_or_si256(nibbles_in_order(w.qs), fifth_bits(w.qh));
}
VRAMPLAN_TARGET_AVX2 inline __m256i block_values(const blocks::iq4_nl& w) {
    const __m256i grid = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(iq4_nl_grid.data())));
    return _mm256_shuffle_epi8(grid, nibbles_in_order(w.qs));
}

// A block's 32 values as signed bytes (the offset taken off unsigned ones) into v[0..32).
template <class Block>
VRAMPLAN_TARGET_AVX2 inline void store_signed_values(const Block& w, std::int8_t* v) {
    __m256i values = block_values(w);
    if constexpr (!signed_values<Block>)
        values = _mm256_sub_epi8(values, _mm256_set1_epi8(static_cast<char>(value_offset<Block>)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(v), values);
}

// One block of a row times one block of x in integers, as eight partial sums, the offset left to
// the caller. Signed weights are made unsigned by moving their sign onto x (|w| * (x sign w) = w x;
// at most 128 * 127 * 2 per pair, no overflow); unsigned ones are at most 31 (2 * 31 * 127).
template <class Block>
VRAMPLAN_TARGET_AVX2 inline __m256i block_products(const Block& w, __m256i x) {
    const __m256i v = block_values(w), ones = _mm256_set1_epi16(1);
    if constexpr (signed_values<Block>)
        return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(v), _mm256_sign_epi8(x, v)), ones);
    else
        return _mm256_madd_epi16(_mm256_maddubs_epi16(v, x), ones);
}

// The offset the AVX2 path's unsigned weight values carry, as a multiple of the eight lanes a
// block's products fill: each lane starts at -lane_offset * sum(x) so the eight add up to the
// block's exact signed dot product (8 lanes * 1 * sum = Q4_0's 8 sum(x)). Corrected in f32 after
// the sum, the offset's large terms cancelled and lost the result's low bits.
template <class Block>
inline constexpr int avx2_lane_offset = signed_values<Block> ? 0 : value_offset<Block> / 8;

template <class Block, int Rows>
VRAMPLAN_TARGET_AVX2 inline void int8_rows_avx2(const Block* const* w, rounded_view x, std::uint64_t nblocks,
                                                float* out, paced_prefetch& next) {
    static_assert(Rows >= 1 && Rows <= 8, "one vector holds the scales of at most eight rows");
    __m256 acc[Rows];
    __m256 min_terms = _mm256_setzero_ps();  // lane r: row r's minimums times dx sx, block by block
    for (int r = 0; r < Rows; ++r) acc[r] = _mm256_setzero_ps();
    for (std::uint64_t b = 0; b < nblocks; ++b) {
        next.step();
        const __m256i xv = _mm256_load_si256(reinterpret_cast<const __m256i*>(x.qs + b * blocks::qk));
        const __m256i start = _mm256_set1_epi32(-avx2_lane_offset<Block> * x.sum[b]);
        const auto rows = std::make_index_sequence<Rows>{};
        const __m256 dw = _mm256_cvtph_ps(row_scales(w, b, rows));
        if constexpr (has_block_min<Block>)
            min_terms = _mm256_fmadd_ps(_mm256_cvtph_ps(row_halves<&Block::m>(w, b, rows)),
                                        _mm256_set1_ps(x.d[b] * static_cast<float>(x.sum[b])), min_terms);
        alignas(32) float d[8];
        _mm256_store_ps(d, _mm256_mul_ps(dw, _mm256_set1_ps(x.d[b])));
        for (int r = 0; r < Rows; ++r) {
            const __m256i p = _mm256_add_epi32(start, block_products(w[r][b], xv));
            acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(d[r]), _mm256_cvtepi32_ps(p), acc[r]);
        }
    }
    alignas(32) float mins[8];
    _mm256_store_ps(mins, min_terms);
    for (int r = 0; r < Rows; ++r) out[r] = hsum(acc[r]) + mins[r];
}

// Blocks b and b1 of a row as 64 unsigned bytes in element order, b in the low half.
VRAMPLAN_TARGET_AVX512_VNNI inline __m512i unsigned_pair(const blocks::q4_0& wb, const blocks::q4_0& wb1) {
    // Each block's 16 bytes fill two 128-bit lanes; the second of each pair shifts to the high
    // nibbles (elements 16..31).
    const __m256i lo = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wb.qs)));
    const __m256i hi = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wb1.qs)));
    const __m512i packed = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
    return _mm512_and_si512(_mm512_srlv_epi64(packed, _mm512_set_epi64(4, 4, 0, 0, 4, 4, 0, 0)),
                            _mm512_set1_epi8(0x0f));
}
// The other formats: their values as block_values gives them, signed ones plus 128 (v ^ 0x80).
template <class Block>
VRAMPLAN_TARGET_AVX512_VNNI inline __m512i unsigned_pair(const Block& wb, const Block& wb1) {
    const __m512i v = _mm512_inserti64x4(_mm512_castsi256_si512(block_values(wb)), block_values(wb1), 1);
    if constexpr (signed_values<Block>) return _mm512_xor_si512(v, _mm512_set1_epi8(static_cast<char>(0x80)));
    return v;
}

// The offset VNNI's unsigned weight values carry, per lane as for AVX2: the unsigned formats'
// value_offset (Q4_0's 8) and the signed ones' 128 over a block's eight lanes.
template <class Block>
inline constexpr int vnni_lane_offset = signed_values<Block> ? 16 : value_offset<Block> / 8;

// Two blocks per step: lanes 0..7 hold block b, lanes 8..15 block b + 1. The scales of both
// blocks of all rows are one vector of sixteen (rows in lanes 0..7 for b, 8..15 for b + 1); a
// permute spreads row r's two into its eight and eight lanes.
template <class Block, int Rows>
VRAMPLAN_TARGET_AVX512_VNNI inline void int8_rows_avx512_vnni(const Block* const* w, rounded_view x,
                                                              std::uint64_t nblocks, float* out, paced_prefetch& next) {
    static_assert(Rows >= 1 && Rows <= 8, "one vector holds the scales of at most eight rows");
    __m512 acc[Rows];
    __m512 min_terms = _mm512_setzero_ps();  // lanes r and 8 + r: row r's minimums times dx sx
    __m512i spread[Rows];
    const __m512i halves = _mm512_set_epi32(8, 8, 8, 8, 8, 8, 8, 8, 0, 0, 0, 0, 0, 0, 0, 0);
    for (int r = 0; r < Rows; ++r) {
        acc[r] = _mm512_setzero_ps();
        spread[r] = _mm512_add_epi32(halves, _mm512_set1_epi32(r));
    }
    constexpr int k = vnni_lane_offset<Block>;
    for (std::uint64_t b = 0; b < nblocks; b += 2) {
        // An odd last block pairs with itself; x's zero block after it cancels the repeat.
        const std::uint64_t b1 = b + 1 < nblocks ? b + 1 : b;
        next.step();
        const __m512i xv = _mm512_load_si512(x.qs + b * blocks::qk);
        const __m512 dx = _mm512_insertf32x8(_mm512_set1_ps(x.d[b]), _mm256_set1_ps(x.d[b + 1]), 1);
        const __m512i start =
            _mm512_inserti64x4(_mm512_set1_epi32(-k * x.sum[b]), _mm256_set1_epi32(-k * x.sum[b + 1]), 1);
        const auto rows = std::make_index_sequence<Rows>{};
        const __m512 dw = _mm512_cvtph_ps(_mm256_set_m128i(row_scales(w, b1, rows), row_scales(w, b, rows)));
        const __m512 d = _mm512_mul_ps(dw, dx);
        if constexpr (has_block_min<Block>) {
            const __m512 dm = _mm512_cvtph_ps(
                _mm256_set_m128i(row_halves<&Block::m>(w, b1, rows), row_halves<&Block::m>(w, b, rows)));
            const __m512 sx = _mm512_insertf32x8(_mm512_set1_ps(x.d[b] * static_cast<float>(x.sum[b])),
                                                 _mm256_set1_ps(x.d[b + 1] * static_cast<float>(x.sum[b + 1])), 1);
            min_terms = _mm512_fmadd_ps(dm, sx, min_terms);
        }
        for (int r = 0; r < Rows; ++r) {
            const __m512i p = _mm512_dpbusd_epi32(start, unsigned_pair(w[r][b], w[r][b1]), xv);
            acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), _mm512_permutexvar_ps(spread[r], d), acc[r]);
        }
    }
    alignas(32) float mins[8];
    _mm256_store_ps(mins, _mm256_add_ps(_mm512_castps512_ps256(min_terms), _mm512_extractf32x8_ps(min_terms, 1)));
    for (int r = 0; r < Rows; ++r) out[r] = _mm512_reduce_add_ps(acc[r]) + mins[r];
}

}  // namespace simd
VRAMPLAN_AVX512_WARNINGS_ON
#endif

// The row kernel for the path the processor takes now (chosen once per matrix product).
template <class Block, int Rows>
inline int8_rows_fn<Block, Rows> find_int8_rows() {
#if VRAMPLAN_X86_SIMD
    if (has_avx512_vnni()) return &simd::int8_rows_avx512_vnni<Block, Rows>;
    if (has_avx2()) return &simd::int8_rows_avx2<Block, Rows>;
#endif
    return &int8_rows_portable<Block, Rows>;
}

}  // namespace vramplan::kernels::cpu
