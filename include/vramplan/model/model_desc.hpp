// The plain, structural description every planner function takes: numbers and format values, no
// types. Compile-time models (layers.hpp) produce one with describe(); GGUF files and config.json
// produce one at run time. One description, one planner.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "vramplan/error.hpp"
#include "vramplan/format/checked_math.hpp"
#include "vramplan/format/format.hpp"
#include "vramplan/model/tensor_role.hpp"

namespace vramplan {

inline constexpr std::size_t max_layers = 256;     // Llama-3.1-405B has 126
inline constexpr std::size_t max_block_kinds = 8;  // distinct per-layer format mixes in one model

// RoPE scaling as GGUF's {arch}.rope.scaling.type names it. Linear scaling divides positions by a
// factor; YaRN and others are known so the runtime can refuse them by name (the planner needs
// nothing from them: scaling costs no memory).
enum class rope_scaling : std::uint8_t { none, linear, yarn, unknown };

constexpr std::string_view rope_scaling_name(rope_scaling r) {
    switch (r) {
        case rope_scaling::none: return "none";
        case rope_scaling::linear: return "linear";
        case rope_scaling::yarn: return "yarn";
        case rope_scaling::unknown: break;
    }
    return "unknown";
}

// The scaling a name denotes, as GGUF's rope.scaling.type and config.json's rope_scaling.rope_type
// spell it ("default" is config.json's none); any other name is unknown, so it can be refused.
constexpr rope_scaling rope_scaling_by_name(std::string_view n) {
    if (n == "none" || n == "default") return rope_scaling::none;
    if (n == "linear") return rope_scaling::linear;
    if (n == "yarn") return rope_scaling::yarn;
    return rope_scaling::unknown;
}

struct decoder_shape {
    std::uint64_t n_vocab = 0;
    std::uint64_t n_embd = 0;
    std::uint64_t n_layer = 0;
    std::uint64_t n_head = 0;
    std::uint64_t n_head_kv = 0;
    std::uint64_t head_dim = 0;
    std::uint64_t n_ff = 0;
    bool qkv_bias = false;
    bool tied_output = false;  // the output head reuses token_embd
    float rope_base = 10000.0f;
    float norm_eps = 1e-5f;
    // The longest context the model was trained for (GGUF {arch}.context_length, config.json
    // max_position_embeddings); 0 when unknown. It costs no memory: the planner sizes what is
    // asked, and a caller warns when that is more than the model can use.
    std::uint64_t n_ctx_train = 0;
    // Llama 3.1's RoPE scaling: a global rope_freqs.weight tensor (head_dim / 2 f32 divisors of the
    // rotation frequencies). Its bytes are weights; it is a fixed buffer, not a parameter.
    bool rope_freqs = false;
    rope_scaling scaling = rope_scaling::none;
    float scaling_factor = 1.0f;  // linear: positions are divided by it
    bool rope_neox = false;       // RoPE pairs (i, i + head_dim/2), GPT-NeoX style (Qwen2), not (2i, 2i+1)

    friend constexpr bool operator==(const decoder_shape&, const decoder_shape&) = default;

    constexpr std::uint64_t q_dim() const { return checked_mul(n_head, head_dim); }
    constexpr std::uint64_t kv_dim() const { return checked_mul(n_head_kv, head_dim); }
    // Positions past n_ctx_train were never seen in training: without RoPE scaling, output degrades.
    constexpr bool beyond_trained_context(std::uint64_t context) const {
        return n_ctx_train != 0 && context > n_ctx_train;
    }
};

// One layer's formats, role by role. Layers with equal formats share one block_formats entry.
struct block_formats {
    std::array<format, n_tensor_roles> of{};
    constexpr format operator[](tensor_role r) const { return of[static_cast<std::size_t>(r)]; }
    constexpr format& operator[](tensor_role r) { return of[static_cast<std::size_t>(r)]; }
    friend constexpr bool operator==(const block_formats&, const block_formats&) = default;
};

struct model_desc {
    std::string_view name = "model";
    decoder_shape shape{};
    format token_embd{format_id::f32};
    format output{format_id::f32};
    format output_norm{format_id::f32};
    format kv{format_id::f16};
    format activations{format_id::f32};
    std::array<block_formats, max_block_kinds> kinds{};
    std::uint32_t n_kinds = 0;
    std::array<std::uint8_t, max_layers> layer_kind{};

    friend constexpr bool operator==(const model_desc&, const model_desc&) = default;

