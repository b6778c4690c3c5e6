// Queries rounded to Q8_0 blocks as the CPU's group step takes them (see rounds_queries in
// block_math.hpp for why attention over a quantized cache rounds its queries): the integers, each
// block's scale, and the sum of its integers, which Q4_0's -8 offset needs.
#pragma once

#include <cstdint>

#include "vramplan/kernels/block_math.hpp"

namespace vramplan::kernels::cpu {

struct rounded_queries {
    // Query values one work item rounds, on its thread's stack (10 KiB): 16 query heads per KV
    // head at head_dim 256, or all 64 query heads of Llama-3-70B at 128. Items with more query
    // heads cover fewer KV heads.
    static constexpr std::uint64_t capacity = 8192;
    alignas(32) std::int8_t qs[capacity];
    float d[capacity / blocks::qk];
    std::int32_t sum[capacity / blocks::qk];

    // Rounds q[0..n), n a multiple of 32 and at most capacity.
    void round(const float* q, std::uint64_t n) {
        for (std::uint64_t b = 0; b < n / blocks::qk; ++b) {
            blocks::q8_0 block;
            quantize_block(q + b * blocks::qk, block);
            std::int32_t s = 0;
            for (int j = 0; j < blocks::qk; ++j) s += qs[b * blocks::qk + j] = block.qs[j];
            d[b] = to_float(block.d);
            sum[b] = s;
        }
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
