// A Hugging Face checkpoint as it is stored: config.json for the shape, and, when its safetensors
// sit beside it, every tensor's exact bytes from their headers (no tensor data is read). The
// layers' tensors become their layers' opaque bytes (the routed experts apart, so they can live in
// the host tier), the embedding stays a role (it follows the layers to the host tier), and the
// rest (the head, the final norm) is global; the shape still gives the graph, the KV cache and
// the activations. What the checkpoint holds beyond the language model (a vision tower, the
// multi-token-prediction layers) is left out and said.
#pragma once

#include <charconv>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "vramplan/format/bytes.hpp"
#include "vramplan/io/hf_config.hpp"
#include "vramplan/io/safetensors.hpp"
#include "vramplan/model/footprint.hpp"

namespace vramplan::io {

namespace detail {
// The layer index after the first "layers." in a tensor name ("model.layers.12.mlp..." is 12).
inline bool layer_of(const std::string& name, std::uint64_t& layer) {
    for (std::size_t at = name.find("layers."); at != std::string::npos; at = name.find("layers.", at + 1)) {
        if (at != 0 && name[at - 1] != '.') continue;
        const char* begin = name.data() + at + 7;
        const char* end = name.data() + name.size();
        const auto [after, ec] = std::from_chars(begin, end, layer);
        if (ec == std::errc{} && after != begin && after != end && *after == '.') return true;
    }
    return false;
}
inline bool outside_language_model(const std::string& name) {
    for (const char* part : {"vision_tower", "vision_model", "multi_modal_projector", "mm_projector", "audio_tower"})
        if (name.find(part) != std::string::npos) return true;
    return false;
}
// A routed expert's tensor: one of mlp.experts (one module per expert, or fused), Mixtral's
// block_sparse_moe.experts, Granite-4.0-H's fused input_linear and output_linear.
inline bool routed_expert(const std::string& name) {
    return name.find(".experts.") != std::string::npos ||
           name.find("block_sparse_moe.input_linear") != std::string::npos ||
           name.find("block_sparse_moe.output_linear") != std::string::npos;
}
inline bool is_embedding(const std::string& name) { return name.ends_with("embed_tokens.weight"); }
inline std::optional<format> plain_format(const std::string& dtype) {
    if (dtype == "F32") return format{format_id::f32};
    if (dtype == "F16") return format{format_id::f16};
    if (dtype == "BF16") return format{format_id::bf16};
    return std::nullopt;
}
}  // namespace detail

// m with its weights as the checkpoint's tensors say; `notes` gains what was read and left out.
inline model_desc with_checkpoint_weights(const model_desc& m, const std::vector<safetensors_tensor>& tensors,
                                          std::vector<std::string>& notes) {
    const auto& s = m.shape;
    model_desc out = m;
    out.checkpoint_weights = true;
    out.global_opaque_bytes = out.global_opaque_params = 0;
    std::vector<block_kind> layers(s.n_layer);
    for (std::uint64_t l = 0; l < s.n_layer; ++l) {
        layers[l] = m.layer(l);
        layers[l].opaque_bytes = layers[l].opaque_params = layers[l].opaque_expert_bytes = 0;
    }
    std::uint64_t planned = 0, left_out = 0, beyond = 0, n_left_out = 0;
    bool embedding = false;
    for (const auto& t : tensors) {
        std::uint64_t elements = 1;
        for (auto d : t.shape) elements = checked_mul(elements, d);
        std::uint64_t l = 0;
        if (detail::outside_language_model(t.name)) {
            left_out = checked_add(left_out, t.bytes);
            ++n_left_out;
            continue;
        }
        planned = checked_add(planned, t.bytes);
        if (detail::layer_of(t.name, l)) {
            if (l >= s.n_layer) {  // multi-token-prediction layers after the model's (DeepSeek-V3's 61st)
                beyond = checked_add(beyond, t.bytes);
                planned -= t.bytes;
                continue;
            }
            auto& k = layers[l];
            if (k.ffn == ffn_kind::moe && detail::routed_expert(t.name))
                k.opaque_expert_bytes = checked_add(k.opaque_expert_bytes, t.bytes);
            else
                k.opaque_bytes = checked_add(k.opaque_bytes, t.bytes);
            k.opaque_params = checked_add(k.opaque_params, elements);
        } else if (detail::is_embedding(t.name)) {
            const auto f = detail::plain_format(t.dtype);
            if (!f || t.shape.size() != 2 || t.shape[0] != s.n_vocab || t.shape[1] != s.n_embd)
                throw error("'" + t.file + "': the embedding '" + t.name + "' is " + t.dtype + " [" +
                            (t.shape.size() == 2 ? std::to_string(t.shape[0]) + ", " + std::to_string(t.shape[1])
                                                 : std::string("...")) +
                            "], but config.json implies F32, F16 or BF16 [" + std::to_string(s.n_vocab) + ", " +
                            std::to_string(s.n_embd) + "]");
            out.token_embd = *f;
            embedding = true;
        } else {
            out.global_opaque_bytes = checked_add(out.global_opaque_bytes, t.bytes);
            out.global_opaque_params = checked_add(out.global_opaque_params, elements);
        }
    }
    if (!embedding)
        throw error(
            "the checkpoint beside config.json has no embedding (model.embed_tokens.weight); is it this "
            "model's?");
    for (std::uint64_t l = 0; l < s.n_layer; ++l)
        if (layers[l].opaque_bytes == 0)
            throw error("the checkpoint beside config.json has no tensors for layer " + std::to_string(l) + " of " +
                        std::to_string(s.n_layer) + " (num_hidden_layers); is a shard missing?");
    out = map_layers(out, [&](std::uint64_t l, block_kind& b) { b = layers[l]; });
    notes.push_back("weights from the safetensors headers: " + std::to_string(tensors.size() - n_left_out) +
                    " tensors, " + with_separators(planned) +
                    " bytes exactly (the head and final norm among the "
                    "global tensors)");
    if (left_out)
        notes.push_back("the checkpoint's " + std::to_string(n_left_out) + " tensors beyond the language model (" +
                        with_separators(left_out) + " bytes: a vision or audio tower) are not planned");
    if (beyond)
        notes.push_back("the checkpoint's tensors of layers past num_hidden_layers (" + with_separators(beyond) +
                        " bytes: multi-token prediction) are not planned");
    validate_formats(out);
    return out;
}

}  // namespace vramplan::io
