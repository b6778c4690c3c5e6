// The RoPE the forward pass applies, read from the graph's rope ops: base, linear scaling, NeoX
// pairs and Llama 3.1's divisors. A scaling the kernels do not implement is refused when a
// forward pass is built, rather than found later as wrong text.
#pragma once

#include <cstddef>
#include <string>

#include "vramplan/error.hpp"
#include "vramplan/kernels/block_math.hpp"
#include "vramplan/model/graph.hpp"
#include "vramplan/model/model_desc.hpp"

namespace vramplan::runtime {

inline void check_rope_supported(const decoder_shape& s) {
    if (s.scaling == rope_scaling::yarn || s.scaling == rope_scaling::unknown)
        throw error("the model uses " + std::string(rope_scaling_name(s.scaling)) +
                    " RoPE scaling, which the vramplan runtime does not apply (it applies linear scaling and Llama "
                    "3.1's rope_freqs.weight), "
                    "so its output would be wrong; plan it, but run it elsewhere");
    if (s.rope_factors)
        throw error(
            "the model uses LongRoPE (rope_factors_long/short.weight), which the vramplan runtime does not apply, so "
            "its output would be wrong; plan it, but run it elsewhere");
    if (s.scaling == rope_scaling::linear && !(s.scaling_factor > 0.0f))
        throw error("linear RoPE scaling needs a positive factor");
}

// A rope op's rotation in a layer: its parameters (a sliding layer's own base and no scaling when
// the op has one), and the frequency divisors (Llama 3.1's rope_freqs.weight) when the op reads them.
inline kernels::rope_config rope_config_of(const graph_op& o, const float* divisors, bool sliding_layer = false) {
    kernels::rope_config r;
    const bool local = sliding_layer && o.rope_base_local > 0.0f;
    r.base = local ? o.rope_base_local : o.rope_base;
    r.freq_scale = local ? 1.0f : o.freq_scale;
    r.freq_divisors = divisors;
    r.neox = o.neox;
    return r;
}

}  // namespace vramplan::runtime
