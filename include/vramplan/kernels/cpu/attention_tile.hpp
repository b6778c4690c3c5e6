// One query head against one tile of keys, the inner step of fused attention on the CPU: the
// tile's scores, the online-softmax update of the head's running state and the weighted sum of the
// tile's values into its accumulator. Keys and values arrive as f32 slices because the kernel
// dequantizes each K/V slice once for every query head of its group (GQA), so this step is the
// same for every cache format. The AVX2 version is chosen at run time; the portable one is the
// reference it must agree with.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "vramplan/config.hpp"
#include "vramplan/kernels/attention_layout.hpp"
#include "vramplan/kernels/block_math.hpp"
#include "vramplan/kernels/cpu/dot.hpp"
#include "vramplan/kernels/ffn_math.hpp"
#if VRAMPLAN_X86_SIMD
#include <immintrin.h>
#endif

namespace vramplan::kernels::cpu {

// Keys per tile: the running max rescales the accumulator at most once per tile, and a tile's
// dequantized K and V slices (2 x 16 x head_dim floats, 16 KiB at head_dim 128) stay in L1.
inline constexpr int key_tile = 16;

// A head's running state as the kernel keeps it in the workspace: max, sum, then the accumulator.
struct head_state {
    float* at;
    float& m() const { return at[0]; }
    float& l() const { return at[1]; }
    float* acc() const { return at + 2; }
};

template <int HeadDim>
using key_slices = float[key_tile][HeadDim];

// A softmax state with no keys yet.
inline void clear_state_portable(head_state st, int head_dim) {
    st.m() = -INFINITY;
    st.l() = 0.0f;
    for (int d = 0; d < head_dim; ++d) st.acc()[d] = 0.0f;
}

// The states of one (token, head)'s splits, consecutive and head_dim + 2 floats each, merged and
// normalized into out[0..head_dim).
inline void merge_states_portable(const float* states, std::uint64_t splits, int head_dim, float* out) {
    softmax_state st;
    float acc[256] = {};
    for (std::uint64_t s = 0; s < splits; ++s) {
        const float* p = states + s * attention_state_layout{1, static_cast<std::uint64_t>(head_dim), 1}.state_floats();
        float mine, theirs;
        st.merge(softmax_state{p[0], p[1]}, mine, theirs);
        for (int d = 0; d < head_dim; ++d) acc[d] = acc[d] * mine + p[2 + d] * theirs;
    }
    for (int d = 0; d < head_dim; ++d) out[d] = st.l > 0 ? acc[d] / st.l : 0.0f;
}

inline void tile_step_portable(const float* q, const float* k, const float* v, int head_dim, int n, float scale,
                               head_state st, float cap = 0.0f) {
    float s[key_tile];
    float m = st.m();
    for (int j = 0; j < n; ++j) {
        float dot = 0.0f;
        for (int d = 0; d < head_dim; ++d) dot += q[d] * k[j * head_dim + d];
        s[j] = cap != 0.0f ? kernels::softcap(dot * scale, cap) : dot * scale;
        m = s[j] > m ? s[j] : m;
    }
    const float rescale = std::exp(st.m() - m);  // 0 for the first tile, whose state is empty
    float l = st.l() * rescale;
    for (int j = 0; j < n; ++j) l += (s[j] = std::exp(s[j] - m));
    float* acc = st.acc();
    for (int d = 0; d < head_dim; ++d) {
        float x = acc[d] * rescale;
        for (int j = 0; j < n; ++j) x += s[j] * v[j * head_dim + d];
        acc[d] = x;
    }
    st.m() = m;
    st.l() = l;
}

#if VRAMPLAN_X86_SIMD
namespace simd {

// e^x for x <= 0 to within 2 ulp. Inputs below -86 return e^-86 (4e-38) rather than less, which
// keeps 2^n normal in the exponent trick and, next to the tile maximum's weight of exactly 1, is
// far below f32 resolution of the sum. x = n ln2 + r with |r| <= ln2/2 (ln2 split in two parts so
// n ln2 is exact); e^r by its Taylor series to r^7, whose remainder is under 6e-9 relative.
VRAMPLAN_TARGET_AVX2 inline __m256 exp_nonpositive(__m256 x) {
    x = _mm256_max_ps(x, _mm256_set1_ps(-86.0f));
    const __m256 n =
        _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.0f / 5040.0f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    const __m256i two_n = _mm256_slli_epi32(_mm256_cvtps_epi32(n), 23);
    return _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(p), two_n));
}

