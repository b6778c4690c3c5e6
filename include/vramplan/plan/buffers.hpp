// The plan as a list: every buffer with its tier, offset, size and the schedule steps (ops of the
// plan's forward graph) that use it.
// It is an expansion of the plan's layout, computed on demand (the layout itself stores one slot
// per layer kind, which is what keeps compile-time planning cheap).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vramplan/plan/plan.hpp"

namespace vramplan {

struct buffer_info {
    std::string name;
    buffer_kind kind = buffer_kind::weights;
    tier where = tier::gpu;
    std::uint64_t offset = 0;    // within the tier's arena
    std::uint64_t bytes = 0;     // exact size of the contents
    std::uint64_t reserved = 0;  // slot size: bytes rounded up to the alignment
    std::uint16_t first = 0;     // first and last schedule step that use it
    std::uint16_t last = 0;
    bool persistent = false;  // lives for the whole program (weights, KV), not one pass
    std::int64_t layer = -1;  // decoder layer, or -1
    format fmt{};
    std::uint64_t rows = 0, cols = 0;  // weights: GGUF ne[1] (times ne[2] for stacked experts), ne[0]
    weight_ref ref{};                  // weights: the tensor the graph's ops name (none for opaque blocks)
};

inline std::string layer_tensor_name(std::uint64_t layer, tensor_role r) {
    return "blk." + std::to_string(layer) + "." + std::string(role_name(r));
}

inline std::vector<buffer_info> buffers(const plan& p) {
    std::vector<buffer_info> out;
    const auto& s = p.model.shape;
    const forward_graph& g = p.graph;
    // A weight's step is the first op that reads it, from the same graph the runtime executes.
    // A layer's tensor has role_bytes, the bytes its slot holds (a checkpoint format counts stacked
    // experts plane by plane, and DeepSeek's kv_b_proj once).
    auto weight = [&](std::string name, tier t, std::uint64_t offset, format f, std::uint64_t rows, std::uint64_t cols,
                      weight_ref ref, std::int64_t layer) {
        const std::uint64_t b = ref.scope == weight_scope::layer
                                    ? role_bytes(p.model, p.model.layer(static_cast<std::uint64_t>(layer)), ref.role())
                                    : tensor_bytes(f, rows, cols);
        const std::uint16_t st = g.weight_step(ref);
        out.push_back({std::move(name), buffer_kind::weights, t, offset, b, align_up(b, p.options.alignment), st, st,
                       true, layer, f, rows, cols, ref});
    };
    // An architecture without a graph: its tensors as one opaque block globally and per layer.
    auto opaque = [&](std::string name, tier t, std::uint64_t offset, std::uint64_t bytes, std::int64_t layer) {
        if (bytes)
            out.push_back({std::move(name), buffer_kind::weights, t, offset, bytes,
                           align_up(bytes, p.options.alignment), 0, 0, true, layer, format{format_id::i8}, 1, bytes});
    };
    using enum global_tensor;
    const bool checkpoint = p.model.checkpoint_weights;
    if (!s.activations_planned || checkpoint) {
        // A checkpoint's or a graphless file's tensors: the layer's block ends where its experts
        // begin (expert_cut); a checkpoint's experts end the slot, or sit in the host tier.
        opaque("global tensors", tier::gpu, p.global_opaque_offset, p.model.global_opaque_bytes, -1);
        for (std::uint64_t l = 0; l < s.n_layer; ++l) {
            const auto k = p.model.layer_kind[l];
            const std::uint64_t b = p.model.kinds[k].opaque_bytes, e = p.model.kinds[k].opaque_expert_bytes;
            const auto layer = static_cast<std::int64_t>(l);
            opaque("blk." + std::to_string(l) + " tensors", p.layer_tier(l),
                   p.layer_offset[l] + p.expert_cut[k] - align_up(b, p.options.alignment), b, layer);
            const std::uint64_t experts_at = p.block_stride[k] - align_up(e, p.options.alignment);
            opaque("blk." + std::to_string(l) + " experts", p.experts_on_host(l) ? tier::host : p.layer_tier(l),
                   p.experts_on_host(l) ? p.expert_offset[l] + (experts_at - p.expert_cut[k])
                                        : p.layer_offset[l] + experts_at,
                   e, layer);
        }
    }
    if (s.activations_planned)
        weight("token_embd.weight", p.token_embd_tier, p.token_embd_offset, p.model.token_embd, s.n_vocab, s.n_embd,
               global_weight(token_embd), -1);
    if (s.activations_planned && !checkpoint)
        weight("output_norm.weight", tier::gpu, p.output_norm_offset, p.model.output_norm, 1, s.n_embd,
               global_weight(output_norm), -1);
    if (!s.tied_output && s.activations_planned && !checkpoint)
        weight("output.weight", tier::gpu, p.output_offset, p.model.output, s.n_vocab, s.n_embd, global_weight(output),
               -1);
    if (s.rope_freqs)
        weight("rope_freqs.weight", tier::gpu, p.rope_freqs_offset, format{format_id::f32}, 1, s.head_dim / 2,
               global_weight(rope_freqs), -1);
    if (s.rope_factors) {  // read by the rope ops' rotation, like rope_freqs
        const std::uint64_t b = rope_factors_bytes(p.model), step = g.first_op(op_kind::rope);
        for (int i = 0; i < 2; ++i)
            out.push_back({i == 0 ? "rope_factors_long.weight" : "rope_factors_short.weight", buffer_kind::weights,
                           tier::gpu,
                           p.rope_factors_offset + static_cast<std::uint64_t>(i) * align_up(b, p.options.alignment), b,
                           align_up(b, p.options.alignment), static_cast<std::uint16_t>(step),
                           static_cast<std::uint16_t>(step), true, -1, format{format_id::f32}, 1, s.head_dim / 2});
    }
    for (std::uint64_t l = 0; l < s.n_layer; ++l) {
        for (std::size_t r = 0; r < n_tensor_roles; ++r) {
            const auto role = static_cast<tensor_role>(r);
            if (checkpoint || !role_present(s, p.model.layer(l), role)) continue;
            const auto e = role_extent(s, role);
            weight(layer_tensor_name(l, role), p.role_tier(l, role), p.role_offset_in_tier(l, role),
                   p.model.layer(l)[role], e.all_rows(), e.cols, layer_weight(role), static_cast<std::int64_t>(l));
        }
    }
    for (std::uint64_t l = 0; l < s.n_layer; ++l) {
        if (p.kv_rows_of(l) == 0) continue;  // a layer without attention keeps no cache
        const std::uint64_t kv_exact = checked_mul(p.kv_rows_of(l), kv_row_bytes(p.model, p.model.layer(l)));
        const bool latent = s.latent_attention();  // MLA: one plane of latents and rotated keys
        for (int which = 0; which < static_cast<int>(s.kv_planes()); ++which)
            out.push_back({std::string(latent       ? "cache_latent."
                                       : which == 0 ? "cache_k."
                                                    : "cache_v.") +
                               std::to_string(l),
                           buffer_kind::kv, p.kv_tier(l), p.kv_plane_offset(l, which == 1), kv_exact, p.kv_plane_of(l),
                           g.first_op(op_kind::kv_append), g.first_op(op_kind::attention), true,
                           static_cast<std::int64_t>(l), p.model.kv, p.kv_rows_of(l),
                           kv_dim_of(p.model, p.model.layer(l))});
    }
    // A Mamba-2 layer's states in its KV slot: every sequence's convolution state, then every
    // sequence's scan state, f32 (footprint.hpp says why).
    for (std::uint64_t l = 0; l < s.n_layer; ++l) {
        if (p.model.layer(l).attention != attention_kind::recurrent) continue;
        const std::uint64_t per_sequence = recurrent_state_bytes(s);
        out.push_back({"state." + std::to_string(l), buffer_kind::kv, p.kv_tier(l), p.kv_plane_offset(l, false),
                       checked_mul(per_sequence, p.lim.batch), p.kv_plane_of(l), g.first_op(op_kind::ssm_conv),
                       g.first_op(op_kind::ssm_scan), true, static_cast<std::int64_t>(l), format{format_id::f32},
                       p.lim.batch, per_sequence / 4});
    }
    // The CPU's copy of the arena, when it computes host-tier layers, holds the same buffers.
    for (tier t : {tier::gpu, tier::host}) {
        const tier_layout& tl = t == tier::gpu ? p.gpu : p.host;
        if (t == tier::host && tl.activations.bytes == 0) continue;
        for (std::size_t i = 0; i < g.n_buffers; ++i)
            out.push_back({"act." + std::string(p.act[i].name), buffer_kind::activations, t,
                           tl.activations.offset + p.act_offset[i], p.act[i].bytes,
                           align_up(p.act[i].bytes, p.options.alignment), p.act[i].first, p.act[i].last, false, -1,
                           p.model.activations, 0, 0});
    }
    for (std::uint64_t i = 0; i < (p.staging_slot ? 2u : 0u); ++i)
        out.push_back({"staging." + std::to_string(i), buffer_kind::staging, tier::gpu,
                       p.gpu.staging.offset + i * p.staging_slot, p.staging_slot, p.staging_slot, g.block_begin,
                       static_cast<std::uint16_t>(g.block_end ? g.block_end - 1 : 0), true, -1, format{format_id::i8},
                       0, 0});
    return out;
}

inline const buffer_info* find_buffer(const std::vector<buffer_info>& all, std::string_view name) {
    for (const auto& b : all)
        if (b.name == name) return &b;
    return nullptr;
}

}  // namespace vramplan
