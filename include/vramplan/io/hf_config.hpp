// A Hugging Face config.json as a model shape: the third producer of a model description, beside
// type-level models and GGUF files, for the same planner. The one vramplan header that needs
// nlohmann-json (the installed package config says so and offers vramplan::io_json).
#pragma once

#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "vramplan/error.hpp"
#include "vramplan/model/model_desc.hpp"

namespace vramplan::io {

// A Hugging Face config.json of a llama-family model.
inline decoder_shape shape_from_config(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw error("cannot open '" + path + "'");
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception& e) {
        throw error("'" + path + "' is not valid JSON: " + e.what());
    }
    const std::string type = j.value("model_type", "");
    if (type != "llama" && type != "mistral" && type != "qwen2")
        throw error("'" + path + "': model_type '" + type +
                    "' is not supported; vramplan reads llama, mistral and qwen2 configs");
    auto need = [&](const char* key) -> std::uint64_t {
        if (!j.contains(key) || !j[key].is_number_unsigned())
            throw error("'" + path + "': missing or invalid '" + key + "'");
        return j[key].get<std::uint64_t>();
    };
    decoder_shape s;
    s.n_vocab = need("vocab_size");
    s.n_embd = need("hidden_size");
    s.n_layer = need("num_hidden_layers");
    s.n_head = need("num_attention_heads");
    s.n_head_kv = j.contains("num_key_value_heads") ? need("num_key_value_heads") : s.n_head;
    s.n_ff = need("intermediate_size");
    s.head_dim =
        j.contains("head_dim") && !j["head_dim"].is_null() ? need("head_dim") : (s.n_head ? s.n_embd / s.n_head : 0);
    s.tied_output = j.value("tie_word_embeddings", false);
    s.qkv_bias = type == "qwen2" || j.value("attention_bias", false);
    s.rope_neox = type == "qwen2";
    s.rope_base = j.value("rope_theta", 10000.0f);
    s.norm_eps = j.value("rms_norm_eps", 1e-5f);
    if (j.contains("max_position_embeddings")) s.n_ctx_train = need("max_position_embeddings");
    // rope_scaling: "llama3" is Llama 3.1's, stored in GGUF as rope_freqs.weight; plan it the same.
    if (j.contains("rope_scaling") && j["rope_scaling"].is_object()) {
        const auto& r = j["rope_scaling"];
        const std::string kind = r.value("rope_type", r.value("type", std::string("none")));
        if (kind == "llama3")
            s.rope_freqs = true;
        else
            s.scaling = rope_scaling_by_name(kind);
        if (s.scaling == rope_scaling::linear) s.scaling_factor = r.value("factor", 1.0f);
    }
    validate(s);
    return s;
}

}  // namespace vramplan::io
