// f32 values rounded to Q8_0 blocks on the CPU (the activations a Q4_0 product meets, the queries
// attention over a quantized cache takes, and the new rows of a Q8_0 KV cache) and to Q8_K blocks
// (the activations of every K-quant product). The result is bit for bit block_math's
// quantize_block (GGUF's reference quantizer); with AVX2 a block takes a few dozen instructions
// instead of a scalar round per value. Appending K and V rows to a Q8_0 cache went from 7.5 ns a
// value (scalar, libm calls) to 0.75, and a 4096 x 14336 Q4_0 matrix-vector product, whose threads
// each round the activations, got about 6% faster.
#pragma once

#include <cmath>
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

// Four vectors of 32-bit integers in -128..127 as 32 bytes in element order, at qs. Packing
// interleaves the 128-bit lanes: bytes come out as 4-value runs of q0 q1 q2 q3 (low halves), then
// the high halves; the permute puts the runs back in element order.
VRAMPLAN_TARGET_AVX2 inline void store_bytes(const __m256i* q, std::int8_t* qs) {
    const __m256i bytes = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(qs),
                        _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
}

// The largest lane of m in every lane.
VRAMPLAN_TARGET_AVX2 inline __m256 lanes_max(__m256 m) {
    m = _mm256_max_ps(m, _mm256_permute2f128_ps(m, m, 1));
    m = _mm256_max_ps(m, _mm256_shuffle_ps(m, m, _MM_SHUFFLE(1, 0, 3, 2)));
    return _mm256_max_ps(m, _mm256_shuffle_ps(m, m, _MM_SHUFFLE(2, 3, 0, 1)));
}

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
    const float d = _mm256_cvtss_f32(lanes_max(m)) / 127.0f;
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
    store_bytes(q, qs);
    const __m256i s = _mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3]));
    __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, _MM_SHUFFLE(1, 0, 3, 2)));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtsi128_si32(s4);
}

// quantize_block's Q8_K steps on 32 values at a time, for the blocks they reproduce exactly:
// finite values whose largest magnitude is not 0 and is held by values of one sign only. The
// scale then comes from that value with its sign, as the first such value gives it there, and the
// same scalar division makes the same iscale and d. Each product is the same single rounding
// (vmulps), and rounding it to the nearest integer, ties to even, is what nearest_int's addition
// of 1.5 * 2^23 does for products this small (|iscale * x| <= 127). The clamp at 127 is the packing's
// saturation. Any other block (all zeros, a NaN or an infinity, +m and -m both present, where the
// first decides, or m so small that iscale overflows) returns false with b untouched, for the
// caller's scalar steps.
VRAMPLAN_TARGET_AVX2 inline bool quantize_q8_k(const float* x, blocks::q8_k& b) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 magnitude = _mm256_setzero_ps(), largest = _mm256_set1_ps(-INFINITY), nan = _mm256_setzero_ps();
    for (int i = 0; i < blocks::qk_k / 8; ++i) {
        const __m256 v = _mm256_loadu_ps(x + 8 * i);
        magnitude = _mm256_max_ps(_mm256_andnot_ps(sign, v), magnitude);
        largest = _mm256_max_ps(v, largest);
        nan = _mm256_or_ps(nan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    }
    const float amax = _mm256_cvtss_f32(lanes_max(magnitude));
    if (_mm256_movemask_ps(nan) != 0 || amax == 0.0f || amax == INFINITY) return false;
    float max = amax;
    if (_mm256_cvtss_f32(lanes_max(largest)) != amax) {
        max = -amax;  // only negative values reach amax
    } else {
        // Positive values reach amax; a negative one as well would make the order decide.
        const __m256 negative_amax = _mm256_set1_ps(-amax);
        for (int i = 0; i < blocks::qk_k / 8; ++i)
            if (_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + 8 * i), negative_amax, _CMP_EQ_OQ)) != 0)
                return false;
    }
    const float iscale = -127.0f / max;
    if (std::isinf(iscale)) return false;  // max below 127 / FLT_MAX: the scalar steps' products are infinities
    const __m256 scale = _mm256_set1_ps(iscale);
    for (int c = 0; c < blocks::qk_k / 32; ++c) {
        __m256i q[4];
        for (int i = 0; i < 4; ++i) {
            const __m256 p = _mm256_mul_ps(_mm256_loadu_ps(x + 32 * c + 8 * i), scale);
            q[i] = _mm256_cvttps_epi32(_mm256_round_ps(p, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        }
        store_bytes(q, b.qs + 32 * c);
        // The 16-value sums of values 32c..32c + 15 and 32c + 16..32c + 31: two horizontal adds
        // leave each half's partial sums in 32-bit lanes 0 and 1 of both 128-bit lanes.
        __m256i h = _mm256_hadd_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3]));
        h = _mm256_hadd_epi32(h, h);
        const __m128i sums = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
        b.bsums[2 * c] = static_cast<std::int16_t>(_mm_cvtsi128_si32(sums));
        b.bsums[2 * c + 1] = static_cast<std::int16_t>(_mm_extract_epi32(sums, 1));
    }
    b.d = 1.0f / iscale;
    return true;
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

// Rounds x[0..256) into b exactly as quantize_block.
inline void quantize_block_q8_k(const float* x, blocks::q8_k& b) {
#if VRAMPLAN_X86_SIMD
    if (has_avx2() && simd::quantize_q8_k(x, b)) return;
#endif
    quantize_block(x, b);
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
