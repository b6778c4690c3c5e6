// The small kernels of a Llama forward pass. Each works on rows of f32 values.
#pragma once

#include <cmath>
#include <cstdint>

#include "vramplan/kernels/block_math.hpp"
#include "vramplan/kernels/ffn_math.hpp"

namespace vramplan::kernels::cpu {

// y = x / sqrt(mean(x^2) + eps) * w, row by row.
inline void rms_norm(const float* x, const float* w, float* y, std::uint64_t rows, std::uint64_t n, float eps) {
    for (std::uint64_t r = 0; r < rows; ++r, x += n, y += n) {
        double ss = 0;  // as GGML: float squares summed in double
        for (std::uint64_t i = 0; i < n; ++i) ss += static_cast<double>(x[i] * x[i]);
        const float scale = 1.0f / std::sqrt(static_cast<float>(ss / static_cast<double>(n)) + eps);
        for (std::uint64_t i = 0; i < n; ++i) y[i] = x[i] * scale * w[i];
    }
}

// Rotates every head of every row; row t is at position positions[t].
inline void rope(float* x, std::uint64_t rows, std::uint64_t heads, int head_dim, const std::int32_t* positions,
                 const rope_config& r) {
    for (std::uint64_t t = 0; t < rows; ++t)
        for (std::uint64_t h = 0; h < heads; ++h)
            rope_head(x + (t * heads + h) * head_dim, head_dim, static_cast<std::uint64_t>(positions[t]), r);
}

// gate = silu(gate) * up
inline void swiglu(float* gate, const float* up, std::uint64_t n) {
    for (std::uint64_t i = 0; i < n; ++i) gate[i] = silu(gate[i]) * up[i];
}

// gate = gelu(gate) * up
inline void geglu(float* gate, const float* up, std::uint64_t n) {
    for (std::uint64_t i = 0; i < n; ++i) gate[i] = gelu(gate[i]) * up[i];
}

// x[t] *= sigmoid(s[t]): rows of n values, one gate value per row.
inline void gate_scale(float* x, const float* s, std::uint64_t rows, std::uint64_t n) {
    for (std::uint64_t t = 0; t < rows; ++t) {
        const float g = sigmoid(s[t]);
        for (std::uint64_t i = 0; i < n; ++i) x[t * n + i] *= g;
    }
}

inline void scale(float* x, std::uint64_t n, float s) {
    for (std::uint64_t i = 0; i < n; ++i) x[i] *= s;
}

// x = cap tanh(x / cap)
inline void softcap(float* x, std::uint64_t n, float cap) {
    for (std::uint64_t i = 0; i < n; ++i) x[i] = kernels::softcap(x[i], cap);
}

inline void add(float* x, const float* y, std::uint64_t n) {
    for (std::uint64_t i = 0; i < n; ++i) x[i] += y[i];
}

inline std::uint64_t argmax(const float* x, std::uint64_t n) {
    std::uint64_t best = 0;
    for (std::uint64_t i = 1; i < n; ++i)
        if (x[i] > x[best]) best = i;
    return best;
}

// In place, numerically stable: subtract the max before exponentiating.
inline void softmax(float* x, std::uint64_t n) {
    float m = -INFINITY;
    for (std::uint64_t i = 0; i < n; ++i) m = std::fmax(m, x[i]);
    double sum = 0;
    for (std::uint64_t i = 0; i < n; ++i) sum += (x[i] = std::exp(x[i] - m));
    const float inv = static_cast<float>(1.0 / sum);
    for (std::uint64_t i = 0; i < n; ++i) x[i] *= inv;
}

}  // namespace vramplan::kernels::cpu