// The same over an array (n a multiple of 8), for tests and callers outside AVX2 code.
VRAMPLAN_TARGET_AVX2 inline void exp_nonpositive(const float* x, float* y, std::uint64_t n) {
    for (std::uint64_t i = 0; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, exp_nonpositive(_mm256_loadu_ps(x + i)));
}

// Turns the tiles' scores of G heads (key_tile each, -inf past the last key) into softmax weights
// against each head's running max, folds their sums into the states, and sets the factors by which
// the heads' accumulators must be rescaled. The heads go through each stage together, so their
// reductions overlap, and their G rescale factors come from one vector exp. A head's first tile
// gets e^-86 rather than 0 as its factor; it scales an empty state (sum and accumulator 0).
template <int G>
VRAMPLAN_TARGET_AVX2 inline void fold_scores(float (*s)[key_tile], const head_state* st, float* rescale) {
    static_assert(key_tile == 16 && G >= 1 && G <= 8);
    __m256 s0[G], s1[G];
    alignas(32) float old_m[8] = {}, new_m[8] = {}, r[8];
    for (int h = 0; h < G; ++h) {
        s0[h] = _mm256_load_ps(s[h]);
        s1[h] = _mm256_load_ps(s[h] + 8);
        __m256 mx = _mm256_max_ps(s0[h], s1[h]);
        mx = _mm256_max_ps(mx, _mm256_permute2f128_ps(mx, mx, 1));
        mx = _mm256_max_ps(mx, _mm256_shuffle_ps(mx, mx, _MM_SHUFFLE(1, 0, 3, 2)));
        mx = _mm256_max_ps(mx, _mm256_shuffle_ps(mx, mx, _MM_SHUFFLE(2, 3, 0, 1)));
        const float tile_max = _mm256_cvtss_f32(mx);
        old_m[h] = st[h].m();
        new_m[h] = tile_max > old_m[h] ? tile_max : old_m[h];
    }
    _mm256_store_ps(r, exp_nonpositive(_mm256_sub_ps(_mm256_load_ps(old_m), _mm256_load_ps(new_m))));
    for (int h = 0; h < G; ++h) {
        // Padding lanes hold -inf scores; their weights are forced to exactly 0.
        const __m256 mv = _mm256_set1_ps(new_m[h]);
        const __m256 p0 = _mm256_and_ps(exp_nonpositive(_mm256_sub_ps(s0[h], mv)),
                                        _mm256_cmp_ps(s0[h], _mm256_set1_ps(-INFINITY), _CMP_NEQ_OQ));
        const __m256 p1 = _mm256_and_ps(exp_nonpositive(_mm256_sub_ps(s1[h], mv)),
                                        _mm256_cmp_ps(s1[h], _mm256_set1_ps(-INFINITY), _CMP_NEQ_OQ));
        _mm256_store_ps(s[h], p0);
        _mm256_store_ps(s[h] + 8, p1);
        st[h].l() = st[h].l() * r[h] + hsum(_mm256_add_ps(p0, p1));
        st[h].m() = new_m[h];
        rescale[h] = r[h];
    }
}

