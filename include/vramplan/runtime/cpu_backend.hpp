// The CPU backend: both tiers are host memory and copies are memcpy. The "device" tier has its own
// budget, so a plan that streams layers runs, and is tested, exactly as on a GPU.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "vramplan/error.hpp"
#include "vramplan/plan/plan.hpp"

namespace vramplan::runtime {

struct memory_info {
    std::uint64_t free = 0;
    std::uint64_t total = 0;
};

// Memory the kernel would give this process now (MemAvailable), or 0 if it cannot tell.
inline std::uint64_t host_memory_available() {
    std::ifstream in("/proc/meminfo");
    std::string key;
    std::uint64_t kb = 0;
    std::string unit;
    while (in >> key >> kb >> unit)
        if (key == "MemAvailable:") return kb * 1024;
    return 0;
}

class cpu_backend {
public:
    static constexpr const char* name = "cpu";
    static constexpr std::uint64_t alignment = 4096;
    static constexpr bool device_is_host_memory = true;

    // device_budget: bytes the device tier may use (0: as much host memory as is available).
    explicit cpu_backend(std::uint64_t device_budget = 0) : budget_(device_budget) {}

    void* allocate(tier, std::uint64_t bytes) {
        if (bytes == 0) return nullptr;
        void* p = std::aligned_alloc(alignment, align_up(bytes, alignment));
        if (!p) throw error("cpu backend: cannot allocate " + std::to_string(bytes) + " bytes");
        return p;
    }
    void release(tier, void* p) noexcept { std::free(p); }

    memory_info device_memory() const {
        const std::uint64_t host = host_memory_available();
        const std::uint64_t free = budget_ ? budget_ : host;
        return {free, free};
    }
    memory_info host_memory() const {
        const std::uint64_t host = host_memory_available();
        return {host, host};
    }

    // Host tier -> device tier. Synchronous here; the slot says which staging buffer it feeds.
    void copy_to_device(void* dst, const void* src, std::uint64_t bytes, int /*slot*/) { std::memcpy(dst, src, bytes); }
    void wait_for_copy(int /*slot*/) {}
    void release_slot(int /*slot*/) {}
    void upload(void* dst, const void* src, std::uint64_t bytes) { std::memcpy(dst, src, bytes); }
    void download(void* dst, const void* src, std::uint64_t bytes) { std::memcpy(dst, src, bytes); }

private:
    std::uint64_t budget_;
};

}  // namespace vramplan::runtime
