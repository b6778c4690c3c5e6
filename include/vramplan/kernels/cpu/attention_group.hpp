// Up to four query heads of one GQA group against one tile of keys, reading K and V straight from
// the cache (f32, f16, Q8_0 or Q4_0) with AVX2. Each 8-value piece of a key or value is converted
// once in registers and used by every head of the group, so there is no dequantized copy to write
// and read back: on a two-core machine that round trip cost as much as the arithmetic itself.
// For f32 and f16 keys the scores of two keys for four heads accumulate in eight registers (eight
// FMA chains); Q8_0 and Q4_0 key blocks meet the queries rounded to Q8_0 in integers, and one
// reduction gathers eight (head, key) sums. Values accumulate 16 dimensions at a time for four
// heads, again eight registers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

#include "vramplan/kernels/cpu/attention_query.hpp"
#include "vramplan/kernels/cpu/attention_tile.hpp"
#include "vramplan/kernels/cpu/prefetch.hpp"

namespace vramplan::kernels::cpu {

// Whether the group step serves this cache format and head size: head slices must start on a
// block boundary (Q8_0, Q4_0) and split into 16-value chunks.
template <kernel_format Kv, int HeadDim>
inline constexpr bool group_step_fits = (Kv == kernel_format::f32 || Kv == kernel_format::f16)     ? HeadDim % 16 == 0
                                        : (Kv == kernel_format::q8_0 || Kv == kernel_format::q4_0) ? HeadDim % 32 == 0
                                                                                                   : false;

#if VRAMPLAN_X86_SIMD
namespace simd {

inline constexpr bool is_block_format(kernel_format f) { return f == kernel_format::q8_0 || f == kernel_format::q4_0; }

// A head slice is walked in pieces: runs of values under one scale (a Q8_0 or Q4_0 block) or, for
// f32 and f16, 16 values. Inside a piece every offset is a compile-time constant, so the loops
// carry one pointer per row and no index arithmetic.
template <kernel_format Kv>
inline constexpr int piece_values = is_block_format(Kv) ? 32 : 16;
template <kernel_format Kv>
inline constexpr std::uint64_t piece_bytes = is_block_format(Kv) ? block_bytes(Kv) : 16 * block_bytes(Kv);

// Values 8I..8I+7 of the piece at p as floats, before the piece's scale.
template <kernel_format Kv, int I>
VRAMPLAN_TARGET_AVX2 inline __m256 piece_chunk(const std::uint8_t* p) {
    if constexpr (Kv == kernel_format::f32) {
        return _mm256_loadu_ps(reinterpret_cast<const float*>(p) + 8 * I);
    } else if constexpr (Kv == kernel_format::f16) {
        return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * I)));
    } else if constexpr (Kv == kernel_format::q8_0) {
        return load8_i8(reinterpret_cast<const blocks::q8_0*>(p)->qs + 8 * I);
    } else {
        // Element i < 16 is the low nibble of byte i, element i >= 16 the high nibble of byte i - 16.
        const __m256i bytes = _mm256_cvtepu8_epi32(_mm_loadl_epi64(
            reinterpret_cast<const __m128i*>(reinterpret_cast<const blocks::q4_0*>(p)->qs + 8 * (I % 2))));
        const __m256i nib = I < 2 ? _mm256_and_si256(bytes, _mm256_set1_epi32(0x0f)) : _mm256_srli_epi32(bytes, 4);
        return _mm256_cvtepi32_ps(_mm256_sub_epi32(nib, _mm256_set1_epi32(8)));
    }
}

// acc_h[k] += q_h . (chunk I of the f32 or f16 pieces at k0 and k1) for the heads H....
template <kernel_format Kv, int HeadDim, int I, std::size_t G, std::size_t... H>
VRAMPLAN_TARGET_AVX2 inline void chunk_products(const float* q, const std::uint8_t* k0, const std::uint8_t* k1,
                                                __m256 (&a0)[G], __m256 (&a1)[G], std::index_sequence<H...>) {
    const __m256 x0 = piece_chunk<Kv, I>(k0), x1 = piece_chunk<Kv, I>(k1);
    ((a0[H] = _mm256_fmadd_ps(_mm256_loadu_ps(q + H * HeadDim + 8 * I), x0, a0[H]),
      a1[H] = _mm256_fmadd_ps(_mm256_loadu_ps(q + H * HeadDim + 8 * I), x1, a1[H])),
     ...);
}