// Scores of eight keys: eight independent FMA chains keep both FMA pipes busy (four would leave
// them waiting on FMA latency), every load of q serves all eight, and one horizontal-add tree
// reduces the eight sums together instead of eight separate horizontal sums.
template <int HeadDim>
VRAMPLAN_TARGET_AVX2 inline __m256 scores8(const float* q, const float* k) {
    __m256 a[8] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                   _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int d = 0; d < HeadDim; d += 8) {
        const __m256 qv = _mm256_loadu_ps(q + d);
        a[0] = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k + 0 * HeadDim + d), a[0]);
        a[1] = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k + 1 * HeadDim + d), a[1]);
        a[2] = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k + 2 * HeadDim + d), a[2]);
        a[3] = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k + 3 * HeadDim + d), a[3]);
        a[4] = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k + 4 * HeadDim + d), a[4]);
        a[5] = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k + 5 * HeadDim + d), a[5]);
        a[6] = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k + 6 * HeadDim + d), a[6]);
        a[7] = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k + 7 * HeadDim + d), a[7]);
    }
    // After two rounds of hadd, lane i of the low half holds part of key i's sum (keys 4..7 in the
    // second vector) and the high half the rest.
    const __m256 lo = _mm256_hadd_ps(_mm256_hadd_ps(a[0], a[1]), _mm256_hadd_ps(a[2], a[3]));
    const __m256 hi = _mm256_hadd_ps(_mm256_hadd_ps(a[4], a[5]), _mm256_hadd_ps(a[6], a[7]));
    return _mm256_add_ps(_mm256_permute2f128_ps(lo, hi, 0x20), _mm256_permute2f128_ps(lo, hi, 0x31));
}

// acc[D0, D0 + 8 NV) = acc * rescale + sum_j p[j] v[j], the NV accumulators held in registers over
// the whole tile (fold expressions unroll them, so no compiler leaves them on the stack).
template <int HeadDim, int D0, std::size_t... I>
VRAMPLAN_TARGET_AVX2 inline void accumulate(const float* p, const float* v, int n, float rescale, float* acc,
                                            std::index_sequence<I...>) {
    const __m256 c = _mm256_set1_ps(rescale);
    __m256 r[sizeof...(I)] = {_mm256_mul_ps(_mm256_loadu_ps(acc + D0 + 8 * I), c)...};
    for (int j = 0; j < n; ++j) {
        const __m256 pj = _mm256_set1_ps(p[j]);
        ((r[I] = _mm256_fmadd_ps(pj, _mm256_loadu_ps(v + j * HeadDim + D0 + 8 * I), r[I])), ...);
    }
    (_mm256_storeu_ps(acc + D0 + 8 * I, r[I]), ...);
    constexpr int done = D0 + 8 * static_cast<int>(sizeof...(I));
    if constexpr (done < HeadDim)
        accumulate<HeadDim, done>(p, v, n, rescale, acc,
                                  std::make_index_sequence < (HeadDim - done) / 8 < 8 ? (HeadDim - done) / 8 : 8 > {});
}

// Score of one key (the tile's last keys when n is not a multiple of 4).
template <int HeadDim>
VRAMPLAN_TARGET_AVX2 inline float score1(const float* q, const float* k) {
    __m256 a = _mm256_setzero_ps();
    for (int d = 0; d < HeadDim; d += 8) a = _mm256_fmadd_ps(_mm256_loadu_ps(q + d), _mm256_loadu_ps(k + d), a);
    return hsum(a);
}

