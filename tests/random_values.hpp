// Seeded normal random values for kernel tests and benchmarks.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace test_data {

inline std::vector<float> random_values(std::size_t n, std::uint64_t seed, float scale = 1.0f) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> dist(0.0f, scale);
    std::vector<float> v(n);
    for (auto& x : v) x = dist(rng);
    return v;
}

}  // namespace test_data
