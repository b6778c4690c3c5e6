// A llama- or qwen2-architecture GGUF file as a model description: shape from the metadata,
// formats from each tensor as stored (real files mix Q4_0, Q8_0, F16 and F32), every tensor's shape
// checked against what the shape implies. It feeds the same planner as the compile-time presets.
#pragma once

#include <string>
#include <unordered_set>

#include "vramplan/io/gguf_reader.hpp"
#include "vramplan/model/model_desc.hpp"
#include "vramplan/model/tensor_role.hpp"

namespace vramplan::io {

inline model_desc describe(const gguf_file& g, std::string_view name = {}) {
    const std::string& arch = g.get_string("general.architecture");
    // Qwen2 is Llama's layout with q/k/v biases and NeoX-style RoPE pairs, under its own key prefix.
    if (arch != "llama" && arch != "qwen2")
        g.fail("architecture '" + arch +
               "' is not supported; vramplan describes llama-family models (Llama 2/3, Mistral, TinyLlama) and qwen2");
    const std::string p = arch + ".";
    decoder_shape s;
    s.n_layer = g.get_uint(p + "block_count");
    s.n_embd = g.get_uint(p + "embedding_length");
    s.n_ff = g.get_uint(p + "feed_forward_length");
    s.n_head = g.get_uint(p + "attention.head_count");
    s.n_head_kv = g.get_uint(p + "attention.head_count_kv", s.n_head);
    if (s.n_head == 0 || s.n_embd % s.n_head != 0) g.fail("embedding_length is not a multiple of attention.head_count");
    s.head_dim = g.get_uint(p + "attention.key_length", s.n_embd / s.n_head);
    if (g.get_uint(p + "rope.dimension_count", s.head_dim) != s.head_dim)
        g.fail("partial rotary embeddings (rope.dimension_count != head dimension) are not supported");
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
    const gguf_tensor_info* out = g.find_tensor("output.weight");
    s.tied_output = out == nullptr;
    s.qkv_bias = g.find_tensor("blk.0.attn_q.bias") != nullptr;
    s.rope_neox = arch == "qwen2";
    s.rope_freqs = g.find_tensor("rope_freqs.weight") != nullptr;
    validate(s);

    model_desc m;
    m.shape = s;
    m.name = name;
    std::unordered_set<std::string> described;
    auto expect = [&](const std::string& tensor, std::uint64_t rows, std::uint64_t cols) -> format {
        const gguf_tensor_info* t = g.find_tensor(tensor);
        if (!t) g.fail("missing tensor '" + tensor + "'");
        described.insert(tensor);
        const bool vector = rows == 1;
        const bool ok = vector ? (t->dims.size() == 1 && t->dims[0] == cols)
                               : (t->dims.size() == 2 && t->dims[0] == cols && t->dims[1] == rows);
        if (!ok)
            g.fail("tensor '" + tensor + "' has shape other than [" + std::to_string(cols) +
                   (vector ? "" : ", " + std::to_string(rows)) + "]");
        return t->fmt;
    };
    m.token_embd = expect("token_embd.weight", s.n_vocab, s.n_embd);
    m.output = s.tied_output ? m.token_embd : expect("output.weight", s.n_vocab, s.n_embd);
    m.output_norm = expect("output_norm.weight", 1, s.n_embd);
    if (s.rope_freqs && expect("rope_freqs.weight", 1, s.head_dim / 2) != format{format_id::f32})
        g.fail("rope_freqs.weight must be F32");
    for (std::uint64_t l = 0; l < s.n_layer; ++l) {
        block_formats b;
        for (std::size_t r = 0; r < n_tensor_roles; ++r) {
            const auto role = static_cast<tensor_role>(r);
            if (!role_present(s, role)) continue;
            const auto e = role_extent(s, role);
            b.of[r] = expect("blk." + std::to_string(l) + "." + std::string(role_name(role)), e.rows, e.cols);
        }
        m.set_layer(l, b);
    }
    // A tensor the description leaves out would be bytes the plan never reserves.
    for (const auto& t : g.tensors())
        if (!described.contains(t.name))
            g.fail("tensor '" + t.name +
                   "' is not part of the llama model vramplan describes (token_embd, output_norm, output, rope_freqs "
                   "and " +
                   "the blk.N attention and feed-forward tensors), so no plan would hold it");
    validate_formats(m);
    return m;
}

}  // namespace vramplan::io
