// The inference plan: where every byte lives. Weights and KV cache are persistent and stacked
// layer after layer; activations are the buffers of the forward graph (model/decoder_graph.hpp),
// packed once by the lifetimes the graph gives them, the decoder block's standing for every block; layers that do not
// fit stay in the pinned host tier, and either stream through two GPU staging slots or are computed there by the CPU
// (with their KV cache and activations in the host tier too). Everything is constexpr and loops over
// layers at most a few times, never over layers x buffers, so an 80-layer model plans inside default constexpr limits.
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "vramplan/format/bytes.hpp"
#include "vramplan/limits.hpp"
#include "vramplan/model/decoder_graph.hpp"
#include "vramplan/model/footprint.hpp"
#include "vramplan/model/model_desc.hpp"
#include "vramplan/plan/activations.hpp"
#include "vramplan/plan/lifetime_packer.hpp"
#include "vramplan/target/target_desc.hpp"

namespace vramplan {

enum class tier : std::uint8_t { gpu, host };
enum class buffer_kind : std::uint8_t { weights, kv, activations, staging };
enum class verdict : std::uint8_t { fits, does_not_fit };

inline constexpr std::uint64_t all_gpu_layers = ~std::uint64_t{0};

inline constexpr std::uint64_t all_expert_layers = ~std::uint64_t{0};

// What happens to the layers that stay in the host tier. stream: each pass copies them to the GPU
// through two staging slots (Accelerate-style weight streaming), and the GPU computes them, so their
// KV cache stays on the GPU. compute: the CPU computes them where they are, as llama.cpp does with
// the layers --n-gpu-layers leaves out, so their KV cache and an activation arena live in the host
// tier and nothing but a row per token crosses the link.
enum class offload_mode : std::uint8_t { stream, compute, count };
inline constexpr std::array<std::string_view, static_cast<std::size_t>(offload_mode::count)> offload_mode_names{
    "stream", "compute"};
constexpr std::string_view offload_mode_name(offload_mode m) { return offload_mode_names[static_cast<std::size_t>(m)]; }

struct plan_options {
    std::uint64_t alignment = 256;              // every buffer starts at a multiple of this
    std::uint64_t gpu_layers = all_gpu_layers;  // decoder layers kept in the GPU tier (the last ones)
    std::uint64_t host_capacity = 0;            // pinned host memory available; 0 = not checked
    // The routed experts of the first N layers with experts live in the pinned host tier and are
    // computed there (llama.cpp's --n-cpu-moe N); the rest of those layers stays on the GPU. Only
    // n_expert_used of n_expert planes are read per token, which is why this costs less speed than
    // streaming whole layers. A streamed layer's experts are in the host tier with it anyway.
    std::uint64_t host_expert_layers = 0;
    offload_mode offload = offload_mode::stream;
};

struct region {
    std::uint64_t offset = 0;
    std::uint64_t bytes = 0;
    constexpr std::uint64_t end() const { return offset + bytes; }
};

// One tier's arena: four consecutive regions.
struct tier_layout {
    region weights, kv, activations, staging;
    constexpr std::uint64_t total() const { return staging.end(); }
};

struct plan {
    model_desc model{};
    target_desc target{};
    limits lim{};
    plan_options options{};

    // Weights. A layer's tensors sit at role_offset within the layer's slot; slots are stacked.
    std::array<std::array<std::uint64_t, n_tensor_roles>, max_block_kinds> role_offset{};
    std::array<std::uint64_t, max_block_kinds> block_stride{};
    std::array<std::uint64_t, max_layers> layer_offset{};  // within its tier's weights region
    std::uint64_t gpu_layers = 0;                          // layers [n_layer - gpu_layers, n_layer)
    // A kind's routed experts start this far into its slot (its stride when it has none); a layer
    // whose experts live in the host tier keeps only the slot's first expert_cut bytes on the GPU,
    // and its experts sit at expert_offset[layer] in the host tier's weights.
    std::array<std::uint64_t, max_block_kinds> expert_cut{};
    std::array<std::uint64_t, max_layers> expert_offset{};
    std::array<bool, max_layers> experts_host{};
    tier token_embd_tier = tier::gpu;
    std::uint64_t token_embd_offset = 0, output_norm_offset = 0, output_offset = 0;  // token_embd within its tier
    std::uint64_t rope_freqs_offset = 0;     // GPU tier; meaningful when model.shape.rope_freqs
    std::uint64_t rope_factors_offset = 0;   // GPU tier: LongRoPE's long factors, then its short ones
    std::uint64_t global_opaque_offset = 0;  // GPU tier: an architecture without a graph's global tensors

