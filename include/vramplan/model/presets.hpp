// Published model shapes. Each shape is written once, as a decoder_shape; the type-level presets
// take their template arguments from it and the run-time catalog returns it, so the two agree by
// construction (and a test checks that they do).
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include "vramplan/detail/name_lookup.hpp"
#include "vramplan/model/format_policy.hpp"
#include "vramplan/model/layers.hpp"

namespace vramplan::presets {

struct preset_entry {
    std::string_view name;
    std::string_view aliases;  // space-separated
    decoder_shape shape;
    std::uint64_t published_params;  // from the model card / checkpoint, for tests and reports
    // The format the checkpoint stores its routed experts in, when the release fixes one (gpt-oss:
    // MXFP4); a preset's experts take it whatever the weight format, unless a caller changes them.
    std::optional<format> published_experts = std::nullopt;
};

// shape fields: vocab, embd, layers, heads, kv heads, head_dim, ffn, qkv bias, tied, rope base, eps,
// trained context (config.json max_position_embeddings), rope_freqs (Llama 3.1's RoPE scaling, which
// its GGUF files store as rope_freqs.weight), then RoPE scaling and NeoX-style pairs (Qwen2).
// Llama-3 and Llama-3.1 share a shape but not a context (8192 and 131072 tokens) nor rope_freqs, so
// each is its own entry.
inline constexpr preset_entry llama2_7b_entry{
    "Llama-2-7B",
    "llama2-7b llama-2-7b",
    {32000, 4096, 32, 32, 32, 128, 11008, false, false, 10000.0f, 1e-5f, 4096},
    6738415616};
inline constexpr preset_entry llama2_13b_entry{
    "Llama-2-13B",
    "llama2-13b",
    {32000, 5120, 40, 40, 40, 128, 13824, false, false, 10000.0f, 1e-5f, 4096},
    13015864320};
inline constexpr preset_entry llama3_8b_entry{
    "Llama-3-8B", "llama3-8b", {128256, 4096, 32, 32, 8, 128, 14336, false, false, 500000.0f, 1e-5f, 8192}, 8030261248};
inline constexpr preset_entry llama31_8b_entry{
    "Llama-3.1-8B",
    "llama3.1-8b",
    {128256, 4096, 32, 32, 8, 128, 14336, false, false, 500000.0f, 1e-5f, 131072, true},
    8030261248};
inline constexpr preset_entry llama31_70b_entry{
    "Llama-3.1-70B",
    "llama3.1-70b 70b",
    {128256, 8192, 80, 64, 8, 128, 28672, false, false, 500000.0f, 1e-5f, 131072, true},
    70553706496};
inline constexpr preset_entry mistral_7b_entry{
    "Mistral-7B-v0.3",
    "mistral-7b mistral",
    {32768, 4096, 32, 32, 8, 128, 14336, false, false, 1000000.0f, 1e-5f, 32768},
    7248023552};
inline constexpr preset_entry qwen25_7b_entry{"Qwen2.5-7B",
                                              "qwen2.5-7b qwen-2.5-7b",
                                              {152064, 3584, 28, 28, 4, 128, 18944, true, false, 1000000.0f, 1e-6f,
                                               131072, false, rope_scaling::none, 1.0f, true},
                                              7615616512};
inline constexpr preset_entry tinyllama_entry{"TinyLlama-1.1B",
                                              "tinyllama tinyllama-1.1b",
                                              {32000, 2048, 22, 32, 4, 64, 5632, false, false, 10000.0f, 1e-5f, 2048},
                                              1100048384};
// Phi-3-mini-4k slides every layer over 2047 positions (config.json sliding_window).
inline constexpr preset_entry phi3_mini_entry{"Phi-3-mini",
                                              "phi3-mini phi-3-mini-4k",
                                              {.n_vocab = 32064,
                                               .n_embd = 3072,
                                               .n_layer = 32,
                                               .n_head = 32,
                                               .n_head_kv = 32,
                                               .head_dim = 96,
                                               .n_ff = 8192,
                                               .rope_base = 10000.0f,
                                               .norm_eps = 1e-5f,
                                               .n_ctx_train = 4096,
                                               .sliding_window = 2047},
                                              3821079552};
inline constexpr preset_entry stories260k_entry{
    "stories260K", "stories stories-260k", {512, 64, 5, 8, 4, 8, 172, false, false, 10000.0f, 1e-5f, 2048}, 292800};

// The shapes below are their config.json files, field by field; published_params is the exact sum
// of their tensors, which tests derive again by hand and round to the model cards' figures.
inline constexpr preset_entry qwen3_06b_entry{"Qwen3-0.6B",
                                              "qwen3-0.6b",
                                              {.n_vocab = 151936,
                                               .n_embd = 1024,
                                               .n_layer = 28,
                                               .n_head = 16,
                                               .n_head_kv = 8,
                                               .head_dim = 128,
                                               .n_ff = 3072,
                                               .tied_output = true,
                                               .rope_base = 1000000.0f,
                                               .norm_eps = 1e-6f,
                                               .n_ctx_train = 40960,
                                               .rope_neox = true,
                                               .qk_norm = true},
                                              596049920};
inline constexpr preset_entry qwen3_8b_entry{"Qwen3-8B",
                                             "qwen3-8b",
                                             {.n_vocab = 151936,
                                              .n_embd = 4096,
                                              .n_layer = 36,
                                              .n_head = 32,
                                              .n_head_kv = 8,
                                              .head_dim = 128,
                                              .n_ff = 12288,
                                              .rope_base = 1000000.0f,
                                              .norm_eps = 1e-6f,
                                              .n_ctx_train = 40960,
                                              .rope_neox = true,
                                              .qk_norm = true},
                                             8190735360};
// 128 experts of 768, 8 per token, renormalized; every layer has experts (decoder_sparse_step 1).
inline constexpr preset_entry qwen3_30b_a3b_entry{"Qwen3-30B-A3B",
                                                  "qwen3-30b-a3b qwen3-moe",
                                                  {.n_vocab = 151936,
                                                   .n_embd = 2048,
                                                   .n_layer = 48,
                                                   .n_head = 32,
                                                   .n_head_kv = 4,
                                                   .head_dim = 128,
                                                   .n_ff = 6144,
                                                   .rope_base = 1000000.0f,
                                                   .norm_eps = 1e-6f,
                                                   .n_ctx_train = 40960,
                                                   .rope_neox = true,
                                                   .n_expert = 128,
                                                   .n_expert_used = 8,
                                                   .n_ff_expert = 768,
                                                   .qk_norm = true},
                                                  30532122624};
inline constexpr preset_entry mixtral_8x7b_entry{"Mixtral-8x7B",
                                                 "mixtral-8x7b mixtral",
                                                 {.n_vocab = 32000,
                                                  .n_embd = 4096,
                                                  .n_layer = 32,
                                                  .n_head = 32,
                                                  .n_head_kv = 8,
                                                  .head_dim = 128,
                                                  .n_ff = 14336,
                                                  .rope_base = 1000000.0f,
                                                  .norm_eps = 1e-5f,
                                                  .n_ctx_train = 32768,
                                                  .n_expert = 8,
                                                  .n_expert_used = 2,
                                                  .n_ff_expert = 14336},
                                                 46702792704};
// Gemma 2: local layers (a 4096-position window) alternate with global ones, layer 0 local.
inline constexpr preset_entry gemma2_9b_entry{"Gemma-2-9B",
                                              "gemma2-9b gemma-2-9b",
                                              {.n_vocab = 256000,
                                               .n_embd = 3584,
                                               .n_layer = 42,
                                               .n_head = 16,
                                               .n_head_kv = 8,
                                               .head_dim = 256,
                                               .n_ff = 14336,
                                               .tied_output = true,
                                               .rope_base = 10000.0f,
                                               .norm_eps = 1e-6f,
                                               .n_ctx_train = 8192,
                                               .rope_neox = true,
                                               .sliding_window = 4096,
                                               .window_period = 2,
                                               .post_norms = true,
                                               .gelu = true,
                                               .embed_scale = true,
                                               .attn_softcap = 50.0f,
                                               .final_softcap = 30.0f,
                                               .query_pre_attn_scalar = 256.0f},
                                              9241705984};
// Gemma 3 4B's language model (text_config): five local layers (1024 positions) to each global one.
inline constexpr preset_entry gemma3_4b_entry{"Gemma-3-4B",
                                              "gemma3-4b gemma-3-4b",
                                              {.n_vocab = 262208,
                                               .n_embd = 2560,
                                               .n_layer = 34,
                                               .n_head = 8,
                                               .n_head_kv = 4,
                                               .head_dim = 256,
                                               .n_ff = 10240,
                                               .tied_output = true,
                                               .rope_base = 1000000.0f,
                                               .norm_eps = 1e-6f,
                                               .n_ctx_train = 131072,
                                               .rope_neox = true,
                                               .sliding_window = 1024,
                                               .window_period = 6,
                                               .qk_norm = true,
                                               .post_norms = true,
                                               .gelu = true,
                                               .embed_scale = true,
                                               .query_pre_attn_scalar = 256.0f,
                                               .rope_base_local = 10000.0f},
                                              3880263168};

// Llama 3.2 and 3.3: Llama 3.1's RoPE scaling (rope_freqs); the small ones tie their embeddings.
inline constexpr preset_entry llama32_1b_entry{"Llama-3.2-1B",
                                               "llama3.2-1b",
                                               {.n_vocab = 128256,
                                                .n_embd = 2048,
                                                .n_layer = 16,
                                                .n_head = 32,
                                                .n_head_kv = 8,
                                                .head_dim = 64,
                                                .n_ff = 8192,
                                                .tied_output = true,
                                                .rope_base = 500000.0f,
                                                .norm_eps = 1e-5f,
                                                .n_ctx_train = 131072,
                                                .rope_freqs = true},
                                               1235814400};
inline constexpr preset_entry llama32_3b_entry{"Llama-3.2-3B",
                                               "llama3.2-3b",
                                               {.n_vocab = 128256,
                                                .n_embd = 3072,
                                                .n_layer = 28,
                                                .n_head = 24,
                                                .n_head_kv = 8,
                                                .head_dim = 128,
                                                .n_ff = 8192,
                                                .tied_output = true,
                                                .rope_base = 500000.0f,
                                                .norm_eps = 1e-5f,
                                                .n_ctx_train = 131072,
                                                .rope_freqs = true},
                                               3212749824};
inline constexpr preset_entry llama33_70b_entry{
    "Llama-3.3-70B",
    "llama3.3-70b",
    {128256, 8192, 80, 64, 8, 128, 28672, false, false, 500000.0f, 1e-5f, 131072, true},
    70553706496};
inline constexpr preset_entry qwen3_32b_entry{"Qwen3-32B",
                                              "qwen3-32b",
                                              {.n_vocab = 151936,
                                               .n_embd = 5120,
                                               .n_layer = 64,
                                               .n_head = 64,
                                               .n_head_kv = 8,
                                               .head_dim = 128,
                                               .n_ff = 25600,
                                               .rope_base = 1000000.0f,
                                               .norm_eps = 1e-6f,
                                               .n_ctx_train = 40960,
                                               .rope_neox = true,
                                               .qk_norm = true},
                                              32762123264};
inline constexpr preset_entry qwen3_235b_a22b_entry{"Qwen3-235B-A22B",
                                                    "qwen3-235b-a22b",
                                                    {.n_vocab = 151936,
                                                     .n_embd = 4096,
                                                     .n_layer = 94,
                                                     .n_head = 64,
                                                     .n_head_kv = 4,
                                                     .head_dim = 128,
                                                     .n_ff = 12288,
                                                     .rope_base = 1000000.0f,
                                                     .norm_eps = 1e-6f,
                                                     .n_ctx_train = 40960,
                                                     .rope_neox = true,
                                                     .n_expert = 128,
                                                     .n_expert_used = 8,
                                                     .n_ff_expert = 1536,
                                                     .qk_norm = true},
                                                    235093634560};
inline constexpr preset_entry gemma3_12b_entry{"Gemma-3-12B",
                                               "gemma3-12b gemma-3-12b",
                                               {.n_vocab = 262208,
                                                .n_embd = 3840,
                                                .n_layer = 48,
                                                .n_head = 16,
                                                .n_head_kv = 8,
                                                .head_dim = 256,
                                                .n_ff = 15360,
                                                .tied_output = true,
                                                .rope_base = 1000000.0f,
                                                .norm_eps = 1e-6f,
                                                .n_ctx_train = 131072,
                                                .rope_neox = true,
                                                .sliding_window = 1024,
                                                .window_period = 6,
                                                .qk_norm = true,
                                                .post_norms = true,
                                                .gelu = true,
                                                .embed_scale = true,
                                                .query_pre_attn_scalar = 256.0f,
                                                .rope_base_local = 10000.0f},
                                               11766034176};
inline constexpr preset_entry gemma3_27b_entry{"Gemma-3-27B",
                                               "gemma3-27b gemma-3-27b",
                                               {.n_vocab = 262208,
                                                .n_embd = 5376,
                                                .n_layer = 62,
                                                .n_head = 32,
                                                .n_head_kv = 16,
                                                .head_dim = 128,
                                                .n_ff = 21504,
                                                .tied_output = true,
                                                .rope_base = 1000000.0f,
                                                .norm_eps = 1e-6f,
                                                .n_ctx_train = 131072,
                                                .rope_neox = true,
                                                .sliding_window = 1024,
                                                .window_period = 6,
                                                .qk_norm = true,
                                                .post_norms = true,
                                                .gelu = true,
                                                .embed_scale = true,
                                                .query_pre_attn_scalar = 168.0f,
                                                .rope_base_local = 10000.0f},
                                               27009346304};

// Llama-4-Scout-17B-16E, the text model (config.json text_config): 16 experts of 8192, one per
// token, beside a shared expert of the same width, in every layer (interleave_moe_layer_step 1);
// three of every four layers attend within chunks of 8192 positions, the fourth to the whole
// context. The vision tower is not counted.
inline constexpr preset_entry llama4_scout_entry{"Llama-4-Scout-17B-16E",
                                                 "llama4-scout llama-4-scout",
                                                 {.n_vocab = 202048,
                                                  .n_embd = 5120,
                                                  .n_layer = 48,
                                                  .n_head = 40,
                                                  .n_head_kv = 8,
                                                  .head_dim = 128,
                                                  .n_ff = 16384,
                                                  .rope_base = 500000.0f,
                                                  .norm_eps = 1e-5f,
                                                  .n_ctx_train = 10485760,
                                                  .rope_freqs = true,
                                                  .n_expert = 16,
                                                  .n_expert_used = 1,
                                                  .n_ff_expert = 8192,
                                                  .n_ff_shared = 8192,
                                                  .norm_topk_prob = false,
                                                  .llama4_block = true,
                                                  .window_period = 4,
                                                  .attention_chunk = 8192},
                                                 107769861120};

// gpt-oss-20b and -120b (config.json): sliding layers over 128 positions alternate with full ones
// (layer 0 sliding); 32 or 128 experts of 2880, 4 per token, with biases on the router and on each
// expert; attention sinks and biases on q, k, v and the output; YaRN RoPE. The release stores the
// experts in MXFP4 and the rest in bf16.
inline constexpr decoder_shape gpt_oss_shape(std::uint64_t layers, std::uint64_t experts) {
    return {.n_vocab = 201088,
            .n_embd = 2880,
            .n_layer = layers,
            .n_head = 64,
            .n_head_kv = 8,
            .head_dim = 64,
            .n_ff = 2880,
            .qkv_bias = true,
            .rope_base = 150000.0f,
            .norm_eps = 1e-5f,
            .n_ctx_train = 131072,
            .scaling = rope_scaling::yarn,
            .rope_neox = true,
            .n_expert = experts,
            .n_expert_used = 4,
            .n_ff_expert = 2880,
            .sliding_window = 128,
            .window_period = 2,
            .attn_sinks = true,
            .attn_output_bias = true,
            .expert_bias = true};
}
inline constexpr preset_entry gpt_oss_20b_entry{"gpt-oss-20b", "gpt-oss gptoss-20b gpt_oss_20b", gpt_oss_shape(24, 32),
                                                20914757184, format{format_id::mxfp4}};
inline constexpr preset_entry gpt_oss_120b_entry{"gpt-oss-120b", "gptoss-120b gpt_oss_120b", gpt_oss_shape(36, 128),
                                                 116829156672, format{format_id::mxfp4}};

// DeepSeek-V3 (and R1, its reasoning fine-tune; config.json) without its multi-token-prediction
// layer, and Kimi-K2 (DeepSeek-V3's architecture): latent attention of 128 (Kimi: 64) heads of
// 128 + 64 (rotated) over a 512-value latent, a 1536-value query bottleneck, 128-value value heads;
// 3 (Kimi: 1) dense layers of 18432, then 256 (Kimi: 384) routed experts of 2048, 8 per token,
// chosen with a bias per expert, beside one shared expert of 2048. Run-time presets only: the
// layer templates do not express latent attention.
inline constexpr decoder_shape mla_moe_shape(std::uint64_t vocab, std::uint64_t heads, std::uint64_t dense_lead,
                                             std::uint64_t experts, float rope_base, std::uint64_t context) {
    return {.n_vocab = vocab,
            .n_embd = 7168,
            .n_layer = 61,
            .n_head = heads,
            .n_head_kv = 1,
            .head_dim = 192,
            .n_ff = 18432,
            .rope_base = rope_base,
            .norm_eps = 1e-6f,
            .n_ctx_train = context,
            .scaling = rope_scaling::yarn,
            .n_expert = experts,
            .n_expert_used = 8,
            .n_ff_expert = 2048,
            .n_ff_shared = 2048,
            .n_dense_lead = dense_lead,
            .q_lora_rank = 1536,
            .kv_lora_rank = 512,
            .rope_dim = 64,
            .v_head_dim = 128,
            .expert_probs_bias = true};
}
inline constexpr preset_entry deepseek_v3_entry{"DeepSeek-V3", "deepseek-v3 deepseek-r1 deepseek-v3.1 deepseek",
                                                mla_moe_shape(129280, 128, 3, 256, 10000.0f, 163840), 671026419200};
inline constexpr preset_entry kimi_k2_entry{"Kimi-K2", "kimi-k2 kimi",
                                            mla_moe_shape(163840, 64, 1, 384, 50000.0f, 131072), 1026408232448};

// Granite-4.0-H-Tiny (its config.json, model type granitemoehybrid): 40 layers of 1536, of which
// layers 5, 15, 25 and 35 attend (12 heads of 128, 4 KV heads, no RoPE) and the other 36 are
// Mamba-2 layers (48 heads of 64, a state of 128, one group, a 4-tap convolution with a bias);
// every layer has 64 routed experts of 512, 6 per token, beside a shared expert of 1024. Tied
// embedding of 100352. Run-time preset only: the layer templates do not express Mamba-2.
inline constexpr decoder_shape granite_4_h_tiny_shape() {
    decoder_shape s{.n_vocab = 100352,
                    .n_embd = 1536,
                    .n_layer = 40,
                    .n_head = 12,
                    .n_head_kv = 4,
                    .head_dim = 128,
                    .n_ff = 512,
                    .tied_output = true,
                    .n_ctx_train = 131072,
                    .n_expert = 64,
                    .n_expert_used = 6,
                    .n_ff_expert = 512,
                    .n_ff_shared = 1024,
                    .ssm_conv_kernel = 4,
                    .ssm_inner = 3072,
                    .ssm_state = 128,
                    .ssm_groups = 1,
                    .ssm_heads = 48,
                    .ssm_conv_bias = true};
    for (std::uint64_t l = 0; l < s.n_layer; ++l) s.set_recurrent(l, l % 10 != 5);
    return s;
}
inline constexpr preset_entry granite_4_h_tiny_entry{
    "Granite-4.0-H-Tiny", "granite-4.0-h-tiny granite-4-h-tiny granite4-tiny", granite_4_h_tiny_shape(), 6939037248};

inline constexpr std::array<preset_entry, 29> catalog{
    llama2_7b_entry,       llama2_13b_entry,  llama3_8b_entry,     llama31_8b_entry,       llama31_70b_entry,
    mistral_7b_entry,      qwen25_7b_entry,   tinyllama_entry,     phi3_mini_entry,        stories260k_entry,
    qwen3_06b_entry,       qwen3_8b_entry,    qwen3_30b_a3b_entry, mixtral_8x7b_entry,     gemma2_9b_entry,
    gemma3_4b_entry,       llama32_1b_entry,  llama32_3b_entry,    llama33_70b_entry,      qwen3_32b_entry,
    qwen3_235b_a22b_entry, gemma3_12b_entry,  gemma3_27b_entry,    llama4_scout_entry,     gpt_oss_20b_entry,
    gpt_oss_120b_entry,    deepseek_v3_entry, kimi_k2_entry,       granite_4_h_tiny_entry,
};

// The type-level model of a shape: W for every matrix (embedding and head included unless given),
// Kv for the cache, Act for activations. Its layer templates take every number from the entry.
namespace type_level {
template <const preset_entry& E, storage_format W>
using preset_attention =
    layers::attention<E.shape.n_embd, E.shape.n_head, E.shape.n_head_kv, E.shape.head_dim, W, E.shape.qkv_bias,
                      static_cast<std::uint32_t>(E.shape.rope_base), W, E.shape.qk_norm, E.shape.sliding_window,
                      E.shape.window_period, E.shape.attention_chunk, E.shape.attn_output_bias, E.shape.attn_sinks>;
template <const preset_entry& E, storage_format W, storage_format Experts>
using preset_mlp =
    std::conditional_t<E.shape.n_expert != 0,
                       layers::moe_mlp<E.shape.n_embd, E.shape.n_ff_expert, (E.shape.n_expert ? E.shape.n_expert : 1),
                                       (E.shape.n_expert ? E.shape.n_expert_used : 1), W, E.shape.n_ff_shared,
                                       E.shape.shared_expert_gate, Experts, E.shape.expert_bias>,
                       layers::swiglu_mlp<E.shape.n_embd, E.shape.n_ff, W>>;
template <const preset_entry& E, storage_format W, storage_format Kv, class Output, storage_format Embed,
          storage_format Act, storage_format Experts>
using preset_transformer = layers::decoder_transformer<
    E.shape.n_vocab, E.shape.n_layer,
    layers::decoder_block<preset_attention<E, W>, preset_mlp<E, W, Experts>, f32, E.shape.post_norms>, Embed,
    std::conditional_t<E.shape.tied_output, layers::tied, Output>, Kv, Act, f32, E.shape.rope_freqs>;
}  // namespace type_level

// presets::llama3_8b<q4_0, q8_0> and the like: W for every matrix, Kv for the cache (f16 unless
// given), the output head and embedding as W unless given, activations in f32, routed experts as W
// unless given (or, by default, as the release stores them: presets::gpt_oss_20b<bf16> has MXFP4
// experts).
template <const preset_entry& E, storage_format W = f16, storage_format Kv = f16, class Output = W,
          storage_format Embed = W, storage_format Act = f32, storage_format Experts = W>
struct decoder_preset : type_level::preset_transformer<E, W, Kv, Output, Embed, Act, Experts> {
    using base = type_level::preset_transformer<E, W, Kv, Output, Embed, Act, Experts>;
    // What costs no memory and has no template of its own: numbers of the norm, RoPE and routing.
    static constexpr model_desc describe() {
        model_desc m = base::describe(E.name);
        m.shape.norm_eps = E.shape.norm_eps;
        m.shape.n_ctx_train = E.shape.n_ctx_train;
        m.shape.scaling = E.shape.scaling;
        m.shape.scaling_factor = E.shape.scaling_factor;
        m.shape.rope_neox = E.shape.rope_neox;
        m.shape.norm_topk_prob = E.shape.norm_topk_prob;
        m.shape.gelu = E.shape.gelu;
        m.shape.llama4_block = E.shape.llama4_block;
        m.shape.embed_scale = E.shape.embed_scale;
        m.shape.attn_softcap = E.shape.attn_softcap;
        m.shape.final_softcap = E.shape.final_softcap;
        m.shape.query_pre_attn_scalar = E.shape.query_pre_attn_scalar;
        m.shape.rope_base_local = E.shape.rope_base_local;
        // A model whose every layer has experts has no dense layer for n_ff to size; it is kept as
        // published (config.json's intermediate_size).
        static_assert(E.shape.n_dense_lead == 0 && E.shape.moe_every <= 1,
                      "type-level presets have one kind of feed-forward; add a dense layer template for this one");
        m.shape.n_ff = E.shape.n_ff;
        return m;
    }
};

template <class... Formats>
using llama2_7b = decoder_preset<llama2_7b_entry, Formats...>;
template <class... Formats>
using llama2_13b = decoder_preset<llama2_13b_entry, Formats...>;
template <class... Formats>
using llama3_8b = decoder_preset<llama3_8b_entry, Formats...>;
template <class... Formats>
using llama31_8b = decoder_preset<llama31_8b_entry, Formats...>;
template <class... Formats>
using llama31_70b = decoder_preset<llama31_70b_entry, Formats...>;
template <class... Formats>
using mistral_7b = decoder_preset<mistral_7b_entry, Formats...>;
template <class... Formats>
using qwen25_7b = decoder_preset<qwen25_7b_entry, Formats...>;
template <class... Formats>
using tinyllama_1b = decoder_preset<tinyllama_entry, Formats...>;
template <class... Formats>
using phi3_mini = decoder_preset<phi3_mini_entry, Formats...>;
template <storage_format W = f32, storage_format Kv = f16, class Output = W, storage_format Embed = W,
          storage_format Act = f32>
using stories260k = decoder_preset<stories260k_entry, W, Kv, Output, Embed, Act>;
template <class... Formats>
using qwen3_06b = decoder_preset<qwen3_06b_entry, Formats...>;
template <class... Formats>
using qwen3_8b = decoder_preset<qwen3_8b_entry, Formats...>;
template <class... Formats>
using qwen3_30b_a3b = decoder_preset<qwen3_30b_a3b_entry, Formats...>;
template <class... Formats>
using mixtral_8x7b = decoder_preset<mixtral_8x7b_entry, Formats...>;
template <class... Formats>
using gemma2_9b = decoder_preset<gemma2_9b_entry, Formats...>;
template <class... Formats>
using gemma3_4b = decoder_preset<gemma3_4b_entry, Formats...>;
template <class... Formats>
using llama32_1b = decoder_preset<llama32_1b_entry, Formats...>;
template <class... Formats>
using llama32_3b = decoder_preset<llama32_3b_entry, Formats...>;
template <class... Formats>
using llama33_70b = decoder_preset<llama33_70b_entry, Formats...>;
template <class... Formats>
using qwen3_32b = decoder_preset<qwen3_32b_entry, Formats...>;
template <class... Formats>
using qwen3_235b_a22b = decoder_preset<qwen3_235b_a22b_entry, Formats...>;
template <class... Formats>
using gemma3_12b = decoder_preset<gemma3_12b_entry, Formats...>;
template <class... Formats>
using gemma3_27b = decoder_preset<gemma3_27b_entry, Formats...>;
template <class... Formats>
using llama4_scout = decoder_preset<llama4_scout_entry, Formats...>;
// gpt-oss keeps its experts in MXFP4 unless Experts says otherwise.
template <storage_format W = bf16, storage_format Kv = f16, class Output = W, storage_format Embed = W,
          storage_format Act = f32, storage_format Experts = mxfp4>
using gpt_oss_20b = decoder_preset<gpt_oss_20b_entry, W, Kv, Output, Embed, Act, Experts>;
template <storage_format W = bf16, storage_format Kv = f16, class Output = W, storage_format Embed = W,
          storage_format Act = f32, storage_format Experts = mxfp4>
using gpt_oss_120b = decoder_preset<gpt_oss_120b_entry, W, Kv, Output, Embed, Act, Experts>;

inline const preset_entry* find(std::string_view name) { return detail::find_by_name(catalog, name, "model"); }

inline std::string known_names() { return detail::list_names(catalog); }

inline const preset_entry& by_name(std::string_view name) {
    if (const preset_entry* e = find(name)) return *e;
    const std::string near = detail::nearest_names(catalog, name);
    throw error("unknown model '" + std::string(name) + "'" + (near.empty() ? "" : "; did you mean " + near) +
                "; built-in models: " + known_names() + " (or give a .gguf file or a config.json)");
}

// The run-time twin of the type-level presets: the policy's formats, and the release's expert
// format where it has one.
constexpr model_desc describe(const preset_entry& e, const format_policy& policy) {
    const model_desc m = make_model(e.name, e.shape, policy);
    return e.published_experts ? with_expert_format(m, *e.published_experts) : m;
}

}  // namespace vramplan::presets
