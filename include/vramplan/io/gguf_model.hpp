// A GGUF file as a model description: shape from the metadata, formats from each tensor as stored
// (real files mix Q4_0, Q8_0, F16 and F32), every tensor's shape checked against what the shape
// implies. It feeds the same planner as the compile-time presets. The architectures vramplan knows
// are rows of one table (io/gguf_architectures.hpp); what differs between them is data.
#pragma once

#include <array>
#include <charconv>
#include <string>
#include <system_error>
#include <unordered_set>

#include "vramplan/io/gguf_architectures.hpp"
#include "vramplan/io/gguf_reader.hpp"
#include "vramplan/model/model_desc.hpp"
#include "vramplan/model/tensor_role.hpp"

namespace vramplan::io {

namespace detail {
// A per-layer key ({arch}.attention.head_count_kv and the like) may be one number or an array of
// one per layer: the value of each layer, the fallback for all when the key is absent.
inline std::vector<std::uint64_t> per_layer(const gguf_file& g, const std::string& key, std::uint64_t n_layer,
                                            std::uint64_t fallback) {
    // The layer count is the file's word: bound it before it sizes anything.
    if (n_layer > max_layers)
        g.fail("block_count is " + std::to_string(n_layer) + "; vramplan plans at most " + std::to_string(max_layers) +
               " layers");
    const gguf_value* v = g.find(key);
    if (!v) return std::vector<std::uint64_t>(n_layer, fallback);
    if (v->type != gguf_type::array) return std::vector<std::uint64_t>(n_layer, g.get_uint(key));
    if (v->count != n_layer)
        g.fail("metadata key '" + key + "' has " + std::to_string(v->count) + " values, but the model has " +
               std::to_string(n_layer) + " layers (block_count); give one per layer");
    if (v->ints.size() != n_layer) g.fail("metadata key '" + key + "' is not an array of integers");
    std::vector<std::uint64_t> out;
    for (auto x : v->ints) {
        if (x < 0) g.fail("metadata key '" + key + "' is negative");
        out.push_back(static_cast<std::uint64_t>(x));
    }
    return out;
}
inline std::uint64_t largest(const std::vector<std::uint64_t>& v) {
    std::uint64_t m = 0;
    for (auto x : v) m = x > m ? x : m;
    return m;
}
// The architectures vramplan has a graph for give every layer one head count and width, so an
// array must hold one value.
inline std::uint64_t uniform_per_layer(const gguf_file& g, const std::string& key, std::uint64_t n_layer,
                                       std::uint64_t fallback) {
    const auto v = per_layer(g, key, n_layer, fallback);
    for (auto x : v)
        if (x != v.front())
            g.fail("metadata key '" + key +
                   "' gives layers different values; vramplan plans this architecture's layers with one head count "
                   "and width");
    return v.empty() ? fallback : v.front();
}
// A soft-capping value: the key's, which must be positive, or the architecture's default.
inline float positive_or(const gguf_file& g, const std::string& key, float fallback) {
    const double v = g.get_float(key, fallback);
    if (!(v > 0.0) || v > 1e30) {
        char text[32];
        const auto end = std::to_chars(text, text + sizeof text, v).ptr;  // shortest form: "0", not "0.000000"
        g.fail("metadata key '" + key + "' is " + std::string(text, end) +
               "; a soft-capping value is a positive number (Gemma 2's files give 50 and 30)");
    }
    return static_cast<float>(v);
}
}  // namespace detail

// Latent attention's numbers. llama.cpp's converter writes the heads' real widths as
// key_length_mla and value_length_mla, and key_length / value_length as the latent's (the width
// attention reads: kv_lora_rank + rope, and kv_lora_rank), with one KV head.
inline void describe_latent_attention(const gguf_file& g, const std::string& p, decoder_shape& s) {
    s.kv_lora_rank = g.get_uint(p + "attention.kv_lora_rank", 0);
    if (s.kv_lora_rank == 0) g.fail("missing or zero metadata key '" + p + "attention.kv_lora_rank'");
    s.q_lora_rank = g.get_uint(p + "attention.q_lora_rank", 0);
    if (!g.find(p + "attention.key_length_mla")) {
        if (g.find_tensor("blk.0.attn_kv_b.weight"))
            g.fail(
                "the file stores each layer's key and value maps as one attn_kv_b, as converters wrote it before "
                "llama.cpp cached MLA's latent (then it caches every head's keys and values); convert it again with a "
                "current llama.cpp, which writes attn_k_b and attn_v_b");
        g.fail("missing metadata key '" + p + "attention.key_length_mla' (the width of a query and key head)");
    }
    s.head_dim = g.get_uint(p + "attention.key_length_mla");
    s.v_head_dim = g.get_uint(p + "attention.value_length_mla", s.head_dim);
    s.rope_dim = g.get_uint(p + "rope.dimension_count", 0);
    if (s.rope_dim == 0 || s.rope_dim >= s.head_dim)
        g.fail("rope.dimension_count must give the rotated part of a head, between 1 and key_length_mla - 1");
    if (g.get_uint(p + "attention.key_length", s.kv_lora_rank + s.rope_dim) != s.kv_lora_rank + s.rope_dim ||
        g.get_uint(p + "attention.value_length", s.kv_lora_rank) != s.kv_lora_rank)
        g.fail("attention.key_length and value_length must be kv_lora_rank + rope.dimension_count and kv_lora_rank");
    s.n_head_kv = 1;  // one latent, read by every head
}

// The multi-token-prediction blocks a file holds after its model's layers (DeepSeek's and GLM's
// nextn_predict_layers), which no plan holds.
inline std::uint64_t mtp_layers(const gguf_file& g) {
    const gguf_value* arch = g.find("general.architecture");
    if (!arch || arch->type != gguf_type::string) return 0;
    return g.get_uint(arch->s + ".nextn_predict_layers", 0);
}

// A hybrid file's layers: head_count_kv 0 marks a Mamba-2 layer (llama.cpp's rule), the others
// attend with one head count; the ssm.* keys size the Mamba-2 layers.
inline void describe_recurrent_layers(const gguf_file& g, const std::string& p, decoder_shape& s) {
    const auto heads = detail::per_layer(g, p + "attention.head_count", s.n_layer, 0);
    const auto kv_heads = detail::per_layer(g, p + "attention.head_count_kv", s.n_layer, 0);
    for (std::uint64_t l = 0; l < s.n_layer; ++l) {
        if (kv_heads[l] == 0) {
            s.set_recurrent(l);
            continue;
        }
        if (s.n_head_kv != 0 && (kv_heads[l] != s.n_head_kv || heads[l] != s.n_head))
            g.fail(
                "the attention layers of this file have different head counts (attention.head_count and "
                "head_count_kv); vramplan plans one attention shape among the Mamba-2 layers");
        s.n_head = heads[l];
        s.n_head_kv = kv_heads[l];
    }
    if (s.n_head_kv == 0)
        g.fail(
            "every layer is a Mamba-2 layer (attention.head_count_kv is 0 for all); vramplan plans hybrids that "
            "keep some attention layers");
    if (s.n_head == 0) g.fail("missing or zero metadata key '" + p + "attention.head_count' for the attention layers");
    auto size = [&](const char* key) {
        const std::uint64_t v = g.get_uint(p + "ssm." + key, 0);
        if (v == 0) g.fail("missing or zero metadata key '" + p + "ssm." + key + "', which sizes the Mamba-2 layers");
        return v;
    };
    s.ssm_conv_kernel = size("conv_kernel");
    s.ssm_inner = size("inner_size");
    s.ssm_state = size("state_size");
    s.ssm_heads = size("time_step_rank");
    s.ssm_groups = size("group_count");
}

// The index of the first layer that attends, and of the first Mamba-2 layer: which tensors a
// layer has beyond its kind's own (biases) is read from them.
inline std::string first_layer_prefix(const decoder_shape& s, bool recurrent) {
    for (std::uint64_t l = 0; l < s.n_layer; ++l)
        if (s.is_recurrent(l) == recurrent) return "blk." + std::to_string(l) + ".";
    return "blk.0.";
}

inline decoder_shape describe_shape(const gguf_file& g, const gguf_architecture& a) {
    const std::string p = std::string(a.name) + ".";
    decoder_shape s;
    s.n_layer = g.get_uint(p + "block_count");
    // Multi-token-prediction blocks follow the model's own (block_count counts them): llama.cpp
    // loads them only for speculative decoding, and they are not planned (mtp_layers says how many).
    const std::uint64_t mtp = g.get_uint(p + "nextn_predict_layers", 0);
    if (mtp >= s.n_layer && s.n_layer != 0)
        g.fail("nextn_predict_layers (" + std::to_string(mtp) + ") leaves no layer of block_count (" +
               std::to_string(s.n_layer) + ")");
    s.n_layer -= mtp;
    if (s.n_layer == 0) g.fail("block_count is 0; a model has at least one layer");
    if (s.n_layer > max_layers)
        g.fail("block_count is " + std::to_string(s.n_layer) + "; vramplan plans at most " +
               std::to_string(max_layers) + " layers");
    s.n_embd = g.get_uint(p + "embedding_length");
    if (a.hybrid) {
        describe_recurrent_layers(g, p, s);
    } else {
        s.n_head = detail::uniform_per_layer(g, p + "attention.head_count", s.n_layer, 0);
        if (s.n_head == 0) g.fail("missing or zero metadata key '" + p + "attention.head_count'");
        s.n_head_kv = detail::uniform_per_layer(g, p + "attention.head_count_kv", s.n_layer, s.n_head);
    }
    if (a.mla) {
        describe_latent_attention(g, p, s);
    } else {
        if (s.n_embd % s.n_head != 0 && !g.find(p + "attention.key_length"))
            g.fail("embedding_length is not a multiple of attention.head_count, and attention.key_length is not given");
        s.head_dim = g.get_uint(p + "attention.key_length", s.n_embd / s.n_head);
        if (g.get_uint(p + "attention.value_length", s.head_dim) != s.head_dim)
            g.fail("attention.value_length differs from attention.key_length; vramplan plans equal K and V heads");
        if (g.get_uint(p + "rope.dimension_count", s.head_dim) != s.head_dim)
            g.fail("partial rotary embeddings (rope.dimension_count != head dimension) are not supported");
    }
    s.rope_base = static_cast<float>(g.get_float(p + "rope.freq_base", 10000.0));
    s.norm_eps = static_cast<float>(g.get_float(p + "attention.layer_norm_rms_epsilon", 1e-5));
    s.n_ctx_train = g.get_uint(p + "context_length", 0);
    // Older files name linear scaling by its factor alone (rope.scale_linear).
    const bool legacy_linear = g.find(p + "rope.scale_linear") != nullptr;
    const std::string scaling = g.find(p + "rope.scaling.type") ? g.get_string(p + "rope.scaling.type")
                                : legacy_linear                 ? "linear"
                                                                : "none";
    s.scaling = rope_scaling_by_name(scaling);
    if (s.scaling == rope_scaling::linear) {
        s.scaling_factor =
            static_cast<float>(g.get_float(p + "rope.scaling.factor", g.get_float(p + "rope.scale_linear", 1.0)));
        if (!(s.scaling_factor > 0.0f)) g.fail("rope.scaling.factor must be positive");
    }
    const gguf_tensor_info* embd = g.find_tensor("token_embd.weight");
    if (!embd) g.fail("missing tensor 'token_embd.weight'");
    if (embd->dims.size() != 2) g.fail("token_embd.weight must have 2 dimensions");
    s.n_vocab = embd->dims[1];
    s.tied_output = g.find_tensor("output.weight") == nullptr;
    const std::string attending = first_layer_prefix(s, false);
    s.qkv_bias = g.find_tensor(attending + "attn_q.bias") != nullptr;
    s.attn_sinks = g.find_tensor(attending + "attn_sinks.weight") != nullptr;
    s.attn_output_bias = g.find_tensor(attending + "attn_output.bias") != nullptr;
    if (s.hybrid()) s.ssm_conv_bias = g.find_tensor(first_layer_prefix(s, true) + "ssm_conv1d.bias") != nullptr;
    s.rope_neox = a.neox;
    s.rope_freqs = g.find_tensor("rope_freqs.weight") != nullptr;
    s.rope_factors = g.find_tensor("rope_factors_long.weight") != nullptr;
    s.qk_norm = a.qk_norm;
    s.post_norms = a.post_norms;
    s.gelu = a.gelu;
    s.norm_topk_prob = a.norm_topk_prob;
    s.llama4_block = a.llama4_block;
    s.embed_scale = a.embed_scale;
    s.rope_base_local = a.rope_base_local;
    if (a.embd_per_head_query_scale_layers != 0 && s.n_layer == a.embd_per_head_query_scale_layers)
        s.query_pre_attn_scalar = static_cast<float>(s.n_embd / s.n_head);
    if (a.attn_softcap != 0.0f || a.final_softcap != 0.0f) {
        s.attn_softcap = detail::positive_or(g, p + "attn_logit_softcapping", a.attn_softcap);
        s.final_softcap = detail::positive_or(g, p + "final_logit_softcapping", a.final_softcap);
    }

    // Experts: the count and the number used per token, and the experts' own width where the
    // architecture gives it a key (Mixtral's experts are feed_forward_length wide).
    s.n_expert = g.get_uint(p + "expert_count", 0);
    s.n_expert_used = g.get_uint(p + "expert_used_count", 0);
    if (s.n_expert == 0 && a.moe == moe_layout::required)
        g.fail("missing or zero metadata key '" + p + "expert_count'; a " + std::string(a.name) + " model has experts");
    if (s.n_expert != 0 && a.moe == moe_layout::none)
        g.fail("metadata key '" + p + "expert_count' is " + std::to_string(s.n_expert) + ", but " +
               std::string(a.name) + " models have no experts");
    if (s.n_expert != 0 && (s.n_expert_used == 0 || s.n_expert_used > s.n_expert))
        g.fail("metadata key '" + p + "expert_used_count' is " + std::to_string(s.n_expert_used) +
               "; it must be between 1 and expert_count (" + std::to_string(s.n_expert) + ")");
    if (s.n_expert == 0 && s.n_expert_used != 0)
        g.fail("metadata key '" + p + "expert_used_count' is given without experts (expert_count is 0 or missing)");
    const std::uint64_t ff = detail::uniform_per_layer(g, p + "feed_forward_length", s.n_layer, 0);
    if (s.n_expert == 0) {
        if (ff == 0) g.fail("missing or zero metadata key '" + p + "feed_forward_length'");
        s.n_ff = ff;
    } else {
        s.n_ff_expert = a.expert_width_key ? g.get_uint(p + "expert_feed_forward_length", 0) : ff;
        if (s.n_ff_expert == 0)
            g.fail("missing or zero metadata key '" + p +
                   (a.expert_width_key ? "expert_feed_forward_length'" : "feed_forward_length'"));
        // n_ff is the dense width; a model whose every layer has experts has none, so keep the key's
        // value (or the experts') for what reads it, such as tensor-parallel sharding checks.
        s.n_ff = ff ? ff : s.n_ff_expert;
        // Shared experts: a width, or DeepSeek's count of experts as wide as the routed ones.
        s.n_ff_shared =
            g.get_uint(p + "expert_shared_feed_forward_length",
                       checked_mul(g.get_uint(p + "expert_shared_count", a.shared_expert ? 1 : 0), s.n_ff_expert));
        // Dense layers before the expert layers (DeepSeek's and GLM's files say how many), and
        // expert layers every P-th layer (Llama 4's files).
        s.n_dense_lead = g.get_uint(p + "leading_dense_block_count", 0);
        s.moe_every = g.get_uint(p + "interleave_moe_layer_step", 0);
        if (s.moe_every == 1) s.moe_every = 0;  // every layer: the shape's default
        if ((s.n_dense_lead != 0 || s.moe_every > 1) && ff == 0)
            g.fail(
                "the file has dense layers among its expert layers, but feed_forward_length (their width) is "
                "missing");
        s.shared_expert_gate = s.n_ff_shared != 0 && g.find_tensor("blk.0.ffn_gate_inp_shexp.weight") != nullptr;
    }

    // Only architectures whose layers slide read the window: llama.cpp runs a llama file's layers
    // over the whole context whatever its metadata says, and so does vramplan.
    s.fused_qkv = s.fused_gate_up = a.fused;
    if (a.slides && !(a.window_optional && !g.find(p + "attention.sliding_window"))) {
        s.sliding_window = g.get_uint(p + "attention.sliding_window", a.default_window);
        if (s.sliding_window == 0)
            g.fail("metadata key '" + p + "attention.sliding_window' is 0; a sliding window holds at least 1 token");
        s.window_period = a.window_period;
        // gpt-oss's files may give the period (one global layer in every P); 1: every layer is global.
        if (const std::string key = p + "attention.sliding_window_pattern"; a.pattern_key && g.find(key)) {
            if (g.find(key)->type == gguf_type::array)
                g.fail("metadata key '" + key +
                       "' lists each layer's attention; vramplan plans one global layer in every P only");
            s.window_period = g.get_uint(key);
            if (s.window_period == 0) g.fail("metadata key '" + key + "' is 0; give the period (at least 1)");
            if (s.window_period == 1) s.sliding_window = s.window_period = 0;  // no layer slides
        }
    }
    if (a.chunk != 0) {
        s.attention_chunk = g.get_uint(p + "attention.sliding_window", a.chunk);
        if (s.attention_chunk != 0) s.window_period = a.window_period;
    }
    // gpt-oss's biases on the router and on each expert, read from its first layer with experts.
    for (std::uint64_t l = 0; l < s.n_layer; ++l)
        if (layer_ffn(s, l) == ffn_kind::moe) {
            s.expert_bias = g.find_tensor("blk." + std::to_string(l) + ".ffn_gate_exps.bias") != nullptr;
            s.expert_probs_bias = g.find_tensor("blk." + std::to_string(l) + ".exp_probs_b.bias") != nullptr;
            break;
        }
    validate(s);
    return s;
}

// A file of an architecture vramplan has no graph for: every tensor is grouped by its blk.N. prefix
// into its layer or else into the global tensors, and planned as exact opaque bytes; the KV cache
// comes from the generic keys (block_count, head_count_kv, key_length and value_length) when the
// file has them; activations are not planned, and the description says so.
inline model_desc describe_opaque(const gguf_file& g, const std::string& arch, std::string_view name) {
    const std::string p = arch + ".";
    decoder_shape s;
    s.activations_planned = false;
    s.n_layer = g.get_uint(p + "block_count", 0);
    if (s.n_layer > max_layers)
        g.fail("block_count is " + std::to_string(s.n_layer) + "; vramplan plans at most 256 layers");
    s.n_embd = g.get_uint(p + "embedding_length", 0);
    s.n_ctx_train = g.get_uint(p + "context_length", 0);
    // Layers may have their own head counts (deci's Nemotron-NAS files, OpenELM): each layer's KV
    // heads size its cache (0: a layer without attention), the largest count stands for the shape.
    const auto heads = detail::per_layer(g, p + "attention.head_count", s.n_layer, 0);
    s.n_head = detail::largest(heads);
    const auto kv_heads = detail::per_layer(g, p + "attention.head_count_kv", s.n_layer, s.n_head);
    s.n_head_kv = detail::largest(kv_heads);
    bool kv_uniform = true;
    for (std::uint64_t l = 0; l < s.n_layer; ++l) kv_uniform = kv_uniform && kv_heads[l] == s.n_head_kv;
    const std::uint64_t k =
        g.get_uint(p + "attention.key_length", s.n_head && s.n_embd % s.n_head == 0 ? s.n_embd / s.n_head : 0);
    if (g.get_uint(p + "attention.value_length", k) != k)
        g.fail("attention.value_length differs from attention.key_length; vramplan plans equal K and V heads");
    s.head_dim = k;
    if (const gguf_tensor_info* embd = g.find_tensor("token_embd.weight"); embd && embd->dims.size() == 2)
        s.n_vocab = embd->dims[1];
    validate(s);
    model_desc m;
    m.shape = s;
    m.name = name;
    std::array<block_kind, max_layers> layers{};
    for (const auto& t : g.tensors()) {
        std::uint64_t elements = 1;
        for (auto d : t.dims) elements = checked_mul(elements, d);
        // "blk.<N>.<anything>" is layer N's.
        std::uint64_t layer = 0;
        const char* end = t.name.data() + t.name.size();
        const auto [after, ec] = t.name.starts_with("blk.") ? std::from_chars(t.name.data() + 4, end, layer)
                                                            : std::from_chars_result{end, std::errc::invalid_argument};
        const bool in_layer = ec == std::errc{} && after != end && *after == '.';
        if (in_layer && layer < s.n_layer) {
            layers[layer].opaque_bytes = checked_add(layers[layer].opaque_bytes, t.bytes);
            layers[layer].opaque_params = checked_add(layers[layer].opaque_params, elements);
        } else if (in_layer) {
            g.fail("tensor '" + t.name + "' belongs to layer " + std::to_string(layer) + ", but block_count is " +
                   std::to_string(s.n_layer));
        } else {
            m.global_opaque_bytes = checked_add(m.global_opaque_bytes, t.bytes);
            m.global_opaque_params = checked_add(m.global_opaque_params, elements);
        }
    }
    for (std::uint64_t l = 0; l < s.n_layer; ++l) {
        if (!kv_uniform) {
            layers[l].kv_heads = kv_heads[l];
            if (kv_heads[l] == 0) layers[l].attention = attention_kind::none;
        }
        m.set_layer(l, layers[l]);
    }
    validate_formats(m);
    return m;
}

inline model_desc describe(const gguf_file& g, std::string_view name = {}) {
    const std::string& arch = g.get_string("general.architecture");
    const gguf_architecture* known = find_architecture(arch);
    if (!known) return describe_opaque(g, arch, name);
    const gguf_architecture& a = *known;
    const decoder_shape s = describe_shape(g, a);
    model_desc m;
    m.shape = s;
    m.name = name;
    std::unordered_set<std::string> described;
    auto expect = [&](const std::string& tensor, const tensor_extent& e) -> format {
        const gguf_tensor_info* t = g.find_tensor(tensor);
        if (!t) g.fail("missing tensor '" + tensor + "'");
        described.insert(tensor);
        // GGUF lists dimensions innermost first: [cols], [cols, rows], [cols, rows, experts] or, for
        // a bias row per expert, [cols, experts].
        std::vector<std::uint64_t> want{e.cols};
        if (e.rows != 1) want.push_back(e.rows);
        if (e.planes != 1) want.push_back(e.planes);
        // GGUF pads dimensions with 1s, so [3072, 1] is [3072] (Mamba-2's norm of one group).
        auto dims = t->dims;
        while (dims.size() > 1 && dims.back() == 1) dims.pop_back();
        if (dims != want) {
            std::string shape;
            for (auto d : want) shape += (shape.empty() ? "" : ", ") + std::to_string(d);
            std::string got;
            for (auto d : t->dims) got += (got.empty() ? "" : ", ") + std::to_string(d);
            g.fail("tensor '" + tensor + "' has shape [" + got + "], but the metadata implies [" + shape + "]");
        }
        return t->fmt;
    };
    m.token_embd = expect("token_embd.weight", {s.n_vocab, s.n_embd});
    m.output = s.tied_output ? m.token_embd : expect("output.weight", {s.n_vocab, s.n_embd});
    m.output_norm = expect("output_norm.weight", {1, s.n_embd});
    if (s.rope_freqs && expect("rope_freqs.weight", {1, s.head_dim / 2}) != format{format_id::f32})
        g.fail("rope_freqs.weight must be F32");
    if (s.rope_factors)
        for (const char* t : {"rope_factors_long.weight", "rope_factors_short.weight"})
            if (expect(t, {1, s.head_dim / 2}) != format{format_id::f32}) g.fail(std::string(t) + " must be F32");
    for (std::uint64_t l = 0; l < s.n_layer; ++l) {
        block_kind b{{}, layer_attention(s, l), layer_ffn(s, l)};
        if (b.ffn == ffn_kind::moe && !g.find_tensor("blk." + std::to_string(l) + ".ffn_gate_exps.weight") &&
            g.find_tensor("blk." + std::to_string(l) + ".ffn_gate.0.weight"))
            g.fail("layer " + std::to_string(l) +
                   " stores each expert as its own tensor (blk.N.ffn_gate.E.weight), an old layout; convert the "
                   "file again with a current llama.cpp, which stacks them (ffn_gate_exps)");
        for (std::size_t r = 0; r < n_tensor_roles; ++r) {
            const auto role = static_cast<tensor_role>(r);
            if (!role_present(s, b, role)) continue;
            b.formats.of[r] =
                expect("blk." + std::to_string(l) + "." + std::string(tensor_name(a, role)), role_extent(s, role));
        }
        m.set_layer(l, b);
    }
    // A tensor the description leaves out would be bytes the plan never reserves; only the
    // multi-token-prediction blocks after the model's layers are left out, by design.
    const std::uint64_t mtp = mtp_layers(g);
    auto in_mtp_block = [&](const std::string& name) {
        for (std::uint64_t l = s.n_layer; l < s.n_layer + mtp; ++l)
            if (name.starts_with("blk." + std::to_string(l) + ".")) return true;
        return false;
    };
    for (const auto& t : g.tensors())
        if (!described.contains(t.name) && !in_mtp_block(t.name))
            g.fail("tensor '" + t.name + "' is not part of the " + std::string(a.name) +
                   " model vramplan describes (its global tensors and the blk.N tensors of its layers), so no plan "
                   "would hold it");
    validate_formats(m);
    return m;
}

}  // namespace vramplan::io
