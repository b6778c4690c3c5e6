// Fused causal attention over a KV cache stored in f32, f16, Q8_0 or Q4_0, dequantized on the fly
// and never materialized, with an online softmax (no tokens x context score buffer). Query heads
// share KV heads (GQA; MQA when one KV head). Long caches are split along the context into
// partial softmax states that are merged, so decode of a single token still uses every thread.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>

#include "vramplan/kernels/attention_args.hpp"
#include "vramplan/kernels/block_math.hpp"
#include "vramplan/kernels/cpu/dot.hpp"
#include "vramplan/kernels/cpu/thread_pool.hpp"

namespace vramplan::kernels {

// Appends rows of new K and V (f32, [tokens][kv_dim]) to the cache at their positions.
template <kernel_format Kv>
void kv_append(const float* k_new, const float* v_new, const std::int32_t* pos, const std::int32_t* seq, std::uint64_t tokens,
               std::uint64_t kv_dim, std::uint64_t context, void* k_cache, void* v_cache) {
    const std::uint64_t row_bytes = kernel_row_bytes(Kv, kv_dim);
    for (std::uint64_t t = 0; t < tokens; ++t) {
        const std::uint64_t row = (seq ? static_cast<std::uint64_t>(seq[t]) : 0) * context + static_cast<std::uint64_t>(pos[t]);
        store_row<Kv>(k_new + t * kv_dim, static_cast<std::uint8_t*>(k_cache) + row * row_bytes, kv_dim);
        store_row<Kv>(v_new + t * kv_dim, static_cast<std::uint8_t*>(v_cache) + row * row_bytes, kv_dim);
    }
}

namespace cpu {

template <kernel_format Kv, int HeadDim>
void attention(const attention_args& a, thread_pool& pool) {
    const std::uint64_t row_bytes = kernel_row_bytes(Kv, a.kv_dim());
    const std::uint64_t group = a.n_head / a.n_head_kv;
    const std::uint64_t splits = a.splits();
    const std::uint64_t state = HeadDim + 2;  // m, l, acc[HeadDim]
    auto partial = [&](std::uint64_t t, std::uint64_t h, std::uint64_t s) { return a.workspace + ((t * a.n_head + h) * splits + s) * state; };
    const auto* kc = static_cast<const std::uint8_t*>(a.k);
    const auto* vc = static_cast<const std::uint8_t*>(a.v);

    // Pass 1: every (token, KV head, split) computes the softmax states of its query heads. Each
    // key and value slice is dequantized once and used by every query head of the group (GQA), and
    // scores are taken a tile of keys at a time so the running max rescales once per tile.
    constexpr std::uint64_t tile = 32, heads_at_once = 8;
    pool.parallel_for(a.tokens * a.n_head_kv * splits, [&](std::uint64_t begin, std::uint64_t end) {
        for (std::uint64_t item = begin; item < end; ++item) {
            const std::uint64_t s = item % splits, g = item / splits % a.n_head_kv, t = item / splits / a.n_head_kv;
            const std::uint64_t keys = static_cast<std::uint64_t>(a.pos[t]) + 1;
            const std::uint64_t chunk = (keys + splits - 1) / splits;
            const std::uint64_t from = s * chunk, to = from + chunk < keys ? from + chunk : keys;
            const std::uint64_t base = (a.seq ? static_cast<std::uint64_t>(a.seq[t]) : 0) * a.context;
            for (std::uint64_t h0 = g * group; h0 < (g + 1) * group; h0 += heads_at_once) {
                const std::uint64_t nh = (g + 1) * group - h0 < heads_at_once ? (g + 1) * group - h0 : heads_at_once;
                softmax_state st[heads_at_once];
                alignas(32) float acc[heads_at_once][HeadDim] = {};
                alignas(32) float scores[heads_at_once][tile];
                alignas(32) float row[HeadDim];
                for (std::uint64_t p0 = from; p0 < to; p0 += tile) {
                    const std::uint64_t n = to - p0 < tile ? to - p0 : tile;
                    for (std::uint64_t j = 0; j < n; ++j) {
                        to_f32<Kv>(kc + (base + p0 + j) * row_bytes, g * HeadDim, row, HeadDim);
                        for (std::uint64_t h = 0; h < nh; ++h)
                            scores[h][j] = cpu::dot<kernel_format::f32>(row, a.q + (t * a.n_head + h0 + h) * HeadDim, HeadDim) * a.scale;
                    }
                    for (std::uint64_t h = 0; h < nh; ++h) {
                        float m = st[h].m;
                        for (std::uint64_t j = 0; j < n; ++j) m = scores[h][j] > m ? scores[h][j] : m;
                        const float rescale = std::exp(st[h].m - m);
                        float l = st[h].l * rescale;
                        for (std::uint64_t j = 0; j < n; ++j) l += (scores[h][j] = std::exp(scores[h][j] - m));
                        st[h] = softmax_state{m, l};
                        if (rescale != 1.0f)
                            for (auto& x : acc[h]) x *= rescale;
                    }
                    for (std::uint64_t j = 0; j < n; ++j) {
                        to_f32<Kv>(vc + (base + p0 + j) * row_bytes, g * HeadDim, row, HeadDim);
                        for (std::uint64_t h = 0; h < nh; ++h) cpu::axpy<kernel_format::f32>(scores[h][j], row, acc[h], HeadDim);
                    }
                }
                for (std::uint64_t h = 0; h < nh; ++h) {
                    float* out = partial(t, h0 + h, s);
                    out[0] = st[h].m;
                    out[1] = st[h].l;
                    for (int d = 0; d < HeadDim; ++d) out[2 + d] = acc[h][d];
                }
            }
        }
    });
    // Pass 2: merge the splits of each (token, head) and normalize.
    pool.parallel_for(a.tokens * a.n_head, [&](std::uint64_t begin, std::uint64_t end) {
        for (std::uint64_t item = begin; item < end; ++item) {
            const std::uint64_t t = item / a.n_head, h = item % a.n_head;
            softmax_state st;
            std::array<float, HeadDim> acc{};
            for (std::uint64_t s = 0; s < splits; ++s) {
                const float* p = partial(t, h, s);
                float mine, theirs;
                st.merge(softmax_state{p[0], p[1]}, mine, theirs);
                for (int d = 0; d < HeadDim; ++d) acc[d] = acc[d] * mine + p[2 + d] * theirs;
            }
            float* out = a.out + (t * a.n_head + h) * HeadDim;
            for (int d = 0; d < HeadDim; ++d) out[d] = st.l > 0 ? acc[d] / st.l : 0.0f;
        }
    });
}

}  // namespace cpu
}  // namespace vramplan::kernels
