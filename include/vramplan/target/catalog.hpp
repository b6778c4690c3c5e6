// Devices vramplan knows by name. Capacity is the memory size the vendor specifies, in binary
// units as the driver counts it (an "8 GB" RTX 4060 has 8 GiB), except where the vendor's figure
// is decimal (H200: 141 GB). Reserves cover the CUDA context (about 300-500 MiB on recent drivers
// with lazy module loading), library workspaces and memory the driver keeps: 512 MiB on consumer
// cards, 1 GiB on data-center cards (larger contexts, ECC bookkeeping), 1.5 GiB on Jetson where the
// operating system shares the memory. Memory bandwidth is the vendor's peak; link bandwidth is the
// PCIe peak per direction (Gen3 x16 16 GB/s, Gen4 x16 32 GB/s, Gen4 x8 16 GB/s, Gen5 x16 64 GB/s).
#pragma once

#include <array>
#include <string>
#include <string_view>

#include "vramplan/detail/name_lookup.hpp"
#include "vramplan/target/target_desc.hpp"

namespace vramplan::targets {

inline constexpr std::uint64_t GiB = 1ull << 30;
inline constexpr std::uint64_t MiB = 1ull << 20;
inline constexpr std::uint64_t GB = 1000ull * 1000 * 1000;
inline constexpr std::uint64_t GBps = GB;  // bytes per second

struct rtx_3060_12gb {
    static constexpr target_desc value{"RTX 3060 12GB", 12 * GiB,      512 * MiB, 360 * GBps, 32 * GBps, 8, 6,
                                       false,           "3060 rtx3060"};
};
struct rtx_3090 {
    static constexpr target_desc value{"RTX 3090", 24 * GiB, 512 * MiB, 936 * GBps,    32 * GBps,
                                       8,          6,        false,     "3090 rtx3090"};
};
struct rtx_4060_8gb {
    static constexpr target_desc value{"RTX 4060 8GB", 8 * GiB,       512 * MiB, 272 * GBps, 16 * GBps, 8, 9,
                                       false,          "4060 rtx4060"};
};
struct rtx_4070 {
    static constexpr target_desc value{"RTX 4070", 12 * GiB, 512 * MiB, 504 * GBps,    32 * GBps,
                                       8,          9,        false,     "4070 rtx4070"};
};
struct rtx_4090 {
    static constexpr target_desc value{"RTX 4090", 24 * GiB, 512 * MiB, 1008 * GBps,   32 * GBps,
                                       8,          9,        false,     "4090 rtx4090"};
};
struct rtx_5090 {
    static constexpr target_desc value{"RTX 5090", 32 * GiB, 512 * MiB, 1792 * GBps,   64 * GBps,
                                       12,         0,        false,     "5090 rtx5090"};
};
struct a10 {
    static constexpr target_desc value{"A10", 24 * GiB, 1 * GiB, 600 * GBps, 32 * GBps, 8, 6, false, "a10-24gb"};
};
struct l4 {
    static constexpr target_desc value{"L4", 24 * GiB, 1 * GiB, 300 * GBps, 32 * GBps, 8, 9, false, "l4-24gb"};
};
struct t4 {
    static constexpr target_desc value{"T4", 16 * GiB, 1 * GiB, 320 * GBps, 16 * GBps, 7, 5, false, "t4-16gb"};
};
struct a100_40gb {
    static constexpr target_desc value{"A100 40GB", 40 * GiB, 1 * GiB, 1555 * GBps,        32 * GBps,
                                       8,           0,        false,   "a100-40gb a100-40"};
};
struct a100_80gb {
    static constexpr target_desc value{
        "A100 80GB", 80 * GiB, 1 * GiB, 2039 * GBps, 32 * GBps, 8, 0, false, "a100 a100-80gb a100-80"};
};
struct h100_80gb {
    static constexpr target_desc value{"H100 80GB", 80 * GiB, 1 * GiB, 3350 * GBps,     64 * GBps,
                                       9,           0,        false,   "h100 h100-80gb"};
};
struct h200_141gb {
    static constexpr target_desc value{"H200 141GB", 141 * GB,         1 * GiB, 4800 * GBps, 64 * GBps, 9, 0,
                                       false,        "h200 h200-141gb"};
};
struct jetson_orin_nano_8gb {
    static constexpr target_desc value{
        "Jetson Orin Nano 8GB", 8 * GiB, 1536 * MiB, 68 * GBps, 68 * GBps, 8, 7, true, "orin-nano jetson-orin-nano"};
};
struct jetson_agx_orin_64gb {
    static constexpr target_desc value{
        "Jetson AGX Orin 64GB", 64 * GiB, 1536 * MiB, 204 * GBps, 204 * GBps, 8, 7, true, "agx-orin jetson-agx-orin"};
};

inline constexpr std::array<target_desc, 15> catalog{
    rtx_3060_12gb::value,
    rtx_3090::value,
    rtx_4060_8gb::value,
    rtx_4070::value,
    rtx_4090::value,
    rtx_5090::value,
    a10::value,
    l4::value,
    t4::value,
    a100_40gb::value,
    a100_80gb::value,
    h100_80gb::value,
    h200_141gb::value,
    jetson_orin_nano_8gb::value,
    jetson_agx_orin_64gb::value,
};

inline const target_desc* find(std::string_view name) { return vramplan::detail::find_by_name(catalog, name); }

inline std::string known_names() { return vramplan::detail::list_names(catalog); }

inline const target_desc& by_name(std::string_view name) {
    if (const target_desc* t = find(name)) return *t;
    throw error("unknown GPU '" + std::string(name) + "'; known GPUs: " + known_names() +
                " (or give a size such as 12GiB)");
}

}  // namespace vramplan::targets