    // KV cache: per layer a K plane then a V plane (MLA: its latent plane alone) of kv_plane[kind] bytes each
    // (aligned), layer l's K plane at kv_offset[l] within its tier's KV region (the host tier's for layers the CPU
    // computes, else the GPU's). Sliding-window and chunked layers hold their ring. A Mamba-2 layer holds
    // one plane in the same region: each sequence's convolution state, then each sequence's scan state.
    std::array<std::uint64_t, max_block_kinds> kv_plane{};
    std::array<std::uint64_t, max_layers> kv_offset{};

    // The forward pass this plan is for: the runtime executes these ops, and the activation
    // buffers below are its buffers, packed by lifetime (offsets within the activations region).
    forward_graph graph{};
    std::array<activation_buffer, max_graph_buffers> act{};
    std::array<std::uint64_t, max_graph_buffers> act_offset{};
    std::uint64_t act_lower_bound = 0;

    std::uint64_t staging_slot = 0;  // each of the two staging slots
    tier_layout gpu{}, host{};

    // Cache positions of each sequence in layer l (the context, a sliding window's ring, or none).
    constexpr std::uint64_t kv_positions_of(std::uint64_t layer) const {
        return kv_positions(model.shape, model.layer(layer).attention, lim.context, lim.ubatch);
    }
    constexpr std::uint64_t kv_rows_of(std::uint64_t layer) const {
        return checked_mul(kv_positions_of(layer), lim.batch);
    }
    constexpr std::uint64_t kv_plane_of(std::uint64_t layer) const { return kv_plane[model.layer_kind[layer]]; }
    // All of layer l's planes in the KV region.
    constexpr std::uint64_t cache_bytes_of(std::uint64_t layer) const {
        return checked_mul(kv_plane_of(layer), cache_planes(model.shape, model.layer(layer)));
    }
    // The Mamba-2 layers' share of the KV region (aligned), which no context length changes.
    constexpr std::uint64_t state_bytes() const {
        std::uint64_t n = 0;
        for (std::uint64_t l = 0; l < model.shape.n_layer; ++l)
            if (model.layer(l).attention == attention_kind::recurrent) n = checked_add(n, cache_bytes_of(l));
        return n;
    }
    constexpr tier layer_tier(std::uint64_t layer) const {
        return layer + gpu_layers >= model.shape.n_layer ? tier::gpu : tier::host;
    }
    // Whether the CPU computes layer l (a host-tier layer under offload_mode::compute).
    constexpr bool host_computed(std::uint64_t layer) const {
        return options.offload == offload_mode::compute && layer_tier(layer) == tier::host;
    }
    constexpr tier kv_tier(std::uint64_t layer) const { return host_computed(layer) ? tier::host : tier::gpu; }
    // Offset of layer l's K (values = false) or V plane within its tier (kv_tier).
    constexpr std::uint64_t kv_plane_offset(std::uint64_t layer, bool values) const {
        const region& kv = kv_tier(layer) == tier::gpu ? gpu.kv : host.kv;
        return kv.offset + kv_offset[layer] + (values ? kv_plane_of(layer) : 0);
    }
    // Bytes of the whole KV cache, both tiers.
    constexpr std::uint64_t kv_bytes() const { return checked_add(gpu.kv.bytes, host.kv.bytes); }
    // The routed experts of a GPU-resident layer that the options put in the host tier (decided
    // once, when the weights are placed, by resident_stride's rule).
    constexpr bool experts_on_host(std::uint64_t layer) const { return experts_host[layer]; }
    // How many layers have their experts in the host tier.
    constexpr std::uint64_t host_expert_layer_count() const {
        std::uint64_t n = 0;
        for (std::uint64_t l = 0; l < model.shape.n_layer; ++l) n += experts_host[l];
        return n;
    }
    // Where a layer's tensor of role r lives.
    constexpr tier role_tier(std::uint64_t layer, tensor_role r) const {
        return is_routed_expert(r) && experts_on_host(layer) ? tier::host : layer_tier(layer);
    }
    constexpr std::uint64_t role_offset_in_tier(std::uint64_t layer, tensor_role r) const {
        const auto k = model.layer_kind[layer];
        const auto at = role_offset[k][static_cast<std::size_t>(r)];
        return is_routed_expert(r) && experts_on_host(layer) ? expert_offset[layer] + (at - expert_cut[k])
                                                             : layer_offset[layer] + at;
    }
    // Layers in the host tier, streamed or computed there.
    constexpr std::uint64_t streamed_layers() const { return model.shape.n_layer - gpu_layers; }
    constexpr std::uint64_t host_computed_layers() const {
        return options.offload == offload_mode::compute ? streamed_layers() : 0;
    }
    // Bytes the GPU tier needs, the runtime reserve included.
    constexpr std::uint64_t needed() const { return checked_add(gpu.total(), target.reserve); }
    constexpr std::uint64_t budget() const { return target.capacity; }
    constexpr std::uint64_t shortfall() const { return needed() > budget() ? needed() - budget() : 0; }
    constexpr bool host_fits() const { return options.host_capacity == 0 || host.total() <= options.host_capacity; }
    constexpr verdict fit() const { return shortfall() == 0 && host_fits() ? verdict::fits : verdict::does_not_fit; }
    constexpr bool fits() const { return fit() == verdict::fits; }
};

namespace detail {

constexpr std::uint64_t aligned(const plan& p, std::uint64_t n) { return align_up(n, p.options.alignment); }

// A slot: the roles before the routed experts, the opaque bytes (an architecture without a graph:
// all the layer's tensors; a checkpoint's: all but its experts), then the routed experts, role by
// role or a checkpoint's opaque experts, which a layer whose experts are in the host tier cuts off.
constexpr void lay_out_blocks(plan& p) {
    for (std::uint32_t k = 0; k < p.model.n_kinds; ++k) {
        const block_kind& kind = p.model.kinds[k];
        std::uint64_t at = 0;
        for (std::size_t r = 0; r < n_tensor_roles; ++r) {
            if (r == first_routed_expert_role) {
                at = checked_add(at, aligned(p, kind.opaque_bytes));
                p.expert_cut[k] = at;
            }
            p.role_offset[k][r] = at;
            at = checked_add(at, aligned(p, role_bytes(p.model, kind, static_cast<tensor_role>(r))));
        }
        p.block_stride[k] = checked_add(at, aligned(p, kind.opaque_expert_bytes));
    }
}

constexpr std::uint64_t layer_stride(const plan& p, std::uint64_t layer) {
    return p.block_stride[p.model.layer_kind[layer]];
}

// The GPU bytes of layer l's slot when it is resident: all of it, or up to its experts when they
// are in the host tier (`moe_before` counts the layers with experts before it).
constexpr std::uint64_t resident_stride(const plan& p, std::uint64_t layer, std::uint64_t moe_before) {
    const auto k = p.model.layer_kind[layer];
    const bool host = p.model.kinds[k].ffn == ffn_kind::moe && moe_before < p.options.host_expert_layers;
    return host ? p.expert_cut[k] : p.block_stride[k];
}

// The resident layer count the options ask for (every layer on a unified-memory device).
constexpr void choose_gpu_layers(plan& p) {
    const std::uint64_t n = p.model.shape.n_layer;
    p.gpu_layers = p.options.gpu_layers > n ? n : p.options.gpu_layers;
    if (p.target.unified) p.gpu_layers = n;  // one memory: nothing to stream
}

// Each kind's K/V plane, and the layers' planes stacked in layer order within their tier's KV
// region (sizes into p.gpu.kv and p.host.kv; their offsets come later).
constexpr void lay_out_kv(plan& p) {
    for (std::uint32_t k = 0; k < p.model.n_kinds; ++k) {
        const std::uint64_t positions =
            kv_positions(p.model.shape, p.model.kinds[k].attention, p.lim.context, p.lim.ubatch);
        p.kv_plane[k] = aligned(p, checked_mul(layer_cache_plane(p.model, p.model.kinds[k], positions), p.lim.batch));
    }
    std::uint64_t at[2] = {0, 0};
    for (std::uint64_t l = 0; l < p.model.shape.n_layer; ++l) {
        auto& tier_at = at[p.kv_tier(l) == tier::gpu ? 0 : 1];
        p.kv_offset[l] = tier_at;
        tier_at = checked_add(tier_at, p.cache_bytes_of(l));
    }
    p.gpu.kv.bytes = at[0];
    p.host.kv.bytes = at[1];
}

constexpr void lay_out_activations(plan& p) {
    if (!p.model.shape.activations_planned) return;  // no graph: no activations planned (reports say so)
    p.act = graph_activations(p.graph, p.model.activations, p.lim);
    const std::size_t n = p.graph.n_buffers;
    std::array<lifetime_request, max_graph_buffers> req{};
    for (std::size_t i = 0; i < n; ++i) req[i] = {aligned(p, p.act[i].bytes), p.act[i].first, p.act[i].last};
    std::array<std::uint64_t, max_graph_buffers> scratch{};
    std::array<std::uint32_t, max_graph_buffers> order{};
    std::array<bool, max_graph_buffers> flags{};
    const std::span<const lifetime_request> live(req.data(), n);
    p.act_lower_bound = lifetime_lower_bound(live);
    const std::uint64_t arena = pack_lifetimes(live, std::span(p.act_offset).first(n), scratch,
                                               std::span(order).first(n), std::span(flags).first(n));
    p.gpu.activations.bytes = arena;
}

// Bytes of the GPU tier with g layers resident, without building the plan: used by auto-fit.
struct tier_sizes {
    std::uint64_t gpu_fixed = 0;      // output head, output norm, RoPE frequencies, KV, activations
                                      // (KV per layer instead when host layers are computed there)
    std::uint64_t token_embd = 0;     // resident only when every layer is
    std::uint64_t staging_floor = 0;  // the embedding rows of one pass, staged when token_embd streams
};

constexpr std::uint64_t staging_for(const plan& p, std::uint64_t max_streamed_stride, const tier_sizes& t) {
    if (p.options.offload == offload_mode::compute) return 0;  // the CPU computes them: nothing is copied whole
    return checked_mul(max_streamed_stride > t.staging_floor ? max_streamed_stride : t.staging_floor, 2);
}

constexpr tier_sizes fixed_sizes(const plan& p) {
    tier_sizes t;
    const std::uint64_t kv = p.options.offload == offload_mode::compute ? 0 : p.kv_bytes();
    t.gpu_fixed =
        checked_add(checked_add(aligned(p, output_bytes(p.model)), aligned(p, output_norm_bytes(p.model))),
                    checked_add(checked_add(kv, p.gpu.activations.bytes), aligned(p, rope_freqs_bytes(p.model))));
    t.gpu_fixed = checked_add(t.gpu_fixed, aligned(p, p.model.global_opaque_bytes));
    t.gpu_fixed = checked_add(t.gpu_fixed, checked_mul(aligned(p, rope_factors_bytes(p.model)), 2));
    t.token_embd = aligned(p, token_embd_bytes(p.model));
    t.staging_floor = aligned(p, checked_mul(p.lim.tokens_per_pass(), p.model.shape.n_embd, 4));
    return t;
}

}  // namespace detail

// GPU-tier bytes (reserve included) for every possible count of resident layers, in one pass:
// out[g] for g = 0..n_layer. Host layers are the first ones, as llama.cpp's --n-gpu-layers; when
// the CPU computes them, a layer's KV planes go where the layer goes.
template <class Out>
constexpr void needed_by_gpu_layers(const plan& base, Out&& out) {
    const auto t = detail::fixed_sizes(base);
    const std::uint64_t n = base.model.shape.n_layer;
    // resident(g) = sum of resident strides of layers [n-g, n); stream_max(g) = max stride of layers
    // [0, n-g). Host experts depend on a layer's rank among the MoE layers, not on g.
    std::array<std::uint64_t, max_layers + 1> prefix_max{};
    std::array<std::uint64_t, max_layers> on_gpu{};
    std::uint64_t moe_before = 0;
    for (std::uint64_t l = 0; l < n; ++l) {
        const std::uint64_t s = detail::layer_stride(base, l);
        prefix_max[l + 1] = s > prefix_max[l] ? s : prefix_max[l];
        on_gpu[l] = detail::resident_stride(base, l, moe_before);
        if (base.options.offload == offload_mode::compute) on_gpu[l] = checked_add(on_gpu[l], base.cache_bytes_of(l));
        moe_before += base.model.layer(l).ffn == ffn_kind::moe;
    }
    std::uint64_t resident = 0;
    for (std::uint64_t g = 0; g <= n; ++g) {
        if (g > 0) resident = checked_add(resident, on_gpu[n - g]);
        const bool all = g == n;
        const std::uint64_t staging = all ? 0 : detail::staging_for(base, prefix_max[n - g], t);
        std::uint64_t total = checked_add(checked_add(t.gpu_fixed, resident), staging);
        if (all) total = checked_add(total, t.token_embd);
        out(g, checked_add(total, base.target.reserve));
    }
}

// The largest number of resident layers whose plan fits the device, or none.
constexpr std::uint64_t no_layers_fit = ~std::uint64_t{0};

constexpr std::uint64_t auto_gpu_layers(const plan& base) {
    std::uint64_t best = no_layers_fit;
    needed_by_gpu_layers(base, [&](std::uint64_t g, std::uint64_t need) {
        if (need <= base.target.capacity) best = g;
    });
    return best;
}

namespace detail {
constexpr void place_weights_and_tiers(plan& p) {
    const std::uint64_t n = p.model.shape.n_layer;
    p.token_embd_tier = p.gpu_layers == n ? tier::gpu : tier::host;

    // Global tensors first in their tier, then the layers in order.
    std::uint64_t gpu_at = 0, host_at = 0;
    auto& embd_at = p.token_embd_tier == tier::gpu ? gpu_at : host_at;
    p.token_embd_offset = embd_at;
    embd_at = checked_add(embd_at, aligned(p, token_embd_bytes(p.model)));
    p.output_norm_offset = gpu_at;
    gpu_at = checked_add(gpu_at, aligned(p, output_norm_bytes(p.model)));
    p.output_offset = gpu_at;
    gpu_at = checked_add(gpu_at, aligned(p, output_bytes(p.model)));
    p.rope_freqs_offset = gpu_at;
    gpu_at = checked_add(gpu_at, aligned(p, rope_freqs_bytes(p.model)));
    p.rope_factors_offset = gpu_at;
    gpu_at = checked_add(gpu_at, checked_mul(aligned(p, rope_factors_bytes(p.model)), 2));
    p.global_opaque_offset = gpu_at;
    gpu_at = checked_add(gpu_at, aligned(p, p.model.global_opaque_bytes));
    std::uint64_t max_streamed = 0, moe_before = 0;
    for (std::uint64_t l = 0; l < n; ++l) {
        const std::uint64_t s = layer_stride(p, l);
        if (p.layer_tier(l) == tier::gpu) {
            p.layer_offset[l] = gpu_at;
            const std::uint64_t kept = resident_stride(p, l, moe_before);
            gpu_at = checked_add(gpu_at, kept);
            p.experts_host[l] = kept != s;
            if (p.experts_host[l]) {  // the experts go to the host tier
                p.expert_offset[l] = host_at;
                host_at = checked_add(host_at, s - kept);
            }
        } else {
            p.layer_offset[l] = host_at;
            host_at = checked_add(host_at, s);
            if (s > max_streamed) max_streamed = s;
        }
        moe_before += p.model.layer(l).ffn == ffn_kind::moe;
    }
    const auto t = fixed_sizes(p);
    p.staging_slot = p.gpu_layers == n ? 0 : staging_for(p, max_streamed, t) / 2;

    p.gpu.weights = {0, gpu_at};
    p.gpu.kv = {gpu_at, p.gpu.kv.bytes};
    const std::uint64_t act_bytes = p.gpu.activations.bytes;
    p.gpu.activations = {p.gpu.kv.end(), act_bytes};
    p.gpu.staging = {p.gpu.activations.end(), checked_mul(p.staging_slot, 2)};
    // The CPU runs the same block graph on the layers it computes, and the expert products of the
    // experts kept in the host tier, so it needs the same arena: beside a GPU it computes on the
    // host tier's copy (runtime/forward_pass.hpp).
    p.host.weights = {0, host_at};
    p.host.kv = {host_at, p.host.kv.bytes};
    const bool cpu_computes = p.host_computed_layers() != 0 || p.host_expert_layer_count() != 0;
    p.host.activations = {p.host.kv.end(), cpu_computes ? act_bytes : 0};
    p.host.staging = {p.host.activations.end(), 0};
}
}  // namespace detail

constexpr void validate(const limits& lim) {
    if (lim.context == 0) throw error("context must be at least 1 token");
    if (lim.batch == 0) throw error("batch must be at least 1 sequence");
    if (lim.ubatch == 0) throw error("micro-batch (ubatch) must be at least 1 token");
}

constexpr void validate(const plan_options& o) {
    if (o.alignment == 0 || o.alignment > (1ull << 30)) throw error("alignment must be between 1 byte and 1 GiB");
}

// The plan for inference of `model` on `target` within `lim`.
constexpr plan plan_inference(const model_desc& model, const target_desc& target, const limits& lim,
                              plan_options options = {}) {
    validate(model.shape);
    validate_formats(model);
    validate(lim);
    validate(options);
    plan p;
    p.model = model;
    p.target = target;
    p.lim = lim;
    p.options = options;
    detail::choose_gpu_layers(p);
    detail::lay_out_kv(p);
    if (model.shape.activations_planned) p.graph = decoder_graph(model.shape);
    detail::lay_out_blocks(p);
    detail::lay_out_activations(p);
    detail::place_weights_and_tiers(p);
    return p;
}

constexpr std::uint64_t moe_layer_count(const model_desc& m) {
    std::uint64_t n = 0;
    for (std::uint64_t l = 0; l < m.shape.n_layer; ++l) n += m.layer(l).ffn == ffn_kind::moe;
    return n;
}

// The same plan with as many layers resident as fit (all of them when the model fits; none
// resident still needs the head, KV and activations on the GPU). A model with experts first moves
// the experts of as few layers as needed to the host tier (unless options already name a count),
// since a token reads only the experts its router picks, and offloads whole layers only when even
// every layer's experts in the host tier leave too little room.
constexpr plan plan_auto_offload(const model_desc& model, const target_desc& target, const limits& lim,
                                 plan_options options = {}) {
    options.gpu_layers = all_gpu_layers;
    plan full = plan_inference(model, target, lim, options);
    const std::uint64_t n_moe = moe_layer_count(model);
    if (!full.fits() && n_moe != 0 && options.host_expert_layers == 0) {
        // Fewer GPU bytes with every layer whose experts move, so the fitting counts are a suffix
        // of 1..n_moe: bisect for the smallest.
        options.host_expert_layers = n_moe;
        full = plan_inference(model, target, lim, options);
        if (full.fits()) {
            std::uint64_t lo = 1, hi = n_moe;
            while (lo < hi) {
                const std::uint64_t mid = lo + (hi - lo) / 2;
                options.host_expert_layers = mid;
                if (plan_inference(model, target, lim, options).fits())
                    hi = mid;
                else
                    lo = mid + 1;
            }
            options.host_expert_layers = lo;
            return plan_inference(model, target, lim, options);
        }
    }
    const std::uint64_t g = auto_gpu_layers(full);
    if (g == no_layers_fit || g == model.shape.n_layer) return full;
    options.gpu_layers = g;
    return plan_inference(model, target, lim, options);
}

// Predicted decode time per token: the GPU reads every weight it holds and the whole KV cache once
// per token at its memory bandwidth, except that of each layer's routed experts only the
// n_expert_used of n_expert the router picks are read; streamed layers also cross the host link
// whole. Double-buffered staging overlaps the link with the GPU, so the slower one sets the pace;
// experts in the host tier, and layers the CPU computes (their weights as the GPU would read them,
// and their KV cache), are read by the CPU at host memory bandwidth while the GPU waits for their
// result, so their time adds to the GPU's; a computed layer range hands one activation row per
// token across the link.
struct decode_estimate {
    std::uint64_t device_bytes = 0;  // read from device memory per token
    std::uint64_t link_bytes = 0;    // copied host -> device per token
    std::uint64_t host_bytes = 0;    // read from host memory by the CPU per token (host experts)
    double device_seconds = 0;
    double link_seconds = 0;
    double host_seconds = 0;
    constexpr double seconds() const {
        const double compute = device_seconds + host_seconds;
        return compute > link_seconds ? compute : link_seconds;
    }
    constexpr double tokens_per_second() const { return seconds() > 0 ? 1.0 / seconds() : 0.0; }
};

constexpr decode_estimate estimate_decode(const plan& p) {
    decode_estimate e;
    const auto& m = p.model;
    // The global tensors the GPU reads whole: all but the embedding, of which a pass reads T rows.
    const std::uint64_t embd_gpu = p.token_embd_tier == tier::gpu ? detail::aligned(p, token_embd_bytes(m)) : 0;
    std::uint64_t globals = p.gpu.weights.bytes - embd_gpu;
    std::uint64_t device = p.gpu.kv.bytes, link = 0, host = p.host.kv.bytes;
    for (std::uint64_t l = 0; l < m.shape.n_layer; ++l) {
        const auto k = m.layer_kind[l];
        const std::uint64_t stride = p.block_stride[k];
        const std::uint64_t experts = m.kinds[k].ffn == ffn_kind::moe ? stride - p.expert_cut[k] : 0;
        const std::uint64_t rest = stride - experts;
        const std::uint64_t active = experts ? checked_mul(experts, m.shape.n_expert_used) / m.shape.n_expert : 0;
        if (p.layer_tier(l) == tier::gpu) {
            globals -= p.experts_on_host(l) ? rest : stride;  // what remains are the global tensors
            device = checked_add(device, rest);
            if (p.experts_on_host(l))
                host = checked_add(host, active);
            else
                device = checked_add(device, active);
        } else if (p.host_computed(l)) {
            host = checked_add(host, checked_add(rest, active));
        } else {
            link = checked_add(link, stride);
            device = checked_add(device, checked_add(rest, active));
        }
    }
    if (p.host_computed_layers() != 0)  // the residual after the last CPU layer, for each token
        link = checked_add(link, checked_mul(checked_mul(m.shape.n_embd, 4), p.lim.batch));
    e.device_bytes = checked_add(device, globals);
    e.link_bytes = link;
    e.host_bytes = host;
    if (p.target.memory_bandwidth)
        e.device_seconds = static_cast<double>(e.device_bytes) / static_cast<double>(p.target.memory_bandwidth);
    if (p.target.link_bandwidth)
        e.link_seconds = static_cast<double>(e.link_bytes) / static_cast<double>(p.target.link_bandwidth);
    e.host_seconds = static_cast<double>(e.host_bytes) / static_cast<double>(p.target.host_memory_bandwidth());
    return e;
}

// The longest context (per sequence) whose fully resident plan fits, or 0 if not even one token.
// The plan grows with context (KV cache, attention scratch), so bisection finds it; Mamba-2 layers'
// states do not grow, so only the attending layers' share decides it.
constexpr std::uint64_t max_context(const model_desc& model, const target_desc& target, limits lim,
                                    plan_options options = {}, std::uint64_t ceiling = 1ull << 24) {
    options.gpu_layers = all_gpu_layers;
    std::uint64_t lo = 0, hi = ceiling;
    while (lo < hi) {
        const std::uint64_t mid = lo + (hi - lo + 1) / 2;
        lim.context = mid;
        if (plan_inference(model, target, lim, options).fits())
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

}  // namespace vramplan
