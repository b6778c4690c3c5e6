// Dot products of a stored row (f32, f16, bf16, Q8_0, Q4_0) with f32 values, accumulated in f32
// (the inner loop of float matrix products; Q4_0 and Q8_0 products round the activations instead,
// int8_dot.hpp), and rows dequantized to floats (attention's general path). AVX2/FMA/F16C versions are chosen at run
// time when the processor has them; the portable versions use the shared block math.
#pragma once

#include <cstdint>
#include <utility>

#include "vramplan/kernels/block_math.hpp"
#include "vramplan/kernels/cpu/isa.hpp"

#include "vramplan/config.hpp"
#if VRAMPLAN_X86_SIMD
#include <immintrin.h>
#endif

namespace vramplan::kernels::cpu {

// Portable reference: element by element through the shared block math.
template <kernel_format F>
inline float dot_portable(const void* row, const float* x, std::uint64_t n) {
    float acc = 0.0f;
    for (std::uint64_t i = 0; i < n; ++i) acc += load<F>(row, i) * x[i];
    return acc;
}

#if VRAMPLAN_X86_SIMD
namespace simd {
// fp16 scale to float in one instruction (the portable conversion branches).
VRAMPLAN_TARGET_AVX2 inline float scale(half_bits h) { return _cvtsh_ss(h.bits); }

VRAMPLAN_TARGET_AVX2 inline float hsum(__m256 v) {
    __m128 lo = _mm256_castps256_ps128(v), hi = _mm256_extractf128_ps(v, 1);
    lo = _mm_add_ps(lo, hi);
    lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
    lo = _mm_add_ss(lo, _mm_movehdup_ps(lo));
    return _mm_cvtss_f32(lo);
}

VRAMPLAN_TARGET_AVX2 inline float dot_f32(const float* w, const float* x, std::uint64_t n) {
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    std::uint64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        a0 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i), _mm256_loadu_ps(x + i), a0);
        a1 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i + 8), _mm256_loadu_ps(x + i + 8), a1);
    }
    float acc = hsum(_mm256_add_ps(a0, a1));
    for (; i < n; ++i) acc += w[i] * x[i];
    return acc;
}

// n a multiple of 16 (decoded blocks): no tail.
VRAMPLAN_TARGET_AVX2 inline float dot_f32_by_16(const float* w, const float* x, int n) {
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    for (int i = 0; i < n; i += 16) {
        a0 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i), _mm256_loadu_ps(x + i), a0);
        a1 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i + 8), _mm256_loadu_ps(x + i + 8), a1);
    }
    return hsum(_mm256_add_ps(a0, a1));
}

VRAMPLAN_TARGET_AVX2 inline float dot_f16(const half_bits* w, const float* x, std::uint64_t n) {
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    std::uint64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m256 w0 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + i)));
        const __m256 w1 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + i + 8)));
        a0 = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x + i), a0);
        a1 = _mm256_fmadd_ps(w1, _mm256_loadu_ps(x + i + 8), a1);
    }
    float acc = hsum(_mm256_add_ps(a0, a1));
    for (; i < n; ++i) acc += to_float(w[i]) * x[i];
    return acc;
}

// 8 int8 values straight from memory into 8 floats (one vpmovsxbd with a memory operand).
VRAMPLAN_TARGET_AVX2 inline __m256 load8_i8(const std::int8_t* p) {
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}

VRAMPLAN_TARGET_AVX2 inline float dot_q8_0(const blocks::q8_0* w, const float* x, std::uint64_t n) {
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    for (std::uint64_t b = 0; b < n / 32; ++b, x += 32) {
        const std::int8_t* q = w[b].qs;
        __m256 s0 = _mm256_mul_ps(load8_i8(q), _mm256_loadu_ps(x));
        __m256 s1 = _mm256_mul_ps(load8_i8(q + 8), _mm256_loadu_ps(x + 8));
        s0 = _mm256_fmadd_ps(load8_i8(q + 16), _mm256_loadu_ps(x + 16), s0);
        s1 = _mm256_fmadd_ps(load8_i8(q + 24), _mm256_loadu_ps(x + 24), s1);
        const __m256 d = _mm256_set1_ps(scale(w[b].d));
        acc0 = _mm256_fmadd_ps(d, s0, acc0);
        acc1 = _mm256_fmadd_ps(d, s1, acc1);
    }
    return hsum(_mm256_add_ps(acc0, acc1));
}

