// Several GPUs, on paper. Pipeline: consecutive layers per device (identical devices evenly, mixed
// ones in proportion to their budgets or a given split), the embedding on the first and the head
// on the last, every device with its own activation arena and reserve. Tensor
// parallel: each device holds 1/k of every layer's heads and feed-forward width and of the
// vocabulary (Megatron-style sharding), with the residual-width buffers and norms in full.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "vramplan/plan/plan.hpp"

namespace vramplan {

struct device_share {
    std::uint64_t first_layer = 0;
    std::uint64_t n_layers = 0;
    std::uint64_t weights = 0, kv = 0, activations = 0, reserve = 0;
    std::uint64_t capacity = 0;  // the device's
    constexpr std::uint64_t needed() const {
        return checked_add(checked_add(weights, kv), checked_add(activations, reserve));
    }
    constexpr bool fits() const { return needed() <= capacity; }
};

// The layers each device takes: consecutive runs in proportion to `shares` (by default each
// device's budget, capacity less reserve), the boundaries rounded to the nearest layer. Every
// device must get at least one layer.
inline std::vector<std::uint64_t> pipeline_layers(std::uint64_t n_layer, const std::vector<target_desc>& devices,
                                                  std::vector<std::uint64_t> shares = {}) {
    if (devices.empty() || devices.size() > n_layer)
        throw error("pipeline parallelism needs between 1 and n_layer devices");
    if (shares.empty())
        for (const auto& t : devices) shares.push_back(t.budget());
    if (shares.size() != devices.size())
        throw error("--split gives " + std::to_string(shares.size()) + " shares for " + std::to_string(devices.size()) +
                    " GPUs; give one per GPU");
    long double total = 0;
    for (auto x : shares) total += static_cast<long double>(x);
    if (!(total > 0)) throw error("the split's shares must not all be zero");
    std::vector<std::uint64_t> layers;
    long double before = 0;
    std::uint64_t first = 0;
    for (std::size_t d = 0; d < devices.size(); ++d) {
        before += static_cast<long double>(shares[d]);
        const auto end =
            d + 1 == devices.size()
                ? n_layer
                : static_cast<std::uint64_t>(std::llround(before / total * static_cast<long double>(n_layer)));
        if (end <= first)
            throw error("the split gives GPU " + std::to_string(d) + " (" + std::string(devices[d].name) +
                        ") no layer; give it a larger share");
        layers.push_back(end - first);
        first = end;
    }
    return layers;
}

// Consecutive layers per device, layers[d] of them on device d: the embedding on the first, the
// output head on the last, each device with its own KV, activation arena and reserve.
inline std::vector<device_share> plan_pipeline(const model_desc& m, const std::vector<target_desc>& devices,
                                               const limits& lim, const std::vector<std::uint64_t>& layers,
                                               plan_options o = {}) {
    if (layers.size() != devices.size() || devices.empty())
        throw error("internal: one layer count per pipeline device");
    o.gpu_layers = all_gpu_layers;
    const plan p = plan_inference(m, devices.front(), lim, o);
    std::vector<device_share> out(devices.size());
    std::uint64_t first = 0;
    for (std::size_t d = 0; d < devices.size(); ++d) {
        device_share& s = out[d];
        s.first_layer = first;
        s.n_layers = layers[d];
        first += layers[d];
        for (std::uint64_t l = s.first_layer; l < s.first_layer + s.n_layers; ++l) {
            s.weights = checked_add(s.weights, p.block_stride[m.layer_kind[l]]);
            s.kv = checked_add(s.kv, p.cache_bytes_of(l));
        }
        if (d == 0) s.weights = checked_add(s.weights, align_up(token_embd_bytes(m), o.alignment));
        s.weights = checked_add(s.weights, align_up(rope_freqs_bytes(m), o.alignment));  // every layer rotates with it
        s.weights = checked_add(s.weights, checked_mul(align_up(rope_factors_bytes(m), o.alignment), 2));
        if (d + 1 == devices.size())
            s.weights = checked_add(s.weights, checked_add(align_up(output_bytes(m), o.alignment),
                                                           align_up(output_norm_bytes(m), o.alignment)));
        s.activations = p.gpu.activations.bytes;
        s.reserve = devices[d].reserve;
        s.capacity = devices[d].capacity;
    }
    if (first != m.shape.n_layer) throw error("internal: the pipeline's layers do not add up to the model's");
    return out;
}

// N identical devices, the layers split evenly (device d takes layers [d L / N, (d+1) L / N)).
inline std::vector<device_share> plan_pipeline(const model_desc& m, const target_desc& t, const limits& lim,
                                               std::uint64_t devices, plan_options o = {}) {
    if (devices == 0 || devices > m.shape.n_layer)
        throw error("pipeline parallelism needs between 1 and n_layer devices");
    const std::uint64_t L = m.shape.n_layer;
    std::vector<std::uint64_t> layers;
    for (std::uint64_t d = 0; d < devices; ++d) layers.push_back((d + 1) * L / devices - d * L / devices);
    return plan_pipeline(m, std::vector<target_desc>(devices, t), lim, layers, o);
}

// The model one tensor-parallel device sees.
constexpr model_desc tensor_parallel_shard(model_desc m, std::uint64_t k) {
    const auto& s = m.shape;
    if (s.hybrid() && k > 1)
        throw error(
            "tensor parallelism is not planned for Mamba-2 layers (how their heads and groups split is not modeled); "
            "split the layers across the devices (pipeline) instead");
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
