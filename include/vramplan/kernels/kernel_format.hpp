// Which stored formats the kernels compute on, and the conversion from the planner's format
// values. Everything else (K-quants, IQ formats, fp8...) is planned but not computed on.
#pragma once

#include <string>

#include "vramplan/error.hpp"
#include "vramplan/format/format.hpp"
#include "vramplan/kernels/block_math.hpp"

namespace vramplan::kernels {

inline kernel_format to_kernel_format(format f, const std::string& what) {
    switch (f.id) {
        case format_id::f32: return kernel_format::f32;
        case format_id::f16: return kernel_format::f16;
        case format_id::bf16: return kernel_format::bf16;
        case format_id::q8_0: return kernel_format::q8_0;
        case format_id::q4_0: return kernel_format::q4_0;
        default:
            throw error(what + " is stored as " + name(f) +
                        ", which vramplan's kernels do not compute on (they take f32, f16, bf16, q8_0 and q4_0); "
                        "requantize the model to one of these");
    }
}

inline const char* kernel_format_name(kernel_format f) {
    switch (f) {
        case kernel_format::f32: return "f32";
        case kernel_format::f16: return "f16";
        case kernel_format::bf16: return "bf16";
        case kernel_format::q8_0: return "q8_0";
        case kernel_format::q4_0: return "q4_0";
    }
    return "?";
}

}  // namespace vramplan::kernels