// Byte k of a Q4_0 block holds element k (low nibble) and element k + 16 (high nibble), so 8
// bytes widened to 8 lanes give elements 8i..8i+7 from the low nibbles and 16+8i.. from the high.
VRAMPLAN_TARGET_AVX2 inline __m256 q4_value(__m256i nibbles, __m256i eight) {
    return _mm256_cvtepi32_ps(_mm256_sub_epi32(nibbles, eight));
}

VRAMPLAN_TARGET_AVX2 inline float dot_q4_0(const blocks::q4_0* w, const float* x, std::uint64_t n) {
    const __m256i low = _mm256_set1_epi32(0x0f), eight = _mm256_set1_epi32(8);
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    for (std::uint64_t b = 0; b < n / 32; ++b, x += 32) {
        const __m256i b0 = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(w[b].qs)));
        const __m256i b1 = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(w[b].qs + 8)));
        __m256 s0 = _mm256_mul_ps(q4_value(_mm256_and_si256(b0, low), eight), _mm256_loadu_ps(x));
        __m256 s1 = _mm256_mul_ps(q4_value(_mm256_and_si256(b1, low), eight), _mm256_loadu_ps(x + 8));
        s0 = _mm256_fmadd_ps(q4_value(_mm256_srli_epi32(b0, 4), eight), _mm256_loadu_ps(x + 16), s0);
        s1 = _mm256_fmadd_ps(q4_value(_mm256_srli_epi32(b1, 4), eight), _mm256_loadu_ps(x + 24), s1);
        const __m256 d = _mm256_set1_ps(scale(w[b].d));
        acc0 = _mm256_fmadd_ps(d, s0, acc0);
        acc1 = _mm256_fmadd_ps(d, s1, acc1);
    }
    return hsum(_mm256_add_ps(acc0, acc1));
}

// Whole blocks of a row to floats (the attention kernel dequantizes each K/V slice once per group).
VRAMPLAN_TARGET_AVX2 inline void to_f32_f16(const half_bits* v, float* y, std::uint64_t n) {
    for (std::uint64_t i = 0; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(v + i))));
}
VRAMPLAN_TARGET_AVX2 inline void to_f32_q8_0(const blocks::q8_0* v, float* y, std::uint64_t n) {
    for (std::uint64_t b = 0; b < n / 32; ++b, y += 32) {
        const __m256 d = _mm256_set1_ps(scale(v[b].d));
        for (int i = 0; i < 4; ++i) _mm256_storeu_ps(y + 8 * i, _mm256_mul_ps(d, load8_i8(v[b].qs + 8 * i)));
    }
}
VRAMPLAN_TARGET_AVX2 inline void to_f32_q4_0(const blocks::q4_0* v, float* y, std::uint64_t n) {
    const __m256i low = _mm256_set1_epi32(0x0f), eight = _mm256_set1_epi32(8);
    for (std::uint64_t b = 0; b < n / 32; ++b, y += 32) {
        const __m256 d = _mm256_set1_ps(scale(v[b].d));
        for (int i = 0; i < 2; ++i) {
            const __m256i bytes =
                _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(v[b].qs + 8 * i)));
            _mm256_storeu_ps(y + 8 * i, _mm256_mul_ps(d, q4_value(_mm256_and_si256(bytes, low), eight)));
            _mm256_storeu_ps(y + 16 + 8 * i, _mm256_mul_ps(d, q4_value(_mm256_srli_epi32(bytes, 4), eight)));
        }
    }
}

