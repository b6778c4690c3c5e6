// Devices vramplan knows by name, each from its vendor's specification (named above the entry).
// Vendors' memory sizes are binary, as the driver counts them: an "8 GB" RTX 4060 has 8 GiB, and
// an H200's "141 GB" is 141 GiB (one here had 149,551,185,920 bytes free, more than 141e9).
// Reserves cover the CUDA context (about 300-500 MiB on recent drivers with lazy module loading),
// library workspaces and memory the driver keeps: 512 MiB on consumer cards, 1 GiB on data-center
// and workstation cards (larger contexts, ECC bookkeeping), 1.5 GiB on Jetson where the operating
// system shares the memory. Memory bandwidth is the vendor's peak; link bandwidth is the host link's
// peak per direction: PCIe (Gen3 x16 16 GB/s, Gen4 x16 32 GB/s, Gen4 x8 16 GB/s, Gen5 x16 64 GB/s),
// or a GB200's share of its Grace's NVLink-C2C. A name
// several entries share ("h100", "4060 ti") is ambiguous and lists them.
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

// The same card with another memory size (an "8 GB or 16 GB" part): everything else is equal.
constexpr target_desc with_memory(target_desc t, std::string_view name, std::uint64_t capacity) {
    t.name = name;
    t.capacity = capacity;
    return t;
}