// q_h . k_j for the heads H... and the two keys k0, k1 of an f32 or f16 cache: lane order of the
// result is (h0 k0, h0 k1, h1 k0, ...). The per-head accumulators are arrays indexed only through
// folds over H and the piece's chunks I, so they live in registers on every compiler.
template <kernel_format Kv, int HeadDim, std::size_t... H, std::size_t... I>
VRAMPLAN_TARGET_AVX2 inline void scores_2keys(const float* q, const std::uint8_t* k0, const std::uint8_t* k1,
                                              float* out, std::index_sequence<H...>, std::index_sequence<I...>) {
    static_assert(!is_block_format(Kv), "Q8_0 and Q4_0 keys meet rounded queries: scores_rounded");
    constexpr int P = piece_values<Kv>;
    __m256 a0[] = {((void)H, _mm256_setzero_ps())...};
    __m256 a1[] = {((void)H, _mm256_setzero_ps())...};
    for (int b = 0; b < HeadDim / P; ++b, q += P, k0 += piece_bytes<Kv>, k1 += piece_bytes<Kv>)
        (chunk_products<Kv, HeadDim, static_cast<int>(I)>(q, k0, k1, a0, a1, std::index_sequence<H...>{}), ...);
    if constexpr (sizeof...(H) == 4) {
        const __m256 lo = _mm256_hadd_ps(_mm256_hadd_ps(a0[0], a1[0]), _mm256_hadd_ps(a0[1], a1[1]));
        const __m256 hi = _mm256_hadd_ps(_mm256_hadd_ps(a0[2], a1[2]), _mm256_hadd_ps(a0[3], a1[3]));
        _mm256_storeu_ps(out,
                         _mm256_add_ps(_mm256_permute2f128_ps(lo, hi, 0x20), _mm256_permute2f128_ps(lo, hi, 0x31)));
    } else {
        ((out[2 * H] = hsum(a0[H]), out[2 * H + 1] = hsum(a1[H])), ...);
    }
}

// A Q8_0 or Q4_0 key block's 32 values as bytes for vpmaddubsw's unsigned operand: Q8_0's signed
// values as magnitudes (their signs go to the query, vpsignb), Q4_0's nibbles as they are
// (0..15; the -8 comes back through the query's block sums).
template <kernel_format Kv>
VRAMPLAN_TARGET_AVX2 inline __m256i key_block_bytes(const std::uint8_t* p) {
    if constexpr (Kv == kernel_format::q8_0) {
        return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(reinterpret_cast<const blocks::q8_0*>(p)->qs));
    } else {
        return q4_0_nibbles(*reinterpret_cast<const blocks::q4_0*>(p));
    }
}

// Eight 32-bit partial sums of a key block's integers times a rounded query block's (Q4_0: before
// the -8 offset). No pair of products overflows vpmaddubsw's 16 bits: 2 x 127 x 127 < 32768.
template <kernel_format Kv>
VRAMPLAN_TARGET_AVX2 inline __m256i block_products(__m256i key, __m256i query) {
    if constexpr (Kv == kernel_format::q8_0)
        return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_sign_epi8(key, key), _mm256_sign_epi8(query, key)),
                                 _mm256_set1_epi16(1));
    else
        return _mm256_madd_epi16(_mm256_maddubs_epi16(key, query), _mm256_set1_epi16(1));
}

// Keys whose scores one integer reduction gathers for G heads: the products of every (head, key)
// pair fill the eight lanes of one register (G = 3 leaves two empty).
template <int G>
inline constexpr int keys_per_reduction = G == 1   ? 8
                                          : G == 2 ? 4
                                                   : 2;

// The scales of the pieces at rows j0..j0 + Keys - 1 of p (rows from n on repeat row n - 1), lane
// i holding row j0 + i % Keys. They are gathered in general registers and converted at once:
// written to memory one by one and read back as a vector, they would wait for the stores to
// retire, as narrow stores do not forward to a wide load.
template <int Keys>
VRAMPLAN_TARGET_AVX2 inline __m256 piece_scales(const std::uint8_t* p, std::uint64_t row_bytes, int j0, int n) {
    static_assert(Keys == 2 || Keys == 4 || Keys == 8);
    // Both block formats begin with their f16 scale.
    const auto bits = [&](int i) -> std::uint64_t {
        const int j = j0 + i % Keys;
        return reinterpret_cast<const half_bits*>(p + static_cast<std::uint64_t>(j < n ? j : n - 1) * row_bytes)->bits;
    };
    const std::uint64_t lo = bits(0) | bits(1) << 16 | bits(2) << 32 | bits(3) << 48;
    const std::uint64_t hi = Keys == 8 ? bits(4) | bits(5) << 16 | bits(6) << 32 | bits(7) << 48 : lo;
    return _mm256_cvtph_ps(_mm_set_epi64x(static_cast<long long>(hi), static_cast<long long>(lo)));
}

