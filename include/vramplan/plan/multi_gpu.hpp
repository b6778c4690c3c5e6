// Several identical GPUs, on paper. Pipeline: consecutive layers per device, the embedding on the
// first and the head on the last, every device with its own activation arena and reserve. Tensor
// parallel: each device holds 1/k of every layer's heads and feed-forward width and of the
// vocabulary (Megatron-style sharding), with the residual-width buffers and norms in full.
#pragma once

#include <cstdint>
#include <vector>

#include "vramplan/plan/plan.hpp"

namespace vramplan {

struct device_share {
    std::uint64_t first_layer = 0;
    std::uint64_t n_layers = 0;
    std::uint64_t weights = 0, kv = 0, activations = 0, reserve = 0;
    constexpr std::uint64_t needed() const {
        return checked_add(checked_add(weights, kv), checked_add(activations, reserve));
    }
};

inline std::vector<device_share> plan_pipeline(const model_desc& m, const target_desc& t, const limits& lim,
                                               std::uint64_t devices, plan_options o = {}) {
    if (devices == 0 || devices > m.shape.n_layer)
        throw error("pipeline parallelism needs between 1 and n_layer devices");
    o.gpu_layers = all_gpu_layers;
    const plan p = plan_inference(m, t, lim, o);
    std::vector<device_share> out(devices);
    const std::uint64_t L = m.shape.n_layer;
    for (std::uint64_t d = 0; d < devices; ++d) {
        device_share& s = out[d];
        s.first_layer = d * L / devices;
        s.n_layers = (d + 1) * L / devices - s.first_layer;
        for (std::uint64_t l = s.first_layer; l < s.first_layer + s.n_layers; ++l)
            s.weights = checked_add(s.weights, p.block_stride[m.layer_kind[l]]);
        if (d == 0) s.weights = checked_add(s.weights, align_up(token_embd_bytes(m), o.alignment));
        s.weights = checked_add(s.weights, align_up(rope_freqs_bytes(m), o.alignment));  // every layer rotates with it
        if (d + 1 == devices)
            s.weights = checked_add(s.weights, checked_add(align_up(output_bytes(m), o.alignment),
                                                           align_up(output_norm_bytes(m), o.alignment)));
        s.kv = checked_mul(checked_mul(p.kv_plane, 2), s.n_layers);
        s.activations = p.gpu.activations.bytes;
        s.reserve = t.reserve;
    }
    return out;
}

// The model one tensor-parallel device sees.
constexpr model_desc tensor_parallel_shard(model_desc m, std::uint64_t k) {
    const auto& s = m.shape;
    if (k == 0 || s.n_head % k || s.n_head_kv % k || s.n_ff % k || s.n_vocab % k)
        throw error(
            "tensor parallelism needs a factor that divides n_head, n_head_kv, the feed-forward width and the "
            "vocabulary");
    m.shape.n_head /= k;
    m.shape.n_head_kv /= k;
    m.shape.n_ff /= k;
    m.shape.n_vocab /= k;
    validate_formats(m);
    return m;
}

}  // namespace vramplan
