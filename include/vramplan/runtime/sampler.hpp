// Picks the next token from logits: greedy, or temperature / top-k / top-p with a seeded
// generator. Its scratch (one index per vocabulary entry) is allocated once, at construction.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

namespace vramplan::runtime {

struct sampling {
    float temperature = 0.0f;  // 0: greedy
    std::uint32_t top_k = 40;  // 0: all
    float top_p = 0.95f;       // 1: all
    std::uint64_t seed = 1;
};

class sampler {
public:
    sampler(std::size_t vocab, sampling s) : s_(s), rng_(s.seed), order_(vocab), probs_(vocab) {}

    std::int32_t pick(const float* logits) {
        const std::size_t n = order_.size();
        if (s_.temperature <= 0.0f) return static_cast<std::int32_t>(std::max_element(logits, logits + n) - logits);
        std::iota(order_.begin(), order_.end(), 0);
        const std::size_t k = s_.top_k == 0 || s_.top_k > n ? n : s_.top_k;
        std::partial_sort(order_.begin(), order_.begin() + static_cast<std::ptrdiff_t>(k), order_.end(),
                          [&](std::int32_t a, std::int32_t b) { return logits[a] > logits[b]; });
        const float m = logits[order_[0]];
        double sum = 0;
        for (std::size_t i = 0; i < k; ++i) sum += probs_[i] = std::exp((logits[order_[i]] - m) / s_.temperature);
        // Keep the smallest prefix whose probability reaches top_p.
        std::size_t keep = k;
        double acc = 0;
        for (std::size_t i = 0; i < k; ++i) {
            acc += probs_[i] / sum;
            if (acc >= s_.top_p) {
                keep = i + 1;
                break;
            }
        }
        double kept = 0;
        for (std::size_t i = 0; i < keep; ++i) kept += probs_[i];
        double r = std::uniform_real_distribution<double>(0.0, kept)(rng_);
        for (std::size_t i = 0; i < keep; ++i)
            if ((r -= probs_[i]) <= 0) return order_[i];
        return order_[keep - 1];
    }

private:
    sampling s_;
    std::mt19937_64 rng_;
    std::vector<std::int32_t> order_;
    std::vector<double> probs_;
};

}  // namespace vramplan::runtime
