// Fused causal attention over a KV cache stored in f32, f16, Q8_0 or Q4_0, dequantized on the fly
// and never materialized, with an online softmax (no tokens x context score buffer). Query heads
// share KV heads (GQA; MQA when one KV head). Long caches are split along the context into
// partial softmax states that are merged, so decode of a single token still uses every thread.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "vramplan/error.hpp"
#include "vramplan/kernels/attention_args.hpp"
#include "vramplan/kernels/block_math.hpp"
#include "vramplan/kernels/cpu/attention_group.hpp"
#include "vramplan/kernels/cpu/attention_query.hpp"
#include "vramplan/kernels/cpu/attention_tile.hpp"
#include "vramplan/kernels/cpu/dot.hpp"
#include "vramplan/kernels/cpu/prefetch.hpp"
#include "vramplan/kernels/cpu/quantize.hpp"
#include "vramplan/kernels/cpu/thread_pool.hpp"
#include "vramplan/kernels/kernel_format.hpp"

namespace vramplan::kernels {

// Appends rows of new K and V (f32, [tokens][kv_dim]) to the cache at their positions.
template <kernel_format Kv>
void kv_append(const float* k_new, const float* v_new, const std::int32_t* pos, const std::int32_t* seq,
               std::uint64_t tokens, std::uint64_t kv_dim, std::uint64_t context, void* k_cache, void* v_cache) {
    const std::uint64_t row_bytes = kernel_row_bytes(Kv, kv_dim);
    for (std::uint64_t t = 0; t < tokens; ++t) {
        const std::uint64_t row = kv_cache_row(seq, t, context, static_cast<std::uint64_t>(pos[t]));
        cpu::store_row_cpu<Kv>(k_new + t * kv_dim, static_cast<std::uint8_t*>(k_cache) + row * row_bytes, kv_dim);
        cpu::store_row_cpu<Kv>(v_new + t * kv_dim, static_cast<std::uint8_t*>(v_cache) + row * row_bytes, kv_dim);
    }
}

namespace cpu {

template <kernel_format Kv, int HeadDim>
void attention(const attention_args& a, thread_pool& pool) {
    const std::uint64_t row_bytes = kernel_row_bytes(Kv, a.kv_dim());
    const std::uint64_t group = a.n_head / a.n_head_kv;
    const std::uint64_t splits = a.splits();
    const attention_state_layout states{a.n_head, HeadDim, splits};
    auto partial = [&](std::uint64_t t, std::uint64_t h, std::uint64_t s) {
        return a.workspace + states.offset(t, h, s);
    };
    const auto* kc = static_cast<const std::uint8_t*>(a.k);
    const auto* vc = static_cast<const std::uint8_t*>(a.v);

    // Pass 1: every (token, split, range of KV heads) folds its keys, a tile at a time, into the
    // softmax states of its query heads, kept in the workspace. K and V values are converted to
    // floats once per four query heads of a GQA group (the group step), or once per group when
    // the slices are dequantized into kf/vf (the general path). An item walks whole cache rows in
    // order when it can (all KV heads), because scattered head slices cost a TLB miss every few
    // rows, and the next tile's rows are prefetched, a few lines between each pair of keys, while
    // this one is computed. KV heads are split across items only when tokens x splits would leave
    // threads idle.
    // Soft-capped scores (Gemma 2) take the general path, whose scores pass through one place.
    const bool grouped = group_steps_serve<Kv, HeadDim>(group) && a.softcap == 0.0f;
    // Queries rounded to Q8_0 (quantized caches) or widened from f16 are staged once per thread for
    // each token and range of KV heads, on the thread's stack; a range's query heads must fit there.
    check_query_format(a);
    constexpr bool rounded = rounds_queries(Kv, HeadDim);
    const bool staged = item_queries::staged(a, rounded);
    if (staged && group * HeadDim > item_queries::capacity) {
        // What makes this call stage its queries, and what would let it skip staging.
        const bool f16_queries = a.q_format == kernel_format::f16;
        const std::string why =
            rounded ? std::string("over a ") + kernel_format_name(Kv) + " KV cache" : "with f16 queries";
        const std::string fix = rounded && f16_queries ? "use an f16 KV cache and f32 queries"
                                : rounded              ? "use an f16 KV cache"
                                                       : "pass f32 queries";
        throw error("attention " + why + " takes at most " + std::to_string(item_queries::capacity) +
                    " query values per KV head (query heads per KV head x head_dim), got " + std::to_string(group) +
                    " x " + std::to_string(HeadDim) + "; " + fix + " for this model");
    }
    const std::uint64_t rows_items = a.tokens * splits;
    const std::uint64_t wanted = 2 * static_cast<std::uint64_t>(pool.size());
    const std::uint64_t wanted_ranges =
        rows_items >= wanted ? 1 : std::min<std::uint64_t>(a.n_head_kv, (wanted + rows_items - 1) / rows_items);
    std::uint64_t heads_per_range = (a.n_head_kv + wanted_ranges - 1) / wanted_ranges;
    if (staged) heads_per_range = std::min<std::uint64_t>(heads_per_range, item_queries::capacity / (group * HeadDim));
    const std::uint64_t head_ranges = (a.n_head_kv + heads_per_range - 1) / heads_per_range;
    const auto slice_offset = [](std::uint64_t g) { return g * HeadDim / block_size(Kv) * block_bytes(Kv); };
    const auto slice_at = [&](const std::uint8_t* cache, std::uint64_t row, std::uint64_t g) {
        return cache + row * row_bytes + slice_offset(g);
    };
    // What an item covers: token t, split s, KV heads [g0, g1), cache rows base + [from, to).
    struct item_range {
        std::uint64_t t, s, g0, g1, from, to, base;
    };
    const auto range_of = [&](std::uint64_t item) {
        const std::uint64_t r = item % head_ranges, s = item / head_ranges % splits, t = item / head_ranges / splits;
        const std::uint64_t g0 = std::min(a.n_head_kv, r * heads_per_range),
                            g1 = std::min(a.n_head_kv, g0 + heads_per_range);
        // Positions [lo, pos] are seen; a split takes a run of them.
        const std::uint64_t lo = a.first_key(t), keys = static_cast<std::uint64_t>(a.pos[t]) + 1 - lo;
        const std::uint64_t chunk = (keys + splits - 1) / splits;
        const std::uint64_t from = std::min(s * chunk, keys), to = std::min(from + chunk, keys);
        return item_range{t, s, g0, g1, lo + from, lo + to, a.first_row(t)};
    };
    // A tile is rows of consecutive positions: it ends where the ring wraps (never, for a layer
    // with a row per position).
    const auto tile_keys = [&](std::uint64_t p0, std::uint64_t to) {
        return static_cast<int>(std::min({to - p0, static_cast<std::uint64_t>(key_tile), a.context - p0 % a.context}));
    };
    // Items differ in work (in a prefill, token t sees t + 1 keys), so threads take chunks of them
    // from a queue, about sixteen chunks a thread.
    const std::uint64_t items = rows_items * head_ranges;
    pool.parallel_queue(items, items / (16 * pool.size()), [&](thread_pool::work_queue& queue) {
        alignas(32) key_slices<HeadDim> kf, vf;
        alignas(32) float qf[HeadDim];
        item_queries iq;
        std::uint64_t staged_for = ~std::uint64_t{0};  // the (token, first KV head) iq holds
        const float* q_item = nullptr;
        for (std::uint64_t begin, end; queue.take(begin, end);) {
            for (std::uint64_t item = begin; item < end; ++item) {
                const auto [t, s, g0, g1, from, to, base] = range_of(item);
                if (g0 >= g1) continue;
                const std::uint64_t q_first = (t * a.n_head + g0 * group) * HeadDim;
                if (!staged) {
                    q_item = static_cast<const float*>(a.q) + q_first;
                } else if (staged_for != t * a.n_head_kv + g0) {
                    q_item = iq.stage(a, q_first, (g1 - g0) * group * HeadDim, rounded);
                    staged_for = t * a.n_head_kv + g0;
                }
                const rounded_queries& rq = iq.rounded;
                const rounded_rows rows{rq.qs, rq.d, rq.sum};
                for (std::uint64_t h = g0 * group; h < g1 * group; ++h)
                    clear_state<HeadDim>(head_state{partial(t, h, s)});
                // The bytes of heads [g0, g1) in one row (whole rows when the item has every head).
                const std::uint64_t span = slice_offset(g1) - slice_offset(g0);
                int n = 0;
                for (std::uint64_t p0 = from; p0 < to; p0 += static_cast<std::uint64_t>(n)) {
                    n = tile_keys(p0, to);
                    const std::uint64_t row = base + p0 % a.context, after = p0 + static_cast<std::uint64_t>(n);
                    const std::uint64_t steps =
                        (g1 - g0) * (grouped ? group_steps_prefetch_steps(group, n) : static_cast<std::uint64_t>(n));
                    // The next tile of this item or, during the last one, the first tile of the next item.
                    tile_prefetcher next_tile;
                    if (after < to) {
                        const std::uint64_t next = base + after % a.context;
                        next_tile = tile_prefetcher(slice_at(kc, next, g0), slice_at(vc, next, g0), row_bytes, span,
                                                    static_cast<std::uint64_t>(tile_keys(after, to)), steps);
                    } else if (item + 1 < end) {
                        const item_range o = range_of(item + 1);
                        if (o.g0 < o.g1 && o.from < o.to) {
                            const std::uint64_t next = o.base + o.from % a.context;
                            next_tile = tile_prefetcher(slice_at(kc, next, o.g0), slice_at(vc, next, o.g0), row_bytes,
                                                        slice_offset(o.g1) - slice_offset(o.g0),
                                                        static_cast<std::uint64_t>(tile_keys(o.from, o.to)), steps);
                        }
                    }
                    for (std::uint64_t g = g0; g < g1; ++g) {
                        if (grouped) {
                            head_state states[group_steps_max_heads];
                            for (std::uint64_t i = 0; i < group; ++i)
                                states[i] = head_state{partial(t, g * group + i, s)};
                            group_steps<Kv, HeadDim>(q_item + (g - g0) * group * HeadDim,
                                                     rounded ? rows.at_head((g - g0) * group, HeadDim) : rounded_rows{},
                                                     slice_at(kc, row, g), slice_at(vc, row, g), row_bytes, n, a.scale,
                                                     states, group, next_tile);
                            continue;
                        }
                        for (int j = 0; j < n; ++j) {
                            next_tile.step();
                            to_f32<Kv>(kc + (row + j) * row_bytes, g * HeadDim, kf[j], HeadDim);
                            to_f32<Kv>(vc + (row + j) * row_bytes, g * HeadDim, vf[j], HeadDim);
                        }
                        for (std::uint64_t h = g * group; h < (g + 1) * group; ++h) {
                            const float* qh = q_item + (h - g0 * group) * HeadDim;
                            if (rounded) {
                                const std::uint64_t first = (h - g0 * group) * HeadDim;
                                for (int d = 0; d < HeadDim; ++d)
                                    qf[d] = rq.d[(first + d) / 32] * static_cast<float>(rq.qs[first + d]);
                                qh = qf;
                            }
                            tile_step<HeadDim>(qh, kf, vf, n, a.scale, head_state{partial(t, h, s)}, a.softcap);
                        }
                    }
                    next_tile.finish();
                }
            }
        }
    });
    // Pass 2: merge the splits of each (token, head) and normalize.
    pool.parallel_for(a.tokens * a.n_head, [&](std::uint64_t begin, std::uint64_t end) {
        for (std::uint64_t item = begin; item < end; ++item)
            merge_states<HeadDim>(partial(item / a.n_head, item % a.n_head, 0), splits, a.out + item * HeadDim);
    });
}

}  // namespace cpu
}  // namespace vramplan::kernels
