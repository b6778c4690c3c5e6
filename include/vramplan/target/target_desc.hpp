// A device to plan for. Capacity is the memory the device has; the reserve is what is gone before
// the program allocates anything (CUDA context, cuBLAS/cuDNN workspaces, memory the driver keeps);
// the planner's budget is capacity minus reserve. Bandwidths predict decode speed.
#pragma once

#include <concepts>
#include <cstdint>
#include <string_view>

#include "vramplan/error.hpp"
#include "vramplan/format/checked_math.hpp"

namespace vramplan {

// The host memory bandwidth assumed when none is given: 60 GB/s, what dual-channel DDR5-4800
// delivers to a CPU reading in practice (2 x 38.4 GB/s peak). It prices experts kept in the host
// tier; give the real figure with --host-bandwidth (a server with 8 DDR5 channels reads ~300 GB/s).
inline constexpr std::uint64_t default_host_bandwidth = 60'000'000'000;

struct target_desc {
    std::string_view name = "custom";
    std::uint64_t capacity = 0;          // bytes of device memory
    std::uint64_t reserve = 0;           // bytes unavailable to the program's arena
    std::uint64_t memory_bandwidth = 0;  // device memory read bytes/s
    std::uint64_t link_bandwidth = 0;    // host-to-device bytes/s (PCIe x16 generation, one direction)
    std::uint8_t cc_major = 0;
    std::uint8_t cc_minor = 0;
    bool unified = false;              // one memory shared with the CPU (Jetson): no host tier
    std::string_view aliases = "";     // space-separated extra names for look-up
    std::uint64_t host_bandwidth = 0;  // host memory read bytes/s by the CPU; 0: default_host_bandwidth

    constexpr std::uint64_t budget() const { return capacity > reserve ? capacity - reserve : 0; }
    constexpr std::uint64_t host_memory_bandwidth() const {
        return host_bandwidth ? host_bandwidth : default_host_bandwidth;
    }
};

// A type names a target when it carries a target_desc: one short struct declares a custom device,
//   struct my_board { static constexpr vramplan::target_desc value{.name = "board", .capacity = 4ull << 30}; };
template <class T>
concept gpu_target = requires {
    { T::value } -> std::convertible_to<target_desc>;
};

// The same device with the user's reserve instead of the catalog's.
constexpr target_desc with_reserve(target_desc t, std::uint64_t reserve) {
    t.reserve = reserve;
    return t;
}

}  // namespace vramplan
