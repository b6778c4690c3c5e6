// fits<Model, Target, Limits>: a compile-time verdict. When the model does not fit, compilation
// stops inside model_does_not_fit<Needed, Budget, Shortfall>, so the compiler's error shows the
// three numbers (bytes) as template arguments next to advice on what to change.
#pragma once

#include <cstdint>

#include "vramplan/model/layers.hpp"
#include "vramplan/plan/plan.hpp"
#include "vramplan/target/target_desc.hpp"

namespace vramplan {

template <std::uint64_t NeededBytes, std::uint64_t BudgetBytes, std::uint64_t ShortfallBytes>
struct model_does_not_fit {
    static_assert(ShortfallBytes == 0,
                  "vramplan: the model does not fit the target GPU. NeededBytes (weights + KV cache + activations + "
                  "runtime reserve) exceeds BudgetBytes (device memory) by ShortfallBytes. Try: quantize the weights "
                  "(q8_0, q4_0), quantize the KV cache (q8_0), shorten limits.context, lower limits.ubatch or "
                  "limits.batch, use attention_kernel::fused, or plan with offload (plan_auto_offload).");
    static constexpr bool value = ShortfallBytes == 0;
};

template <model_type Model, gpu_target Target, limits Limits = limits{}, plan_options Options = plan_options{}>
inline constexpr plan compile_time_plan = plan_inference(Model::describe(), Target::value, Limits, Options);

// A plain boolean, for if constexpr and requires-clauses.
template <model_type Model, gpu_target Target, limits Limits = limits{}, plan_options Options = plan_options{}>
inline constexpr bool fits_v = compile_time_plan<Model, Target, Limits, Options>.fits();

// For static_assert: true, or a compile error carrying the numbers.
template <model_type Model, gpu_target Target, limits Limits = limits{}, plan_options Options = plan_options{}>
inline constexpr bool fits = model_does_not_fit<compile_time_plan<Model, Target, Limits, Options>.needed(),
                                                compile_time_plan<Model, Target, Limits, Options>.budget(),
                                                compile_time_plan<Model, Target, Limits, Options>.shortfall()>::value;

}  // namespace vramplan