// Per block b, what turns the integer sums of scores_rounded into scores, lane (h, key) at
// h * keys_per_reduction<G> + key: the query block's scale times the softmax scale, and (Q4_0)
// 8 x the query block's sum.
template <int HeadDim>
struct rounded_block_terms {
    __m256 qscale[HeadDim / 32];
    __m256i offset[HeadDim / 32];
};
template <kernel_format Kv, int HeadDim, int G>
VRAMPLAN_TARGET_AVX2 inline void block_terms(const rounded_rows& q, float scale, rounded_block_terms<HeadDim>& t) {
    constexpr int K = keys_per_reduction<G>;
    for (int b = 0; b < HeadDim / 32; ++b) {
        alignas(32) float d[8] = {};
        alignas(32) std::int32_t o[8] = {};
        for (int h = 0; h < G; ++h)
            for (int key = 0; key < K; ++key) {
                d[h * K + key] = q.d[h * (HeadDim / 32) + b] * scale;
                o[h * K + key] = Kv == kernel_format::q4_0 ? 8 * q.sum[h * (HeadDim / 32) + b] : 0;
            }
        t.qscale[b] = _mm256_load_ps(d);
        t.offset[b] = _mm256_load_si256(reinterpret_cast<const __m256i*>(o));
    }
}

// The scaled scores of G heads (at most four) for keys_per_reduction<G> keys at rows j0, j0 + 1,
// ... of k (rows from n on repeat row n - 1) from queries rounded to Q8_0, lane (h, key) as in
// rounded_block_terms. Per block, the products of every head and key are summed in integers, the
// eight sums gathered into one register by one reduction, and one FMA applies the block's scales
// to all of them; with fewer heads, more keys share the reduction rather than empty lanes.
// The `steps` calls to next_tile.step() owed for these keys (one per pair) are made one per block:
// bunched before the keys (four for eight keys) they were about 10% slower at 4k with one head
// per KV head, a small version of the burst prefetch.hpp describes.
template <kernel_format Kv, int HeadDim, int G>
VRAMPLAN_TARGET_AVX2 inline __m256 scores_rounded(const rounded_rows& q, const rounded_block_terms<HeadDim>& t,
                                                  const std::uint8_t* k, std::uint64_t row_bytes, int j0, int n,
                                                  tile_prefetcher& next_tile, int steps) {
    constexpr int K = keys_per_reduction<G>;
    const std::uint8_t* row[K];
    for (int key = 0; key < K; ++key)
        row[key] = k + static_cast<std::uint64_t>(j0 + key < n ? j0 + key : n - 1) * row_bytes;
    __m256 acc = _mm256_setzero_ps();
    for (int b = 0; b < HeadDim / 32; ++b) {
        if (b < steps) next_tile.step();
        const std::uint64_t at = static_cast<std::uint64_t>(b) * block_bytes(Kv);
        __m256i x[K], prod[8] = {};
        for (int key = 0; key < K; ++key) x[key] = key_block_bytes<Kv>(row[key] + at);
        for (int h = 0; h < G; ++h) {
            const __m256i qb = _mm256_load_si256(reinterpret_cast<const __m256i*>(q.qs + h * HeadDim + 32 * b));
            for (int key = 0; key < K; ++key) prod[h * K + key] = block_products<Kv>(x[key], qb);
        }
        const __m256i lo = _mm256_hadd_epi32(_mm256_hadd_epi32(prod[0], prod[1]), _mm256_hadd_epi32(prod[2], prod[3]));
        const __m256i hi = _mm256_hadd_epi32(_mm256_hadd_epi32(prod[4], prod[5]), _mm256_hadd_epi32(prod[6], prod[7]));
        __m256i sums =
            _mm256_add_epi32(_mm256_permute2x128_si256(lo, hi, 0x20), _mm256_permute2x128_si256(lo, hi, 0x31));
        if constexpr (Kv == kernel_format::q4_0) sums = _mm256_sub_epi32(sums, t.offset[b]);
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums),
                              _mm256_mul_ps(t.qscale[b], piece_scales<K>(k + at, row_bytes, j0, n)), acc);
    }
    for (int b = HeadDim / 32; b < steps; ++b) next_tile.step();
    return acc;
}

