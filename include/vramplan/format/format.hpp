// The run-time description of a number format and its exact storage arithmetic. Compile-time
// format types (types.hpp) carry one of these values, so a footprint is computed by the same
// function whether the format came from a template argument or from a GGUF header.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "vramplan/error.hpp"
#include "vramplan/format/checked_math.hpp"

namespace vramplan {

// Values below 1000 are GGUF's ggml_type ids, so a tensor type read from a file is a format_id
// as it stands; formats GGUF does not define live above 1000.
enum class format_id : std::uint32_t {
    f32 = 0,
    f16 = 1,
    q4_0 = 2,
    q4_1 = 3,
    q5_0 = 6,
    q5_1 = 7,
    q8_0 = 8,
    q8_1 = 9,
    q2_k = 10,
    q3_k = 11,
    q4_k = 12,
    q5_k = 13,
    q6_k = 14,
    q8_k = 15,
    iq2_xxs = 16,
    iq2_xs = 17,
    iq3_xxs = 18,
    iq1_s = 19,
    iq4_nl = 20,
    iq3_s = 21,
    iq2_s = 22,
    iq4_xs = 23,
    i8 = 24,
    i16 = 25,
    i32 = 26,
    i64 = 27,
    f64 = 28,
    iq1_m = 29,
    bf16 = 30,
    tq1_0 = 34,
    tq2_0 = 35,
    mxfp4 = 39,
    fp8_e4m3 = 1000,
    fp8_e5m2 = 1001,
    int8_row = 1002,    // int8 values, one fp16 scale per row
    int4_group = 1003,  // 4-bit values, one fp16 scale (and optionally a 4-bit zero point) per group
};

// A structural value (usable as a template argument): the id plus the parameters of the
// parameterized formats.
struct format {
    format_id id = format_id::f32;
    std::uint32_t group = 0;  // int4_group only: elements per scale
    bool zero_point = false;  // int4_group only: a 4-bit zero point per group

