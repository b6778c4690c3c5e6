// Unsigned-by-signed byte dot products into the 32-bit lanes of 256-bit vectors: the one operation
// of the 256-bit integer kernels that AVX2 and AVX_VNNI do differently.
//  - AVX_VNNI (the avx2-vnni path): vpdpbusd adds each lane's four byte products to it, exactly.
//  - AVX2: vpmaddubsw adds the products in pairs into 16-bit lanes, saturating, and vpmaddwd
//    widens the pairs. A kernel adds the pair sums of as many chunks as cannot overflow 16 bits
//    (byte_dot_widen) before it widens them once, so a chunk costs two instructions, not three.
// vpdpbusd is inline assembly so that the kernels compile once, for AVX2, and run it only on the
// avx2-vnni path: a function compiled with target("avxvnni") lets the compiler choose VNNI
// instructions anywhere in its body, which an AVX2-only processor cannot run.
#pragma once

#include "vramplan/config.hpp"

#if VRAMPLAN_X86_SIMD
#include <immintrin.h>

namespace vramplan::kernels::cpu::simd {

// How many chunks' 16-bit pair sums add up without overflow, for unsigned values up to max_u
// against signed bytes (at least -128): each pair sum is at most 2 * 128 * max_u.
constexpr int byte_dot_widen(int max_u) { return 32767 / (2 * 128 * max_u); }
static_assert(byte_dot_widen(15) == 8 && byte_dot_widen(31) == 4 && byte_dot_widen(63) == 2);

// acc + the four products of u's unsigned and s's signed bytes in each 32-bit lane (AVX_VNNI).
VRAMPLAN_TARGET_AVX2 inline __m256i dpbusd_avx_vnni(__m256i acc, __m256i u, __m256i s) {
    __asm__("%{vex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(u), "x"(s));
    return acc;
}

// Chunk i (0 <= i < Chunks, a constant once unrolled) of one sum into acc: with VNNI directly;
// otherwise its pair sums into narrow, widened into acc after every Widen chunks and after the last,
// each pair sum times its 16-bit half of `weight` (ones, or a row's integer scale in both halves:
// the widening vpmaddwd applies the scale for nothing). With VNNI the weight is not applied.
template <bool Vnni, int Widen, int Chunks>
VRAMPLAN_TARGET_AVX2 inline void byte_dot_step(int i, __m256i& acc, __m256i& narrow, __m256i u, __m256i s,
                                               __m256i weight) {
    if constexpr (Vnni) {
        acc = dpbusd_avx_vnni(acc, u, s);
    } else {
        const __m256i pairs = _mm256_maddubs_epi16(u, s);
        narrow = i % Widen == 0 ? pairs : _mm256_add_epi16(narrow, pairs);
        // A chain, as written: GCC would otherwise regroup the adds into a tree, keeping every
        // chunk's pair sums alive at once and spilling them (config.hpp).
        VRAMPLAN_KEEP_IN_REGISTER(narrow);
        if (i % Widen == Widen - 1 || i == Chunks - 1) acc = _mm256_add_epi32(acc, _mm256_madd_epi16(narrow, weight));
    }
}
template <bool Vnni, int Widen, int Chunks>
VRAMPLAN_TARGET_AVX2 inline void byte_dot_step(int i, __m256i& acc, __m256i& narrow, __m256i u, __m256i s) {
    byte_dot_step<Vnni, Widen, Chunks>(i, acc, narrow, u, s, _mm256_set1_epi16(1));
}

}  // namespace vramplan::kernels::cpu::simd
#endif