    constexpr const block_formats& layer(std::uint64_t i) const { return kinds[layer_kind[i]]; }
    constexpr format global(global_tensor g) const {
        switch (g) {
            case global_tensor::token_embd: return token_embd;
            case global_tensor::output_norm: return output_norm;
            case global_tensor::output: return output;
            case global_tensor::rope_freqs:
            case global_tensor::count: break;
        }
        return format{format_id::f32};  // rope_freqs.weight: f32 divisors
    }

    // Gives layer i these formats, sharing an existing kind when one matches.
    constexpr void set_layer(std::uint64_t i, const block_formats& f) {
        if (i >= max_layers) throw error("vramplan plans at most 256 layers");
        for (std::uint32_t k = 0; k < n_kinds; ++k)
            if (kinds[k] == f) {
                layer_kind[i] = static_cast<std::uint8_t>(k);
                return;
            }
        if (n_kinds == max_block_kinds)
            throw error("more than 8 distinct per-layer format mixes; vramplan cannot plan this model");
        kinds[n_kinds] = f;
        layer_kind[i] = static_cast<std::uint8_t>(n_kinds++);
    }
};

// Rows and columns (GGUF ne[1], ne[0]) of each role's tensor; ne[0] is the quantized row.
struct tensor_extent {
    std::uint64_t rows = 0;
    std::uint64_t cols = 0;
};

constexpr tensor_extent role_extent(const decoder_shape& s, tensor_role r) {
    switch (r) {
        case tensor_role::attn_norm:
        case tensor_role::ffn_norm: return {1, s.n_embd};
        case tensor_role::attn_q: return {s.q_dim(), s.n_embd};
        case tensor_role::attn_k:
        case tensor_role::attn_v: return {s.kv_dim(), s.n_embd};
        case tensor_role::attn_q_bias: return {1, s.q_dim()};
        case tensor_role::attn_k_bias:
        case tensor_role::attn_v_bias: return {1, s.kv_dim()};
        case tensor_role::attn_output: return {s.n_embd, s.q_dim()};
        case tensor_role::ffn_gate:
        case tensor_role::ffn_up: return {s.n_ff, s.n_embd};
        case tensor_role::ffn_down: return {s.n_embd, s.n_ff};
        case tensor_role::count: break;
    }
    return {};
}

constexpr bool role_present(const decoder_shape& s, tensor_role r) { return !is_bias(r) || s.qkv_bias; }

// A shape is usable when every dimension is positive and the heads tile the attention width.
constexpr void validate(const decoder_shape& s) {
    if (s.n_vocab == 0 || s.n_embd == 0 || s.n_layer == 0 || s.n_head == 0 || s.n_head_kv == 0 || s.head_dim == 0 ||
        s.n_ff == 0)
        throw error(
            "model shape has a zero dimension (vocab, embedding, layers, heads, head_dim and ffn must be positive)");
    if (s.n_head % s.n_head_kv != 0) throw error("n_head must be a multiple of n_head_kv (grouped-query attention)");
    if (s.n_layer > max_layers) throw error("vramplan plans at most 256 layers");
}

// Every tensor's rows must be whole blocks of its format (Q4_0 cannot store a 172-value row).
constexpr void validate_formats(const model_desc& m) {
    // Strings are built only on the error path: constant evaluation cannot build them everywhere.
    auto check = [](format f, std::uint64_t cols, std::string_view prefix, std::string_view tensor) {
        validate(f);
        if (!row_fits_format(f, cols))
            throw error("tensor " + std::string(prefix) + std::string(tensor) + " has rows of " + std::to_string(cols) +
                        " values, which " + name(f) + " cannot store (it needs a multiple of " +
                        std::to_string(block_elements(f)) + "); keep this tensor in another format, e.g. f16");
    };
    check(m.token_embd, m.shape.n_embd, "", "token_embd.weight");
    check(m.output, m.shape.n_embd, "", "output.weight");
    check(m.output_norm, m.shape.n_embd, "", "output_norm.weight");
    check(m.kv, m.shape.kv_dim(), "", "KV cache row (n_head_kv x head_dim)");
    for (std::uint32_t k = 0; k < m.n_kinds; ++k)
        for (std::size_t r = 0; r < n_tensor_roles; ++r) {
            const auto role = static_cast<tensor_role>(r);
            if (role_present(m.shape, role))
                check(m.kinds[k][role], role_extent(m.shape, role).cols, "blk.*.", role_name(role));
        }
}

}  // namespace vramplan