    friend constexpr bool operator==(const format&, const format&) = default;
};

struct format_traits {
    format_id id;
    std::string_view name;
    std::uint32_t block_elems;  // a row must hold a whole number of blocks
    std::uint32_t block_bytes;
};

namespace detail {
// Block sizes follow the block structs of GGUF (see blocks.hpp, where each is static_asserted).
inline constexpr std::array<format_traits, 38> format_table{{
    {format_id::f32, "f32", 1, 4},
    {format_id::f16, "f16", 1, 2},
    {format_id::bf16, "bf16", 1, 2},
    {format_id::f64, "f64", 1, 8},
    {format_id::i8, "i8", 1, 1},
    {format_id::i16, "i16", 1, 2},
    {format_id::i32, "i32", 1, 4},
    {format_id::i64, "i64", 1, 8},
    {format_id::q4_0, "q4_0", 32, 18},
    {format_id::q4_1, "q4_1", 32, 20},
    {format_id::q5_0, "q5_0", 32, 22},
    {format_id::q5_1, "q5_1", 32, 24},
    {format_id::q8_0, "q8_0", 32, 34},
    {format_id::q8_1, "q8_1", 32, 36},
    {format_id::q2_k, "q2_k", 256, 84},
    {format_id::q3_k, "q3_k", 256, 110},
    {format_id::q4_k, "q4_k", 256, 144},
    {format_id::q5_k, "q5_k", 256, 176},
    {format_id::q6_k, "q6_k", 256, 210},
    {format_id::q8_k, "q8_k", 256, 292},
    {format_id::iq2_xxs, "iq2_xxs", 256, 66},
    {format_id::iq2_xs, "iq2_xs", 256, 74},
    {format_id::iq3_xxs, "iq3_xxs", 256, 98},
    {format_id::iq1_s, "iq1_s", 256, 50},
    {format_id::iq4_nl, "iq4_nl", 32, 18},
    {format_id::iq3_s, "iq3_s", 256, 110},
    {format_id::iq2_s, "iq2_s", 256, 82},
    {format_id::iq4_xs, "iq4_xs", 256, 136},
    {format_id::iq1_m, "iq1_m", 256, 56},
    {format_id::tq1_0, "tq1_0", 256, 54},
    {format_id::tq2_0, "tq2_0", 256, 66},
    {format_id::mxfp4, "mxfp4", 32, 17},
    {format_id::fp8_e4m3, "fp8_e4m3", 1, 1},
    {format_id::fp8_e5m2, "fp8_e5m2", 1, 1},
    // Parameterized formats: the row arithmetic in row_bytes() handles their scales.
    {format_id::int8_row, "int8_row", 1, 1},
    {format_id::int4_group, "int4_group", 0, 0},
    // Names users commonly type for the same formats.
    {format_id::fp8_e4m3, "fp8", 1, 1},
    {format_id::f16, "fp16", 1, 2},
}};
}  // namespace detail

// An index rather than a pointer: GCC cannot compare pointers in constant expressions when
// UndefinedBehaviorSanitizer instruments them, and the sanitizer build compiles these too.
inline constexpr std::size_t no_format = ~std::size_t{0};

constexpr std::size_t traits_index(format_id id) {
    for (std::size_t i = 0; i < detail::format_table.size(); ++i)
        if (detail::format_table[i].id == id) return i;
    return no_format;
}

constexpr const format_traits& traits(format f) {
    const std::size_t i = traits_index(f.id);
    if (i == no_format) throw error("unknown format id " + std::to_string(static_cast<std::uint32_t>(f.id)));
    return detail::format_table[i];
}

// Elements a row length must be a multiple of.
constexpr std::uint64_t block_elements(format f) {
    return f.id == format_id::int4_group ? f.group : traits(f).block_elems;
}

inline std::string name(format f) {
    if (f.id == format_id::int4_group) return "int4_g" + std::to_string(f.group) + (f.zero_point ? "_zp" : "");
    return std::string(traits(f).name);
}

constexpr void validate(format f) {
    if (f.id == format_id::int4_group && (f.group < 2 || f.group % 2 != 0))
        throw error("int4_group needs an even group size of at least 2, got " + std::to_string(f.group));
    (void)traits(f);
}

// Exact bytes of one row of n elements, scales and zero points included. Block formats quantize
// along the row, so n must be a whole number of blocks.
constexpr std::uint64_t row_bytes(format f, std::uint64_t n) {
    validate(f);
    const std::uint64_t block = block_elements(f);
    if (n % block != 0)
        throw error("a row of " + std::to_string(n) + " elements cannot be stored as " + name(f) +
                    ": rows must be a multiple of " + std::to_string(block) +
                    " elements; choose another format for this tensor (e.g. f16)");
    switch (f.id) {
        case format_id::int8_row: return checked_add(n, 2);
        case format_id::int4_group: {
            const std::uint64_t groups = n / f.group;
            return checked_add(checked_add(n / 2, checked_mul(groups, 2)), f.zero_point ? ceil_div(groups, 2) : 0);
        }
        default: return checked_mul(n / block, traits(f).block_bytes);
    }
}

// A tensor is stored row by row (GGUF's ne[0] is the row).
constexpr std::uint64_t tensor_bytes(format f, std::uint64_t rows, std::uint64_t cols) {
    return checked_mul(rows, row_bytes(f, cols));
}

constexpr bool row_fits_format(format f, std::uint64_t n) {
    const std::uint64_t block = block_elements(f);
    return block != 0 && n % block == 0;
}

// Look-ups for run-time input. An unknown name or id is an error that lists what is known.
inline std::string known_format_names() {
    std::string out;
    for (const auto& t : detail::format_table) {
        if (t.id == format_id::int4_group) continue;
        out += (out.empty() ? "" : ", ") + std::string(t.name);
    }
    return out + ", int4_g<G>[_zp]";
}

inline std::optional<format> parse_format(std::string_view text) {
    std::string lower;
    for (char c : text) lower += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    for (const auto& t : detail::format_table)
        if (t.id != format_id::int4_group && t.name == lower) return format{t.id};
    if (lower.rfind("int4_g", 0) == 0) {
        std::string rest = lower.substr(6);
        bool zp = false;
        if (rest.size() > 3 && rest.substr(rest.size() - 3) == "_zp") {
            zp = true;
            rest.resize(rest.size() - 3);
        }
        if (rest.empty() || rest.size() > 6 || rest.find_first_not_of("0123456789") != std::string::npos)
            return std::nullopt;
        const auto g = static_cast<std::uint32_t>(std::stoul(rest));
        if (g < 2 || g % 2 != 0) return std::nullopt;
        return format{format_id::int4_group, g, zp};
    }
    return std::nullopt;
}

inline format format_by_name(std::string_view text) {
    if (auto f = parse_format(text)) return *f;
    throw error("unknown format '" + std::string(text) + "'; known formats: " + known_format_names());
}

inline format format_by_gguf_type(std::uint32_t type_id) {
    if (type_id < 1000)
        if (const std::size_t i = traits_index(static_cast<format_id>(type_id)); i != no_format)
            return format{detail::format_table[i].id};
    throw error("unknown GGUF tensor type id " + std::to_string(type_id) + " (a newer GGUF type, or a corrupt file)");
}

}  // namespace vramplan
