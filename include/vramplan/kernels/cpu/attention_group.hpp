// Up to four query heads of one GQA group against one tile of keys, reading K and V straight from
// the cache (f32, f16, Q8_0 or Q4_0) with AVX2. Each 8-value piece of a key or value is converted
// once in registers and used by every head of the group, so there is no dequantized copy to write
// and read back: on a two-core machine that round trip cost as much as the arithmetic itself.
// The scores of two keys for four heads accumulate in eight registers (eight FMA chains); values
// accumulate 16 dimensions at a time for four heads, again eight registers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

#include "vramplan/kernels/cpu/attention_tile.hpp"

namespace vramplan::kernels::cpu {

// Whether the group step serves this cache format and head size: head slices must start on a
// block boundary (Q8_0, Q4_0) and split into 16-value chunks.
template <kernel_format Kv, int HeadDim>
inline constexpr bool group_step_fits = (Kv == kernel_format::f32 || Kv == kernel_format::f16) ? HeadDim % 16 == 0
                                        : (Kv == kernel_format::q8_0 || Kv == kernel_format::q4_0) ? HeadDim % 32 == 0
                                                                                                   : false;

#if VRAMPLAN_X86_SIMD
namespace simd {

inline constexpr bool is_block_format(kernel_format f) { return f == kernel_format::q8_0 || f == kernel_format::q4_0; }

// The scale of the block holding value d of a head slice that starts on a block boundary.
template <kernel_format Kv>
__attribute__((target("avx2,fma,f16c"))) inline __m256 block_scale(const std::uint8_t* slice, int d) {
    if constexpr (Kv == kernel_format::q8_0) return _mm256_set1_ps(scale(reinterpret_cast<const blocks::q8_0*>(slice)[d / 32].d));
    else if constexpr (Kv == kernel_format::q4_0) return _mm256_set1_ps(scale(reinterpret_cast<const blocks::q4_0*>(slice)[d / 32].d));
    else return _mm256_set1_ps(1.0f);
}

// Values d..d+7 (d a multiple of 8) of such a slice, as floats before their block's scale.
template <kernel_format Kv>
__attribute__((target("avx2,fma,f16c"))) inline __m256 unscaled8(const std::uint8_t* slice, int d) {
    if constexpr (Kv == kernel_format::f32) {
        return _mm256_loadu_ps(reinterpret_cast<const float*>(slice) + d);
    } else if constexpr (Kv == kernel_format::f16) {
        return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(slice + 2 * d)));
    } else if constexpr (Kv == kernel_format::q8_0) {
        return load8_i8(reinterpret_cast<const blocks::q8_0*>(slice)[d / 32].qs + d % 32);
    } else {
        // Element i < 16 is the low nibble of byte i, element i >= 16 the high nibble of byte i - 16.
        const int i = d % 32;
        const __m256i bytes = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(reinterpret_cast<const blocks::q4_0*>(slice)[d / 32].qs + (i & 15))));
        const __m256i nib = i < 16 ? _mm256_and_si256(bytes, _mm256_set1_epi32(0x0f)) : _mm256_srli_epi32(bytes, 4);
        return _mm256_cvtepi32_ps(_mm256_sub_epi32(nib, _mm256_set1_epi32(8)));
    }
}

template <kernel_format Kv>
__attribute__((target("avx2,fma,f16c"))) inline __m256 scaled(__m256 block_scale, __m256 x) {
    if constexpr (is_block_format(Kv)) return _mm256_mul_ps(block_scale, x);
    else return x;
}

// q_h . k_j for the heads H... and the two keys k0, k1: lane order of the result is (h0 k0, h0 k1,
// h1 k0, ...). Block scales are read once per 32 values. The per-head accumulators are arrays
// indexed only through the fold over H, so they live in registers on every compiler.
template <kernel_format Kv, int HeadDim, std::size_t... H>
__attribute__((target("avx2,fma,f16c"))) inline void scores_2keys(const float* q, const std::uint8_t* k0, const std::uint8_t* k1, float* out,
                                                                  std::index_sequence<H...>) {
    constexpr int chunk = is_block_format(Kv) ? 32 : 16;  // values under one scale (HeadDim is a multiple)
    __m256 a0[] = {((void)H, _mm256_setzero_ps())...};
    __m256 a1[] = {((void)H, _mm256_setzero_ps())...};
    for (int b = 0; b < HeadDim; b += chunk) {
        const __m256 s0 = block_scale<Kv>(k0, b), s1 = block_scale<Kv>(k1, b);
        for (int i = 0; i < chunk; i += 8) {
            const int d = b + i;
            const __m256 x0 = scaled<Kv>(s0, unscaled8<Kv>(k0, d)), x1 = scaled<Kv>(s1, unscaled8<Kv>(k1, d));
            ((a0[H] = _mm256_fmadd_ps(_mm256_loadu_ps(q + H * HeadDim + d), x0, a0[H]),
              a1[H] = _mm256_fmadd_ps(_mm256_loadu_ps(q + H * HeadDim + d), x1, a1[H])),
             ...);
        }
    }
    if constexpr (sizeof...(H) == 4) {
        const __m256 lo = _mm256_hadd_ps(_mm256_hadd_ps(a0[0], a1[0]), _mm256_hadd_ps(a0[1], a1[1]));
        const __m256 hi = _mm256_hadd_ps(_mm256_hadd_ps(a0[2], a1[2]), _mm256_hadd_ps(a0[3], a1[3]));
        _mm256_storeu_ps(out, _mm256_add_ps(_mm256_permute2f128_ps(lo, hi, 0x20), _mm256_permute2f128_ps(lo, hi, 0x31)));
    } else {
        ((out[2 * H] = hsum(a0[H]), out[2 * H + 1] = hsum(a1[H])), ...);
    }
}

