// The queries of one work item of the CPU attention kernel, as its steps read them. f32 queries
// are read where the caller keeps them; f16 ones are widened to f32 once per item, on the thread's
// stack. For Q8_0 and Q4_0 caches they are also rounded to Q8_0 blocks (see rounds_queries in
// block_math.hpp for why): the integers, each block's scale, and the sum of its integers, which
// Q4_0's -8 offset needs.
#pragma once

#include <cstdint>

#include "vramplan/kernels/attention_args.hpp"
#include "vramplan/kernels/block_math.hpp"
#include "vramplan/kernels/cpu/dot.hpp"
#include "vramplan/kernels/cpu/quantize.hpp"

namespace vramplan::kernels::cpu {

struct rounded_queries : rounded_blocks<256> {
    static constexpr std::uint64_t capacity = 256 * blocks::qk;

    // Rounds q[0..n), n a multiple of 32 and at most capacity.
    void round(const float* q, std::uint64_t n) { rounded_blocks::round(q, 0, n / blocks::qk); }
};

// The queries one work item stages: f16 ones widened, and all of them rounded when the cache asks.
struct item_queries {
    // Query values one work item stages (42 KiB of the thread's stack): 16 query heads per KV head
    // at head_dim 256, or all 64 query heads of Llama-3-70B at 128. Items with more query heads
    // cover fewer KV heads.
    static constexpr std::uint64_t capacity = rounded_queries::capacity;
    alignas(32) float widened[capacity];
    rounded_queries rounded;

    // Whether a's queries go through stage() for a cache that rounds them or not.
    static bool staged(const attention_args& a, bool rounds) { return rounds || a.q_format == kernel_format::f16; }

    // Stages queries [first, first + n) of a (n at most capacity) and returns them as f32.
    const float* stage(const attention_args& a, std::uint64_t first, std::uint64_t n, bool rounds) {
        const float* q = widened;
        if (a.q_format == kernel_format::f16)
            to_f32<kernel_format::f16>(a.q, first, widened, n);
        else
            q = static_cast<const float*>(a.q) + first;
        if (rounds) rounded.round(q, n);
        return q;
    }
};

// Rounded query rows (head_dim values each) from one head on.
struct rounded_rows {
    const std::int8_t* qs = nullptr;
    const float* d = nullptr;
    const std::int32_t* sum = nullptr;
    rounded_rows at_head(std::uint64_t h, std::uint64_t head_dim) const {
        return {qs + h * head_dim, d + h * head_dim / blocks::qk, sum + h * head_dim / blocks::qk};
    }
};

}  // namespace vramplan::kernels::cpu