// GeForce GTX 1080 Ti: 11 GB GDDR5X, 484 GB/s; PCIe 3.0 x16
struct gtx_1080_ti {
    static constexpr target_desc value{.name = "GTX 1080 Ti",
                                       .capacity = 11 * GiB,
                                       .reserve = 512 * MiB,
                                       .memory_bandwidth = 484 * GBps,
                                       .link_bandwidth = 16 * GBps,
                                       .cc_major = 6,
                                       .cc_minor = 1,
                                       .unified = false,
                                       .aliases = "1080ti gtx1080ti"};
};
// GeForce RTX 2080 Ti: 11 GB GDDR6, 616 GB/s; PCIe 3.0 x16
struct rtx_2080_ti {
    static constexpr target_desc value{.name = "RTX 2080 Ti",
                                       .capacity = 11 * GiB,
                                       .reserve = 512 * MiB,
                                       .memory_bandwidth = 616 * GBps,
                                       .link_bandwidth = 16 * GBps,
                                       .cc_major = 7,
                                       .cc_minor = 5,
                                       .unified = false,
                                       .aliases = "2080ti rtx2080ti"};
};
// GeForce RTX 3060: 12 GB GDDR6, 360 GB/s; PCIe 4.0 x16
struct rtx_3060_12gb {
    static constexpr target_desc value{.name = "RTX 3060 12GB",
                                       .capacity = 12 * GiB,
                                       .reserve = 512 * MiB,
                                       .memory_bandwidth = 360 * GBps,
                                       .link_bandwidth = 32 * GBps,
                                       .cc_major = 8,
                                       .cc_minor = 6,
                                       .unified = false,
                                       .aliases = "3060 rtx3060"};
};
// GeForce RTX 3070: 8 GB GDDR6, 448 GB/s; PCIe 4.0 x16
struct rtx_3070 {
    static constexpr target_desc value{.name = "RTX 3070",
                                       .capacity = 8 * GiB,
                                       .reserve = 512 * MiB,
                                       .memory_bandwidth = 448 * GBps,
                                       .link_bandwidth = 32 * GBps,
                                       .cc_major = 8,
                                       .cc_minor = 6,
                                       .unified = false,
                                       .aliases = "3070 rtx3070"};
};
// GeForce RTX 3080: 10 GB GDDR6X, 760 GB/s; PCIe 4.0 x16
struct rtx_3080_10gb {
    static constexpr target_desc value{.name = "RTX 3080 10GB",
                                       .capacity = 10 * GiB,
                                       .reserve = 512 * MiB,
                                       .memory_bandwidth = 760 * GBps,
                                       .link_bandwidth = 32 * GBps,
                                       .cc_major = 8,
                                       .cc_minor = 6,
                                       .unified = false,
                                       .aliases = "3080 rtx3080"};
};
// GeForce RTX 3090: 24 GB GDDR6X, 936 GB/s; PCIe 4.0 x16
struct rtx_3090 {
    static constexpr target_desc value{.name = "RTX 3090",
                                       .capacity = 24 * GiB,
                                       .reserve = 512 * MiB,
                                       .memory_bandwidth = 936 * GBps,
                                       .link_bandwidth = 32 * GBps,
                                       .cc_major = 8,
                                       .cc_minor = 6,
                                       .unified = false,
                                       .aliases = "3090 rtx3090"};
};
// GeForce RTX 4060: 8 GB GDDR6, 272 GB/s; PCIe 4.0 x8
struct rtx_4060_8gb {
    static constexpr target_desc value{.name = "RTX 4060 8GB",
                                       .capacity = 8 * GiB,
                                       .reserve = 512 * MiB,
                                       .memory_bandwidth = 272 * GBps,
                                       .link_bandwidth = 16 * GBps,
                                       .cc_major = 8,
                                       .cc_minor = 9,
                                       .unified = false,
                                       .aliases = "4060 rtx4060"};
};
// GeForce RTX 4060 Ti: 8 or 16 GB GDDR6, 288 GB/s; PCIe 4.0 x8
struct rtx_4060_ti_8gb {
    static constexpr target_desc value{.name = "RTX 4060 Ti 8GB",
                                       .capacity = 8 * GiB,
                                       .reserve = 512 * MiB,
                                       .memory_bandwidth = 288 * GBps,
                                       .link_bandwidth = 16 * GBps,
                                       .cc_major = 8,
                                       .cc_minor = 9,
                                       .unified = false,
                                       .aliases = "4060ti rtx4060ti"};
};
// The same card with 16 GB.
struct rtx_4060_ti_16gb {
    static constexpr target_desc value = with_memory(rtx_4060_ti_8gb::value, "RTX 4060 Ti 16GB", 16 * GiB);
};
// GeForce RTX 4070: 12 GB GDDR6X, 504 GB/s; PCIe 4.0 x16
struct rtx_4070 {
    static constexpr target_desc value{.name = "RTX 4070",
                                       .capacity = 12 * GiB,
                                       .reserve = 512 * MiB,
                                       .memory_bandwidth = 504 * GBps,
                                       .link_bandwidth = 32 * GBps,
                                       .cc_major = 8,
                                       .cc_minor = 9,
                                       .unified = false,
                                       .aliases = "4070 rtx4070"};
};
// GeForce RTX 4080: 16 GB GDDR6X, 716.8 GB/s; PCIe 4.0 x16
struct rtx_4080 {
    static constexpr target_desc value{.name = "RTX 4080",
                                       .capacity = 16 * GiB,
                                       .reserve = 512 * MiB,
                                       .memory_bandwidth = 716'800'000'000,
                                       .link_bandwidth = 32 * GBps,
                                       .cc_major = 8,
                                       .cc_minor = 9,
                                       .unified = false,
                                       .aliases = "4080 rtx4080"};
};
// GeForce RTX 4090: 24 GB GDDR6X, 1008 GB/s; PCIe 4.0 x16
struct rtx_4090 {
    static constexpr target_desc value{.name = "RTX 4090",
                                       .capacity = 24 * GiB,
                                       .reserve = 512 * MiB,
                                       .memory_bandwidth = 1008 * GBps,
                                       .link_bandwidth = 32 * GBps,
                                       .cc_major = 8,
                                       .cc_minor = 9,
                                       .unified = false,
                                       .aliases = "4090 rtx4090"};
};
// GeForce RTX 5080: 16 GB GDDR7, 960 GB/s; PCIe 5.0 x16
struct rtx_5080 {
    static constexpr target_desc value{.name = "RTX 5080",
                                       .capacity = 16 * GiB,
                                       .reserve = 512 * MiB,
                                       .memory_bandwidth = 960 * GBps,
                                       .link_bandwidth = 64 * GBps,
                                       .cc_major = 12,
                                       .cc_minor = 0,
                                       .unified = false,
                                       .aliases = "5080 rtx5080"};
};
// GeForce RTX 5090: 32 GB GDDR7, 1792 GB/s; PCIe 5.0 x16
struct rtx_5090 {
    static constexpr target_desc value{.name = "RTX 5090",
                                       .capacity = 32 * GiB,
                                       .reserve = 512 * MiB,
                                       .memory_bandwidth = 1792 * GBps,
                                       .link_bandwidth = 64 * GBps,
                                       .cc_major = 12,
                                       .cc_minor = 0,
                                       .unified = false,
                                       .aliases = "5090 rtx5090"};
};
// NVIDIA RTX A6000 datasheet: 48 GB GDDR6 with ECC, 768 GB/s; PCIe 4.0 x16
struct rtx_a6000 {
    static constexpr target_desc value{.name = "RTX A6000",
                                       .capacity = 48 * GiB,
                                       .reserve = 1 * GiB,
                                       .memory_bandwidth = 768 * GBps,
                                       .link_bandwidth = 32 * GBps,
                                       .cc_major = 8,
                                       .cc_minor = 6,
                                       .unified = false,
                                       .aliases = "a6000 rtxa6000"};
};
// NVIDIA RTX 6000 Ada Generation datasheet: 48 GB GDDR6 with ECC, 960 GB/s; PCIe 4.0 x16
struct rtx_6000_ada {
    static constexpr target_desc value{.name = "RTX 6000 Ada",
                                       .capacity = 48 * GiB,
                                       .reserve = 1 * GiB,
                                       .memory_bandwidth = 960 * GBps,
                                       .link_bandwidth = 32 * GBps,
                                       .cc_major = 8,
                                       .cc_minor = 9,
                                       .unified = false,
                                       .aliases = "6000ada rtx6000ada"};
};
// NVIDIA A10 datasheet: 24 GB GDDR6, 600 GB/s; PCIe 4.0 x16
struct a10 {
    static constexpr target_desc value{.name = "A10",
                                       .capacity = 24 * GiB,
                                       .reserve = 1 * GiB,
                                       .memory_bandwidth = 600 * GBps,
                                       .link_bandwidth = 32 * GBps,
                                       .cc_major = 8,
                                       .cc_minor = 6,
                                       .unified = false,
                                       .aliases = "a10-24gb"};
};
// NVIDIA L4 datasheet: 24 GB GDDR6, 300 GB/s; PCIe 4.0 x16
struct l4 {
    static constexpr target_desc value{.name = "L4",
                                       .capacity = 24 * GiB,
                                       .reserve = 1 * GiB,
                                       .memory_bandwidth = 300 * GBps,
                                       .link_bandwidth = 32 * GBps,
                                       .cc_major = 8,
                                       .cc_minor = 9,
                                       .unified = false,
                                       .aliases = "l4-24gb"};
};
// NVIDIA L40S datasheet: 48 GB GDDR6 with ECC, 864 GB/s; PCIe 4.0 x16
struct l40s {
    static constexpr target_desc value{.name = "L40S",
                                       .capacity = 48 * GiB,
                                       .reserve = 1 * GiB,
                                       .memory_bandwidth = 864 * GBps,
                                       .link_bandwidth = 32 * GBps,
                                       .cc_major = 8,
                                       .cc_minor = 9,
                                       .unified = false,
                                       .aliases = "l40s-48gb"};
};
// NVIDIA T4 datasheet: 16 GB GDDR6, 320 GB/s; PCIe 3.0 x16
struct t4 {
    static constexpr target_desc value{.name = "T4",
                                       .capacity = 16 * GiB,
                                       .reserve = 1 * GiB,
                                       .memory_bandwidth = 320 * GBps,
                                       .link_bandwidth = 16 * GBps,
                                       .cc_major = 7,
                                       .cc_minor = 5,
                                       .unified = false,
                                       .aliases = "t4-16gb"};
};
// NVIDIA A100 datasheet: 40 GB HBM2, 1555 GB/s; PCIe 4.0 x16
struct a100_40gb {
    static constexpr target_desc value{.name = "A100 40GB",
                                       .capacity = 40 * GiB,
                                       .reserve = 1 * GiB,
                                       .memory_bandwidth = 1555 * GBps,
                                       .link_bandwidth = 32 * GBps,
                                       .cc_major = 8,
                                       .cc_minor = 0,
                                       .unified = false,
                                       .aliases = "a100-40gb a100-40"};
};
// NVIDIA A100 datasheet: 80 GB HBM2e, 2039 GB/s (SXM); PCIe 4.0 x16
struct a100_80gb {
    static constexpr target_desc value{.name = "A100 80GB",
                                       .capacity = 80 * GiB,
                                       .reserve = 1 * GiB,
                                       .memory_bandwidth = 2039 * GBps,
                                       .link_bandwidth = 32 * GBps,
                                       .cc_major = 8,
                                       .cc_minor = 0,
                                       .unified = false,
                                       .aliases = "a100 a100-80gb a100-80"};
};
// NVIDIA H100 datasheet: SXM 80 GB HBM3, 3.35 TB/s; PCIe 5.0 x16 to the host
struct h100_80gb {
    static constexpr target_desc value{.name = "H100 SXM 80GB",
                                       .capacity = 80 * GiB,
                                       .reserve = 1 * GiB,
                                       .memory_bandwidth = 3350 * GBps,
                                       .link_bandwidth = 64 * GBps,
                                       .cc_major = 9,
                                       .cc_minor = 0,
                                       .unified = false,
                                       .aliases = "h100 h100-sxm h100-sxm5 h100-80gb"};
};
// NVIDIA H100 datasheet: PCIe 80 GB HBM2e, 2 TB/s; PCIe 5.0 x16
struct h100_pcie {
    static constexpr target_desc value{.name = "H100 PCIe 80GB",
                                       .capacity = 80 * GiB,
                                       .reserve = 1 * GiB,
                                       .memory_bandwidth = 2000 * GBps,
                                       .link_bandwidth = 64 * GBps,
                                       .cc_major = 9,
                                       .cc_minor = 0,
                                       .unified = false,
                                       .aliases = "h100 h100-pcie"};
};
// NVIDIA H100 datasheet: NVL 94 GB HBM3, 3.9 TB/s; PCIe 5.0 x16
struct h100_nvl {
    static constexpr target_desc value{.name = "H100 NVL 94GB",
                                       .capacity = 94 * GiB,
                                       .reserve = 1 * GiB,
                                       .memory_bandwidth = 3900 * GBps,
                                       .link_bandwidth = 64 * GBps,
                                       .cc_major = 9,
                                       .cc_minor = 0,
                                       .unified = false,
                                       .aliases = "h100 h100-nvl"};
};
// NVIDIA H200 datasheet: 141 GB HBM3e, 4.8 TB/s; PCIe 5.0 x16 (an H200 here had 149,551,185,920 bytes free: 141 GiB,
// not 141e9)
struct h200_141gb {
    static constexpr target_desc value{.name = "H200 141GB",
                                       .capacity = 141 * GiB,
                                       .reserve = 1 * GiB,
                                       .memory_bandwidth = 4800 * GBps,
                                       .link_bandwidth = 64 * GBps,
                                       .cc_major = 9,
                                       .cc_minor = 0,
                                       .unified = false,
                                       .aliases = "h200 h200-141gb"};
};
// NVIDIA DGX B200 user guide: eight B200 GPUs with 1,440 GB of HBM3e together, 180 GB each; HGX B200:
// 8 TB/s per GPU; hosts on PCIe 5.0 x16; compute capability 10.0 (sm_100)
struct b200_180gb {
    static constexpr target_desc value{.name = "B200 180GB",
                                       .capacity = 180 * GiB,
                                       .reserve = 1 * GiB,
                                       .memory_bandwidth = 8000 * GBps,
                                       .link_bandwidth = 64 * GBps,
                                       .cc_major = 10,
                                       .cc_minor = 0,
                                       .unified = false,
                                       .aliases = "b200 hgx-b200 dgx-b200 b200-180gb"};
};
// NVIDIA GB200 NVL72: 72 Blackwell GPUs with up to 13.4 TB of HBM3e and 576 TB/s together (186 GB and
// 8 TB/s each); each Grace CPU reaches its two GPUs over NVLink-C2C at 900 GB/s, both directions
// together, so a GPU streaming from the Grace's LPDDR5X while its neighbour does gets 225 GB/s per
// direction; compute capability 10.0
struct gb200_186gb {
    static constexpr target_desc value{.name = "GB200 186GB",
                                       .capacity = 186 * GiB,
                                       .reserve = 1 * GiB,
                                       .memory_bandwidth = 8000 * GBps,
                                       .link_bandwidth = 225 * GBps,
                                       .cc_major = 10,
                                       .cc_minor = 0,
                                       .unified = false,
                                       .aliases = "gb200 gb200-nvl72 gb200-186gb"};
};
// Jetson Orin Nano 8GB module: 8 GB LPDDR5, 68 GB/s, shared with the CPU
struct jetson_orin_nano_8gb {
    static constexpr target_desc value{.name = "Jetson Orin Nano 8GB",
                                       .capacity = 8 * GiB,
                                       .reserve = 1536 * MiB,
                                       .memory_bandwidth = 68 * GBps,
                                       .link_bandwidth = 68 * GBps,
                                       .cc_major = 8,
                                       .cc_minor = 7,
                                       .unified = true,
                                       .aliases = "orin-nano jetson-orin-nano"};
};
// Jetson AGX Orin 64GB module: 64 GB LPDDR5, 204.8 GB/s, shared with the CPU
struct jetson_agx_orin_64gb {
    static constexpr target_desc value{.name = "Jetson AGX Orin 64GB",
                                       .capacity = 64 * GiB,
                                       .reserve = 1536 * MiB,
                                       .memory_bandwidth = 204 * GBps,
                                       .link_bandwidth = 204 * GBps,
                                       .cc_major = 8,
                                       .cc_minor = 7,
                                       .unified = true,
                                       .aliases = "agx-orin jetson-agx-orin"};
};

