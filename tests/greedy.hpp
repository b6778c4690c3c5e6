// Greedy decoding through a forward pass: the prompt in one pass, then n tokens one at a time,
// each the argmax of the last logits. The loop every real-model test runs.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "vramplan/kernels/cpu/elementwise.hpp"

template <class ForwardPass>
std::vector<std::int32_t> greedy_tokens(ForwardPass& llm, const std::vector<std::int32_t>& prompt, int n,
                                        std::uint64_t vocab) {
    std::vector<std::int32_t> pos(prompt.size());
    for (std::size_t i = 0; i < pos.size(); ++i) pos[i] = static_cast<std::int32_t>(i);
    const float* lg = llm.forward(prompt, pos);
    std::vector<std::int32_t> out;
    for (int i = 0; i < n; ++i) {
        const auto next = static_cast<std::int32_t>(vramplan::kernels::cpu::argmax(lg, vocab));
        out.push_back(next);
        const std::int32_t at = static_cast<std::int32_t>(prompt.size()) + i;
        lg = llm.forward(std::span(&next, 1), std::span(&at, 1));
    }
    return out;
}
