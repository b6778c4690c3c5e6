// The GGUF container's value model: metadata values, arrays and tensor descriptions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vramplan/format/format.hpp"

namespace vramplan::io {

enum class gguf_type : std::uint32_t {
    u8 = 0,
    i8 = 1,
    u16 = 2,
    i16 = 3,
    u32 = 4,
    i32 = 5,
    f32 = 6,
    boolean = 7,
    string = 8,
    array = 9,
    u64 = 10,
    i64 = 11,
    f64 = 12,
};

inline constexpr std::uint32_t gguf_magic = 0x46554747;  // "GGUF" read as a little-endian u32
inline constexpr std::uint64_t gguf_default_alignment = 32;
inline constexpr std::uint32_t gguf_max_dims = 4;

// A metadata value. Scalars keep their exact integer or float value; arrays keep strings, integers
// or floats in the vector that matches their element type.
struct gguf_value {
    gguf_type type = gguf_type::u32;
    std::uint64_t u = 0;  // unsigned and bool
    std::int64_t i = 0;   // signed
    double f = 0;         // f32 / f64
    std::string s;
    gguf_type elem = gguf_type::u8;  // arrays: element type
    std::uint64_t count = 0;         // arrays: element count
    std::vector<std::string> strings;
    std::vector<std::int64_t> ints;
    std::vector<double> floats;
};

struct gguf_tensor_info {
    std::string name;
    std::vector<std::uint64_t> dims;  // ne[0] (row length) first
    format fmt{};
    std::uint64_t offset = 0;  // relative to the data section
    std::uint64_t bytes = 0;
    std::uint64_t file_offset = 0;

    std::uint64_t elements() const {
        std::uint64_t n = 1;
        for (auto d : dims) n = checked_mul(n, d);
        return n;
    }
    std::uint64_t rows() const { return dims.empty() ? 0 : elements() / dims[0]; }
};

}  // namespace vramplan::io
