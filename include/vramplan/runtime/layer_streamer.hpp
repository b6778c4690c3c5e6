// Executes the plan's offload decision: layers in the GPU tier are used in place; layers in the
// host tier are copied into one of two staging slots, and while layer i computes from one slot the
// next streamed layer is copied into the other. The backend supplies the copy (memcpy on CPU,
// cudaMemcpyAsync on a copy stream ordered by events on CUDA), so this logic is tested on CPU.
#pragma once

#include <cstddef>
#include <cstdint>

#include "vramplan/runtime/arena.hpp"

namespace vramplan::runtime {

template <memory_backend Backend>
class layer_streamer {
public:
    explicit layer_streamer(arena<Backend>& a) : arena_(&a) {}

    // Base address of layer l's weights, ready for compute. Tensor t of the layer is at
    // base + plan.role_offset[kind][t].
    std::byte* acquire(std::uint64_t layer) {
        const plan& p = arena_->plan();
        if (p.layer_tier(layer) == tier::gpu) return arena_->base(tier::gpu) + p.layer_offset[layer];
        const int slot = static_cast<int>(layer % 2);
        if (loaded_[slot] != static_cast<std::int64_t>(layer)) start_copy(layer, slot);
        arena_->backend().wait_for_copy(slot);
        // Prefetch the next streamed layer (wrapping to the first for the next pass).
        const std::uint64_t streamed = p.streamed_layers();
        const std::uint64_t next = (layer + 1) % streamed;
        if (streamed > 1 && next % 2 != layer % 2 && loaded_[next % 2] != static_cast<std::int64_t>(next))
            start_copy(next, static_cast<int>(next % 2));
        return arena_->staging(slot).data;
    }

    // Compute has been issued for this layer: its slot may be refilled once that compute is done.
    void release(std::uint64_t layer) {
        if (arena_->plan().layer_tier(layer) == tier::host) arena_->backend().release_slot(static_cast<int>(layer % 2));
    }

    std::uint64_t bytes_streamed() const { return streamed_bytes_; }
    std::uint64_t copies() const { return copies_; }

private:
    void start_copy(std::uint64_t layer, int slot) {
        const plan& p = arena_->plan();
        const std::uint64_t bytes = p.block_stride[p.model.layer_kind[layer]];
        if (bytes > p.staging_slot) throw error("internal: a streamed layer is larger than its staging slot");
        // The slot holds nothing trustworthy until the copy is issued: a copy that fails part way
        // leaves it marked empty, so the next pass copies the layer again instead of using it.
        loaded_[slot] = -1;
        arena_->backend().copy_to_device(arena_->staging(slot).data, arena_->base(tier::host) + p.layer_offset[layer],
                                         bytes, slot);
        loaded_[slot] = static_cast<std::int64_t>(layer);
        streamed_bytes_ += bytes;
        ++copies_;
    }

    arena<Backend>* arena_;
    std::int64_t loaded_[2] = {-1, -1};
    std::uint64_t streamed_bytes_ = 0;
    std::uint64_t copies_ = 0;
};

}  // namespace vramplan::runtime
