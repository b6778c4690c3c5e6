// Places buffers with known lifetimes in one arena so that buffers alive at the same step never
// overlap, while buffers with disjoint lifetimes share memory.
//
// Algorithm (greedy by size, as in TFLite Micro's planner): take buffers in a fixed order; give
// each the lowest offset at which it overlaps no already-placed buffer whose lifetime intersects
// its own. Correctness needs only that invariant: a buffer is checked against every placed buffer
// it shares a step with, and placed buffers never move, so no two live buffers ever overlap.
// Quality: no arena can be smaller than the largest sum of sizes alive at one step (the lower
// bound). Largest-first leaves small holes for small buffers and meets the bound on the transformer
// schedule; on arbitrary lifetimes it can miss it, so three orders are tried and the best kept.
#pragma once

#include <cstdint>
#include <span>

#include "vramplan/format/checked_math.hpp"

namespace vramplan {

struct lifetime_request {
    std::uint64_t bytes = 0;
    std::uint32_t first = 0;  // first step that uses it
    std::uint32_t last = 0;   // last step that uses it (inclusive)
};

constexpr bool lifetimes_overlap(const lifetime_request& a, const lifetime_request& b) {
    return a.first <= b.last && b.first <= a.last;
}

// The bound no packing can beat: the most bytes alive at any one step.
constexpr std::uint64_t lifetime_lower_bound(std::span<const lifetime_request> in) {
    std::uint64_t best = 0;
    for (const auto& probe : in) {
        // The peak is reached at some buffer's first step.
        std::uint64_t alive = 0;
        for (const auto& r : in)
            if (r.first <= probe.first && probe.first <= r.last) alive = checked_add(alive, r.bytes);
        if (alive > best) best = alive;
    }
    return best;
}

enum class pack_order : std::uint8_t { size, duration, area };

namespace detail {
// bytes x steps as a 96-bit number (high, low): exact where a 64-bit product could wrap.
struct wide {
    std::uint64_t hi = 0, lo = 0;
    constexpr auto operator<=>(const wide&) const = default;
};
constexpr wide mul_wide(std::uint64_t a, std::uint64_t d) {  // d <= 2^32: a step count
    const std::uint64_t high_part = (a >> 32) * d, low_part = (a & 0xffffffffu) * d;
    const std::uint64_t lo = low_part + (high_part << 32);
    return {(high_part >> 32) + (lo < low_part ? 1 : 0), lo};
}

constexpr bool placed_before(const lifetime_request& a, const lifetime_request& b, pack_order o) {
    const std::uint64_t da = a.last - a.first + 1, db = b.last - b.first + 1;
    switch (o) {
        case pack_order::size: return a.bytes != b.bytes ? a.bytes > b.bytes : da > db;
        case pack_order::duration: return da != db ? da > db : a.bytes > b.bytes;
        case pack_order::area: {
            const wide xa = mul_wide(a.bytes, da), xb = mul_wide(b.bytes, db);
            return xa != xb ? xa > xb : a.bytes > b.bytes;
        }
    }
    return false;
}

// One greedy pass in the given order. `order` and `placed` are caller-provided scratch of in.size().
constexpr std::uint64_t pack_once(std::span<const lifetime_request> in, pack_order how,
                                  std::span<std::uint64_t> offsets, std::span<std::uint32_t> order,
                                  std::span<bool> placed) {
    const std::size_t n = in.size();
    for (std::size_t i = 0; i < n; ++i) {
        order[i] = static_cast<std::uint32_t>(i);
        placed[i] = false;
    }
    for (std::size_t i = 1; i < n; ++i)  // insertion sort: n is small at compile time, stable
        for (std::size_t j = i; j > 0 && placed_before(in[order[j]], in[order[j - 1]], how); --j) {
            const auto t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    std::uint64_t total = 0;
    for (std::size_t k = 0; k < n; ++k) {
        const auto& r = in[order[k]];
        // Lowest offset that clears every conflicting placed buffer: try 0 and the end of each
        // conflicting buffer; the answer is always one of these candidates.
        std::uint64_t best = max_u64;
        auto clear = [&](std::uint64_t at) {
            const std::uint64_t end = checked_add(at, r.bytes);
            for (std::size_t j = 0; j < n; ++j) {
                if (!placed[j] || !lifetimes_overlap(in[j], r) || in[j].bytes == 0 || r.bytes == 0) continue;
                if (at < checked_add(offsets[j], in[j].bytes) && offsets[j] < end) return false;
            }
            return true;
        };
        if (clear(0)) best = 0;
        for (std::size_t j = 0; j < n && best != 0; ++j) {
            if (!placed[j] || !lifetimes_overlap(in[j], r)) continue;
            const std::uint64_t cand = checked_add(offsets[j], in[j].bytes);
            if (cand < best && clear(cand)) best = cand;
        }
        offsets[order[k]] = best;
        placed[order[k]] = true;
        const std::uint64_t end = checked_add(best, r.bytes);
        if (end > total) total = end;
    }
    return total;
}
}  // namespace detail

// Writes an offset for each request and returns the arena size. Scratch spans must hold
// 2 * in.size() offsets, in.size() indices and in.size() flags.
constexpr std::uint64_t pack_lifetimes(std::span<const lifetime_request> in, std::span<std::uint64_t> offsets,
                                       std::span<std::uint64_t> scratch_offsets, std::span<std::uint32_t> scratch_order,
                                       std::span<bool> scratch_flags) {
    const std::size_t n = in.size();
    std::uint64_t best = max_u64;
    for (pack_order how : {pack_order::size, pack_order::duration, pack_order::area}) {
        const std::uint64_t total = detail::pack_once(in, how, scratch_offsets.first(n), scratch_order, scratch_flags);
        if (total < best) {
            best = total;
            for (std::size_t i = 0; i < n; ++i) offsets[i] = scratch_offsets[i];
        }
    }
    return n == 0 ? 0 : best;
}

}  // namespace vramplan
