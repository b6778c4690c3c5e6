// The GGUF architectures vramplan describes, one row each: what a file's metadata cannot say
// because llama.cpp fixes it per architecture (RoPE pairing, which norms exist, the local/global
// layer pattern, whether experts are renormalized). Keys and tensors are read under the row's name.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "vramplan/io/gguf_reader.hpp"
#include "vramplan/model/tensor_role.hpp"

namespace vramplan::io {

enum class moe_layout : std::uint8_t { none, optional, required };

struct gguf_architecture {
    std::string_view name;
    bool neox = false;        // RoPE pairs (i, i + head_dim/2)
    bool qk_norm = false;     // attn_q_norm / attn_k_norm per head
    bool post_norms = false;  // post_attention_norm / post_ffw_norm
    bool gelu = false;        // GELU feed-forward gate
    moe_layout moe = moe_layout::none;
    bool expert_width_key = false;     // experts' width in expert_feed_forward_length (else feed_forward_length)
    bool norm_topk_prob = true;        // the chosen experts' weights renormalized
    bool slides = false;               // some layers use attention.sliding_window
    std::uint64_t window_period = 0;   // with slides or chunk: every P-th layer is global (0: none is)
    std::uint64_t default_window = 0;  // with slides: when the key is absent (0: the key is required)
    bool window_optional = false;      // with slides: no key, no window
    bool pattern_key = false;          // with slides: attention.sliding_window_pattern may replace the period
    bool fused = false;                // q/k/v and gate/up stored fused (attn_qkv, a double ffn_up)
    // Chunked attention of this many positions in the local layers, unless the file's
    // attention.sliding_window says otherwise (0: none, as MobileLLM's llama4 files say).
    std::uint64_t chunk = 0;
    bool shared_expert = false;  // every expert layer has a shared expert as wide as the routed ones
    // Gemma: the embedding scaled by sqrt(n_embd); soft-capping read from attn_logit_softcapping and
    // final_logit_softcapping (these defaults when absent; 0: none); sliding layers' RoPE base;
    // and a file of this many layers (the 27B model) scales queries by 1 / sqrt(n_embd / n_head),
    // as llama.cpp fixes it by model size (others by 1 / sqrt(head_dim)).
    bool embed_scale = false;
    float attn_softcap = 0.0f, final_softcap = 0.0f;
    float rope_base_local = 0.0f;
    std::uint64_t embd_per_head_query_scale_layers = 0;
    bool llama4_block = false;  // Llama 4's routing and RoPE-less layers (decoder_shape::llama4_block)
    // The name of the feed-forward's input norm when it is not ffn_norm.weight (gpt-oss's files call
    // it post_attention_norm.weight: the norm after the attention, which feeds the experts).
    std::string_view ffn_norm_tensor = {};
    bool mla = false;  // multi-head latent attention (decoder_shape::kv_lora_rank and the rest)
    // Mamba-2 layers among the attention layers: a layer whose attention.head_count_kv is 0 is one,
    // sized by the ssm.* keys (decoder_shape::ssm_inner and the rest), as llama.cpp reads them.
    bool hybrid = false;
};

// Gemma 2 alternates local and global layers (layer 0 local), Gemma 3 has five local layers to
// each global one; llama.cpp fixes both patterns per architecture, as here. Llama files with
// experts are Mixtral's layout; Qwen2-MoE does not renormalize the chosen experts' weights.
inline constexpr std::array<gguf_architecture, 12> gguf_architectures{{
    {.name = "llama", .moe = moe_layout::optional},
    {.name = "qwen2", .neox = true},
    {.name = "qwen2moe", .neox = true, .moe = moe_layout::required, .expert_width_key = true, .norm_topk_prob = false},
    {.name = "qwen3", .neox = true, .qk_norm = true},
    {.name = "qwen3moe", .neox = true, .qk_norm = true, .moe = moe_layout::required, .expert_width_key = true},
    {.name = "gemma2",
     .neox = true,
     .post_norms = true,
     .gelu = true,
     .slides = true,
     .window_period = 2,
     .default_window = 4096,
     .embed_scale = true,
     .attn_softcap = 50.0f,
     .final_softcap = 30.0f,
     .embd_per_head_query_scale_layers = 46},
    {.name = "gemma3",
     .neox = true,
     .qk_norm = true,
     .post_norms = true,
     .gelu = true,
     .slides = true,
     .window_period = 6,
     .embed_scale = true,
     .rope_base_local = 10000.0f,
     .embd_per_head_query_scale_layers = 62},
    // Phi-3: NeoX pairs, fused projections; every layer slides when the file gives a window (current
    // converters write config.json's sliding_window; older files have none and plan full layers).
    {.name = "phi3", .neox = true, .slides = true, .window_optional = true, .fused = true},
    // Llama 4: three chunked layers to each global one (llama.cpp fixes the pattern and the 8192-token
    // chunk), experts every interleave_moe_layer_step-th layer, each with a shared expert; the
    // router's sigmoid weights are not renormalized.
    {.name = "llama4",
     .moe = moe_layout::optional,
     .expert_width_key = true,
     .norm_topk_prob = false,
     .window_period = 4,
     .chunk = 8192,
     .shared_expert = true,
     .llama4_block = true},
    // gpt-oss: sliding (attention.sliding_window, 128 in both models) and full layers alternate,
    // layer 0 sliding, unless attention.sliding_window_pattern says otherwise; every layer has
    // experts, whose softmax over the chosen logits is a renormalization. Its biases and sinks are
    // found from the tensors the file holds.
    {.name = "gpt-oss",
     .neox = true,
     .moe = moe_layout::required,
     .expert_width_key = true,
     .slides = true,
     .window_period = 2,
     .pattern_key = true,
     .ffn_norm_tensor = "post_attention_norm.weight"},
    // DeepSeek-V2/V3 and Kimi-K2 (llama.cpp's deepseek2): latent attention (attention.kv_lora_rank,
    // q_lora_rank, key_length_mla, value_length_mla, rope.dimension_count), leading dense layers,
    // expert_shared_count shared experts as wide as the routed ones.
    {.name = "deepseek2", .moe = moe_layout::required, .expert_width_key = true, .mla = true},
    // Granite-4.0-H (llama.cpp's granitehybrid): Mamba-2 layers and a few attention layers, each
    // with a SwiGLU feed-forward, dense (H-Micro) or experts as wide as feed_forward_length with a
    // shared expert (H-Tiny, H-Small). Its attention uses no RoPE, which costs no memory.
    {.name = "granitehybrid", .moe = moe_layout::optional, .hybrid = true},
}};

inline std::string known_architectures() {
    std::string s;
    for (const auto& a : gguf_architectures) s += (s.empty() ? "" : ", ") + std::string(a.name);
    return s;
}

// The row of a known architecture, or nullptr: io::describe then plans the file's tensors as
// opaque bytes (weights and KV, no activations).
inline const gguf_architecture* find_architecture(std::string_view name) {
    for (const auto& a : gguf_architectures)
        if (a.name == name) return &a;
    return nullptr;
}

// The name a layer's tensor of role r has in this architecture's files.
constexpr std::string_view tensor_name(const gguf_architecture& a, tensor_role r) {
    return r == tensor_role::ffn_norm && !a.ffn_norm_tensor.empty() ? a.ffn_norm_tensor : role_name(r);
}

}  // namespace vramplan::io
