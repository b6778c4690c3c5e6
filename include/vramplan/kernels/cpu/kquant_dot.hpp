// K-quant rows times activations rounded to Q8_K blocks, multiplied in integers (W4A8 and the
// like, as llama.cpp's CPU backend computes them): per sub-block, the integer sum of weight values
// times activation values gets the sub-block's scale, and its minimum meets the activation block's
// precomputed 16-value sums (bsums), so a block costs a few vector instructions instead of 256
// conversions to float. The portable version is the same arithmetic through block_decode.hpp's
// element functions; the AVX2 versions (Q2_K to Q6_K) are chosen at run time. Rows as stored are
// what stacked experts and matrices of fewer than sixteen rows are read as; the CPU backend holds
// other K-quant matrices as panels (kquant_panel.hpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "vramplan/config.hpp"
#include "vramplan/kernels/block_math.hpp"
#include "vramplan/kernels/cpu/dot.hpp"
#include "vramplan/kernels/cpu/product_units.hpp"
#include "vramplan/kernels/cpu/quantize.hpp"
#include "vramplan/kernels/cpu/thread_pool.hpp"
#include "vramplan/kernels/cpu/token_rows.hpp"

namespace vramplan::kernels::cpu {

// Sum over a row's blocks of (weights' decoded values) . (d_y * q_y), in integers per sub-block.
template <kernel_format F>
inline float dot_q8_k_portable(const void* row, const blocks::q8_k* y, std::uint64_t nblocks) {
    using B = typename block_of<F>::type;
    constexpr int sub = sub_block_size(static_cast<const B*>(nullptr));
    const B* w = static_cast<const B*>(row);
    float acc = 0.0f;
    for (std::uint64_t b = 0; b < nblocks; ++b) {
        float block = 0.0f;
        for (int s = 0; s < blocks::qk_k / sub; ++s) {
            std::int32_t products = 0, sum = 0;
            for (int j = s * sub; j < (s + 1) * sub; ++j) {
                products += quant_value(w[b], j) * y[b].qs[j];
                sum += y[b].qs[j];
            }
            const block_affine a = sub_affine(w[b], s);
            block += a.scale * static_cast<float>(products) - a.min * static_cast<float>(sum);
        }
        acc += y[b].d * block;
    }
    return acc;
}

#if VRAMPLAN_X86_SIMD
namespace simd {

VRAMPLAN_TARGET_AVX2 inline int hsum_i32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtsi128_si32(s);
}

// The 16 bsums of a Q8_K block summed in pairs: the activation sums of 8 sub-blocks of 32, in order
// (each 128-bit half pairs its own four).
VRAMPLAN_TARGET_AVX2 inline __m256i pair_sums(const blocks::q8_k& y) {
    return _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(y.bsums)), _mm256_set1_epi16(1));
}

// The eight 6-bit scales and eight 6-bit minimums of a Q4_K/Q5_K block (12 bytes, packed as
// scale_min_k4 reads them one at a time) as two runs of eight bytes, with 32-bit word operations:
// with words a, b, c (bytes 0-3, 4-7, 8-11), sub-blocks 0-3 are a's and b's low 6 bits; 4-7 take
// their low 4 bits from c's nibbles and their top 2 from a's (scales) and b's (minimums) top bits.
struct k4_scales {
    std::uint64_t scales, mins;
};
inline k4_scales unpack_k4_scales(const std::uint8_t* s) {
    std::uint32_t a, b, c;
    std::memcpy(&a, s, 4);
    std::memcpy(&b, s + 4, 4);
    std::memcpy(&c, s + 8, 4);
    const std::uint32_t low6 = 0x3f3f3f3f, low4 = 0x0f0f0f0f, top2 = 0x30303030;
    const std::uint32_t scales_hi = (c & low4) | ((a >> 2) & top2), mins_hi = ((c >> 4) & low4) | ((b >> 2) & top2);
    return {(a & low6) | (std::uint64_t{scales_hi} << 32), (b & low6) | (std::uint64_t{mins_hi} << 32)};
}

