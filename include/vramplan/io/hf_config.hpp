// A Hugging Face config.json as a model shape: the third producer of a model description, beside
// type-level models and GGUF files, for the same planner. The one vramplan header that needs
// nlohmann-json (the installed package config says so and offers vramplan::io_json). Every value
// is read through a typed getter, so a wrong value is an error naming the file and the key, never
// the JSON library's own wording.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vramplan/error.hpp"
#include "vramplan/io/input_file.hpp"
#include "vramplan/model/format_policy.hpp"
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
        const double v = j[key].get<double>();
        if (!(v >= -3.4e38 && v <= 3.4e38)) fail(key, "is out of range, " + j[key].dump());  // a float holds it
        return static_cast<float>(v);
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

// What a config.json describes: the decoder's shape, and what vramplan leaves out of it (a vision
// tower beside the language model), said in words for the reports.
struct config_description {
    decoder_shape shape;
    std::vector<std::string> notes;
    // The routed experts' format when quantization_config stores them quantized and the rest as
    // torch_dtype (quant_method "mxfp4": gpt-oss's release); empty: every matrix as torch_dtype.
    std::optional<format> expert_format;
    // The format quantization_config gives the blocks' Linear layers (bitsandbytes, GPTQ, AWQ, fp8
    // blocks), with the module names it leaves in torch_dtype (modules_to_not_convert,
    // llm_int8_skip_modules) and whether the routers are Linear layers it converts (bitsandbytes
    // converts every nn.Linear; GPTQ, AWQ and fp8 checkpoints quantize the projections only).
    std::optional<format> linear_format;
    std::vector<std::string> unconverted;
    bool converts_routers = false;
    // The experts are one fused parameter, not Linear layers (gpt-oss, Llama 4, Granite-4.0-H in
    // transformers), so bitsandbytes, GPTQ and AWQ leave them in torch_dtype.
    bool fused_experts = false;
    std::string model_type;  // the (text) model type, which names the modules
    // torch_dtype, the format transformers loads every unconverted tensor in (empty: not given,
    // and vramplan plans 16-bit matrices with f32 vectors, its convention for configs).
    std::optional<format> dtype;
};

