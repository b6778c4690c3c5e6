// f32 values rounded to Q8_0 blocks on the CPU: the activations a Q4_0 product meets, the queries
// attention over a quantized cache takes, and the new rows of a Q8_0 KV cache. The result is bit
// for bit block_math's quantize_block (GGUF's reference quantizer); with AVX2 a block takes a few
// dozen instructions instead of 32 scalar rounds. Appending K and V rows to a Q8_0 cache went from
// 7.5 ns a value (scalar, libm calls) to 0.75, and a 4096 x 14336 Q4_0 matrix-vector product, whose
// threads each round the activations, got about 6% faster.
#pragma once

#include <cstdint>

#include "vramplan/config.hpp"
#include "vramplan/kernels/block_math.hpp"
#include "vramplan/kernels/cpu/dot.hpp"

namespace vramplan::kernels::cpu {

// Rounds x[0..32) into b exactly as quantize_block and returns the sum of b's integers.
inline std::int32_t quantize_block_q8_0_portable(const float* x, blocks::q8_0& b) {
    quantize_block(x, b);
    std::int32_t sum = 0;
    for (std::int8_t q : b.qs) sum += q;
    return sum;
}

#if VRAMPLAN_X86_SIMD
namespace simd {

// quantize_block's steps on eight values at a time: the same max of magnitudes (a NaN is skipped
// as there, because vmaxps returns its second operand when either is NaN), the same scalar scale
// and inverse, the same product, and roundf's halves away from zero as trunc(v) plus a step of 1
// where v - trunc(v) reaches +-0.5 (that difference is exact).
// The integers go to qs[0..32) and the scale to d, so callers can keep them apart.
VRAMPLAN_TARGET_AVX2 inline std::int32_t quantize_q8_0(const float* x, std::int8_t* qs, half_bits& d_out) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 v[4];
    __m256 m = _mm256_setzero_ps();
    for (int i = 0; i < 4; ++i) {
        v[i] = _mm256_loadu_ps(x + 8 * i);
        m = _mm256_max_ps(_mm256_andnot_ps(sign, v[i]), m);
    }
    m = _mm256_max_ps(m, _mm256_permute2f128_ps(m, m, 1));
    m = _mm256_max_ps(m, _mm256_shuffle_ps(m, m, _MM_SHUFFLE(1, 0, 3, 2)));
    m = _mm256_max_ps(m, _mm256_shuffle_ps(m, m, _MM_SHUFFLE(2, 3, 0, 1)));
    const float d = _mm256_cvtss_f32(m) / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    d_out = to_half(d);
    const __m256 scale = _mm256_set1_ps(id), one = _mm256_set1_ps(1.0f), half = _mm256_set1_ps(0.5f),
                 minus_half = _mm256_set1_ps(-0.5f);
    __m256i q[4];
    for (int i = 0; i < 4; ++i) {
        const __m256 p = _mm256_mul_ps(v[i], scale);
        const __m256 t = _mm256_round_ps(p, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
        const __m256 frac = _mm256_sub_ps(p, t);
        __m256 r = _mm256_add_ps(t, _mm256_and_ps(_mm256_cmp_ps(frac, half, _CMP_GE_OQ), one));
        r = _mm256_sub_ps(r, _mm256_and_ps(_mm256_cmp_ps(frac, minus_half, _CMP_LE_OQ), one));
        q[i] = _mm256_cvttps_epi32(r);
    }
    // Packing interleaves the 128-bit lanes: bytes come out as 4-value runs of q0 q1 q2 q3 (low
    // halves), then the high halves; the permute puts the runs back in element order.
    const __m256i bytes = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(qs),
                        _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
    const __m256i s = _mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3]));
    __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, _MM_SHUFFLE(1, 0, 3, 2)));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtsi128_si32(s4);
}

}  // namespace simd
#endif

// Rounds x[0..32) into b exactly as quantize_block and returns the sum of b's integers.
inline std::int32_t quantize_block_q8_0(const float* x, blocks::q8_0& b) {
#if VRAMPLAN_X86_SIMD
    if (has_avx2()) return simd::quantize_q8_0(x, b.qs, b.d);
#endif
    return quantize_block_q8_0_portable(x, b);
}

// Values rounded to Q8_0 blocks and kept apart: the integers (32 per block, contiguous, so that
// kernels load several blocks in one vector), each block's scale as f32, and the sum of each
// block's integers (for weights stored with an offset: sum (q - o) x = sum q x - o sum x). The
// activations of Q4_0 and Q8_0 matrix products and the queries of attention over a quantized
// cache are held this way, on the stack of the thread that uses them.
template <std::uint64_t Blocks>
struct rounded_blocks {
    alignas(64) std::int8_t qs[Blocks * blocks::qk];
    float d[Blocks];
    std::int32_t sum[Blocks];

    // Rounds x's first n blocks into blocks [at, at + n).
    void round(const float* x, std::uint64_t at, std::uint64_t n) {
        for (std::uint64_t b = 0; b < n; ++b) {
            blocks::q8_0 block;
            sum[at + b] = quantize_block_q8_0(x + b * blocks::qk, block);
            for (int j = 0; j < blocks::qk; ++j) qs[(at + b) * blocks::qk + j] = block.qs[j];
            d[at + b] = to_float(block.d);
        }
    }
    // Block `at` as zeros: a product with it adds nothing (kernels pad an odd count with it).
    void clear(std::uint64_t at) {
        for (int j = 0; j < blocks::qk; ++j) qs[at * blocks::qk + j] = 0;
        d[at] = 0.0f;
        sum[at] = 0;
    }
};

// store_row<F> for the CPU: Q8_0 rows through the vector quantizer, other formats as block_math
// stores them.
template <kernel_format F>
inline void store_row_cpu(const float* x, void* row, std::uint64_t n) {
    if constexpr (F == kernel_format::q8_0) {
        for (std::uint64_t b = 0; b < n / blocks::qk; ++b)
            quantize_block_q8_0(x + b * blocks::qk, static_cast<blocks::q8_0*>(row)[b]);
    } else {
        store_row<F>(x, row, n);
    }
}

}  // namespace vramplan::kernels::cpu
