// fp16 and bf16 stored as raw bits (as GGUF stores them), with conversions usable on host and
// device. Bit-level conversions keep the CPU kernels and the CUDA kernels numerically identical.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

#include "vramplan/config.hpp"

namespace vramplan {

struct half_bits {
    std::uint16_t bits;
};
struct bf16_bits {
    std::uint16_t bits;
};
static_assert(sizeof(half_bits) == 2 && sizeof(bf16_bits) == 2);

namespace detail {
VRAMPLAN_HOST_DEVICE inline std::uint32_t float_to_bits(float f) {
    std::uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    return u;
}
VRAMPLAN_HOST_DEVICE inline float bits_to_float(std::uint32_t u) {
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
}
}  // namespace detail

VRAMPLAN_HOST_DEVICE inline float to_float(half_bits h) {
    const std::uint32_t sign = static_cast<std::uint32_t>(h.bits & 0x8000u) << 16;
    std::uint32_t exp = (h.bits >> 10) & 0x1fu;
    std::uint32_t mant = h.bits & 0x3ffu;
    if (exp == 0x1f) return detail::bits_to_float(sign | 0x7f800000u | (mant << 13));  // inf / nan
    if (exp == 0) {
        if (mant == 0) return detail::bits_to_float(sign);
        // Subnormal half: renormalize into a normal float.
        int e = -1;
        do {
            ++e;
            mant <<= 1;
        } while ((mant & 0x400u) == 0);
        mant &= 0x3ffu;
        return detail::bits_to_float(sign | static_cast<std::uint32_t>(127 - 15 - e) << 23 | (mant << 13));
    }
    return detail::bits_to_float(sign | ((exp + 112) << 23) | (mant << 13));
}

// Round to nearest even, as the IEEE conversion (and numpy, and GGUF's converters) do.
VRAMPLAN_HOST_DEVICE inline half_bits to_half(float f) {
    const std::uint32_t u = detail::float_to_bits(f);
    const std::uint32_t sign = (u >> 16) & 0x8000u;
    const std::uint32_t abs = u & 0x7fffffffu;
    if (abs > 0x7f800000u) return {static_cast<std::uint16_t>(sign | 0x7e00u)};   // nan
    if (abs >= 0x477ff000u) return {static_cast<std::uint16_t>(sign | 0x7c00u)};  // overflow to inf
    if (abs < 0x38800000u) {
        // Result is subnormal (or zero): shift the mantissa with the implicit bit, round to even.
        if (abs < 0x33000000u) return {static_cast<std::uint16_t>(sign)};
        const std::uint32_t exp = abs >> 23;
        const std::uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
        const std::uint32_t shift = 126 - exp;  // 14 + (112 - exp) - 1 ... yields half subnormal units
        std::uint32_t half_mant = mant >> (shift);
        const std::uint32_t rem = mant & ((1u << shift) - 1);
        const std::uint32_t halfway = 1u << (shift - 1);
        if (rem > halfway || (rem == halfway && (half_mant & 1u))) ++half_mant;
        return {static_cast<std::uint16_t>(sign | half_mant)};
    }
    std::uint32_t r = abs - 0x38000000u;  // rebias exponent 127 -> 15
    const std::uint32_t rem = r & 0x1fffu;
    r >>= 13;
    if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) ++r;
    return {static_cast<std::uint16_t>(sign | r)};
}

VRAMPLAN_HOST_DEVICE inline float to_float(bf16_bits b) {
    return detail::bits_to_float(static_cast<std::uint32_t>(b.bits) << 16);
}

VRAMPLAN_HOST_DEVICE inline bf16_bits to_bf16(float f) {
    const std::uint32_t u = detail::float_to_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return {static_cast<std::uint16_t>((u >> 16) | 0x40u)};  // quiet nan
    const std::uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);
    return {static_cast<std::uint16_t>((u + rounding) >> 16)};
}

}  // namespace vramplan
