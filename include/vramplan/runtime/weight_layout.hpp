// Weights a backend holds in a layout of its own instead of the file's. The CPU backend holds the
// Q4_0, Q8_0 and K-quant (Q2_K to Q6_K) tensors that only matmul ops read as panels of sixteen rows
// (kernels/cpu/int8_panel.hpp, kquant_panel.hpp), the layout its fastest kernels read, and so the
// stacked experts that only expert_matmul ops read, each expert's plane as a matrix of its own. A
// panel is the file's bytes rearranged, so the plan's sizes and offsets hold as planned: the arena
// is still the allocation, byte for byte. One rule decides, for the loader that converts each such
// tensor after reading it and for the forward pass that tells its matmuls: held_as_panels.
//
// A GPU backend may hold the same tensors in planes (kernels/weight_planes.hpp: each block's values,
// then its scales, in separate aligned arrays), the layout its plane kernels read with 16-byte
// loads; it says so at run time with holds_planes(). Also the file's bytes rearranged, so the plan
// holds; the loader converts on the host, and streamed layers are copied as they are held.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vramplan/error.hpp"
#include "vramplan/kernels/cpu/int8_panel.hpp"
#include "vramplan/kernels/cpu/kquant_panel.hpp"
#include "vramplan/kernels/kernel_format.hpp"
#include "vramplan/kernels/weight_planes.hpp"
#include "vramplan/model/graph.hpp"
#include "vramplan/plan/buffers.hpp"
#include "vramplan/plan/plan.hpp"

namespace vramplan::runtime {

// A backend that declares `static constexpr bool holds_panels = true` computes on host memory
// with the CPU kernels.
template <class Backend>
inline constexpr bool holds_panels = requires {
    requires Backend::holds_panels;
};

// Whether a weight of this format, read by the graph's ops as `ref`, is held as panels; `rows` are
// the output rows of one matrix (one expert's plane of stacked experts). The K-quants are, on a
// processor with AVX2 (the paths whose K-quant panel kernels beat the row kernels,
// kquant_panel.hpp): what the processor has, not the cap of VRAMPLAN_CPU_ISA or cpu_isa_scope, so
// the loader and every forward pass decide alike whatever the cap (under the portable cap, held
// panels run the portable tile kernels).
inline bool held_as_panels(const forward_graph& g, weight_ref ref, format f, std::uint64_t rows) {
    const bool int8 = f == format{format_id::q4_0} || f == format{format_id::q8_0};
    const bool k = (f == format{format_id::q2_k} || f == format{format_id::q3_k} || f == format{format_id::q4_k} ||
                    f == format{format_id::q5_k} || f == format{format_id::q6_k}) &&
                   kernels::cpu::detected_cpu_isa() >= kernels::cpu::cpu_isa::avx2;
    return (int8 || k) && rows >= kernels::cpu::panel_rows &&
           (g.only_multiplied(ref) || g.only_read_by(ref, op_kind::expert_matmul));
}

// The matrices a weight's buffer holds: one, or n_expert planes of stacked experts (the ops that
// read them multiply one plane at a time).
struct weight_matrices {
    std::uint64_t count = 1, rows = 0;
};
inline weight_matrices matrices_of(const plan& p, const buffer_info& b) {
    if (!p.graph.only_read_by(b.ref, op_kind::expert_matmul)) return {1, b.rows};
    const std::uint64_t planes = p.model.shape.n_expert;
    if (planes == 0 || b.rows % planes != 0)
        throw error("internal: stacked experts '" + b.name + "' of " + std::to_string(b.rows) + " rows are not " +
                    std::to_string(planes) + " planes");
    return {planes, b.rows / planes};
}

// Beside a device whose memory the CPU cannot address, the weights the CPU computes on
// (forward_pass.hpp): the layers the plan has the CPU compute, and the experts of resident layers
// kept in the host tier. The loader holds them as the CPU backend would, panels included, and
// never in a device's planes; the rest of the host tier (streamed layers) is held as the device
// holds it, since it is copied there as it is.
inline bool computed_by_cpu(const plan& p, const buffer_info& b) {
    if (b.where != tier::host || b.layer < 0) return false;
    const auto layer = static_cast<std::uint64_t>(b.layer);
    return p.host_computed(layer) || p.layer_tier(layer) == tier::gpu;  // a resident layer's host part: experts
}

// Converts a tensor read as the file stores it; scratch grows to sixteen rows once per load.
inline void convert_to_panels(format f, std::byte* data, std::uint64_t rows, std::uint64_t cols,
                              std::vector<std::uint8_t>& scratch) {
    using namespace kernels::cpu;
    auto* at = reinterpret_cast<std::uint8_t*>(data);
    scratch.resize(panel_rows * tensor_bytes(f, 1, cols));
    if (f == format{format_id::q4_0}) pack_tensor_panels<blocks::q4_0>(at, rows, cols, scratch.data());
    if (f == format{format_id::q8_0}) pack_tensor_panels<blocks::q8_0>(at, rows, cols, scratch.data());
    if (f == format{format_id::q2_k}) pack_tensor_k_panels<blocks::q2_k>(at, rows, cols, scratch.data());
    if (f == format{format_id::q3_k}) pack_tensor_k_panels<blocks::q3_k>(at, rows, cols, scratch.data());
    if (f == format{format_id::q4_k}) pack_tensor_k_panels<blocks::q4_k>(at, rows, cols, scratch.data());
    if (f == format{format_id::q5_k}) pack_tensor_k_panels<blocks::q5_k>(at, rows, cols, scratch.data());
    if (f == format{format_id::q6_k}) pack_tensor_k_panels<blocks::q6_k>(at, rows, cols, scratch.data());
}

// Whether this backend holds the tensors planes apply to in planes: a run-time choice of the backend
// (`bool holds_planes() const`); backends without it never do.
template <class Backend>
bool holds_planes(const Backend& b) {
    if constexpr (requires { b.holds_planes(); })
        return b.holds_planes();
    else
        return false;
}

// Whether a weight of this format, read by the plan's graph as `ref`, is held in planes by a backend
// that holds planes: the formats with planes, read only by matmul ops (embedding tables and stacked
// experts keep the file's layout, which their kernels read), in a plan whose slots start 16-byte
// aligned (the plane kernel's loads; the default alignment is 256).
inline bool held_as_planes(const plan& p, weight_ref ref, format f) {
    if (p.options.alignment % 16 != 0) return false;
    for (std::size_t i = 0; i < kernels::n_kernel_formats; ++i)
        if (f == format{kernels::kernel_format_ids[i]})
            return kernels::has_planes(static_cast<kernels::kernel_format>(i)) && p.graph.only_multiplied(ref);
    return false;
}

// Converts a tensor read as the file stores it (`from`) into planes at `to`.
inline void convert_to_planes(format f, const std::byte* from, std::byte* to, std::uint64_t bytes) {
    const kernels::kernel_format k = kernels::to_kernel_format(f, "a tensor held in planes");
    kernels::split_into_planes(k, reinterpret_cast<const std::uint8_t*>(from), reinterpret_cast<std::uint8_t*>(to),
                               bytes / static_cast<std::uint64_t>(kernels::block_bytes(k)));
}

}  // namespace vramplan::runtime
