// Activations rounded as the CPU's integer matrix products round them, written here from GGUF's
// definitions of Q8_0 and Q8_K (not from the kernels' quantizers), as the values a double
// reference multiplies.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

#include "vramplan/format/half.hpp"

namespace test_data {

// x rounded to Q8_K as GGUF defines it, written here from the definition: per 256 values, with m
// the value of largest magnitude, q = round-half-even(-127 / m * x) clamped to 127, value q / (-127 / m).
inline std::vector<double> rounded_q8_k(const std::vector<float>& x) {
    std::vector<double> out(x.size());
    for (std::size_t b = 0; b < x.size() / 256; ++b) {
        float m = 0;
        for (int j = 0; j < 256; ++j)
            if (std::fabs(x[b * 256 + j]) > std::fabs(m)) m = x[b * 256 + j];
        const float iscale = -127.0f / m, d = 1.0f / iscale;
        for (int j = 0; j < 256; ++j) {
            const float q = std::min(127.0f, std::nearbyint(iscale * x[b * 256 + j]));
            out[b * 256 + j] = static_cast<double>(d) * q;
        }
    }
    return out;
}

// x rounded to Q8_0 as GGUF defines it, written here from the definition: per 32 values, with a
// the largest magnitude, d = a / 127 stored as f16, q = round-half-away(x / d) (0 where a is 0),
// value f16(d) q.
inline std::vector<double> rounded_q8_0(const std::vector<float>& x) {
    std::vector<double> out(x.size());
    for (std::size_t b = 0; b < x.size() / 32; ++b) {
        float a = 0;
        for (int j = 0; j < 32; ++j) a = std::max(a, std::fabs(x[b * 32 + j]));
        const float d = a / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        const double stored = static_cast<double>(vramplan::to_float(vramplan::to_half(d)));
        for (int j = 0; j < 32; ++j) out[b * 32 + j] = stored * static_cast<double>(std::round(x[b * 32 + j] * id));
    }
    return out;
}

}  // namespace test_data
