// Q4_0 and Q8_0 weight rows times activations rounded to Q8_0 blocks (rounded_blocks), several
// rows at a time, multiplied in integers: W4A8 and W8A8, as llama.cpp's CPU backend computes
// them. Every path computes each block's integer dot product exactly, so paths differ only in the
// order of f32 additions.
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

#include <cstdint>
#include <utility>

#include "vramplan/config.hpp"
#include "vramplan/kernels/block_math.hpp"
#include "vramplan/kernels/cpu/dot.hpp"
#include "vramplan/kernels/cpu/isa.hpp"

namespace vramplan::kernels::cpu {

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

// The portable path: each block's integer dot product, times both scales.
template <class Block, int Rows>
inline void int8_rows_portable(const Block* const* w, rounded_view x, std::uint64_t nblocks, float* out,
                               paced_prefetch& /*next: the portable path leaves memory to the hardware*/) {
    for (int r = 0; r < Rows; ++r) {
        out[r] = 0.0f;
        for (std::uint64_t b = 0; b < nblocks; ++b) {
            std::int32_t sum = 0;
            for (int j = 0; j < blocks::qk; ++j) sum += quant_value(w[r][b], j) * x.qs[b * blocks::qk + j];
            out[r] += to_float(w[r][b].d) * x.d[b] * static_cast<float>(sum);
        }
    }
}

#if VRAMPLAN_X86_SIMD
VRAMPLAN_AVX512_WARNINGS_OFF
namespace simd {

// Block b's scales of rows R... as eight halves, lane r for row r.
template <class Block, std::size_t... R>
VRAMPLAN_TARGET_AVX2 inline __m128i row_scales(const Block* const* w, std::uint64_t b, std::index_sequence<R...>) {
    __m128i h = _mm_setzero_si128();
    ((h = _mm_insert_epi16(h, w[R][b].d.bits, static_cast<int>(R))), ...);
    return h;
}

// One block of a row times one block of x in integers, as eight partial sums. Q4_0: the nibbles
// unsigned (0..15), the -8 offset left to the caller. Q8_0: signed weights, made unsigned by
// moving their sign onto x (|w| * (x sign w) = w x; at most 128 * 127 * 2 per pair, no overflow).
VRAMPLAN_TARGET_AVX2 inline __m256i block_products(const blocks::q4_0& w, __m256i x) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(q4_0_nibbles(w), x), _mm256_set1_epi16(1));
}
VRAMPLAN_TARGET_AVX2 inline __m256i block_products(const blocks::q8_0& w, __m256i x) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.qs));
    return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(v), _mm256_sign_epi8(x, v)), _mm256_set1_epi16(1));
}

// The offset the AVX2 path's unsigned weight values carry, as a multiple of the eight lanes a
// block's products fill: each lane starts at -lane_offset * sum(x) so the eight add up to the
// block's exact signed dot product (8 lanes * 1 * sum = Q4_0's 8 sum(x)). Corrected in f32 after
// the sum, the offset's large terms cancelled and lost the result's low bits.
template <class Block>
inline constexpr int avx2_lane_offset = std::is_same_v<Block, blocks::q4_0> ? 1 : 0;

template <class Block, int Rows>
VRAMPLAN_TARGET_AVX2 inline void int8_rows_avx2(const Block* const* w, rounded_view x, std::uint64_t nblocks,
                                                float* out, paced_prefetch& next) {
    static_assert(Rows >= 1 && Rows <= 8, "one vector holds the scales of at most eight rows");
    __m256 acc[Rows];
    for (int r = 0; r < Rows; ++r) acc[r] = _mm256_setzero_ps();
    for (std::uint64_t b = 0; b < nblocks; ++b) {
        next.step();
        const __m256i xv = _mm256_load_si256(reinterpret_cast<const __m256i*>(x.qs + b * blocks::qk));
        const __m256i start = _mm256_set1_epi32(-avx2_lane_offset<Block> * x.sum[b]);
        const __m256 dw = _mm256_cvtph_ps(row_scales(w, b, std::make_index_sequence<Rows>{}));
        alignas(32) float d[8];
        _mm256_store_ps(d, _mm256_mul_ps(dw, _mm256_set1_ps(x.d[b])));
        for (int r = 0; r < Rows; ++r) {
            const __m256i p = _mm256_add_epi32(start, block_products(w[r][b], xv));
            acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(d[r]), _mm256_cvtepi32_ps(p), acc[r]);
        }
    }
    for (int r = 0; r < Rows; ++r) out[r] = hsum(acc[r]);
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
VRAMPLAN_TARGET_AVX512_VNNI inline __m512i unsigned_pair(const blocks::q8_0& wb, const blocks::q8_0& wb1) {
    const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb.qs));
    const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb1.qs));
    return _mm512_xor_si512(_mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1),
                            _mm512_set1_epi8(static_cast<char>(0x80)));
}

// The offset VNNI's unsigned weight values carry, per lane as for AVX2: Q4_0's 8 and Q8_0's 128
// over a block's eight lanes.
template <class Block>
inline constexpr int vnni_lane_offset = std::is_same_v<Block, blocks::q4_0> ? 1 : 16;

// Two blocks per step: lanes 0..7 hold block b, lanes 8..15 block b + 1. The scales of both
// blocks of all rows are one vector of sixteen (rows in lanes 0..7 for b, 8..15 for b + 1); a
// permute spreads row r's two into its eight and eight lanes.
template <class Block, int Rows>
VRAMPLAN_TARGET_AVX512_VNNI inline void int8_rows_avx512_vnni(const Block* const* w, rounded_view x,
                                                              std::uint64_t nblocks, float* out, paced_prefetch& next) {
    static_assert(Rows >= 1 && Rows <= 8, "one vector holds the scales of at most eight rows");
    __m512 acc[Rows];
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
        for (int r = 0; r < Rows; ++r) {
            const __m512i p = _mm512_dpbusd_epi32(start, unsigned_pair(w[r][b], w[r][b1]), xv);
            acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), _mm512_permutexvar_ps(spread[r], d), acc[r]);
        }
    }
    for (int r = 0; r < Rows; ++r) out[r] = _mm512_reduce_add_ps(acc[r]);
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