// GeForce GTX 1070: 8 GB GDDR5, 256 GB/s; PCIe 3.0 x16
struct gtx_1070 {
    static constexpr target_desc value{.name = "GTX 1070",
                                       .capacity = 8 * GiB,
                                       .reserve = 512 * MiB,
                                       .memory_bandwidth = 256 * GBps,
                                       .link_bandwidth = 16 * GBps,
                                       .cc_major = 6,
                                       .cc_minor = 1,
                                       .unified = false,
                                       .aliases = "1070 gtx1070"};
};
// GeForce GTX 1080: 8 GB GDDR5X, 320 GB/s; PCIe 3.0 x16
struct gtx_1080 {
    static constexpr target_desc value{.name = "GTX 1080",
                                       .capacity = 8 * GiB,
                                       .reserve = 512 * MiB,
                                       .memory_bandwidth = 320 * GBps,
                                       .link_bandwidth = 16 * GBps,
                                       .cc_major = 6,
                                       .cc_minor = 1,
                                       .unified = false,
                                       .aliases = "1080 gtx1080"};
};
// GeForce GTX 1650 (GDDR5): 4 GB, 128 GB/s; PCIe 3.0 x16
struct gtx_1650 {
    static constexpr target_desc value{.name = "GTX 1650",
                                       .capacity = 4 * GiB,
                                       .reserve = 512 * MiB,
                                       .memory_bandwidth = 128 * GBps,
                                       .link_bandwidth = 16 * GBps,
                                       .cc_major = 7,
                                       .cc_minor = 5,
                                       .unified = false,
                                       .aliases = "1650 gtx1650"};
};
// GeForce GTX 1660 SUPER: 6 GB GDDR6, 336 GB/s; PCIe 3.0 x16
struct gtx_1660_super {
    static constexpr target_desc value{.name = "GTX 1660 Super",
                                       .capacity = 6 * GiB,
                                       .reserve = 512 * MiB,
                                       .memory_bandwidth = 336 * GBps,
                                       .link_bandwidth = 16 * GBps,
                                       .cc_major = 7,
                                       .cc_minor = 5,
                                       .unified = false,
                                       .aliases = "1660super gtx1660super"};
};
// GeForce RTX 2060: 6 GB GDDR6, 336 GB/s; PCIe 3.0 x16
struct rtx_2060 {
    static constexpr target_desc value{.name = "RTX 2060",
                                       .capacity = 6 * GiB,
                                       .reserve = 512 * MiB,
                                       .memory_bandwidth = 336 * GBps,
                                       .link_bandwidth = 16 * GBps,
                                       .cc_major = 7,
                                       .cc_minor = 5,
                                       .unified = false,
                                       .aliases = "2060 rtx2060"};
};
// GeForce RTX 2070: 8 GB GDDR6, 448 GB/s; PCIe 3.0 x16
struct rtx_2070 {
    static constexpr target_desc value{.name = "RTX 2070",
                                       .capacity = 8 * GiB,
                                       .reserve = 512 * MiB,
                                       .memory_bandwidth = 448 * GBps,
                                       .link_bandwidth = 16 * GBps,
                                       .cc_major = 7,
                                       .cc_minor = 5,
                                       .unified = false,
                                       .aliases = "2070 rtx2070"};
};
// GeForce RTX 2080: 8 GB GDDR6, 448 GB/s; PCIe 3.0 x16
struct rtx_2080 {
    static constexpr target_desc value{.name = "RTX 2080",
                                       .capacity = 8 * GiB,
                                       .reserve = 512 * MiB,
                                       .memory_bandwidth = 448 * GBps,
                                       .link_bandwidth = 16 * GBps,
                                       .cc_major = 7,
                                       .cc_minor = 5,
                                       .unified = false,
                                       .aliases = "2080 rtx2080"};
};
// GeForce RTX 3060 Ti: 8 GB GDDR6, 448 GB/s; PCIe 4.0 x16
struct rtx_3060_ti {
    static constexpr target_desc value{.name = "RTX 3060 Ti",
                                       .capacity = 8 * GiB,
                                       .reserve = 512 * MiB,
                                       .memory_bandwidth = 448 * GBps,
                                       .link_bandwidth = 32 * GBps,
                                       .cc_major = 8,
                                       .cc_minor = 6,
                                       .unified = false,
                                       .aliases = "3060ti rtx3060ti"};
};
// GeForce RTX 3080 Ti: 12 GB GDDR6X, 912 GB/s; PCIe 4.0 x16
struct rtx_3080_ti {
    static constexpr target_desc value{.name = "RTX 3080 Ti",
                                       .capacity = 12 * GiB,
                                       .reserve = 512 * MiB,
                                       .memory_bandwidth = 912 * GBps,
                                       .link_bandwidth = 32 * GBps,
                                       .cc_major = 8,
                                       .cc_minor = 6,
                                       .unified = false,
                                       .aliases = "3080ti rtx3080ti"};
};
// GeForce RTX 3090 Ti: 24 GB GDDR6X, 1008 GB/s; PCIe 4.0 x16
struct rtx_3090_ti {
    static constexpr target_desc value{.name = "RTX 3090 Ti",
                                       .capacity = 24 * GiB,
                                       .reserve = 512 * MiB,
                                       .memory_bandwidth = 1008 * GBps,
                                       .link_bandwidth = 32 * GBps,
                                       .cc_major = 8,
                                       .cc_minor = 6,
                                       .unified = false,
                                       .aliases = "3090ti rtx3090ti"};
};
// GeForce RTX 4070 SUPER: 12 GB GDDR6X, 504 GB/s; PCIe 4.0 x16
struct rtx_4070_super {
    static constexpr target_desc value{.name = "RTX 4070 Super",
                                       .capacity = 12 * GiB,
                                       .reserve = 512 * MiB,
                                       .memory_bandwidth = 504 * GBps,
                                       .link_bandwidth = 32 * GBps,
                                       .cc_major = 8,
                                       .cc_minor = 9,
                                       .unified = false,
                                       .aliases = "4070super rtx4070super"};
};
// GeForce RTX 4070 Ti: 12 GB GDDR6X, 504 GB/s; PCIe 4.0 x16
struct rtx_4070_ti {
    static constexpr target_desc value{.name = "RTX 4070 Ti",
                                       .capacity = 12 * GiB,
                                       .reserve = 512 * MiB,
                                       .memory_bandwidth = 504 * GBps,
                                       .link_bandwidth = 32 * GBps,
                                       .cc_major = 8,
                                       .cc_minor = 9,
                                       .unified = false,
                                       .aliases = "4070ti rtx4070ti"};
};
// GeForce RTX 4070 Ti SUPER: 16 GB GDDR6X, 672 GB/s; PCIe 4.0 x16
struct rtx_4070_ti_super {
    static constexpr target_desc value{.name = "RTX 4070 Ti Super",
                                       .capacity = 16 * GiB,
                                       .reserve = 512 * MiB,
                                       .memory_bandwidth = 672 * GBps,
                                       .link_bandwidth = 32 * GBps,
                                       .cc_major = 8,
                                       .cc_minor = 9,
                                       .unified = false,
                                       .aliases = "4070tisuper rtx4070tisuper"};
};
// GeForce RTX 4080 SUPER: 16 GB GDDR6X, 736 GB/s; PCIe 4.0 x16
struct rtx_4080_super {
    static constexpr target_desc value{.name = "RTX 4080 Super",
                                       .capacity = 16 * GiB,
                                       .reserve = 512 * MiB,
                                       .memory_bandwidth = 736 * GBps,
                                       .link_bandwidth = 32 * GBps,
                                       .cc_major = 8,
                                       .cc_minor = 9,
                                       .unified = false,
                                       .aliases = "4080super rtx4080super"};
};
// GeForce RTX 5070: 12 GB GDDR7, 672 GB/s; PCIe 5.0 x16
struct rtx_5070 {
    static constexpr target_desc value{.name = "RTX 5070",
                                       .capacity = 12 * GiB,
                                       .reserve = 512 * MiB,
                                       .memory_bandwidth = 672 * GBps,
                                       .link_bandwidth = 64 * GBps,
                                       .cc_major = 12,
                                       .cc_minor = 0,
                                       .unified = false,
                                       .aliases = "5070 rtx5070"};
};
// GeForce RTX 5070 Ti: 16 GB GDDR7, 896 GB/s; PCIe 5.0 x16
struct rtx_5070_ti {
    static constexpr target_desc value{.name = "RTX 5070 Ti",
                                       .capacity = 16 * GiB,
                                       .reserve = 512 * MiB,
                                       .memory_bandwidth = 896 * GBps,
                                       .link_bandwidth = 64 * GBps,
                                       .cc_major = 12,
                                       .cc_minor = 0,
                                       .unified = false,
                                       .aliases = "5070ti rtx5070ti"};
};
// GeForce RTX 3050 Laptop GPU: 4 GB or 6 GB GDDR6 (clocks set by the laptop maker)
struct rtx_3050_laptop_4gb {
    static constexpr target_desc value{.name = "RTX 3050 Laptop 4GB",
                                       .capacity = 4 * GiB,
                                       .reserve = 512 * MiB,
                                       .memory_bandwidth = 0,
                                       .link_bandwidth = 0,
                                       .cc_major = 8,
                                       .cc_minor = 6,
                                       .unified = false,
                                       .aliases = "3050laptop"};
};
// (the 6 GB version)
struct rtx_3050_laptop_6gb {
    static constexpr target_desc value{.name = "RTX 3050 Laptop 6GB",
                                       .capacity = 6 * GiB,
                                       .reserve = 512 * MiB,
                                       .memory_bandwidth = 0,
                                       .link_bandwidth = 0,
                                       .cc_major = 8,
                                       .cc_minor = 6,
                                       .unified = false,
                                       .aliases = "3050laptop"};
};
// GeForce RTX 3060 Laptop GPU: 6 GB GDDR6
struct rtx_3060_laptop {
    static constexpr target_desc value{.name = "RTX 3060 Laptop 6GB",
                                       .capacity = 6 * GiB,
                                       .reserve = 512 * MiB,
                                       .memory_bandwidth = 0,
                                       .link_bandwidth = 0,
                                       .cc_major = 8,
                                       .cc_minor = 6,
                                       .unified = false,
                                       .aliases = "3060laptop"};
};
// GeForce RTX 4050 Laptop GPU: 6 GB GDDR6
struct rtx_4050_laptop {
    static constexpr target_desc value{.name = "RTX 4050 Laptop 6GB",
                                       .capacity = 6 * GiB,
                                       .reserve = 512 * MiB,
                                       .memory_bandwidth = 0,
                                       .link_bandwidth = 0,
                                       .cc_major = 8,
                                       .cc_minor = 9,
                                       .unified = false,
                                       .aliases = "4050laptop"};
};
// GeForce RTX 4060 Laptop GPU: 8 GB GDDR6
struct rtx_4060_laptop {
    static constexpr target_desc value{.name = "RTX 4060 Laptop 8GB",
                                       .capacity = 8 * GiB,
                                       .reserve = 512 * MiB,
                                       .memory_bandwidth = 0,
                                       .link_bandwidth = 0,
                                       .cc_major = 8,
                                       .cc_minor = 9,
                                       .unified = false,
                                       .aliases = "4060laptop"};
};
// GeForce RTX 4070 Laptop GPU: 8 GB GDDR6
struct rtx_4070_laptop {
    static constexpr target_desc value{.name = "RTX 4070 Laptop 8GB",
                                       .capacity = 8 * GiB,
                                       .reserve = 512 * MiB,
                                       .memory_bandwidth = 0,
                                       .link_bandwidth = 0,
                                       .cc_major = 8,
                                       .cc_minor = 9,
                                       .unified = false,
                                       .aliases = "4070laptop"};
};
// GeForce RTX 4080 Laptop GPU: 12 GB GDDR6
struct rtx_4080_laptop {
    static constexpr target_desc value{.name = "RTX 4080 Laptop 12GB",
                                       .capacity = 12 * GiB,
                                       .reserve = 512 * MiB,
                                       .memory_bandwidth = 0,
                                       .link_bandwidth = 0,
                                       .cc_major = 8,
                                       .cc_minor = 9,
                                       .unified = false,
                                       .aliases = "4080laptop"};
};
// GeForce RTX 4090 Laptop GPU: 16 GB GDDR6
struct rtx_4090_laptop {
    static constexpr target_desc value{.name = "RTX 4090 Laptop 16GB",
                                       .capacity = 16 * GiB,
                                       .reserve = 512 * MiB,
                                       .memory_bandwidth = 0,
                                       .link_bandwidth = 0,
                                       .cc_major = 8,
                                       .cc_minor = 9,
                                       .unified = false,
                                       .aliases = "4090laptop"};
};