namespace detail {
// The model types vramplan reads, and what each one fixes that its config.json does not say.
struct config_family {
    std::string_view type;
    bool qkv_bias = false, neox = false, qk_norm = false, post_norms = false, gelu = false, tied = false;
    // Gemma: the embedding scaled by sqrt(hidden_size), and query_pre_attn_scalar, the logit
    // soft-capping values and (Gemma 3) rope_local_base_freq read when given.
    bool gemma = false;
    float rope_local_default = 0.0f;  // rope_local_base_freq when absent (Gemma 3: 10000)
    enum class experts : std::uint8_t { none, mixtral, qwen, llama4, deepseek, granite } moe = experts::none;
    bool shared_gate = false;         // Qwen2-MoE's sigmoid gate on the shared expert
    bool norm_topk_default = true;    // when norm_topk_prob is absent
    bool window_key = false;          // sliding_window applies to every layer when given (non-null)
    std::uint64_t window_period = 0;  // Gemma: every P-th layer is global
    bool fused = false;               // q/k/v and gate/up stored fused (Phi-3: qkv_proj, gate_up_proj)
    bool chunks = false;              // local layers attend within attention_chunk_size (Llama 4)
    // gpt-oss: attention sinks, biases on the router and the experts, and attention_bias giving the
    // output projection a bias beside q, k and v.
    bool oai_block = false;
    bool mla = false;            // multi-head latent attention (kv_lora_rank, q_lora_rank, qk_*_head_dim, v_head_dim)
    bool mamba2 = false;         // Mamba-2 layers where layer_types says "mamba" (the mamba_* keys size them)
    bool fused_experts = false;  // the experts are one 3-D parameter, not nn.Linear modules
};

inline constexpr std::array<config_family, 16> config_families{{
    {.type = "llama"},
    {.type = "mistral", .window_key = true},
    {.type = "mixtral", .moe = config_family::experts::mixtral, .window_key = true},
    {.type = "qwen2", .qkv_bias = true, .neox = true},
    {.type = "qwen2_moe",
     .qkv_bias = true,
     .neox = true,
     .moe = config_family::experts::qwen,
     .shared_gate = true,
     .norm_topk_default = false},
    {.type = "qwen3", .neox = true, .qk_norm = true},
    {.type = "qwen3_moe", .neox = true, .qk_norm = true, .moe = config_family::experts::qwen},
    {.type = "gemma2", .neox = true, .post_norms = true, .gelu = true, .tied = true, .gemma = true, .window_period = 2},
    {.type = "gemma3_text",
     .neox = true,
     .qk_norm = true,
     .post_norms = true,
     .gelu = true,
     .tied = true,
     .gemma = true,
     .rope_local_default = 10000.0f,
     .window_period = 6},
    {.type = "phi3", .neox = true, .window_key = true, .fused = true},
    {.type = "llama4_text",
     .moe = config_family::experts::llama4,
     .norm_topk_default = false,
     .chunks = true,
     .fused_experts = true},
    // gpt-oss: sliding (layer 0) and full layers alternate, as layer_types lists them; its experts'
    // softmax over the chosen logits is a renormalization.
    {.type = "gpt_oss",
     .neox = true,
     .moe = config_family::experts::mixtral,
     .window_period = 2,
     .oai_block = true,
     .fused_experts = true},
    // DeepSeek-V2 and V3, and Kimi-K2 (DeepSeek-V3's architecture): latent attention, leading dense
    // layers, routed and shared experts; V2 does not renormalize the chosen experts' weights.
    {.type = "deepseek_v2", .moe = config_family::experts::deepseek, .norm_topk_default = false, .mla = true},
    {.type = "deepseek_v3", .moe = config_family::experts::deepseek, .mla = true},
    {.type = "kimi_k2", .moe = config_family::experts::deepseek, .mla = true},
    // Granite-4.0-H: Mamba-2 and attention layers as layer_types lists them, every layer with a
    // feed-forward: routed experts beside a shared one, or (num_local_experts 0) the shared MLP alone.
    {.type = "granitemoehybrid", .moe = config_family::experts::granite, .mamba2 = true, .fused_experts = true},
}};

// Multimodal checkpoints that nest their language model in text_config, and its model type.
struct nested_text_model {
    std::string_view type, text_type;
};
inline constexpr std::array<nested_text_model, 2> nested_text_models{{
    {"gemma3", "gemma3_text"},
    {"llama4", "llama4_text"},
}};

inline std::string known_config_types() {
    std::string s;
    for (const auto& f : config_families) s += (s.empty() ? "" : ", ") + std::string(f.type);
    for (const auto& n : nested_text_models) s += ", " + std::string(n.type);
    return s + " (the last ones' text models)";
}

// A per-layer list (layer_types, no_rope_layers) must say what the period says: layer l is global
// when l % period == period - 1, and local otherwise.
inline void check_layer_pattern(const config_reader& c, const char* key, std::uint64_t n_layer, std::uint64_t period,
                                const nlohmann::json& local, const nlohmann::json& global) {
    if (!c.has(key)) return;
    const auto& list = c.j[key];
    if (!list.is_array() || list.size() != n_layer) c.fail(key, "must list one value per layer (num_hidden_layers)");
    for (std::size_t l = 0; l < list.size(); ++l)
        if (list[l] != (l % period == period - 1 ? global : local))
            c.fail(key, "does not follow one global layer in every " + std::to_string(period) + " (layer " +
                            std::to_string(l) + " is " + list[l].dump() + "); vramplan plans that pattern only");
}

// Granite-4.0-H's Mamba-2 layers: layer_types names each layer "mamba" or "attention", and the
// mamba_* keys size the former (the defaults are transformers' GraniteMoeHybridConfig's).
inline void read_mamba2(const config_reader& c, decoder_shape& s) {
    if (!c.has("layer_types") || !c.j["layer_types"].is_array() || c.j["layer_types"].size() != s.n_layer)
        c.fail("layer_types", "must list each layer's kind, \"mamba\" or \"attention\" (num_hidden_layers of them)");
    if (s.n_layer > max_layers) c.fail("num_hidden_layers", "is more than the 256 layers vramplan plans");
    const auto& types = c.j["layer_types"];
    for (std::size_t l = 0; l < types.size(); ++l) {
        if (types[l] == "mamba")
            s.set_recurrent(l);
        else if (types[l] != "attention")
            c.fail("layer_types", "names layer " + std::to_string(l) + " " + types[l].dump() +
                                      "; a layer is \"mamba\" or \"attention\"");
    }
    if (!s.hybrid()) return;  // an attention-only checkpoint (Granite-4.0-Micro's config type)
    s.ssm_heads = c.count_or("mamba_n_heads", 128);
    s.ssm_groups = c.count_or("mamba_n_groups", 1);
    s.ssm_state = c.count_or("mamba_d_state", 256);
    s.ssm_conv_kernel = c.count_or("mamba_d_conv", 4);
    s.ssm_inner = checked_mul(c.count_or("mamba_expand", 2), s.n_embd);
    // mamba_d_head is "auto" (the inner width over the heads) or a number that must agree.
    if (c.has("mamba_d_head") && !(c.j["mamba_d_head"].is_string() && c.j["mamba_d_head"] == "auto") &&
        checked_mul(c.count("mamba_d_head"), s.ssm_heads) != s.ssm_inner)
        c.fail("mamba_d_head", "times mamba_n_heads is not mamba_expand x hidden_size (" + std::to_string(s.ssm_inner) +
                                   "), the Mamba-2 layers' inner width");
    s.ssm_conv_bias = c.flag_or("mamba_conv_bias", true);
    if (c.flag_or("mamba_proj_bias", false))
        c.fail("mamba_proj_bias",
               "is true: biases on Mamba-2's projections are not planned (no released model has them)");
}

// The shape of one language model's settings object (the file itself, or a text_config).
inline decoder_shape read_shape(const config_reader& c, const config_family& f) {
    decoder_shape s;
    s.n_vocab = c.count("vocab_size");
    s.n_embd = c.count("hidden_size");
    s.n_layer = c.count("num_hidden_layers");
    s.n_head = c.count("num_attention_heads");
    s.n_head_kv = c.count_or("num_key_value_heads", s.n_head);
    s.n_ff = c.count("intermediate_size");
    s.head_dim = c.count_or("head_dim", s.n_head ? s.n_embd / s.n_head : 0);
    s.tied_output = c.flag_or("tie_word_embeddings", f.tied);
    s.qkv_bias = f.qkv_bias || c.flag_or("attention_bias", false);
    s.rope_neox = f.neox;
    s.qk_norm = f.qk_norm;
    s.post_norms = f.post_norms;
    s.gelu = f.gelu;
    s.fused_qkv = s.fused_gate_up = f.fused;
    if (f.oai_block) {
        s.attn_sinks = s.expert_bias = true;
        s.attn_output_bias = s.qkv_bias;
    }
    s.rope_base = c.number_or("rope_theta", 10000.0f);
    if (f.gemma) {
        s.embed_scale = true;
        auto positive_or_zero = [&](const char* key) {
            const float v = c.number_or(key, 0.0f);
            if (c.has(key) && !(v > 0.0f)) c.fail(key, "must be a positive number (or null: none)");
            return v;
        };
        s.query_pre_attn_scalar = positive_or_zero("query_pre_attn_scalar");
        s.attn_softcap = positive_or_zero("attn_logit_softcapping");
        s.final_softcap = positive_or_zero("final_logit_softcapping");
        s.rope_base_local =
            c.has("rope_local_base_freq") ? positive_or_zero("rope_local_base_freq") : f.rope_local_default;
    }
    s.norm_eps = c.number_or("rms_norm_eps", 1e-5f);
    s.n_ctx_train = c.count_or("max_position_embeddings", 0);
    using experts = config_family::experts;
    if (f.moe == experts::mixtral) {
        s.n_expert = c.count("num_local_experts");
        s.n_expert_used = c.count("num_experts_per_tok");
        s.n_ff_expert = s.n_ff;
    } else if (f.moe == experts::qwen) {
        s.n_expert = c.count("num_experts");
        s.n_expert_used = c.count("num_experts_per_tok");
        s.n_ff_expert = c.count("moe_intermediate_size");
        // Layer l has experts when (l + 1) % decoder_sparse_step == 0 and l is not in mlp_only_layers.
        s.moe_every = c.count_or("decoder_sparse_step", 1);
        if (s.moe_every == 0) c.fail("decoder_sparse_step", "must be at least 1");
        if (s.moe_every == 1) s.moe_every = 0;  // every layer: the shape's default
        if (c.has("mlp_only_layers")) {
            const auto& dense = c.j["mlp_only_layers"];
            if (!dense.is_array()) c.fail("mlp_only_layers", "must be a list of layer indices");
            for (std::size_t i = 0; i < dense.size(); ++i)
                if (!dense[i].is_number_unsigned() || dense[i].get<std::uint64_t>() != i)
                    c.fail("mlp_only_layers", "lists dense layers other than the first ones (" + dense.dump() +
                                                  "); vramplan plans leading dense layers only");
            s.n_dense_lead = dense.size();
        }
        if (f.shared_gate) {
            s.n_ff_shared = c.count_or("shared_expert_intermediate_size", 0);
            s.shared_expert_gate = s.n_ff_shared != 0;
        }
    }
    if (f.moe == experts::deepseek) {
        // Layer l has experts when l >= first_k_dense_replace (and l % moe_layer_freq == 0, which
        // every released model gives as 1); each has n_shared_experts as wide as a routed one.
        s.n_expert = c.count("n_routed_experts");
        s.n_expert_used = c.count("num_experts_per_tok");
        s.n_ff_expert = c.count("moe_intermediate_size");
        s.n_ff_shared = checked_mul(c.count_or("n_shared_experts", 0), s.n_ff_expert);
        s.n_dense_lead = c.count_or("first_k_dense_replace", 0);
        if (c.count_or("moe_layer_freq", 1) != 1)
            c.fail("moe_layer_freq", "is not 1; vramplan plans expert layers after the leading dense ones only");
        // DeepSeek-V3's router adds a learned bias per expert to choose them (noaux_tc).
        s.expert_probs_bias = c.text_or("topk_method", "greedy") == "noaux_tc";
    }
    if (f.mla) {
        s.kv_lora_rank = c.count("kv_lora_rank");
        s.q_lora_rank = c.count_or("q_lora_rank", 0);  // null: no bottleneck (DeepSeek-V2-Lite)
        s.rope_dim = c.count("qk_rope_head_dim");
        s.head_dim = checked_add(c.count("qk_nope_head_dim"), s.rope_dim);
        s.v_head_dim = c.count("v_head_dim");
        s.n_head_kv = 1;  // the latent: num_key_value_heads counts the heads it is expanded to
    }
    if (f.moe == experts::llama4) {
        s.llama4_block = true;
        // intermediate_size is the experts' width (routed and shared), intermediate_size_mlp the
        // dense layers'; layer l has experts when l % interleave_moe_layer_step == step - 1.
        s.n_expert = c.count_or("num_local_experts", 0);
        if (s.n_expert != 0) {
            s.n_expert_used = c.count("num_experts_per_tok");
            s.n_ff_expert = s.n_ff_shared = s.n_ff;
            const std::uint64_t step = c.count_or("interleave_moe_layer_step", 1);
            if (step == 0) c.fail("interleave_moe_layer_step", "must be at least 1");
            s.moe_every = step == 1 ? 0 : step;
            if (c.has("moe_layers")) {
                const auto& moe = c.j["moe_layers"];
                bool follows = moe.is_array() && moe.size() == s.n_layer / step;
                for (std::size_t i = 0; follows && i < moe.size(); ++i)
                    follows = moe[i].is_number_unsigned() && moe[i].get<std::uint64_t>() == (i + 1) * step - 1;
                if (!follows)
                    c.fail("moe_layers", "does not list every interleave_moe_layer_step-th layer (" + moe.dump() +
                                             "); vramplan plans that pattern only");
            }
        }
        s.n_ff = c.count_or("intermediate_size_mlp", s.n_ff);
    }
    if (f.moe == experts::granite) {
        // The shared MLP (shared_intermediate_size) is every layer's dense feed-forward, beside the
        // routed experts (intermediate_size wide) when there are any.
        const std::uint64_t shared = c.count("shared_intermediate_size");
        s.n_expert = c.count_or("num_local_experts", 0);
        if (s.n_expert != 0) {
            s.n_expert_used = c.count("num_experts_per_tok");
            s.n_ff_expert = s.n_ff;
            s.n_ff_shared = shared;
        } else {
            s.n_ff = shared;
        }
    }
    if (f.mamba2) read_mamba2(c, s);
    if (f.moe != experts::none) s.norm_topk_prob = c.flag_or("norm_topk_prob", f.norm_topk_default);
    if (f.chunks) {
        // Llama 4: layers that use RoPE (no_rope_layers[l] = 1) attend within chunks, and every
        // no_rope_layer_interval-th layer (no RoPE) attends to the whole context.
        s.attention_chunk = c.count_or("attention_chunk_size", 0);
        if (s.attention_chunk != 0) {
            s.window_period = c.count_or("no_rope_layer_interval", 4);
            if (s.window_period == 0) c.fail("no_rope_layer_interval", "must be at least 1");
            check_layer_pattern(c, "no_rope_layers", s.n_layer, s.window_period, 1, 0);
            check_layer_pattern(c, "layer_types", s.n_layer, s.window_period, "chunked_attention", "full_attention");
        }
    } else if (f.window_period != 0) {
        s.sliding_window = c.count("sliding_window");
        s.window_period = c.count_or("sliding_window_pattern", f.window_period);
        if (s.window_period == 0) c.fail("sliding_window_pattern", "must be at least 1");
        // Newer Gemma 3 files list each layer's attention instead; it must be the same pattern.
        check_layer_pattern(c, "layer_types", s.n_layer, s.window_period, "sliding_attention", "full_attention");
    } else if (f.window_key && c.has("sliding_window")) {
        s.sliding_window = c.count("sliding_window");  // every layer slides (Mistral v0.1, Phi-3)
    }
    if (c.flag_or("use_sliding_window", false))
        c.fail("use_sliding_window", "is true: Qwen's per-layer sliding windows are not planned yet");
    return s;
}
}  // namespace detail

