// The device weight layout ("planes"): a quantized tensor's blocks split by field. Each format's
// block falls into a few planes, byte ranges of the block; the tensor holds plane 0 of every block
// in order, then plane 1 of every block, and so on. Why: blocks of 18, 34, 144, 176 and 210 bytes
// put a tensor's quantized values at 2-byte alignment only, so a GPU reads them two bytes per load
// and its matrix kernels were bound by load instructions (bench/REPORT-cuda.md). Plane 0 holds the
// values and is a multiple of 16 bytes per block, so in planes every block's values start 16-byte
// aligned (the tensor does) and a lane reads them 16 bytes per load; the scales follow in planes of
// their own. The bytes are the file's, rearranged: the planner's sizes and offsets hold unchanged
// and the arena is still the allocation, byte for byte.
//
// This header is shared by the loader (which converts on the host, runtime/weight_layout.hpp) and
// the units the CUDA plane kernel reads (kernels/plane_units.hpp).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "vramplan/config.hpp"
#include "vramplan/format/blocks.hpp"
#include "vramplan/kernels/block_math.hpp"

namespace vramplan::kernels {

// Bytes [offset, offset + bytes) of each block.
struct block_plane {
    std::uint16_t offset = 0, bytes = 0;
};
struct plane_split {
    int count = 0;  // 0: the format is not held in planes
    block_plane plane[3]{};
};

VRAMPLAN_HOST_DEVICE constexpr plane_split planes_of(kernel_format f) {
    switch (f) {
        case kernel_format::q8_0: return {2, {{2, 32}, {0, 2}}};                  // qs | d
        case kernel_format::q4_0: return {2, {{2, 16}, {0, 2}}};                  // qs | d
        case kernel_format::q4_k: return {2, {{16, 128}, {0, 16}}};               // qs | d, dmin, scales
        case kernel_format::q5_k: return {2, {{16, 160}, {0, 16}}};               // qh, qs | d, dmin, scales
        case kernel_format::q6_k: return {3, {{0, 192}, {192, 16}, {208, 2}}};  // ql, qh | scales | d
        default: return {};
    }
}

VRAMPLAN_HOST_DEVICE constexpr bool has_planes(kernel_format f) { return planes_of(f).count != 0; }

// Why each split is right: its planes tile the block exactly, plane 0 is a multiple of 16 bytes (so
// every later plane starts 16-byte aligned too, at n_blocks times the planes before it), and the
// field offsets named above are the block structs' own.
constexpr bool planes_tile_blocks() {
    for (int i = 0; i < static_cast<int>(kernel_format::count); ++i) {
        const auto f = static_cast<kernel_format>(i);
        const plane_split s = planes_of(f);
        if (s.count == 0) continue;
        std::array<int, 256> covered{};
        int total = 0;
        for (int p = 0; p < s.count; ++p)
            for (int b = s.plane[p].offset; b < s.plane[p].offset + s.plane[p].bytes; ++b) ++covered[b], ++total;
        if (total != block_bytes(f) || s.plane[0].bytes % 16 != 0) return false;
        for (int b = 0; b < block_bytes(f); ++b)
            if (covered[b] != 1) return false;
    }
    return true;
}
static_assert(planes_tile_blocks(), "each format's planes must cover its block once, plane 0 a multiple of 16 bytes");
static_assert(offsetof(blocks::q4_0, qs) == 2 && offsetof(blocks::q8_0, qs) == 2);
static_assert(offsetof(blocks::q4_k, qs) == 16 && offsetof(blocks::q5_k, qh) == 16 && offsetof(blocks::q5_k, qs) == 48);
static_assert(offsetof(blocks::q6_k, qh) == 128 && offsetof(blocks::q6_k, scales) == 192 &&
              offsetof(blocks::q6_k, d) == 208);

// Where plane p of a tensor of n_blocks blocks starts, in bytes from the tensor's start.
VRAMPLAN_HOST_DEVICE constexpr std::uint64_t plane_start(const plane_split& s, int p, std::uint64_t n_blocks) {
    std::uint64_t at = 0;
    for (int i = 0; i < p; ++i) at += n_blocks * s.plane[i].bytes;
    return at;
}

// File order -> planes: `to` receives the n_blocks blocks of `from` (which it must not overlap).
inline void split_into_planes(kernel_format f, const std::uint8_t* from, std::uint8_t* to, std::uint64_t n_blocks) {
    const plane_split s = planes_of(f);
    const std::uint64_t bb = static_cast<std::uint64_t>(block_bytes(f));
    for (int p = 0; p < s.count; ++p) {
        std::uint8_t* out = to + plane_start(s, p, n_blocks);
        const block_plane pl = s.plane[p];
        for (std::uint64_t i = 0; i < n_blocks; ++i) std::memcpy(out + i * pl.bytes, from + i * bb + pl.offset, pl.bytes);
    }
}

// Planes -> file order, the inverse (for tests and for reading a held tensor back).
inline void join_planes(kernel_format f, const std::uint8_t* from, std::uint8_t* to, std::uint64_t n_blocks) {
    const plane_split s = planes_of(f);
    const std::uint64_t bb = static_cast<std::uint64_t>(block_bytes(f));
    for (int p = 0; p < s.count; ++p) {
        const std::uint8_t* in = from + plane_start(s, p, n_blocks);
        const block_plane pl = s.plane[p];
        for (std::uint64_t i = 0; i < n_blocks; ++i) std::memcpy(to + i * bb + pl.offset, in + i * pl.bytes, pl.bytes);
    }
}

}  // namespace vramplan::kernels
