// What a backend reports of a memory tier, and what the host has free.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>

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

}  // namespace vramplan::runtime