namespace detail {
// quantization_config, as transformers loads each method: the Linear layers' format, the modules
// left in torch_dtype, and a note saying what is planned. MXFP4 quantizes the experts alone
// (gpt-oss's modules_to_not_convert keeps attention, router, embedding and head in torch_dtype).
inline void read_quantization(const config_reader& top, config_description& out) {
    if (!top.j["quantization_config"].is_object())
        top.fail("quantization_config", "must be an object, not " + top.j["quantization_config"].dump());
    const config_reader q{top.path, top.j["quantization_config"], "quantization_config."};
    const std::string method = q.text_or("quant_method", "");
    auto names = [&](const char* key) {
        if (!q.has(key)) return;
        if (!q.j[key].is_array()) q.fail(key, "must be a list of module names");
        for (const auto& n : q.j[key]) {
            if (!n.is_string()) q.fail(key, "must be a list of module names, not " + q.j[key].dump());
            out.unconverted.push_back(n.get<std::string>());
        }
    };
    auto bits = [&](const char* key, std::uint64_t fallback) { return q.count_or(key, fallback); };
    std::string what;
    if (method == "mxfp4" && out.shape.n_expert != 0) {
        out.expert_format = format{format_id::mxfp4};
        out.notes.push_back(
            "quantization_config: the routed experts are planned in MXFP4 as the checkpoint stores them, the other "
            "matrices in 16 bits (torch_dtype)");
        return;
    }
    if (method == "bitsandbytes" || (method.empty() && (q.has("load_in_4bit") || q.has("load_in_8bit")))) {
        // BitsAndBytesConfig: 8-bit (LLM.int8) or 4-bit (fp4 unless bnb_4bit_quant_type says nf4),
        // every nn.Linear but llm_int8_skip_modules (lm_head when null, as transformers does).
        const bool four = q.flag_or("load_in_4bit", false), eight = q.flag_or("load_in_8bit", false);
        if (four == eight) q.fail("load_in_4bit", "and load_in_8bit: exactly one of them must be true");
        if (four) {
            const std::string type = q.text_or("bnb_4bit_quant_type", "fp4");
            if (type != "nf4" && type != "fp4") q.fail("bnb_4bit_quant_type", "must be \"nf4\" or \"fp4\"");
            out.linear_format = format{.id = type == "nf4" ? format_id::bnb_nf4 : format_id::bnb_fp4,
                                       .double_quant = q.flag_or("bnb_4bit_use_double_quant", false)};
        } else {
            out.linear_format = format{format_id::bnb_int8};
        }
        names("llm_int8_skip_modules");
        if (out.unconverted.empty()) out.unconverted.push_back("lm_head");
        out.converts_routers = true;
        what =
            "bitsandbytes " + name(*out.linear_format) + " (" +
            (four ? std::string("4-bit, blocks of 64, computing in ") + q.text_or("bnb_4bit_compute_dtype", "float32")
                  : std::string("8-bit, an f32 scale per row")) +
            ")";
    } else if (method == "gptq") {
        // GPTQConfig: bits and group_size (-1: one group per row); g_idx is stored whatever desc_act.
        const std::uint64_t b = bits("bits", 4);
        if (b != 2 && b != 3 && b != 4 && b != 8) q.fail("bits", "must be 2, 3, 4 or 8 for GPTQ");
        std::uint64_t group = 128;
        if (q.has("group_size")) {
            const auto& g = q.j["group_size"];
            if (g.is_number_integer() && g.get<std::int64_t>() == -1)
                group = 0;
            else
                group = q.count("group_size");
        }
        if (group > 0xffffffffull) q.fail("group_size", "is too large");
        out.linear_format = format{
            .id = format_id::gptq, .group = static_cast<std::uint32_t>(group), .bits = static_cast<std::uint8_t>(b)};
        names("modules_to_not_convert");
        if (q.has("modules_in_block_to_quantize"))
            q.fail("modules_in_block_to_quantize",
                   "is not planned yet: vramplan quantizes every projection of a block");
        what = "GPTQ " + std::to_string(b) + "-bit, " +
               (group ? "groups of " + std::to_string(group) : std::string("one group per row")) + ", with g_idx";
    } else if (method == "awq") {
        // AwqConfig: 4-bit values, zero points, GEMM layout (GEMV's pads its zeros differently).
        if (bits("bits", bits("w_bit", 4)) != 4) q.fail("bits", "must be 4 for AWQ");
        const std::uint64_t group = q.count_or("group_size", q.count_or("q_group_size", 128));
        if (!q.flag_or("zero_point", true)) q.fail("zero_point", "is false: AWQ without zero points is not planned");
        const std::string version = q.text_or("version", "gemm");
        if (version != "gemm" && version != "GEMM")
            q.fail("version", "is '" + version + "'; vramplan plans AWQ's GEMM layout");
        if (group > 0xffffffffull) q.fail("group_size", "is too large");
        out.linear_format = format{.id = format_id::awq, .group = static_cast<std::uint32_t>(group)};
        names("modules_to_not_convert");
        what = "AWQ 4-bit, groups of " + std::to_string(group) + " with zero points (GEMM layout)";
    } else if (method == "fp8" && q.has("weight_block_size")) {
        // DeepSeek-V3's and Qwen3's FP8 releases: e4m3 values, an f32 inverse scale per square block.
        const auto& b = q.j["weight_block_size"];
        if (!b.is_array() || b.size() != 2 || !b[0].is_number_unsigned() || b[0] != b[1] ||
            b[0].get<std::uint64_t>() == 0 || b[0].get<std::uint64_t>() > 65536)
            q.fail("weight_block_size", "must be two equal positive sizes, as [128, 128]");
        out.linear_format = format{.id = format_id::fp8_block, .group = b[0].get<std::uint32_t>()};
        names("modules_to_not_convert");
        what = "fp8 (e4m3) in blocks of " + std::to_string(b[0].get<std::uint64_t>()) + " x " +
               std::to_string(b[0].get<std::uint64_t>()) + " with an f32 scale each";
    } else if (method == "fp8") {
        // AutoFP8's checkpoints: e4m3 values, an f32 scale per tensor, and per tensor an f32 input
        // scale when the activations' scheme is static; ignored_layers stay in torch_dtype.
        const std::string scheme = q.text_or("activation_scheme", "dynamic");
        if (scheme != "dynamic" && scheme != "static") q.fail("activation_scheme", "must be \"dynamic\" or \"static\"");
        out.linear_format = format{.id = format_id::fp8_tensor, .input_scale = scheme == "static"};
        names("ignored_layers");
        names("modules_to_not_convert");
        what = "fp8 (e4m3) with an f32 scale per tensor" +
               std::string(scheme == "static" ? " and a static input scale" : "");
    } else {
        out.notes.push_back("quantization_config (quant_method '" + method +
                            "') is not applied yet: the matrices are planned in 16 bits unless --weights says "
                            "otherwise");
        return;
    }
    std::string kept;
    for (const auto& n : out.unconverted) kept += (kept.empty() ? "" : ", ") + n;
    out.notes.push_back("quantization_config: the blocks' Linear layers are planned in " + what + "; the embedding" +
                        (kept.empty() ? std::string() : ", " + kept) +
                        (out.fused_experts && out.shape.n_expert ? " and the fused experts" : std::string()) +
                        " stay in 16 bits (torch_dtype)");
}

// Where transformers names a layer's tensor of role r (under model.layers.N.), for matching the
// modules a checkpoint leaves unconverted; empty: not an nn.Linear (norms, biases, embeddings,
// Mamba-2's convolution and A, D, fused experts), which no method converts.
inline std::string hf_module(const config_description& d, tensor_role r) {
    using enum tensor_role;
    const std::string& t = d.model_type;
    const bool mixtral = t == "mixtral", granite = t == "granitemoehybrid", llama4 = t == "llama4_text";
    const bool deepseek = t == "deepseek_v2" || t == "deepseek_v3" || t == "kimi_k2";
    const std::string mlp = llama4 ? "feed_forward." : mixtral || granite ? "block_sparse_moe." : "mlp.";
    switch (r) {
        case attn_q: return "self_attn.q_proj";
        case attn_k: return "self_attn.k_proj";
        case attn_v: return "self_attn.v_proj";
        case attn_qkv: return "self_attn.qkv_proj";
        case attn_output: return "self_attn.o_proj";
        case attn_q_a: return "self_attn.q_a_proj";
        case attn_q_b: return "self_attn.q_b_proj";
        case attn_kv_a_mqa: return "self_attn.kv_a_proj_with_mqa";
        case attn_k_b:
        case attn_v_b: return "self_attn.kv_b_proj";
        case ssm_in: return "mamba.in_proj";
        case ssm_out: return "mamba.out_proj";
        case ffn_gate: return granite ? "shared_mlp.input_linear" : "mlp.gate_proj";
        case ffn_up: return granite ? "shared_mlp.input_linear" : t == "phi3" ? "mlp.gate_up_proj" : "mlp.up_proj";
        case ffn_down: return granite ? "shared_mlp.output_linear" : "mlp.down_proj";
        case ffn_gate_inp:
            return granite          ? "block_sparse_moe.router.layer"
                   : llama4         ? "feed_forward.router"
                   : t == "gpt_oss" ? "mlp.router"
                                    : mlp + "gate";
        case ffn_gate_inp_shexp: return "mlp.shared_expert_gate";
        case ffn_gate_shexp:
        case ffn_up_shexp:
        case ffn_down_shexp: {
            if (granite) return r == ffn_down_shexp ? "shared_mlp.output_linear" : "shared_mlp.input_linear";
            const std::string base = mlp + (deepseek ? "shared_experts." : "shared_expert.");
            return base + (r == ffn_gate_shexp ? "gate_proj" : r == ffn_up_shexp ? "up_proj" : "down_proj");
        }
        case ffn_gate_exps:
        case ffn_up_exps:
        case ffn_down_exps: {
            if (d.fused_experts) return {};
            if (mixtral)
                return std::string("block_sparse_moe.experts.0.") + (r == ffn_gate_exps ? "w1"
                                                                     : r == ffn_up_exps ? "w3"
                                                                                        : "w2");
            return "mlp.experts.0." + std::string(r == ffn_gate_exps ? "gate_proj"
                                                  : r == ffn_up_exps ? "up_proj"
                                                                     : "down_proj");
        }
        default: return {};
    }
}

// Whether `pattern` (a module name, '*' standing for one part of it) names `module` or a module
// above it, as transformers matches modules_to_not_convert: "lm_head", "mlp.gate",
// "model.layers.*.self_attn".
inline bool names_module(std::string_view pattern, std::string_view module) {
    // Whole parts only: the pattern matches a run of module's dot-separated parts.
    auto parts = [](std::string_view s) {
        std::vector<std::string_view> out;
        for (std::size_t at = 0; at <= s.size();) {
            const std::size_t dot = std::min(s.find('.', at), s.size());
            out.push_back(s.substr(at, dot - at));
            at = dot + 1;
        }
        return out;
    };
    const auto p = parts(pattern), m = parts(module);
    for (std::size_t start = 0; start + p.size() <= m.size(); ++start) {
        bool all = true;
        for (std::size_t i = 0; all && i < p.size(); ++i) all = p[i] == "*" || p[i] == m[start + i];
        if (all) return true;
    }
    return false;
}
}  // namespace detail