// acc_h[c, c + 16) = acc_h * rescale_h + sum_j p_h[j] v_j for the heads H...
template <kernel_format Kv, int HeadDim, std::size_t... H>
__attribute__((target("avx2,fma,f16c"))) inline void values_16(const float (*p)[key_tile], const float* rescale, const std::uint8_t* v,
                                                               std::uint64_t row_bytes, int n, float* const* acc, int c, std::index_sequence<H...>) {
    __m256 r0[] = {_mm256_mul_ps(_mm256_loadu_ps(acc[H] + c), _mm256_set1_ps(rescale[H]))...};
    __m256 r1[] = {_mm256_mul_ps(_mm256_loadu_ps(acc[H] + c + 8), _mm256_set1_ps(rescale[H]))...};
    for (int j = 0; j < n; ++j) {
        const std::uint8_t* row = v + static_cast<std::uint64_t>(j) * row_bytes;
        const __m256 bs = block_scale<Kv>(row, c);  // c..c+15 lie in one block
        const __m256 x0 = scaled<Kv>(bs, unscaled8<Kv>(row, c)), x1 = scaled<Kv>(bs, unscaled8<Kv>(row, c + 8));
        ((r0[H] = _mm256_fmadd_ps(_mm256_set1_ps(p[H][j]), x0, r0[H]), r1[H] = _mm256_fmadd_ps(_mm256_set1_ps(p[H][j]), x1, r1[H])), ...);
    }
    ((_mm256_storeu_ps(acc[H] + c, r0[H]), _mm256_storeu_ps(acc[H] + c + 8, r1[H])), ...);
}

// The tile's n keys (rows k, k + row_bytes, ...; v likewise, each pointing at this KV head's
// slice) folded into the states of G consecutive query heads, whose queries start at q.
template <kernel_format Kv, int HeadDim, int G>
__attribute__((target("avx2,fma,f16c"))) inline void group_step(const float* q, const std::uint8_t* k, const std::uint8_t* v, std::uint64_t row_bytes,
                                                                int n, float scale, const head_state* st) {
    alignas(32) float p[G][key_tile];
    for (int j = 0; j < n; j += 2) {
        float s[2 * G];
        const std::uint8_t* k0 = k + static_cast<std::uint64_t>(j) * row_bytes;
        scores_2keys<Kv, HeadDim>(q, k0, j + 1 < n ? k0 + row_bytes : k0, s, std::make_index_sequence<G>{});
        for (int h = 0; h < G; ++h) {
            p[h][j] = s[2 * h] * scale;
            if (j + 1 < n) p[h][j + 1] = s[2 * h + 1] * scale;
        }
    }
    float rescale[G];
    float* acc[G];
    for (int h = 0; h < G; ++h) {
        for (int j = n; j < key_tile; ++j) p[h][j] = -INFINITY;
        rescale[h] = fold_scores(p[h], st[h]);
        acc[h] = st[h].acc();
    }
    for (int c = 0; c < HeadDim; c += 16) values_16<Kv, HeadDim>(p, rescale, v, row_bytes, n, acc, c, std::make_index_sequence<G>{});
}

}  // namespace simd
#endif

// Folds the tile into the states of `heads` consecutive query heads (one KV head's group), four at
// a time, when the processor and the format allow; false when the caller must take the general path.
template <kernel_format Kv, int HeadDim>
inline bool group_steps(const float* q, const std::uint8_t* k, const std::uint8_t* v, std::uint64_t row_bytes, int n, float scale, const head_state* st,
                        std::uint64_t heads) {
#if VRAMPLAN_X86_SIMD
    if constexpr (group_step_fits<Kv, HeadDim>) {
        if (!has_avx2()) return false;
        for (std::uint64_t h = 0; h < heads; h += 4) {
            const float* qh = q + h * HeadDim;
            switch (heads - h < 4 ? heads - h : 4) {
                case 1: simd::group_step<Kv, HeadDim, 1>(qh, k, v, row_bytes, n, scale, st + h); break;
                case 2: simd::group_step<Kv, HeadDim, 2>(qh, k, v, row_bytes, n, scale, st + h); break;
                case 3: simd::group_step<Kv, HeadDim, 3>(qh, k, v, row_bytes, n, scale, st + h); break;
                default: simd::group_step<Kv, HeadDim, 4>(qh, k, v, row_bytes, n, scale, st + h); break;
            }
        }
        return true;
    }
#endif
    (void)q, (void)k, (void)v, (void)row_bytes, (void)n, (void)scale, (void)st, (void)heads;
    return false;
}

}  // namespace vramplan::kernels::cpu
