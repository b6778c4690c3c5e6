// The rows a matrix product reads from x and writes to y. A product over a micro-batch reads x's
// row t and writes y's row t for each token t; the experts' products (experts.hpp) take only the
// rows routed to one expert, scattered through the micro-batch, and name them by index instead of
// gathering them into a buffer the plan would have to hold.
#pragma once

#include <cstdint>

namespace vramplan::kernels::cpu {

struct token_rows {
    const float* x = nullptr;
    float* y = nullptr;
    std::uint64_t count = 0;               // tokens in the product
    const std::uint32_t* x_at = nullptr;   // x's row for token t; nullptr: row t
    const std::uint32_t* y_at = nullptr;   // y's row for token t; nullptr: row t

    const float* x_row(std::uint64_t t, std::uint64_t cols) const { return x + (x_at ? x_at[t] : t) * cols; }
    float* y_row(std::uint64_t t, std::uint64_t rows) const { return y + (y_at ? y_at[t] : t) * rows; }
};

}  // namespace vramplan::kernels::cpu