// NVIDIA RTX A2000 datasheet: 6 or 12 GB GDDR6, 288 GB/s; PCIe 4.0 x16 (the 12 GB version)
struct rtx_a2000_12gb {
    static constexpr target_desc value{.name = "RTX A2000 12GB",
                                       .capacity = 12 * GiB,
                                       .reserve = 1 * GiB,
                                       .memory_bandwidth = 288 * GBps,
                                       .link_bandwidth = 32 * GBps,
                                       .cc_major = 8,
                                       .cc_minor = 6,
                                       .unified = false,
                                       .aliases = "a2000 rtxa2000"};
};
// NVIDIA RTX A4000 datasheet: 16 GB GDDR6 with ECC, 448 GB/s; PCIe 4.0 x16
struct rtx_a4000 {
    static constexpr target_desc value{.name = "RTX A4000",
                                       .capacity = 16 * GiB,
                                       .reserve = 1 * GiB,
                                       .memory_bandwidth = 448 * GBps,
                                       .link_bandwidth = 32 * GBps,
                                       .cc_major = 8,
                                       .cc_minor = 6,
                                       .unified = false,
                                       .aliases = "a4000 rtxa4000"};
};
// NVIDIA RTX A5000 datasheet: 24 GB GDDR6 with ECC, 768 GB/s; PCIe 4.0 x16
struct rtx_a5000 {
    static constexpr target_desc value{.name = "RTX A5000",
                                       .capacity = 24 * GiB,
                                       .reserve = 1 * GiB,
                                       .memory_bandwidth = 768 * GBps,
                                       .link_bandwidth = 32 * GBps,
                                       .cc_major = 8,
                                       .cc_minor = 6,
                                       .unified = false,
                                       .aliases = "a5000 rtxa5000"};
};
// NVIDIA RTX 4000 Ada Generation datasheet: 20 GB GDDR6 with ECC, 360 GB/s; PCIe 4.0 x16
struct rtx_4000_ada {
    static constexpr target_desc value{.name = "RTX 4000 Ada",
                                       .capacity = 20 * GiB,
                                       .reserve = 1 * GiB,
                                       .memory_bandwidth = 360 * GBps,
                                       .link_bandwidth = 32 * GBps,
                                       .cc_major = 8,
                                       .cc_minor = 9,
                                       .unified = false,
                                       .aliases = "4000ada rtx4000ada"};
};
// NVIDIA RTX 5000 Ada Generation datasheet: 32 GB GDDR6 with ECC, 576 GB/s; PCIe 4.0 x16
struct rtx_5000_ada {
    static constexpr target_desc value{.name = "RTX 5000 Ada",
                                       .capacity = 32 * GiB,
                                       .reserve = 1 * GiB,
                                       .memory_bandwidth = 576 * GBps,
                                       .link_bandwidth = 32 * GBps,
                                       .cc_major = 8,
                                       .cc_minor = 9,
                                       .unified = false,
                                       .aliases = "5000ada rtx5000ada"};
};
// Jetson Orin NX 16GB module: 16 GB LPDDR5, 102.4 GB/s, shared with the CPU
struct jetson_orin_nx_16gb {
    static constexpr target_desc value{.name = "Jetson Orin NX 16GB",
                                       .capacity = 16 * GiB,
                                       .reserve = 1536 * MiB,
                                       .memory_bandwidth = 102 * GBps,
                                       .link_bandwidth = 102 * GBps,
                                       .cc_major = 8,
                                       .cc_minor = 7,
                                       .unified = true,
                                       .aliases = "orin-nx jetson-orin-nx"};
};

