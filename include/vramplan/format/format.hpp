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
    // Hugging Face checkpoints' quantized Linear layers, as transformers holds them once loaded.
    // Their scales are laid out over the whole tensor, so their bytes are a tensor's, not a row's
    // (tensor_bytes; is_tensor_format): weights only, never a cache or activations.
    bnb_nf4 = 1004,     // bitsandbytes 4-bit NormalFloat, blocks of 64; double_quant: the absmax in 8 bits
    bnb_fp4 = 1005,     // bitsandbytes 4-bit float, the same layout
    bnb_int8 = 1006,    // bitsandbytes LLM.int8(): int8 values, one f32 scale (SCB) per output row
    gptq = 1007,        // GPTQ: `bits`-bit values packed in int32, per group a scale (f16) and a zero (bits)
    awq = 1008,         // AWQ (GEMM): 4-bit values packed in int32, per group a scale (f16) and a 4-bit zero
    fp8_block = 1009,   // fp8 (e4m3) values, one f32 inverse scale per `group` x `group` block (DeepSeek-V3)
    fp8_tensor = 1010,  // fp8 (e4m3) values, one f32 scale per tensor (AutoFP8), and an input scale if static
};

// A structural value (usable as a template argument): the id plus the parameters of the
// parameterized formats.
struct format {
    format_id id = format_id::f32;
    // int4_group, gptq, awq: elements per scale along a row (gptq: 0 is one group per row, its
    // group_size -1); fp8_block: the square block's edge.
    std::uint32_t group = 0;
    bool zero_point = false;    // int4_group only: a 4-bit zero point per group
    std::uint8_t bits = 0;      // gptq only: bits per value (2, 3, 4 or 8)
    bool double_quant = false;  // bnb_nf4, bnb_fp4: bnb_4bit_use_double_quant
    bool input_scale = false;   // fp8_tensor: an f32 activation scale too (activation_scheme "static")

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
inline constexpr std::array<format_traits, 45> format_table{{
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
    // Checkpoint formats: tensor_bytes() handles their layout; block_elems is what a row must hold.
    {format_id::bnb_nf4, "nf4", 1, 0},
    {format_id::bnb_fp4, "fp4", 1, 0},
    {format_id::bnb_int8, "bnb_int8", 1, 1},
    {format_id::gptq, "gptq", 0, 0},
    {format_id::awq, "awq", 0, 0},
    {format_id::fp8_block, "fp8_block", 1, 1},
    {format_id::fp8_tensor, "fp8_tensor", 1, 1},
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

// Formats whose bytes belong to a whole tensor (Hugging Face checkpoints' quantized layers): their
// scales run over the tensor, or the tensor keeps tables of its own, so a row has no size of its own.
constexpr bool is_tensor_format(format f) {
    switch (f.id) {
        case format_id::bnb_nf4:
        case format_id::bnb_fp4:
        case format_id::gptq:
        case format_id::awq:
        case format_id::fp8_block:
        case format_id::fp8_tensor: return true;
        default: return false;
    }
}

// Elements a row length must be a multiple of: a block, a group, or GPTQ's and AWQ's packing of
// values into 32-bit words.
constexpr std::uint64_t block_elements(format f) {
    switch (f.id) {
        case format_id::int4_group:
        case format_id::awq: return f.group;
        case format_id::gptq: return 32;
        default: return traits(f).block_elems;
    }
}

inline std::string name(format f) {
    switch (f.id) {
        case format_id::int4_group: return "int4_g" + std::to_string(f.group) + (f.zero_point ? "_zp" : "");
        case format_id::bnb_nf4:
        case format_id::bnb_fp4: return std::string(traits(f).name) + (f.double_quant ? "_dq" : "");
        case format_id::gptq:
            return "gptq" + std::to_string(f.bits) + (f.group ? "_g" + std::to_string(f.group) : std::string("_row"));
        case format_id::awq: return "awq_g" + std::to_string(f.group);
        case format_id::fp8_block: return "fp8_b" + std::to_string(f.group);
        case format_id::fp8_tensor: return f.input_scale ? "fp8_tensor_static" : "fp8_tensor";
        default: return std::string(traits(f).name);
    }
}

constexpr void validate(format f) {
    if (f.id == format_id::int4_group && (f.group < 2 || f.group % 2 != 0))
        throw error("int4_group needs an even group size of at least 2, got " + std::to_string(f.group));
    if (f.id == format_id::gptq && !(f.bits == 2 || f.bits == 3 || f.bits == 4 || f.bits == 8))
        throw error("GPTQ stores 2, 3, 4 or 8 bits per value, not " + std::to_string(f.bits));
    if (f.id == format_id::gptq && f.group != 0 && f.group % 32 != 0)
        throw error("a GPTQ group is a multiple of 32 values (its int32 packing), not " + std::to_string(f.group));
    if (f.id == format_id::awq && (f.group == 0 || f.group % 8 != 0))
        throw error("an AWQ group is a positive multiple of 8 values, not " + std::to_string(f.group));
    if (f.id == format_id::fp8_block && f.group == 0) throw error("fp8 blocks need an edge of at least 1 value");
    (void)traits(f);
}

// Exact bytes of one row of n elements, scales and zero points included. Block formats quantize
// along the row, so n must be a whole number of blocks.
constexpr std::uint64_t row_bytes(format f, std::uint64_t n) {
    validate(f);
    if (is_tensor_format(f))
        throw error(name(f) +
                    " is a checkpoint's layout, whose scales run over a whole tensor: it stores weights, not a cache "
                    "or activations (row by row)");
    const std::uint64_t block = block_elements(f);
    if (n % block != 0)
        throw error("a row of " + std::to_string(n) + " elements cannot be stored as " + name(f) +
                    ": rows must be a multiple of " + std::to_string(block) +
                    " elements; choose another format for this tensor (e.g. f16)");
    switch (f.id) {
        case format_id::int8_row: return checked_add(n, 2);
        case format_id::bnb_int8: return checked_add(n, 4);
        case format_id::int4_group: {
            const std::uint64_t groups = n / f.group;
            return checked_add(checked_add(n / 2, checked_mul(groups, 2)), f.zero_point ? ceil_div(groups, 2) : 0);
        }
        default: return checked_mul(n / block, traits(f).block_bytes);
    }
}

namespace detail {
// bitsandbytes' 4-bit layout (bitsandbytes.functional.quantize_4bit) over the tensor's n values
// flattened: two values a byte, then per block of 64 an absmax, f32, and the tensor's own 16-entry
// f32 code (QuantState.code). Double quantization stores each absmax as a uint8 instead, quantized
// blockwise by 256 (quantize_blockwise): per 256 absmaxes an f32 absmax, a 256-entry f32 code, and
// the f32 mean subtracted before (QuantState.offset).
constexpr std::uint64_t bnb_4bit_bytes(format f, std::uint64_t n) {
    const std::uint64_t blocks = ceil_div(n, 64), code = 16 * 4;
    const std::uint64_t absmax =
        f.double_quant ? checked_add(checked_add(blocks, checked_mul(ceil_div(blocks, 256), 4)), 256 * 4 + 4)
                       : checked_mul(blocks, 4);
    return checked_add(checked_add(ceil_div(n, 2), absmax), code);
}
// GPTQ's tensors for a Linear of `rows` outputs and `cols` inputs (AutoGPTQ and GPTQModel's
// layout): qweight packs `bits`-bit values into int32 along the inputs ([cols x bits / 32, rows]),
// qzeros packs one zero per group and output the same way ([groups, rows x bits / 32]), scales
// are f16 [groups, rows], and g_idx gives each input its group (int32 [cols]).
constexpr std::uint64_t gptq_bytes(format f, std::uint64_t rows, std::uint64_t cols) {
    const std::uint64_t groups = f.group ? ceil_div(cols, f.group) : 1;
    const std::uint64_t qweight = checked_mul(checked_mul(ceil_div(checked_mul(cols, f.bits), 32), rows), 4);
    const std::uint64_t qzeros = checked_mul(checked_mul(groups, ceil_div(checked_mul(rows, f.bits), 32)), 4);
    return checked_add(checked_add(qweight, qzeros), checked_add(checked_mul(groups, rows, 2), checked_mul(cols, 4)));
}
// AWQ's GEMM layout: qweight int32 [cols, rows / 8] (eight 4-bit values a word, along the outputs),
// qzeros int32 [groups, rows / 8], scales f16 [groups, rows]; no g_idx.
constexpr std::uint64_t awq_bytes(format f, std::uint64_t rows, std::uint64_t cols) {
    const std::uint64_t groups = cols / f.group, words = ceil_div(rows, 8);
    return checked_add(checked_mul(checked_add(cols, groups), words, 4), checked_mul(groups, rows, 2));
}
}  // namespace detail

// A tensor is stored row by row (GGUF's ne[0] is the row), except in the checkpoint formats, whose
// scales and tables belong to the tensor.
constexpr std::uint64_t tensor_bytes(format f, std::uint64_t rows, std::uint64_t cols) {
    if (!is_tensor_format(f)) return checked_mul(rows, row_bytes(f, cols));
    validate(f);
    if (cols % block_elements(f) != 0)
        throw error("a row of " + std::to_string(cols) + " values cannot be stored as " + name(f) +
                    ": rows must be a multiple of " + std::to_string(block_elements(f)) + " values");
    switch (f.id) {
        case format_id::bnb_nf4:
        case format_id::bnb_fp4: return detail::bnb_4bit_bytes(f, checked_mul(rows, cols));
        case format_id::gptq: return detail::gptq_bytes(f, rows, cols);
        case format_id::awq: return detail::awq_bytes(f, rows, cols);
        case format_id::fp8_block:  // DeepSeek-V3's weight_scale_inv: f32 [ceil(rows / b), ceil(cols / b)]
            return checked_add(checked_mul(rows, cols),
                               checked_mul(ceil_div(rows, f.group), ceil_div(cols, f.group), 4));
        case format_id::fp8_tensor:  // AutoFP8's weight_scale, and input_scale under a static scheme: f32 scalars
            return checked_add(checked_mul(rows, cols), f.input_scale ? 8 : 4);
        default: break;
    }
    return 0;
}

constexpr bool row_fits_format(format f, std::uint64_t n) {
    const std::uint64_t block = block_elements(f);
    return block != 0 && n % block == 0;
}

// Formats a name alone does not give: their parameters are part of the name.
constexpr bool is_parameterized(format_id id) {
    return id == format_id::int4_group || id == format_id::gptq || id == format_id::awq || id == format_id::fp8_block;
}

// Look-ups for run-time input. An unknown name or id is an error that lists what is known.
inline std::string known_format_names() {
    std::string out;
    for (const auto& t : detail::format_table) {
        if (is_parameterized(t.id)) continue;
        out += (out.empty() ? "" : ", ") + std::string(t.name);
    }
    return out + ", nf4_dq, fp4_dq, fp8_tensor_static, int4_g<G>[_zp], gptq<B>_g<G>, gptq<B>_row, awq_g<G>, fp8_b<N>";
}

namespace detail {
// The digits after `prefix` at the start of `text`, or nothing (at most 6 of them).
inline std::optional<std::uint32_t> number_after(std::string_view text, std::string_view prefix) {
    if (!text.starts_with(prefix)) return std::nullopt;
    const std::string_view rest = text.substr(prefix.size());
    if (rest.empty() || rest.size() > 6 || rest.find_first_not_of("0123456789") != std::string_view::npos)
        return std::nullopt;
    std::uint32_t v = 0;
    for (char c : rest) v = v * 10 + static_cast<std::uint32_t>(c - '0');
    return v;
}
}  // namespace detail

inline std::optional<format> parse_format(std::string_view text) {
    std::string lower;
    for (char c : text)
        lower += c == '-' ? '_' : static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);  // nf4-dq
    for (const auto& t : detail::format_table)
        if (!is_parameterized(t.id) && t.name == lower) return format{t.id};
    if (lower == "nf4_dq" || lower == "fp4_dq")
        return format{.id = lower[0] == 'n' ? format_id::bnb_nf4 : format_id::bnb_fp4, .double_quant = true};
    auto checked = [](format f) -> std::optional<format> {
        try {
            validate(f);
        } catch (const error&) {
            return std::nullopt;
        }
        return f;
    };
    if (lower.starts_with("gptq") && lower.size() > 5) {
        const auto bits = static_cast<std::uint8_t>(lower[4] - '0');
        const std::string_view rest = std::string_view(lower).substr(5);
        if (rest == "_row") return checked(format{.id = format_id::gptq, .bits = bits});
        if (const auto g = detail::number_after(rest, "_g"))
            return checked(format{.id = format_id::gptq, .group = *g, .bits = bits});
        return std::nullopt;
    }
    if (const auto g = detail::number_after(lower, "awq_g")) return checked(format{.id = format_id::awq, .group = *g});
    if (const auto b = detail::number_after(lower, "fp8_b"))
        return checked(format{.id = format_id::fp8_block, .group = *b});
    if (lower == "fp8_tensor_static") return format{.id = format_id::fp8_tensor, .input_scale = true};
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
