// What the program will ask of the model: the planner sizes KV cache and activations from these.
#pragma once

#include <cstdint>

namespace vramplan {

enum class attention_kernel : std::uint8_t {
    fused,  // flash-style online softmax: no tokens x context score buffer
    naive,  // materializes n_head x tokens x context f32 scores
};

// Structural, so it can be a template argument: fits<Model, Target, limits{.context = 8192}>.
struct limits {
    std::uint64_t context = 4096;  // positions of KV cache per sequence
    std::uint64_t batch = 1;       // sequences decoded together
    std::uint64_t ubatch = 512;    // tokens per forward pass (prefill micro-batch)
    attention_kernel attention = attention_kernel::fused;
    bool all_logits = false;  // logits for every token of a micro-batch, not only the last per sequence

    // Tokens in one forward pass: never more than the cache can hold.
    constexpr std::uint64_t tokens_per_pass() const {
        const std::uint64_t cap = context * batch;
        return ubatch < cap ? ubatch : cap;
    }
    constexpr std::uint64_t output_rows() const { return all_logits ? tokens_per_pass() : batch; }
};

}  // namespace vramplan
