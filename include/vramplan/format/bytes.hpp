// An exact byte quantity. Printing uses binary units (KiB = 1024 B) with two decimals, because GPU
// memory is sized in powers of two and "8 GB" on a box is 8 GiB in the driver's eyes.
#pragma once

#include <compare>
#include <cstdint>
#include <cstdio>
#include <string>

#include "vramplan/format/checked_math.hpp"

namespace vramplan {

struct bytes {
    std::uint64_t value = 0;

    constexpr auto operator<=>(const bytes&) const = default;

    constexpr bytes& operator+=(bytes other) {
        value = checked_add(value, other.value);
        return *this;
    }
    friend constexpr bytes operator+(bytes a, bytes b) { return a += b; }
    // Subtracting more than there is is a logic error, never a huge unsigned number.
    friend constexpr bytes operator-(bytes a, bytes b) { return bytes{checked_sub(a.value, b.value)}; }
    friend constexpr bytes operator*(bytes a, std::uint64_t k) { return bytes{checked_mul(a.value, k)}; }
    friend constexpr bytes operator*(std::uint64_t k, bytes a) { return a * k; }
};

constexpr bytes kib(std::uint64_t n) { return bytes{checked_mul(n, 1024)}; }
constexpr bytes mib(std::uint64_t n) { return bytes{checked_mul(n, 1024ull * 1024)}; }
constexpr bytes gib(std::uint64_t n) { return bytes{checked_mul(n, 1024ull * 1024 * 1024)}; }

constexpr bytes align_up(bytes n, std::uint64_t alignment) { return bytes{align_up(n.value, alignment)}; }

// "4.21 GiB", "512 B": the largest binary unit that keeps the number at least 1.
inline std::string to_string(bytes b) {
    static constexpr const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (b.value < 1024) return std::to_string(b.value) + " B";
    double v = static_cast<double>(b.value);
    int unit = 0;
    while (v >= 1024.0 && unit < 6) {
        v /= 1024.0;
        ++unit;
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f %s", v, units[unit]);
    return buf;
}

// "4,517,937,152": exact counts stay readable in reports.
inline std::string with_separators(std::uint64_t n) {
    std::string digits = std::to_string(n);
    std::string out;
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (i != 0 && (digits.size() - i) % 3 == 0) out += ',';
        out += digits[i];
    }
    return out;
}

}  // namespace vramplan
