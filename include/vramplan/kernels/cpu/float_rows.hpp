// Eight f32, f16 or bf16 weight rows times one f32 vector at a time: each block of x is loaded
// once for the eight rows, and the eight rows are eight streams from memory. One row at a time,
// the same arithmetic read f32 weights at 13 GB/s on one core of the AMD EPYC where a read loop
// reaches 22; eight rows at once read 20 (two cores: 25 and 28 against 43): a core keeps more
// misses in flight over several streams than the prefetcher runs ahead on one.
#pragma once

#include <cstdint>

#include "vramplan/config.hpp"
#include "vramplan/kernels/block_math.hpp"
#include "vramplan/kernels/cpu/dot.hpp"
#include "vramplan/kernels/cpu/isa.hpp"

namespace vramplan::kernels::cpu {

inline constexpr int float_rows = 8;

template <kernel_format F>
inline constexpr bool widens_to_floats = F == kernel_format::f32 || F == kernel_format::f16 || F == kernel_format::bf16;

// out[r] = row r . x over n values, for float_rows rows (n any length).
using float_rows_fn = void (*)(const void* const* rows, const float* x, std::uint64_t n, float* out);

template <kernel_format F>
inline void float_rows_portable(const void* const* rows, const float* x, std::uint64_t n, float* out) {
    for (int r = 0; r < float_rows; ++r) out[r] = dot_portable<F>(rows[r], x, n);
}

#if VRAMPLAN_X86_SIMD
VRAMPLAN_AVX512_WARNINGS_OFF
namespace simd {

template <kernel_format F>
VRAMPLAN_TARGET_AVX2 inline __m256 widen8(const void* row, std::uint64_t i) {
    if constexpr (F == kernel_format::f32) return _mm256_loadu_ps(static_cast<const float*>(row) + i);
    if constexpr (F == kernel_format::f16)
        return _mm256_cvtph_ps(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const half_bits*>(row) + i)));
    if constexpr (F == kernel_format::bf16)
        return _mm256_castsi256_ps(_mm256_slli_epi32(
            _mm256_cvtepu16_epi32(
                _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const bf16_bits*>(row) + i))),
            16));
}

template <kernel_format F>
VRAMPLAN_TARGET_AVX512 inline __m512 widen16(const void* row, std::uint64_t i) {
    if constexpr (F == kernel_format::f32) return _mm512_loadu_ps(static_cast<const float*>(row) + i);
    if constexpr (F == kernel_format::f16)
        return _mm512_cvtph_ps(
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(static_cast<const half_bits*>(row) + i)));
    if constexpr (F == kernel_format::bf16)
        return _mm512_castsi512_ps(_mm512_slli_epi32(
            _mm512_cvtepu16_epi32(
                _mm256_loadu_si256(reinterpret_cast<const __m256i*>(static_cast<const bf16_bits*>(row) + i))),
            16));
}

template <kernel_format F>
VRAMPLAN_TARGET_AVX2 inline void float_rows_avx2(const void* const* rows, const float* x, std::uint64_t n, float* out) {
    __m256 acc[float_rows];
    for (int r = 0; r < float_rows; ++r) acc[r] = _mm256_setzero_ps();
    std::uint64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 xv = _mm256_loadu_ps(x + i);
        for (int r = 0; r < float_rows; ++r) acc[r] = _mm256_fmadd_ps(widen8<F>(rows[r], i), xv, acc[r]);
    }
    for (int r = 0; r < float_rows; ++r) {
        out[r] = hsum(acc[r]);
        for (std::uint64_t j = i; j < n; ++j) out[r] += load<F>(rows[r], j) * x[j];
    }
}

template <kernel_format F>
VRAMPLAN_TARGET_AVX512 inline void float_rows_avx512(const void* const* rows, const float* x, std::uint64_t n,
                                                     float* out) {
    __m512 acc[float_rows];
    for (int r = 0; r < float_rows; ++r) acc[r] = _mm512_setzero_ps();
    std::uint64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m512 xv = _mm512_loadu_ps(x + i);
        for (int r = 0; r < float_rows; ++r) acc[r] = _mm512_fmadd_ps(widen16<F>(rows[r], i), xv, acc[r]);
    }
    for (int r = 0; r < float_rows; ++r) {
        out[r] = _mm512_reduce_add_ps(acc[r]);
        for (std::uint64_t j = i; j < n; ++j) out[r] += load<F>(rows[r], j) * x[j];
    }
}

}  // namespace simd
VRAMPLAN_AVX512_WARNINGS_ON
#endif

// The row kernel for the path the processor takes now (chosen once per matrix product).
template <kernel_format F>
inline float_rows_fn find_float_rows() {
#if VRAMPLAN_X86_SIMD
    if (has_avx512()) return &simd::float_rows_avx512<F>;
    if (has_avx2()) return &simd::float_rows_avx2<F>;
#endif
    return &float_rows_portable<F>;
}

}  // namespace vramplan::kernels::cpu