// The 32 nibbles of a 32-value block's 16 packed bytes (Q4_0's layout, which Q4_1, Q5_0, Q5_1 and
// IQ4_NL share: byte k holds element k low and element k + 16 high) in element order as bytes: the
// 16 bytes go to both halves of a register and only the upper half is shifted, so the low nibbles
// (elements 0..15) and the high ones (16..31) come out of one load, shift and mask.
VRAMPLAN_TARGET_AVX2 inline __m256i nibbles_in_order(const std::uint8_t* qs) {
    const __m256i packed = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs)));
    return _mm256_and_si256(_mm256_srlv_epi32(packed, _mm256_set_epi32(4, 4, 4, 4, 0, 0, 0, 0)),
                            _mm256_set1_epi8(0x0f));
}
// A Q4_0 block's values as unsigned bytes (0..15, before the -8).
VRAMPLAN_TARGET_AVX2 inline __m256i q4_0_nibbles(const blocks::q4_0& w) { return nibbles_in_order(w.qs); }

}  // namespace simd
#endif

// The formats decoded block by block into floats before they meet f32 values x: the K-quants and
// the 32-value fallbacks (exact to the decoded values, each block read once). Matrix products
// take them in integers instead (matmul.hpp); this dot product is the one against unrounded x.
template <kernel_format F>
inline constexpr bool decodes_to_floats = F != kernel_format::f32&& F != kernel_format::f16&& F !=
                                          kernel_format::bf16&& F != kernel_format::q8_0&& F != kernel_format::q4_0;

template <kernel_format F>
inline float dot_decoded(const void* row, const float* x, std::uint64_t n) {
    constexpr int block = block_size(F);
    using B = typename block_of<F>::type;
    float values[block];
    float acc = 0.0f;
    for (std::uint64_t b = 0; b < n / block; ++b) {
        decode_block<B, block>(static_cast<const B*>(row)[b], values);
#if VRAMPLAN_X86_SIMD
        if (has_avx2()) {
            static_assert(block % 16 == 0);
            acc += simd::dot_f32_by_16(values, x + b * block, block);
            continue;
        }
#endif
        for (int j = 0; j < block; ++j) acc += values[j] * x[b * block + j];
    }
    return acc;
}

// row . x over n elements (n a multiple of the format's block).
template <kernel_format F>
inline float dot(const void* row, const float* x, std::uint64_t n) {
    if constexpr (decodes_to_floats<F>) return dot_decoded<F>(row, x, n);
#if VRAMPLAN_X86_SIMD
    if (has_avx2()) {
        if constexpr (F == kernel_format::f32) return simd::dot_f32(static_cast<const float*>(row), x, n);
        if constexpr (F == kernel_format::f16) return simd::dot_f16(static_cast<const half_bits*>(row), x, n);
        if constexpr (F == kernel_format::q8_0) return simd::dot_q8_0(static_cast<const blocks::q8_0*>(row), x, n);
        if constexpr (F == kernel_format::q4_0) return simd::dot_q4_0(static_cast<const blocks::q4_0*>(row), x, n);
    }
#endif
    return dot_portable<F>(row, x, n);
}

// Elements [start, start + n) of a row as floats.
template <kernel_format F>
inline void to_f32(const void* row, std::uint64_t start, float* out, std::uint64_t n) {
#if VRAMPLAN_X86_SIMD
    if (has_avx2() && start % block_size(F) == 0 && n % (block_size(F) == 1 ? 8 : 32) == 0) {
        const auto* at = static_cast<const std::uint8_t*>(row) + start / block_size(F) * block_bytes(F);
        if constexpr (F == kernel_format::f16) return simd::to_f32_f16(reinterpret_cast<const half_bits*>(at), out, n);
        if constexpr (F == kernel_format::q8_0)
            return simd::to_f32_q8_0(reinterpret_cast<const blocks::q8_0*>(at), out, n);
        if constexpr (F == kernel_format::q4_0)
            return simd::to_f32_q4_0(reinterpret_cast<const blocks::q4_0*>(at), out, n);
    }
#endif
    decode_range<F>(row, start, out, n);
}

}  // namespace vramplan::kernels::cpu
