// Number formats as types, for templates (layers, models, kernels). Each type carries the run-time
// format value, so every footprint is computed by row_bytes() in format.hpp: one implementation.
#pragma once

#include <concepts>
#include <cstdint>

#include "vramplan/format/format.hpp"

namespace vramplan {

// A type names a storage format when it carries a valid format value.
template <class T>
concept storage_format = requires {
    { T::value } -> std::convertible_to<format>;
}
&&(validate(T::value), true);

template <format F>
struct format_constant {
    static constexpr format value = F;
    // Bytes of n elements stored as one row; n must be a whole number of blocks.
    static constexpr std::uint64_t storage_bytes(std::uint64_t n) { return row_bytes(value, n); }
};

struct f32 : format_constant<format{format_id::f32}> {};
struct f16 : format_constant<format{format_id::f16}> {};
struct bf16 : format_constant<format{format_id::bf16}> {};
struct fp8_e4m3 : format_constant<format{format_id::fp8_e4m3}> {};
struct fp8_e5m2 : format_constant<format{format_id::fp8_e5m2}> {};
struct q8_0 : format_constant<format{format_id::q8_0}> {};
struct q4_0 : format_constant<format{format_id::q4_0}> {};
struct q4_1 : format_constant<format{format_id::q4_1}> {};
struct q5_0 : format_constant<format{format_id::q5_0}> {};
struct q5_1 : format_constant<format{format_id::q5_1}> {};
struct q2_k : format_constant<format{format_id::q2_k}> {};
struct q3_k : format_constant<format{format_id::q3_k}> {};
struct q4_k : format_constant<format{format_id::q4_k}> {};
struct q5_k : format_constant<format{format_id::q5_k}> {};
struct q6_k : format_constant<format{format_id::q6_k}> {};
struct q8_k : format_constant<format{format_id::q8_k}> {};
struct iq2_xxs : format_constant<format{format_id::iq2_xxs}> {};
struct iq2_xs : format_constant<format{format_id::iq2_xs}> {};
struct iq2_s : format_constant<format{format_id::iq2_s}> {};
struct iq3_xxs : format_constant<format{format_id::iq3_xxs}> {};
struct iq3_s : format_constant<format{format_id::iq3_s}> {};
struct iq1_s : format_constant<format{format_id::iq1_s}> {};
struct iq1_m : format_constant<format{format_id::iq1_m}> {};
struct iq4_nl : format_constant<format{format_id::iq4_nl}> {};
struct iq4_xs : format_constant<format{format_id::iq4_xs}> {};
struct tq1_0 : format_constant<format{format_id::tq1_0}> {};
struct tq2_0 : format_constant<format{format_id::tq2_0}> {};
struct mxfp4 : format_constant<format{format_id::mxfp4}> {};
struct int8_row : format_constant<format{format_id::int8_row}> {};

// AWQ/GPTQ-style 4-bit weights: a fp16 scale per group of G elements, optionally a 4-bit zero point.
template <std::uint32_t G, bool ZeroPoint = false>
struct int4_group : format_constant<format{format_id::int4_group, G, ZeroPoint}> {
    static_assert(G >= 2 && G % 2 == 0, "int4_group needs an even group size (32, 64 and 128 are usual)");
};

}  // namespace vramplan
