// Refuse before allocating: a plan is compared with the memory the device and the host really
// have free, and a plan that does not fit is an error showing both tiers, the shortfall and the
// planner's advice, instead of an out-of-memory failure later.
#pragma once

#include <cstdint>
#include <string>

#include "vramplan/format/bytes.hpp"
#include "vramplan/plan/advice.hpp"
#include "vramplan/plan/plan.hpp"

namespace vramplan::runtime {

inline std::string budget_report(const plan& p, std::uint64_t device_free, std::uint64_t host_free) {
    std::string s;
    s += "  gpu tier: " + to_string(bytes{p.gpu.total()}) + " (" + with_separators(p.gpu.total()) + " B: weights " +
         to_string(bytes{p.gpu.weights.bytes}) + ", KV " + to_string(bytes{p.gpu.kv.bytes}) + ", activations " +
         to_string(bytes{p.gpu.activations.bytes}) + ", staging " + to_string(bytes{p.gpu.staging.bytes}) +
         "); device has " + to_string(bytes{device_free}) + " free\n";
    s += "  host tier: " + to_string(bytes{p.host.total()}) + "; host has " + to_string(bytes{host_free}) +
         " available\n";
    return s;
}

// Throws if the plan's tiers exceed what is free. `device_free` is what the device reports free
// now (the CUDA context is already paid for), so the plan's reserve is not added again.
inline void check_budget(const plan& p, std::uint64_t device_free, std::uint64_t host_free) {
    const bool device_short = p.gpu.total() > device_free;
    const bool host_short = host_free != 0 && p.host.total() > host_free;
    if (!device_short && !host_short) return;
    std::string msg = "vramplan: refusing to allocate: the plan does not fit the memory that is free\n" +
                      budget_report(p, device_free, host_free);
    if (device_short)
        msg += "  device shortfall: " + to_string(bytes{p.gpu.total() - device_free}) + " (" +
               with_separators(p.gpu.total() - device_free) + " B)\n";
    if (host_short) msg += "  host shortfall: " + to_string(bytes{p.host.total() - host_free}) + "\n";
    target_desc now = p.target;
    now.capacity = device_free;
    now.reserve = 0;
    const auto advice = advise(p.model, now, p.lim, p.options);
    if (!advice.empty()) {
        msg += "  try:\n";
        for (const auto& a : advice)
            msg += "    - " + a.remedy + " (saves " + to_string(bytes{a.saved_bytes}) + (a.fits ? ", fits" : "") +
                   "; " + a.tradeoff + ")\n";
    }
    throw error(msg);
}

}  // namespace vramplan::runtime