// The description a checkpoint's quantization_config gives: every Linear layer it converts in its
// format (layer by layer, so a module left unconverted in some layers only is honored), the rest
// as `m` has them. Nothing to do without a linear_format.
inline model_desc apply_checkpoint_quantization(const model_desc& m, const config_description& d) {
    if (!d.linear_format) return m;
    const model_desc out = map_layers(m, [&](std::uint64_t l, block_kind& b) {
        for (std::size_t r = 0; r < n_tensor_roles; ++r) {
            const auto role = static_cast<tensor_role>(r);
            if (!role_present(m.shape, b, role) || (is_router(role) && !d.converts_routers)) continue;
            const std::string module = detail::hf_module(d, role);
            if (module.empty()) continue;
            const std::string full = "model.layers." + std::to_string(l) + "." + module;
            bool kept = false;
            for (const auto& u : d.unconverted) kept = kept || detail::names_module(u, full);
            if (!kept) b.formats.of[r] = *d.linear_format;
        }
    });
    validate_formats(out);
    return out;
}

// The model a config.json describes as transformers loads its checkpoint: every tensor in
// torch_dtype (16-bit matrices and f32 vectors when it gives none), then the layers its
// quantization_config converts and the experts it quantizes; the cache in `kv`.
inline model_desc checkpoint_model(std::string_view name, const config_description& d,
                                   format kv = format{format_id::f16}) {
    format_policy policy = d.dtype ? checkpoint_policy(*d.dtype, kv) : uniform_policy(format{format_id::f16}, kv);
    model_desc m = apply_checkpoint_quantization(make_model(name, d.shape, policy), d);
    if (d.expert_format) m = with_expert_format(m, *d.expert_format);
    return m;
}