// acc_h[16 values] = acc_h * rescale_h + sum_j w_h[j] v_j over chunks I0 and I0 + 1 of the piece at
// v (rows row_bytes apart) for the heads H..., v_j before its piece's scale: for block formats the
// weights w come with the scales folded in.
template <kernel_format Kv, int I0, std::size_t... H>
VRAMPLAN_TARGET_AVX2 inline void values_16(const float (*w)[key_tile], const float* rescale, const std::uint8_t* v,
                                           std::uint64_t row_bytes, int n, float* const* acc,
                                           std::index_sequence<H...>) {
    __m256 r0[] = {_mm256_mul_ps(_mm256_loadu_ps(acc[H]), _mm256_set1_ps(rescale[H]))...};
    __m256 r1[] = {_mm256_mul_ps(_mm256_loadu_ps(acc[H] + 8), _mm256_set1_ps(rescale[H]))...};
    for (int j = 0; j < n; ++j, v += row_bytes) {
        const __m256 x0 = piece_chunk<Kv, I0>(v), x1 = piece_chunk<Kv, I0 + 1>(v);
        ((r0[H] = _mm256_fmadd_ps(_mm256_set1_ps(w[H][j]), x0, r0[H]),
          r1[H] = _mm256_fmadd_ps(_mm256_set1_ps(w[H][j]), x1, r1[H])),
         ...);
    }
    ((_mm256_storeu_ps(acc[H], r0[H]), _mm256_storeu_ps(acc[H] + 8, r1[H])), ...);
}

// w[h][j] = p[h][j] * (scale of the piece at v in row j): folding a block's scale into the weights
// once per tile takes a scale load, conversion and multiply out of every 16 values of every key.
template <int G>
VRAMPLAN_TARGET_AVX2 inline void fold_value_scales(const float (*p)[key_tile], const std::uint8_t* v,
                                                   std::uint64_t row_bytes, int n, float (*w)[key_tile]) {
    static_assert(key_tile == 16);
    const __m256 d0 = piece_scales<8>(v, row_bytes, 0, n), d1 = piece_scales<8>(v, row_bytes, 8, n);
    for (int h = 0; h < G; ++h) {
        _mm256_store_ps(w[h], _mm256_mul_ps(_mm256_load_ps(p[h]), d0));
        _mm256_store_ps(w[h] + 8, _mm256_mul_ps(_mm256_load_ps(p[h] + 8), d1));
    }
}

