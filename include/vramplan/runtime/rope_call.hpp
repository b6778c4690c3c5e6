// The RoPE both forward passes apply, read from the plan: base, linear scaling and Llama 3.1's
// divisors at their planned offset in the GPU tier. A scaling the kernels do not implement is
// refused when a forward pass is built, rather than found later as wrong text.
#pragma once

#include <cstddef>
#include <string>

#include "vramplan/error.hpp"
#include "vramplan/kernels/block_math.hpp"
#include "vramplan/plan/plan.hpp"

namespace vramplan::runtime {

inline void check_rope_supported(const decoder_shape& s) {
    if (s.scaling == rope_scaling::yarn || s.scaling == rope_scaling::unknown)
        throw error("the model uses " + std::string(rope_scaling_name(s.scaling)) +
                    " RoPE scaling, which the vramplan runtime does not apply (it applies linear scaling and Llama 3.1's rope_freqs.weight), "
                    "so its output would be wrong; plan it, but run it elsewhere");
    if (s.scaling == rope_scaling::linear && !(s.scaling_factor > 0.0f)) throw error("linear RoPE scaling needs a positive factor");
}

// gpu_base: the start of the arena's GPU tier, where the plan put rope_freqs.weight.
inline kernels::rope_config rope_config_of(const plan& p, const std::byte* gpu_base) {
    const auto& s = p.model.shape;
    kernels::rope_config r;
    r.base = s.rope_base;
    r.freq_scale = s.scaling == rope_scaling::linear ? 1.0f / s.scaling_factor : 1.0f;
    r.freq_divisors = s.rope_freqs ? reinterpret_cast<const float*>(gpu_base + p.rope_freqs_offset) : nullptr;
    r.neox = s.rope_neox;
    return r;
}

}  // namespace vramplan::runtime
