// A Hugging Face config.json as a model shape: the third producer of a model description, beside
// type-level models and GGUF files, for the same planner. The one vramplan header that needs
// nlohmann-json (the installed package config says so and offers vramplan::io_json). Every value
// is read through a typed getter, so a wrong value is an error naming the file and the key, never
// the JSON library's own wording.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "vramplan/error.hpp"
#include "vramplan/io/input_file.hpp"
#include "vramplan/model/model_desc.hpp"

namespace vramplan::io {

// A config.json is a few kilobytes; anything past this is not one.
inline constexpr std::uint64_t max_config_bytes = 16ull << 20;

namespace detail {
struct config_reader {
    const std::string& path;
    const nlohmann::json& j;
    std::string prefix;  // "rope_scaling." inside that object

    [[noreturn]] void fail(std::string_view key, std::string_view what) const {
        throw error("'" + path + "': '" + prefix + std::string(key) + "' " + std::string(what));
    }
    bool has(const char* key) const { return j.contains(key) && !j[key].is_null(); }
    std::uint64_t count(const char* key) const {
        if (!has(key)) fail(key, "is missing; a config.json of this model type must give it");
        if (!j[key].is_number_unsigned()) fail(key, "must be a whole number, not " + j[key].dump());
        return j[key].get<std::uint64_t>();
    }
    std::uint64_t count_or(const char* key, std::uint64_t fallback) const { return has(key) ? count(key) : fallback; }
    float number_or(const char* key, float fallback) const {
        if (!has(key)) return fallback;
        if (!j[key].is_number()) fail(key, "must be a number, not " + j[key].dump());
        return j[key].get<float>();
    }
    bool flag_or(const char* key, bool fallback) const {
        if (!has(key)) return fallback;
        if (!j[key].is_boolean()) fail(key, "must be true or false, not " + j[key].dump());
        return j[key].get<bool>();
    }
    std::string text_or(const char* key, std::string fallback) const {
        if (!has(key)) return fallback;
        if (!j[key].is_string()) fail(key, "must be a string, not " + j[key].dump());
        return j[key].get<std::string>();
    }
};
}  // namespace detail

// A Hugging Face config.json of a llama-family model.
inline decoder_shape shape_from_config(const std::string& path) {
    const std::string text = input_file::open(path, "config.json").read_all(max_config_bytes, "config.json");
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
        throw error("'" + path + "' is not valid JSON (a syntax error near byte " + std::to_string(e.byte) +
                    "); a config.json is one JSON object");
    }
    if (!j.is_object())
        throw error("'" + path + "' is JSON but not an object of model settings, which a config.json is");
    const detail::config_reader c{path, j, ""};
    const std::string type = c.text_or("model_type", "");
    if (type != "llama" && type != "mistral" && type != "qwen2")
        throw error("'" + path + "': model_type '" + type +
                    "' is not supported; vramplan reads llama, mistral and qwen2 configs");
    decoder_shape s;
    s.n_vocab = c.count("vocab_size");
    s.n_embd = c.count("hidden_size");
    s.n_layer = c.count("num_hidden_layers");
    s.n_head = c.count("num_attention_heads");
    s.n_head_kv = c.count_or("num_key_value_heads", s.n_head);
    s.n_ff = c.count("intermediate_size");
    s.head_dim = c.count_or("head_dim", s.n_head ? s.n_embd / s.n_head : 0);
    s.tied_output = c.flag_or("tie_word_embeddings", false);
    s.qkv_bias = type == "qwen2" || c.flag_or("attention_bias", false);
    s.rope_neox = type == "qwen2";
    s.rope_base = c.number_or("rope_theta", 10000.0f);
    s.norm_eps = c.number_or("rms_norm_eps", 1e-5f);
    s.n_ctx_train = c.count_or("max_position_embeddings", 0);
    // rope_scaling: "llama3" is Llama 3.1's, stored in GGUF as rope_freqs.weight; plan it the same.
    if (c.has("rope_scaling")) {
        if (!j["rope_scaling"].is_object())
            c.fail("rope_scaling", "must be an object or null, not " + j["rope_scaling"].dump());
        const detail::config_reader r{path, j["rope_scaling"], "rope_scaling."};
        const std::string kind = r.text_or("rope_type", r.text_or("type", "none"));
        if (kind == "llama3")
            s.rope_freqs = true;
        else
            s.scaling = rope_scaling_by_name(kind);
        if (s.scaling == rope_scaling::linear) {
            s.scaling_factor = r.number_or("factor", 1.0f);
            if (!(s.scaling_factor > 0.0f)) r.fail("factor", "must be positive for linear scaling");
        }
    }
    try {
        validate(s);
    } catch (const error& e) {
        throw error("'" + path + "': " + e.what());
    }
    return s;
}

}  // namespace vramplan::io
