// Which stored formats the kernels compute on, and the conversion from the planner's format
// values. Everything else (the IQ formats but IQ4_NL, fp8, MXFP4...) is planned but not computed on.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <type_traits>
#include <utility>

#include "vramplan/error.hpp"
#include "vramplan/format/format.hpp"
#include "vramplan/kernels/block_math.hpp"

namespace vramplan::kernels {

inline constexpr std::size_t n_kernel_formats = static_cast<std::size_t>(kernel_format::count);

// The stored format of each kernel format, in kernel_format order: names and block sizes come from
// format/format.hpp's table, and the assertion below keeps the two in step.
inline constexpr std::array<format_id, n_kernel_formats> kernel_format_ids{
    format_id::f32,  format_id::f16,  format_id::bf16, format_id::q8_0,   format_id::q4_0,
    format_id::q4_1, format_id::q5_0, format_id::q5_1, format_id::iq4_nl, format_id::q2_k,
    format_id::q3_k, format_id::q4_k, format_id::q5_k, format_id::q6_k};
constexpr bool kernel_formats_match_table() {
    for (std::size_t i = 0; i < n_kernel_formats; ++i) {
        const auto k = static_cast<kernel_format>(i);
        const auto& t = traits(format{kernel_format_ids[i]});
        if (t.block_elems != static_cast<std::uint32_t>(block_size(k)) ||
            t.block_bytes != static_cast<std::uint32_t>(block_bytes(k)))
            return false;
    }
    return true;
}
static_assert(kernel_formats_match_table(),
              "kernel_format_ids must list the stored format of each kernel_format, in order");

// The format table's names are string literals, so the view's data is a terminated C string.
inline const char* kernel_format_name(kernel_format f) {
    const auto i = static_cast<std::size_t>(f);
    return i < n_kernel_formats ? traits(format{kernel_format_ids[i]}).name.data() : "?";
}

inline kernel_format to_kernel_format(format f, const std::string& what) {
    for (std::size_t i = 0; i < n_kernel_formats; ++i)
        if (f == format{kernel_format_ids[i]}) return static_cast<kernel_format>(i);
    throw error(what + " is stored as " + name(f) +
                ", which vramplan's kernels do not compute on (they take f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, "
                "iq4_nl and q2_k to q6_k); requantize the model to one of these");
}

// Calls fn(std::integral_constant<kernel_format, f>{}) for the run-time value f: the one place a
// run-time format becomes a template argument, so the dispatchers list no formats of their own.
template <class Fn>
decltype(auto) with_kernel_format(kernel_format f, Fn&& fn) {
    using R = decltype(fn(std::integral_constant<kernel_format, kernel_format::f32>{}));
    return [&]<std::size_t... I>(std::index_sequence<I...>)->R {
        if constexpr (std::is_void_v<R>) {
            if (!((f == static_cast<kernel_format>(I)
                       ? (fn(std::integral_constant<kernel_format, static_cast<kernel_format>(I)>{}), true)
                       : false) ||
                  ...))
                throw error("internal: not a kernel format");
        } else {
            R r{};
            if (!((f == static_cast<kernel_format>(I)
                       ? (r = fn(std::integral_constant<kernel_format, static_cast<kernel_format>(I)>{}), true)
                       : false) ||
                  ...))
                throw error("internal: not a kernel format");
            return r;
        }
    }
    (std::make_index_sequence<n_kernel_formats>{});
}

}  // namespace vramplan::kernels