// Q4_K and Q5_K (low nibbles, plus a 5th bit from qh for Q5_K) against Q8_K. The minimums meet
// the activations' 16-value sums in one vpmaddwd (each minimum repeated for its two sums); each
// sub-block's scale is spread over its 32 products by a byte shuffle of the scales vector.
template <bool FifthBit, class B>
VRAMPLAN_TARGET_AVX2 inline float dot_q45_k_q8_k(const B* w, const blocks::q8_k* y, std::uint64_t nblocks) {
    const __m256i low4 = _mm256_set1_epi8(0x0f);
    __m256 acc = _mm256_setzero_ps();
    __m256 minimums = _mm256_setzero_ps();
    for (std::uint64_t b = 0; b < nblocks; ++b) {
        const k4_scales sm = unpack_k4_scales(w[b].scales);
        const __m128i mins8 = _mm_cvtsi64_si128(static_cast<long long>(sm.mins));
        const __m256i mins = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(mins8, mins8));
        const __m256i min_dot =
            _mm256_madd_epi16(mins, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[b].bsums)));
        const float dmin = scale(w[b].dmin) * y[b].d;
        minimums = _mm256_fmadd_ps(_mm256_set1_ps(dmin), _mm256_cvtepi32_ps(min_dot), minimums);
        // Scales as 16-bit values in both 128-bit halves; shuffle k repeats scale k.
        const __m256i scales =
            _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<long long>(sm.scales))));
        __m256i sums = _mm256_setzero_si256();
        __m256i high = _mm256_setzero_si256();
        if constexpr (FifthBit) high = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[b].qh));
        for (int g = 0; g < 4; ++g) {
            const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[b].qs + 32 * g));
            __m256i lo = _mm256_and_si256(q, low4), hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
            if constexpr (FifthBit) {
                // Bit 2g of qh[r] is element r's 5th bit in the first 32, bit 2g + 1 in the next 32.
                const __m256i one = _mm256_set1_epi8(1);
                lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(high, 2 * g), one), 4));
                hi = _mm256_or_si256(hi,
                                     _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(high, 2 * g + 1), one), 4));
            }
            const __m256i y_lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[b].qs + 64 * g));
            const __m256i y_hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[b].qs + 64 * g + 32));
            const __m256i s_lo =
                _mm256_shuffle_epi8(scales, _mm256_set1_epi16(static_cast<short>(0x0100 + 0x0202 * 2 * g)));
            const __m256i s_hi =
                _mm256_shuffle_epi8(scales, _mm256_set1_epi16(static_cast<short>(0x0100 + 0x0202 * (2 * g + 1))));
            // Unsigned weights times signed activations in pairs (at most 31 * 127 * 2: no overflow).
            const __m256i p_lo = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, y_lo), s_lo);
            const __m256i p_hi = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, y_hi), s_hi);
            sums = _mm256_add_epi32(sums, _mm256_add_epi32(p_lo, p_hi));
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(scale(w[b].d) * y[b].d), _mm256_cvtepi32_ps(sums), acc);
    }
    return hsum(acc) - hsum(minimums);
}

// Q6_K against Q8_K: the 6-bit values unsigned (0..63) times the activations, less 32 times the
// activation sums, per 16-value sub-block with its signed scale.
VRAMPLAN_TARGET_AVX2 inline float dot_q6_k_q8_k(const blocks::q6_k* w, const blocks::q8_k* y, std::uint64_t nblocks) {
    const __m256i low4 = _mm256_set1_epi8(0x0f), two = _mm256_set1_epi8(3);
    __m256 acc = _mm256_setzero_ps();
    float offsets = 0.0f;
    for (std::uint64_t b = 0; b < nblocks; ++b) {
        __m256i sums = _mm256_setzero_si256();
        int offset = 0;  // sum_s scale_s * 32 * (activation sum of sub-block s)
        for (int s = 0; s < 16; ++s) offset += w[b].scales[s] * y[b].bsums[s];
        for (int h = 0; h < 2; ++h) {
            const __m256i ql0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[b].ql + 64 * h));
            const __m256i ql1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[b].ql + 64 * h + 32));
            const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[b].qh + 32 * h));
            for (int k = 0; k < 4; ++k) {
                const __m256i l = k % 2 ? ql1 : ql0;
                const __m256i nib = k < 2 ? _mm256_and_si256(l, low4) : _mm256_and_si256(_mm256_srli_epi16(l, 4), low4);
                const __m256i top = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * k), two), 4);
                const __m256i q = _mm256_or_si256(nib, top);
                const __m256i yv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[b].qs + 128 * h + 32 * k));
                const int s = 8 * h + 2 * k;  // sub-blocks s (elements 0-15) and s + 1 (16-31)
                const __m256i scales =
                    _mm256_setr_m128i(_mm_set1_epi16(w[b].scales[s]), _mm_set1_epi16(w[b].scales[s + 1]));
                sums = _mm256_add_epi32(sums, _mm256_madd_epi16(_mm256_maddubs_epi16(q, yv), scales));
            }
        }
        const float d = scale(w[b].d) * y[b].d;
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sums), acc);
        offsets += d * static_cast<float>(32 * offset);
    }
    return hsum(acc) - offsets;
}