// GeForce GTX 1060 6GB: 6 GB GDDR5, 192 GB/s; PCIe 3.0 x16
struct gtx_1060_6gb {
    static constexpr target_desc value{.name = "GTX 1060 6GB",
                                       .capacity = 6 * GiB,
                                       .reserve = 512 * MiB,
                                       .memory_bandwidth = 192 * GBps,
                                       .link_bandwidth = 16 * GBps,
                                       .cc_major = 6,
                                       .cc_minor = 1,
                                       .unified = false,
                                       .aliases = "1060 gtx1060"};
};
// GeForce GTX 1660: 6 GB GDDR5, 192 GB/s; PCIe 3.0 x16
struct gtx_1660 {
    static constexpr target_desc value{.name = "GTX 1660",
                                       .capacity = 6 * GiB,
                                       .reserve = 512 * MiB,
                                       .memory_bandwidth = 192 * GBps,
                                       .link_bandwidth = 16 * GBps,
                                       .cc_major = 7,
                                       .cc_minor = 5,
                                       .unified = false,
                                       .aliases = "1660 gtx1660"};
};
// GeForce GTX 1660 Ti: 6 GB GDDR6, 288 GB/s; PCIe 3.0 x16
struct gtx_1660_ti {
    static constexpr target_desc value{.name = "GTX 1660 Ti",
                                       .capacity = 6 * GiB,
                                       .reserve = 512 * MiB,
                                       .memory_bandwidth = 288 * GBps,
                                       .link_bandwidth = 16 * GBps,
                                       .cc_major = 7,
                                       .cc_minor = 5,
                                       .unified = false,
                                       .aliases = "1660ti gtx1660ti"};
};
// GeForce RTX 3050 (desktop, 8 GB): 8 GB GDDR6, 224 GB/s; PCIe 4.0 x8
struct rtx_3050_8gb {
    static constexpr target_desc value{.name = "RTX 3050 8GB",
                                       .capacity = 8 * GiB,
                                       .reserve = 512 * MiB,
                                       .memory_bandwidth = 224 * GBps,
                                       .link_bandwidth = 16 * GBps,
                                       .cc_major = 8,
                                       .cc_minor = 6,
                                       .unified = false,
                                       .aliases = "3050 rtx3050"};
};
// GeForce RTX 5060: 8 GB GDDR7, 448 GB/s; PCIe 5.0 x8
struct rtx_5060 {
    static constexpr target_desc value{.name = "RTX 5060",
                                       .capacity = 8 * GiB,
                                       .reserve = 512 * MiB,
                                       .memory_bandwidth = 448 * GBps,
                                       .link_bandwidth = 32 * GBps,
                                       .cc_major = 12,
                                       .cc_minor = 0,
                                       .unified = false,
                                       .aliases = "5060 rtx5060"};
};
// GeForce RTX 5060 Ti: 8 or 16 GB GDDR7, 448 GB/s; PCIe 5.0 x8
struct rtx_5060_ti_8gb {
    static constexpr target_desc value{.name = "RTX 5060 Ti 8GB",
                                       .capacity = 8 * GiB,
                                       .reserve = 512 * MiB,
                                       .memory_bandwidth = 448 * GBps,
                                       .link_bandwidth = 32 * GBps,
                                       .cc_major = 12,
                                       .cc_minor = 0,
                                       .unified = false,
                                       .aliases = "5060ti rtx5060ti"};
};
// NVIDIA RTX PRO 6000 Blackwell (Workstation Edition) datasheet: 96 GB GDDR7 with ECC, 1792 GB/s; PCIe 5.0 x16
struct rtx_pro_6000 {
    static constexpr target_desc value{.name = "RTX PRO 6000 Blackwell",
                                       .capacity = 96 * GiB,
                                       .reserve = 1 * GiB,
                                       .memory_bandwidth = 1792 * GBps,
                                       .link_bandwidth = 64 * GBps,
                                       .cc_major = 12,
                                       .cc_minor = 0,
                                       .unified = false,
                                       .aliases = "pro6000 rtx-pro-6000"};
};
// Jetson AGX Thor developer kit (T5000 module): 128 GB LPDDR5X, 273 GB/s, shared with the CPU;
// compute capability 11.0 as CUDA 13 numbers it (sm_110)
struct jetson_agx_thor {
    static constexpr target_desc value{.name = "Jetson AGX Thor 128GB",
                                       .capacity = 128 * GiB,
                                       .reserve = 1536 * MiB,
                                       .memory_bandwidth = 273 * GBps,
                                       .link_bandwidth = 273 * GBps,
                                       .cc_major = 11,
                                       .cc_minor = 0,
                                       .unified = true,
                                       .aliases = "thor agx-thor jetson-agx-thor"};
};
// The same card with 16 GB.
struct rtx_5060_ti_16gb {
    static constexpr target_desc value = with_memory(rtx_5060_ti_8gb::value, "RTX 5060 Ti 16GB", 16 * GiB);
};

