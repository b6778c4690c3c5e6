// The scalar math of the feed-forward variants and Gemma's caps, shared by the CPU and CUDA kernels:
// GELU (Gemma's gate), the sigmoid (Qwen2-MoE's shared-expert gate), soft-capping and the router's
// choice of experts.
#pragma once

#include <cmath>
#include <cstdint>

#include "vramplan/config.hpp"

namespace vramplan::kernels {

// GELU in its tanh form, 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))): what Gemma was trained
// with (gelu_pytorch_tanh) and what llama.cpp's ggml_gelu computes.
VRAMPLAN_HOST_DEVICE inline float gelu(float x) {
    constexpr float sqrt_2_over_pi = 0.79788456080286535588f;
    return 0.5f * x * (1.0f + tanhf(sqrt_2_over_pi * x * (1.0f + 0.044715f * x * x)));
}

VRAMPLAN_HOST_DEVICE inline float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

// Gemma 2's soft-capping of attention scores and logits: cap tanh(x / cap), smooth and within +-cap.
VRAMPLAN_HOST_DEVICE inline float softcap(float x, float cap) { return cap * tanhf(x / cap); }

// One token's routing, as Mixtral, Qwen2-MoE and Qwen3-MoE define it: the softmax of the n router
// logits, the k largest probabilities (ties go to the lower expert index, so the choice does not
// depend on the order of a parallel search), and their weights: the probabilities themselves, or
// renormalized to sum to 1. Each pick is the largest (probability, -index) pair below the previous
// pick, which needs no marks and no scratch: O(n k) for k of a few experts.
VRAMPLAN_HOST_DEVICE inline void route_row(const float* logits, std::uint64_t n, std::uint64_t k, bool renorm,
                                           std::int32_t* ids, float* weights) {
    float m = -INFINITY;
    for (std::uint64_t e = 0; e < n; ++e) m = fmaxf(m, logits[e]);
    float sum = 0.0f;
    for (std::uint64_t e = 0; e < n; ++e) sum += expf(logits[e] - m);
    // (a, i) ranks below (b, j): a smaller logit, or an equal one at a larger index.
    auto below = [](float a, std::uint64_t i, float b, std::uint64_t j) { return a < b || (a == b && i > j); };
    float chosen_sum = 0.0f;
    for (std::uint64_t j = 0; j < k; ++j) {
        std::uint64_t best = n;
        for (std::uint64_t e = 0; e < n; ++e) {
            if (j > 0 && !below(logits[e], e, logits[ids[j - 1]], static_cast<std::uint64_t>(ids[j - 1]))) continue;
            if (best == n || below(logits[best], best, logits[e], e)) best = e;
        }
        ids[j] = static_cast<std::int32_t>(best);
        weights[j] = expf(logits[best] - m) / sum;
        chosen_sum += weights[j];
    }
    if (renorm)
        for (std::uint64_t j = 0; j < k; ++j) weights[j] /= chosen_sum;
}

}  // namespace vramplan::kernels