// Q3_K's sixteen signed scales from its 12 scale bytes, with 32-bit word operations: with words a,
// b, c (bytes 0-3, 4-7, 8-11), sub-blocks 0-3 take their low four bits from a's low nibbles, 4-7
// from b's, 8-11 and 12-15 from a's and b's high nibbles; their top two bits are bits 0-1, 2-3, 4-5
// and 6-7 of c's bytes (block_decode.hpp's sub_affine, four at a time). Less 32: -32..31.
inline __m128i q3_k_scales(const std::uint8_t* s) {
    std::uint32_t a, b, c;
    std::memcpy(&a, s, 4);
    std::memcpy(&b, s + 4, 4);
    std::memcpy(&c, s + 8, 4);
    const std::uint32_t low4 = 0x0f0f0f0f, top2 = 0x30303030;
    const __m128i unsigned6 = _mm_setr_epi32(
        static_cast<int>((a & low4) | ((c << 4) & top2)), static_cast<int>((b & low4) | ((c << 2) & top2)),
        static_cast<int>(((a >> 4) & low4) | (c & top2)), static_cast<int>(((b >> 4) & low4) | ((c >> 2) & top2)));
    return _mm_sub_epi8(unsigned6, _mm_set1_epi8(32));
}

// Q2_K and Q3_K against Q8_K. Both keep two bits a value, four values a byte (element 32i + r of
// half h at bits 2i of qs[32h + r]), in sixteen sub-blocks of 16 values. Q3_K adds a third bit
// from hmask: its value is q - 4 with q = low + 4 * bit (0..7), so the unsigned q meets the
// activations and 4 * scale . (16-value sums) is subtracted in integers; its scales are signed.
// Q2_K's 4-bit minimums meet the same sums and dmin. One vpmaddwd weights a pair of sub-blocks'
// products by their scales: the 32 values of chunk i of half h are sub-blocks 8h + 2i (the low 128
// bits) and 8h + 2i + 1 (the high).
template <bool ThirdBit, class B>
VRAMPLAN_TARGET_AVX2 inline float dot_q23_k_q8_k(const B* w, const blocks::q8_k* y, std::uint64_t nblocks) {
    const __m256i two_bits = _mm256_set1_epi8(3), one = _mm256_set1_epi8(1);
    __m256 acc = _mm256_setzero_ps();
    __m256 minimums = _mm256_setzero_ps();
    for (std::uint64_t b = 0; b < nblocks; ++b) {
        const __m256i bsums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[b].bsums));
        __m256i scales;  // sixteen 16-bit scales, sub-block order
        if constexpr (ThirdBit) {
            scales = _mm256_cvtepi8_epi16(q3_k_scales(w[b].scales));
        } else {
            const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w[b].scales));
            scales = _mm256_cvtepu8_epi16(_mm_and_si128(packed, _mm_set1_epi8(0x0f)));
            const __m256i mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(packed, 4), _mm_set1_epi8(0x0f)));
            const float dmin = scale(w[b].dmin) * y[b].d;
            minimums =
                _mm256_fmadd_ps(_mm256_set1_ps(dmin), _mm256_cvtepi32_ps(_mm256_madd_epi16(mins, bsums)), minimums);
        }
        // Each half's eight scales in both 128-bit lanes, for the byte shuffles below.
        const __m256i half_scales[2] = {_mm256_broadcastsi128_si256(_mm256_castsi256_si128(scales)),
                                        _mm256_broadcastsi128_si256(_mm256_extracti128_si256(scales, 1))};
        __m256i third = _mm256_setzero_si256();
        if constexpr (ThirdBit) third = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[b].hmask));
        __m256i sums = _mm256_setzero_si256();
        for (int h = 0; h < 2; ++h) {
            const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[b].qs + 32 * h));
            for (int i = 0; i < 4; ++i) {
                __m256i v = _mm256_and_si256(_mm256_srli_epi16(q, 2 * i), two_bits);
                if constexpr (ThirdBit)
                    v = _mm256_or_si256(
                        v, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(third, 4 * h + i), one), 2));
                const __m256i yv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[b].qs + 128 * h + 32 * i));
                const __m256i s = _mm256_shuffle_epi8(
                    half_scales[h],
                    _mm256_setr_m128i(_mm_set1_epi16(static_cast<short>(0x0100 + 0x0202 * (2 * i))),
                                      _mm_set1_epi16(static_cast<short>(0x0100 + 0x0202 * (2 * i + 1)))));
                // At most 7 * 127 * 2 per pair: no saturation.
                sums = _mm256_add_epi32(sums, _mm256_madd_epi16(_mm256_maddubs_epi16(v, yv), s));
            }
        }
        if constexpr (ThirdBit) sums = _mm256_sub_epi32(sums, _mm256_slli_epi32(_mm256_madd_epi16(scales, bsums), 2));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(scale(w[b].d) * y[b].d), _mm256_cvtepi32_ps(sums), acc);
    }
    return hsum(acc) - hsum(minimums);
}

}  // namespace simd
#endif

