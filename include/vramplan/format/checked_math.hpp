// Byte counts of large models approach 2^40 and multiply by context lengths and batch sizes; a
// wrapped 64-bit product would silently turn "does not fit" into "fits". Every size computation in
// the planner goes through these, which fail loudly (a compile error in constant evaluation, an
// exception at run time) instead of wrapping.
#pragma once

#include <cstdint>

#include "vramplan/error.hpp"

namespace vramplan {

// Plain comparisons rather than __builtin_*_overflow: nvcc's front end cannot evaluate the
// builtins in constant expressions.
inline constexpr std::uint64_t max_u64 = ~std::uint64_t{0};

[[noreturn]] inline void throw_overflow(const char* what) {
    throw error(std::string("size overflow: ") + what +
                " exceeds 2^64 bytes; the model, context or batch is too large to plan");
}

constexpr std::uint64_t checked_add(std::uint64_t a, std::uint64_t b) {
    if (b > max_u64 - a) throw_overflow("a sum of sizes");
    return a + b;
}

constexpr std::uint64_t checked_mul(std::uint64_t a, std::uint64_t b) {
    if (a != 0 && b > max_u64 / a) throw_overflow("a product of sizes");
    return a * b;
}

constexpr std::uint64_t checked_mul(std::uint64_t a, std::uint64_t b, std::uint64_t c) {
    return checked_mul(checked_mul(a, b), c);
}

constexpr std::uint64_t checked_sub(std::uint64_t a, std::uint64_t b) {
    if (b > a) throw error("internal error: negative size");
    return a - b;
}

constexpr std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return a / b + (a % b != 0); }

// Alignment need not be a power of two (a caller may ask for 96-byte rows), only positive.
constexpr std::uint64_t align_up(std::uint64_t n, std::uint64_t alignment) {
    if (alignment == 0) throw error("alignment must be positive");
    return checked_mul(ceil_div(n, alignment), alignment);
}

}  // namespace vramplan