template <int HeadDim>
VRAMPLAN_TARGET_AVX2 inline void tile_step(const float* q, const float* k, const float* v, int n, float scale,
                                           head_state st, float cap) {
    alignas(32) float s[key_tile];
    int j = 0;
    for (; j + 8 <= n; j += 8)
        _mm256_store_ps(s + j, _mm256_mul_ps(scores8<HeadDim>(q, k + j * HeadDim), _mm256_set1_ps(scale)));
    for (; j < n; ++j) s[j] = score1<HeadDim>(q, k + j * HeadDim) * scale;
    if (cap != 0.0f)  // Gemma 2's soft-capping: rare enough to stay scalar
        for (j = 0; j < n; ++j) s[j] = kernels::softcap(s[j], cap);
    for (j = n; j < key_tile; ++j) s[j] = -INFINITY;

    float rescale;
    fold_scores<1>(&s, &st, &rescale);
    accumulate<HeadDim, 0>(s, v, n, rescale, st.acc(),
                           std::make_index_sequence < HeadDim / 8 < 8 ? HeadDim / 8 : 8 > {});
}

// clear_state_portable and merge_states_portable, eight dimensions per instruction: a decode step
// clears and merges a state per query head and split, and as scalar loops (a rep stos per state)
// they took 7% of the kernel with a 2k context held in cache.
template <std::size_t... I>
VRAMPLAN_TARGET_AVX2 inline void clear_state(head_state st, std::index_sequence<I...>) {
    st.m() = -INFINITY;
    st.l() = 0.0f;
    (_mm256_storeu_ps(st.acc() + 8 * I, _mm256_setzero_ps()), ...);
}

template <std::size_t... I>
VRAMPLAN_TARGET_AVX2 inline void merge_states(const float* states, std::uint64_t splits, float* out,
                                              std::index_sequence<I...>) {
    constexpr std::uint64_t stride = 8 * sizeof...(I) + 2;
    softmax_state st;
    __m256 acc[] = {((void)I, _mm256_setzero_ps())...};
    for (std::uint64_t s = 0; s < splits; ++s) {
        const float* p = states + s * stride;
        float mine, theirs;
        st.merge(softmax_state{p[0], p[1]}, mine, theirs);
        const __m256 a = _mm256_set1_ps(mine), b = _mm256_set1_ps(theirs);
        ((acc[I] = _mm256_fmadd_ps(_mm256_loadu_ps(p + 2 + 8 * I), b, _mm256_mul_ps(acc[I], a))), ...);
    }
    const __m256 inv = _mm256_set1_ps(st.l > 0 ? 1.0f / st.l : 0.0f);
    (_mm256_storeu_ps(out + 8 * I, _mm256_mul_ps(acc[I], inv)), ...);
}

}  // namespace simd
#endif

template <int HeadDim>
inline void clear_state(head_state st) {
#if VRAMPLAN_X86_SIMD
    if constexpr (HeadDim % 8 == 0)
        if (has_avx2()) return simd::clear_state(st, std::make_index_sequence<HeadDim / 8>{});
#endif
    clear_state_portable(st, HeadDim);
}

template <int HeadDim>
inline void merge_states(const float* states, std::uint64_t splits, float* out) {
    static_assert(HeadDim <= 256, "merge_states_portable keeps 256 dimensions");
#if VRAMPLAN_X86_SIMD
    if constexpr (HeadDim % 8 == 0)
        if (has_avx2()) return simd::merge_states(states, splits, out, std::make_index_sequence<HeadDim / 8>{});
#endif
    merge_states_portable(states, splits, HeadDim, out);
}

// q . k[j] * scale for the tile's n keys, soft-capped when cap is not 0, folded into the head's
// online-softmax state `st`. k and v are key_tile x HeadDim row-major f32 slices; rows n and
// beyond are ignored.
template <int HeadDim>
inline void tile_step(const float* q, const key_slices<HeadDim>& k, const key_slices<HeadDim>& v, int n, float scale,
                      head_state st, float cap = 0.0f) {
#if VRAMPLAN_X86_SIMD
    if constexpr (HeadDim % 8 == 0)
        if (has_avx2()) return simd::tile_step<HeadDim>(q, &k[0][0], &v[0][0], n, scale, st, cap);
#endif
    tile_step_portable(q, &k[0][0], &v[0][0], HeadDim, n, scale, st, cap);
}

}  // namespace vramplan::kernels::cpu
