// A plan made real: exactly one allocation per tier (or the caller's buffers, e.g. static arrays
// sized by a compile-time plan on a device with no heap), views at the planned offsets, and
// everything released when the arena goes away. Nothing is allocated after construction.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "vramplan/plan/buffers.hpp"
#include "vramplan/plan/plan.hpp"
#include "vramplan/runtime/backend.hpp"
#include "vramplan/runtime/budget.hpp"
#include "vramplan/runtime/tensor_view.hpp"

namespace vramplan::runtime {

template <memory_backend Backend>
class arena {
public:
    // Checks the budget against what is free, then allocates each tier once.
    arena(const vramplan::plan& p, Backend& backend) : plan_(p), backend_(&backend) {
        check_budget(p, backend.device_memory().free, backend.host_memory().free);
        base_[0] = static_cast<std::byte*>(backend.allocate(tier::gpu, p.gpu.total()));
        try {
            base_[1] = static_cast<std::byte*>(backend.allocate(tier::host, p.host.total()));
        } catch (...) {
            backend.release(tier::gpu, base_[0]);
            throw;
        }
        owned_ = true;
        index();
    }

    // Lives in the caller's memory: each buffer must hold its tier and start on the plan's alignment.
    arena(const vramplan::plan& p, Backend& backend, std::span<std::byte> device_memory,
          std::span<std::byte> host_memory = {})
        : plan_(p), backend_(&backend) {
        auto take = [&](std::span<std::byte> mem, std::uint64_t need, const char* what) {
            if (mem.size() < need)
                throw error(std::string("vramplan: the ") + what + " buffer holds " + std::to_string(mem.size()) +
                            " bytes but the plan needs " + std::to_string(need));
            if (need && reinterpret_cast<std::uintptr_t>(mem.data()) % p.options.alignment != 0)
                throw error(std::string("vramplan: the ") + what + " buffer must be aligned to " +
                            std::to_string(p.options.alignment) + " bytes");
            return need ? mem.data() : nullptr;
        };
        base_[0] = take(device_memory, p.gpu.total(), "device");
        base_[1] = take(host_memory, p.host.total(), "host");
        index();
    }

    ~arena() {
        if (!owned_) return;
        backend_->release(tier::gpu, base_[0]);
        backend_->release(tier::host, base_[1]);
    }
    arena(const arena&) = delete;
    arena& operator=(const arena&) = delete;

    const vramplan::plan& plan() const { return plan_; }
    Backend& backend() const { return *backend_; }
    std::byte* base(tier t) const { return base_[static_cast<int>(t)]; }

    // Any buffer by its plan name ("blk.3.attn_q.weight", "cache_k.3", "act.logits", "staging.0").
    tensor_view view(std::string_view name) const {
        auto it = by_name_.find(std::string(name));
        if (it == by_name_.end()) throw error("vramplan: no buffer named '" + std::string(name) + "' in the plan");
        const buffer_info& b = buffers_[it->second];
        return {base(b.where) + b.offset, b.bytes, b.fmt, b.where, b.rows, b.cols};
    }

    // The fast paths used every step: straight from the plan's offsets, no string work.
    tensor_view weight(std::uint64_t layer, tensor_role role) const {
        const auto& p = plan_;
        const auto e = role_extent(p.model.shape, role);
        const format f = p.model.layer(layer)[role];
        const tier t = p.role_tier(layer, role);
        return {base(t) + p.role_offset_in_tier(layer, role),
                tensor_bytes(f, e.all_rows(), e.cols),
                f,
                t,
                e.all_rows(),
                e.cols};
    }
    tensor_view kv(std::uint64_t layer, bool values) const {
        const auto& p = plan_;
        const std::uint64_t rows = p.kv_rows_of(layer);
        return {base(p.kv_tier(layer)) + p.kv_plane_offset(layer, values),
                rows * kv_row_bytes(p.model, p.model.layer(layer)),
                p.model.kv,
                p.kv_tier(layer),
                rows,
                kv_dim_of(p.model, p.model.layer(layer))};
    }
    // Activation buffer i of the plan's forward graph.
    tensor_view activation(std::size_t i) const {
        const auto& p = plan_;
        if (i >= p.graph.n_buffers)
            throw error("vramplan: the forward graph has " + std::to_string(p.graph.n_buffers) + " activation buffers");
        return {base(tier::gpu) + p.gpu.activations.offset + p.act_offset[i],
                p.act[i].bytes,
                p.model.activations,
                tier::gpu,
                0,
                0};
    }
    tensor_view staging(int slot) const {
        const auto& p = plan_;
        return {base(tier::gpu) + p.gpu.staging.offset + static_cast<std::uint64_t>(slot) * p.staging_slot,
                p.staging_slot,
                format{format_id::i8},
                tier::gpu,
                0,
                0};
    }

    const std::vector<buffer_info>& buffers() const { return buffers_; }

    // Whether a load of weights into the arena started and did not finish: its weights are then
    // partly old and partly new, and a forward pass refuses to run on them.
    bool weights_incomplete() const { return loading_; }
    void begin_loading() { loading_ = true; }
    void end_loading() { loading_ = false; }

private:
    void index() {
        buffers_ = vramplan::buffers(plan_);
        for (std::size_t i = 0; i < buffers_.size(); ++i) by_name_.emplace(buffers_[i].name, i);
    }

    vramplan::plan plan_;
    Backend* backend_;
    std::byte* base_[2] = {nullptr, nullptr};
    bool owned_ = false;
    bool loading_ = false;
    std::vector<buffer_info> buffers_;
    std::unordered_map<std::string, std::size_t> by_name_;
};

}  // namespace vramplan::runtime