template <kernel_format F>
inline float dot_q8_k(const void* row, const blocks::q8_k* y, std::uint64_t nblocks) {
#if VRAMPLAN_X86_SIMD
    if (has_avx2()) {
        if constexpr (F == kernel_format::q4_k)
            return simd::dot_q45_k_q8_k<false>(static_cast<const blocks::q4_k*>(row), y, nblocks);
        if constexpr (F == kernel_format::q5_k)
            return simd::dot_q45_k_q8_k<true>(static_cast<const blocks::q5_k*>(row), y, nblocks);
        if constexpr (F == kernel_format::q6_k)
            return simd::dot_q6_k_q8_k(static_cast<const blocks::q6_k*>(row), y, nblocks);
        if constexpr (F == kernel_format::q2_k)
            return simd::dot_q23_k_q8_k<false>(static_cast<const blocks::q2_k*>(row), y, nblocks);
        if constexpr (F == kernel_format::q3_k)
            return simd::dot_q23_k_q8_k<true>(static_cast<const blocks::q3_k*>(row), y, nblocks);
    }
#endif
    return dot_q8_k_portable<F>(row, y, nblocks);
}

// Rows of a K-quant matrix times activations rounded to Q8_K, each thread rounding up to 512
// blocks of x on its stack (no allocation): a slice of the columns for as many tokens as fit, so
// each weight row is read once per pass whatever the number of tokens. Threads take units of a
// pass times a chunk of rows from the pool's queue (product_units.hpp).
template <kernel_format F>
void kquant_matmul(const void* data, std::uint64_t rows, std::uint64_t cols, const token_rows& io, thread_pool& pool) {
    const std::uint64_t tokens = io.count;
    constexpr std::uint64_t stack_blocks = 512;
    const std::uint64_t nblocks = cols / blocks::qk_k, row_bytes = kernel_row_bytes(F, cols);
    const std::uint64_t slice = std::clamp<std::uint64_t>(nblocks, 1, stack_blocks);
    const std::uint64_t slices = (nblocks + slice - 1) / slice;
    const std::uint64_t tokens_per_pass = std::max<std::uint64_t>(1, stack_blocks / slice);
    // With several slices a unit rounds its activations again, a block of x costing about eight
    // rows' products of it, so chunks hold 256 rows or more.
    const product_units units(tokens, tokens_per_pass, rows, slices > 1 ? 256 : 1, pool.size());
    pool.parallel_queue(units.count(), 1, [&](thread_pool::work_queue& queue) {
        blocks::q8_k xq[stack_blocks];
        take_units(
            units, queue, nblocks, slice,
            [&](const product_units::unit& u, std::uint64_t b0, std::uint64_t nb) {
                for (std::uint64_t t = 0; t < u.nt; ++t)
                    for (std::uint64_t b = 0; b < nb; ++b)
                        quantize_block_q8_k(io.x_row(u.t0 + t, cols) + (b0 + b) * blocks::qk_k, xq[t * nb + b]);
            },
            [&](const product_units::unit& u, std::uint64_t b0, std::uint64_t nb) {
                for (std::uint64_t r = u.begin; r < u.end; ++r) {
                    const auto* row = static_cast<const std::uint8_t*>(data) + r * row_bytes +
                                      b0 * static_cast<std::uint64_t>(block_bytes(F));
                    for (std::uint64_t t = 0; t < u.nt; ++t) {
                        const float part = dot_q8_k<F>(row, xq + t * nb, nb);
                        float& out = io.y_row(u.t0 + t, rows)[r];
                        out = b0 == 0 ? part : out + part;
                    }
                }
            });
    });
}

}  // namespace vramplan::kernels::cpu
