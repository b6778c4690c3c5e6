// Training planned against a device: the largest micro-batch whose footprint (model/training.hpp)
// fits, and the gradient accumulation that reaches the global batch with it.
#pragma once

#include <cstdint>

#include "vramplan/error.hpp"
#include "vramplan/model/training.hpp"
#include "vramplan/target/target_desc.hpp"

namespace vramplan {

// The largest micro-batch whose footprint fits the device (0 if not even one sequence fits), and
// the gradient-accumulation steps that reach the requested global batch with it.
struct micro_batch_fit {
    std::uint64_t micro_batch = 0;
    std::uint64_t accumulation_steps = 0;
};

constexpr micro_batch_fit fit_micro_batch(const model_desc& m, training_config c, const target_desc& t,
                                          std::uint64_t global_batch) {
    if (global_batch == 0) throw error("global batch must be at least 1 sequence");
    micro_batch_fit r;
    std::uint64_t lo = 0, hi = global_batch;
    while (lo < hi) {  // footprint grows with the micro-batch
        const std::uint64_t mid = lo + (hi - lo + 1) / 2;
        c.micro_batch = mid;
        if (checked_add(training_memory(m, c).total(), t.reserve) <= t.capacity)
            lo = mid;
        else
            hi = mid - 1;
    }
    r.micro_batch = lo;
    r.accumulation_steps = lo ? ceil_div(global_batch, lo) : 0;
    return r;
}

}  // namespace vramplan