// The tile's n keys (rows k, k + row_bytes, ...; v likewise, each pointing at this KV head's
// slice) folded into the states of G consecutive query heads, whose queries start at q (f32 and
// f16 caches) or, rounded to Q8_0, at qr (Q8_0 and Q4_0 caches).
template <kernel_format Kv, int HeadDim, int G>
VRAMPLAN_TARGET_AVX2 inline void group_step(const float* q, const rounded_rows& qr, const std::uint8_t* k,
                                            const std::uint8_t* v, std::uint64_t row_bytes, int n, float scale,
                                            const head_state* st, tile_prefetcher& next_tile) {
    constexpr int P = piece_values<Kv>;
    alignas(32) float p[G][key_tile];
    if constexpr (is_block_format(Kv)) {
        static_assert(G <= 4);
        constexpr int K = keys_per_reduction<G>;
        rounded_block_terms<HeadDim> terms;
        block_terms<Kv, HeadDim, G>(qr, scale, terms);
        for (int j = 0; j < n; j += K) {
            const int pairs = ((n < j + K ? n : j + K) - j + 1) / 2;
            const __m256 s = scores_rounded<Kv, HeadDim, G>(qr, terms, k, row_bytes, j, n, next_tile, pairs);
            // Lanes of keys from n on land in p[h][n..key_tile), which is reset below.
            if constexpr (K == 8) {
                _mm256_store_ps(p[0] + j, s);
            } else if constexpr (K == 4) {
                _mm_store_ps(p[0] + j, _mm256_castps256_ps128(s));
                _mm_store_ps(p[1] + j, _mm256_extractf128_ps(s, 1));
            } else {
                alignas(32) float lanes[8];
                _mm256_store_ps(lanes, s);
                for (int h = 0; h < G; ++h) p[h][j] = lanes[2 * h], p[h][j + 1] = lanes[2 * h + 1];
            }
        }
    } else {
        for (int j = 0; j < n; j += 2) {
            next_tile.step();
            float s[2 * G];
            const std::uint8_t* k0 = k + static_cast<std::uint64_t>(j) * row_bytes;
            scores_2keys<Kv, HeadDim>(q, k0, j + 1 < n ? k0 + row_bytes : k0, s, std::make_index_sequence<G>{},
                                      std::make_index_sequence<P / 8>{});
            for (int h = 0; h < G; ++h) {
                p[h][j] = s[2 * h] * scale;
                if (j + 1 < n) p[h][j + 1] = s[2 * h + 1] * scale;
            }
        }
    }
    float rescale[G];
    float* acc[G];
    for (int h = 0; h < G; ++h) {
        for (int j = n; j < key_tile; ++j) p[h][j] = -INFINITY;
        acc[h] = st[h].acc();
    }
    fold_scores<G>(p, st, rescale);
    for (int b = 0; b < HeadDim / P; ++b, v += piece_bytes<Kv>) {
        alignas(32) float folded[G][key_tile];
        const float(*w)[key_tile] = p;
        if constexpr (is_block_format(Kv)) {
            fold_value_scales<G>(p, v, row_bytes, n, folded);
            w = folded;
        }
        values_16<Kv, 0>(w, rescale, v, row_bytes, n, acc, std::make_index_sequence<G>{});
        for (int h = 0; h < G; ++h) acc[h] += 16;
        if constexpr (P == 32) {
            values_16<Kv, 2>(w, rescale, v, row_bytes, n, acc, std::make_index_sequence<G>{});
            for (int h = 0; h < G; ++h) acc[h] += 16;
        }
    }
}

}  // namespace simd
#endif

// Query heads per KV head group_steps takes (their states live on the caller's stack); larger
// groups take the general path.
inline constexpr std::uint64_t group_steps_max_heads = 16;

// Whether group_steps serves this format and head size on this processor, for `heads` query heads
// per KV head.
template <kernel_format Kv, int HeadDim>
inline bool group_steps_serve(std::uint64_t heads) {
#if VRAMPLAN_X86_SIMD
    return group_step_fits<Kv, HeadDim> && heads <= group_steps_max_heads && has_avx2();
#else
    (void)heads;
    return false;
#endif
}

// Calls to next_tile.step() one group_steps call makes for a tile of n keys.
inline std::uint64_t group_steps_prefetch_steps(std::uint64_t heads, int n) {
    return (heads + 3) / 4 * static_cast<std::uint64_t>((n + 1) / 2);
}

// Folds the tile into the states of `heads` consecutive query heads (one KV head's group), four at
// a time; only where group_steps_serve says so.
template <kernel_format Kv, int HeadDim>
inline void group_steps(const float* q, const rounded_rows& qr, const std::uint8_t* k, const std::uint8_t* v,
                        std::uint64_t row_bytes, int n, float scale, const head_state* st, std::uint64_t heads,
                        tile_prefetcher& next_tile) {
#if VRAMPLAN_X86_SIMD
    if constexpr (group_step_fits<Kv, HeadDim>) {
        for (std::uint64_t h = 0; h < heads; h += 4) {
            const float* qh = q + h * HeadDim;
            const rounded_rows qrh = qr.qs ? qr.at_head(h, HeadDim) : qr;
            switch (heads - h < 4 ? heads - h : 4) {
                case 1: simd::group_step<Kv, HeadDim, 1>(qh, qrh, k, v, row_bytes, n, scale, st + h, next_tile); break;
                case 2: simd::group_step<Kv, HeadDim, 2>(qh, qrh, k, v, row_bytes, n, scale, st + h, next_tile); break;
                case 3: simd::group_step<Kv, HeadDim, 3>(qh, qrh, k, v, row_bytes, n, scale, st + h, next_tile); break;
                default: simd::group_step<Kv, HeadDim, 4>(qh, qrh, k, v, row_bytes, n, scale, st + h, next_tile); break;
            }
        }
        return;
    }
#endif
    (void)q, (void)qr, (void)k, (void)v, (void)row_bytes, (void)n, (void)scale, (void)st, (void)heads, (void)next_tile;
}

}  // namespace vramplan::kernels::cpu
