// The K-quant panels' tile kernels for the path the processor takes (kquant_panel_layout.hpp holds
// the layout, kquant_panel_avx512.hpp and kquant_panel_avx2.hpp the kernels of each width).
#pragma once

#include "vramplan/kernels/cpu/isa.hpp"
#include "vramplan/kernels/cpu/kquant_panel_avx2.hpp"
#include "vramplan/kernels/cpu/kquant_panel_avx512.hpp"
#include "vramplan/kernels/cpu/kquant_panel_layout.hpp"

namespace vramplan::kernels::cpu {

template <class Block>
struct k_panel_kernels {
    k_panel_tile_fn<Block> tile[panel_tokens];
};

#if VRAMPLAN_X86_SIMD
namespace detail {
// Each width's kernel of a format family: Q4_K and Q5_K, or the sixteen-value formats.
template <class Block>
inline constexpr bool k4_family = std::is_same_v<Block, blocks::q4_k> || std::is_same_v<Block, blocks::q5_k>;
template <class Block, int Tokens>
constexpr k_panel_tile_fn<Block> k_tile_avx512_vnni() {
    using P = typename k_panel_of<Block>::type;
    if constexpr (k4_family<Block>)
        return &simd::k_panel_tile_k4_avx512_vnni<P, Tokens>;
    else
        return &simd::k_panel_tile_small_avx512_vnni<P, Tokens>;
}
template <class Block, bool Vnni, int Tokens>
constexpr k_panel_tile_fn<Block> k_tile_avx2() {
    using P = typename k_panel_of<Block>::type;
    if constexpr (k4_family<Block>)
        return &simd::k_panel_tile_k4_avx2<Vnni, P, Tokens>;
    else
        return &simd::k_panel_tile_small_avx2<Vnni, P, Tokens>;
}
}  // namespace detail
#endif

// The tile kernels for 1..panel_tokens tokens on the path the processor takes now: 512-bit with
// AVX-512 VNNI; 256-bit with AVX_VNNI's vpdpbusd on the avx2-vnni path; 256-bit with AVX2's
// vpmaddubsw on the avx2 and avx512 paths (AVX-512 without VNNI gains no byte dot product).
template <class Block>
inline k_panel_kernels<Block> find_k_panel_kernels() {
    static_assert(panel_tokens == 4, "one kernel per tile width");
#if VRAMPLAN_X86_SIMD
    using namespace detail;
    if (has_avx512_vnni())
        return {{k_tile_avx512_vnni<Block, 1>(), k_tile_avx512_vnni<Block, 2>(), k_tile_avx512_vnni<Block, 3>(),
                 k_tile_avx512_vnni<Block, 4>()}};
    if (has_avx_vnni())
        return {{k_tile_avx2<Block, true, 1>(), k_tile_avx2<Block, true, 2>(), k_tile_avx2<Block, true, 3>(),
                 k_tile_avx2<Block, true, 4>()}};
    if (has_avx2())
        return {{k_tile_avx2<Block, false, 1>(), k_tile_avx2<Block, false, 2>(), k_tile_avx2<Block, false, 3>(),
                 k_tile_avx2<Block, false, 4>()}};
#endif
    return {{&k_panel_tile_portable<Block, 1>, &k_panel_tile_portable<Block, 2>, &k_panel_tile_portable<Block, 3>,
             &k_panel_tile_portable<Block, 4>}};
}

// Whether this processor runs K-quant panels faster than rows: wherever AVX2 runs (measured in
// bench/REPORT.md); the portable panel kernel decodes each row's block as the row kernel does.
inline bool k_panels_pay() { return has_avx2(); }

}  // namespace vramplan::kernels::cpu