// A Hugging Face config.json's text, of a model type vramplan knows, with what it leaves out;
// `path` names it in errors.
inline config_description describe_config_text(const std::string& path, const std::string& text) {
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
        throw error("'" + path + "' is not valid JSON (a syntax error near byte " + std::to_string(e.byte) +
                    "); a config.json is one JSON object");
    } catch (const nlohmann::json::exception&) {  // a number past a double's range (the fuzzer's 4e0960)
        throw error("'" + path + "' holds a number too large to read; a config.json's numbers are sizes and rates");
    }
    if (!j.is_object())
        throw error("'" + path + "' is JSON but not an object of model settings, which a config.json is");
    const detail::config_reader top{path, j, ""};
    std::string type = top.text_or("model_type", "");
    config_description out;
    const nlohmann::json* settings = &j;
    std::string prefix;
    // Gemma 3's and Llama 4's multimodal checkpoints nest the language model in text_config.
    for (const auto& n : detail::nested_text_models) {
        if (type != n.type) continue;
        if (!j.contains("text_config") || !j["text_config"].is_object())
            top.fail("text_config",
                     "is missing; a " + std::string(n.type) + " config.json nests its language model there");
        settings = &j["text_config"];
        prefix = "text_config.";
        type = n.text_type;
        out.notes.push_back("the vision tower (vision_config) is not planned: this is the text model alone");
        break;
    }
    const detail::config_family* family = nullptr;
    for (const auto& f : detail::config_families)
        if (f.type == type) family = &f;
    if (!family)
        throw error("'" + path + "': model_type '" + type + "' is not supported; vramplan reads " +
                    detail::known_config_types() + " configs");
    const detail::config_reader c{path, *settings, prefix};
    out.shape = detail::read_shape(c, *family);
    out.model_type = type;
    out.fused_experts = family->fused_experts;
    // torch_dtype (newer files: dtype), in the text model's settings or the file's.
    for (const detail::config_reader* r : {&c, &top})
        for (const char* key : {"torch_dtype", "dtype"})
            if (!out.dtype && r->has(key)) {
                const std::string t = r->text_or(key, "");
                if (t == "bfloat16")
                    out.dtype = format{format_id::bf16};
                else if (t == "float16")
                    out.dtype = format{format_id::f16};
                else if (t == "float32")
                    out.dtype = format{format_id::f32};
                else
                    r->fail(key, "is '" + t + "'; a checkpoint's dtype is bfloat16, float16 or float32");
            }
    if (top.has("quantization_config")) detail::read_quantization(top, out);
    if (const std::uint64_t mtp = c.count_or("num_nextn_predict_layers", 0); mtp != 0)
        out.notes.push_back("the " + std::to_string(mtp) +
                            " multi-token-prediction layer(s) (num_nextn_predict_layers) are not planned: GGUF "
                            "conversions drop them, and llama.cpp loads them only for speculative decoding");
    auto& s = out.shape;
    // A nested model may leave tie_word_embeddings to the outer object (Llama 4 does).
    if (settings != &j && !c.has("tie_word_embeddings") && top.has("tie_word_embeddings"))
        s.tied_output = top.flag_or("tie_word_embeddings", s.tied_output);
    // rope_scaling: "llama3" is Llama 3.1's, stored in GGUF as rope_freqs.weight; plan it the same.
    if (c.has("rope_scaling")) {
        if (!(*settings)["rope_scaling"].is_object())
            c.fail("rope_scaling", "must be an object or null, not " + (*settings)["rope_scaling"].dump());
        const detail::config_reader r{path, (*settings)["rope_scaling"], prefix + "rope_scaling."};
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
    return out;
}

// The same, read from a file (at most max_config_bytes).
inline config_description describe_config(const std::string& path) {
    return describe_config_text(path, input_file::open(path, "config.json").read_all(max_config_bytes, "config.json"));
}

inline decoder_shape shape_from_config(const std::string& path) { return describe_config(path).shape; }

}  // namespace vramplan::io
