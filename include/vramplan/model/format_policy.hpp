// Which format each tensor gets: a default per category plus overrides (per role, optionally per
// layer), which is how GGUF-style mixes are expressed (Q4_0 layers with a Q6_K output head, or
// Q4_K_M's Q6_K ffn_down in some layers).
#pragma once

#include <array>
#include <cstdint>

#include "vramplan/model/model_desc.hpp"

namespace vramplan {

inline constexpr std::uint32_t all_layers = ~std::uint32_t{0};

struct format_override {
    tensor_role role = tensor_role::attn_q;
    format fmt{};
    std::uint32_t layer = all_layers;
};

struct format_policy {
    format weights{format_id::f16};
    format token_embd{format_id::f16};
    format output{format_id::f16};
    format norms{format_id::f32};
    // The other vectors (biases, attention sinks, Mamba-2's A and D and its convolution) and the
    // router: f32, as llama.cpp keeps them; a checkpoint keeps them in its torch_dtype.
    format vectors{format_id::f32};
    format kv{format_id::f16};
    format activations{format_id::f32};
    std::array<format_override, 8> overrides{};
    std::uint32_t n_overrides = 0;

    constexpr format_policy& with(format_override o) {
        if (n_overrides == overrides.size()) throw error("at most 8 format overrides per policy");
        overrides[n_overrides++] = o;
        return *this;
    }
};

// All matrices (embedding and output head included) in one format, norms f32: what a
// "quantize everything to X" choice means.
constexpr format_policy uniform_policy(format weights, format kv = format{format_id::f16},
                                       format activations = format{format_id::f32}) {
    format_policy p;
    p.weights = p.token_embd = p.output = weights;
    p.kv = kv;
    p.activations = activations;
    return p;
}

// A Hugging Face checkpoint as transformers loads it: every tensor in its torch_dtype.
constexpr format_policy checkpoint_policy(format dtype, format kv = format{format_id::f16}) {
    format_policy p = uniform_policy(dtype, kv);
    p.norms = p.vectors = dtype;
    return p;
}

constexpr model_desc make_model(std::string_view name, const decoder_shape& shape, const format_policy& p) {
    validate(shape);
    model_desc m;
    m.name = name;
    m.shape = shape;
    m.token_embd = p.token_embd;
    m.output = p.output;
    m.output_norm = p.norms;
    m.kv = p.kv;
    m.activations = p.activations;
    for (std::uint64_t layer = 0; layer < shape.n_layer; ++layer) {
        block_formats b;
        for (std::size_t r = 0; r < n_tensor_roles; ++r) {
            const auto role = static_cast<tensor_role>(r);
            b.of[r] = is_norm(role) ? p.norms : is_matrix(role) && !is_router(role) ? p.weights : p.vectors;
        }
        for (std::uint32_t i = 0; i < p.n_overrides; ++i) {
            const auto& o = p.overrides[i];
            if (o.layer == all_layers || o.layer == layer) b[o.role] = o.fmt;
        }
        m.set_layer(layer, b);
    }
    validate_formats(m);
    return m;
}

// The routed experts' matrices of every layer in format f (their biases stay f32): how a release
// that quantizes only its experts (gpt-oss's MXFP4) is described, and what --expert-weights asks.
constexpr model_desc with_expert_format(const model_desc& m, format f) {
    const model_desc out = map_layers(m, [&](std::uint64_t, block_kind& b) {
        for (auto r : {tensor_role::ffn_gate_exps, tensor_role::ffn_up_exps, tensor_role::ffn_down_exps})
            if (role_present(m.shape, b, r)) b[r] = f;
    });
    validate_formats(out);
    return out;
}

}  // namespace vramplan