// Families in order, desktop then laptop parts (their memory clocks and PCIe lanes are the laptop
// maker's, so their rates are 0: unknown, and decode is not predicted), then workstation, data
// center and Jetson. The count follows from the list.
inline constexpr auto catalog = std::to_array<target_desc>({
    gtx_1060_6gb::value,
    gtx_1070::value,
    gtx_1080::value,
    gtx_1080_ti::value,
    gtx_1650::value,
    gtx_1660::value,
    gtx_1660_ti::value,
    gtx_1660_super::value,
    rtx_2060::value,
    rtx_2070::value,
    rtx_2080::value,
    rtx_2080_ti::value,
    rtx_3050_8gb::value,
    rtx_3060_12gb::value,
    rtx_3060_ti::value,
    rtx_3070::value,
    rtx_3080_10gb::value,
    rtx_3080_ti::value,
    rtx_3090::value,
    rtx_3090_ti::value,
    rtx_4060_8gb::value,
    rtx_4060_ti_8gb::value,
    rtx_4060_ti_16gb::value,
    rtx_4070::value,
    rtx_4070_super::value,
    rtx_4070_ti::value,
    rtx_4070_ti_super::value,
    rtx_4080::value,
    rtx_4080_super::value,
    rtx_4090::value,
    rtx_5060::value,
    rtx_5060_ti_8gb::value,
    rtx_5060_ti_16gb::value,
    rtx_5070::value,
    rtx_5070_ti::value,
    rtx_5080::value,
    rtx_5090::value,
    rtx_3050_laptop_4gb::value,
    rtx_3050_laptop_6gb::value,
    rtx_3060_laptop::value,
    rtx_4050_laptop::value,
    rtx_4060_laptop::value,
    rtx_4070_laptop::value,
    rtx_4080_laptop::value,
    rtx_4090_laptop::value,
    rtx_a2000_12gb::value,
    rtx_a4000::value,
    rtx_a5000::value,
    rtx_a6000::value,
    rtx_4000_ada::value,
    rtx_5000_ada::value,
    rtx_6000_ada::value,
    rtx_pro_6000::value,
    a10::value,
    l4::value,
    l40s::value,
    t4::value,
    a100_40gb::value,
    a100_80gb::value,
    h100_80gb::value,
    h100_pcie::value,
    h100_nvl::value,
    h200_141gb::value,
    b200_180gb::value,
    gb200_186gb::value,
    jetson_orin_nano_8gb::value,
    jetson_orin_nx_16gb::value,
    jetson_agx_orin_64gb::value,
    jetson_agx_thor::value,
});

inline const target_desc* find(std::string_view name) { return vramplan::detail::find_by_name(catalog, name, "GPU"); }

inline std::string known_names() { return vramplan::detail::list_names(catalog); }

// "unknown GPU 'x'; did you mean ...? known GPUs: ...": what a failed look-up says.
inline std::string unknown_gpu_message(std::string_view name) {
    const std::string near = vramplan::detail::nearest_names(catalog, name);
    return "unknown GPU '" + std::string(name) + "'" + (near.empty() ? "" : "; did you mean " + near) +
           "; known GPUs: " + known_names() + " (or give a size such as 12GiB)";
}

inline const target_desc& by_name(std::string_view name) {
    if (const target_desc* t = find(name)) return *t;
    throw error(unknown_gpu_message(name));
}

}  // namespace vramplan::targets
