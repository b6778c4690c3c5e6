// The weight tensors of a decoder, named as GGUF names them: the roles of one decoder block
// (blk.N.<role>) and the global tensors stored once per model, so a GGUF file, a preset and a
// plan all use the same vocabulary.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace vramplan {

enum class tensor_role : std::uint8_t {
    attn_norm,
    attn_q,
    attn_k,
    attn_v,
    attn_q_bias,
    attn_k_bias,
    attn_v_bias,
    attn_output,
    ffn_norm,
    ffn_gate,
    ffn_up,
    ffn_down,
    // Current architectures' extra tensors. They come after the Llama roles so that a Llama
    // layer's tensors keep their offsets within the layer (absent roles take no bytes).
    attn_q_norm,          // Qwen3, Gemma 3: RMSNorm of each query head (head_dim values)
    attn_k_norm,          // ... and of each key head
    post_attention_norm,  // Gemma 2/3: RMSNorm of the attention output before the residual add
    post_ffw_norm,        // Gemma 2/3: RMSNorm of the feed-forward output before the residual add
    ffn_gate_inp,         // mixture of experts: the router, n_expert x n_embd
    ffn_gate_inp_shexp,   // Qwen2-MoE: the shared expert's sigmoid gate, one row of n_embd
    ffn_gate_shexp,       // the shared expert, a dense SwiGLU of n_ff_shared
    ffn_up_shexp,
    ffn_down_shexp,
    attn_qkv,           // Phi-3: q, k and v in one matrix of q_dim + 2 kv_dim rows (then no attn_q/k/v)
    attn_sinks,         // gpt-oss: one learned logit per query head that joins every softmax (n_head values)
    attn_output_bias,   // gpt-oss: the output projection's bias (n_embd values)
    ffn_gate_inp_bias,  // gpt-oss: the router's bias (n_expert values)
    // Multi-head latent attention (DeepSeek-V2/V3, Kimi-K2): q through a low-rank bottleneck (q_a,
    // its norm, q_b) or straight (attn_q); the input compressed to the latent and the shared rotated
    // key part (kv_a_mqa), the latent's norm, and per head the maps from the latent to the unrotated
    // key (k_b) and from the latent to the value (v_b), stacked as one plane per head.
    attn_q_a,
    attn_q_a_norm,
    attn_q_b,
    attn_kv_a_mqa,
    attn_kv_a_norm,
    attn_k_b,
    attn_v_b,
    exp_probs_b_bias,  // DeepSeek-V3: a bias per expert added to the router's scores to choose experts
    // A Mamba-2 layer's mixer (Granite-4.0-H), in place of attention: the input projection (z, x, B,
    // C and dt), the causal convolution's taps and bias, dt's bias, A and D per head (llama.cpp names
    // these two without a suffix), the gated norm and the output projection.
    ssm_in,
    ssm_conv1d,
    ssm_conv1d_bias,
    ssm_dt_bias,
    ssm_a,
    ssm_d,
    ssm_norm,
    ssm_out,
    // The routed experts, stacked (n_expert planes of n_ff_expert x n_embd, and of n_embd x
    // n_ff_expert for down), then gpt-oss's per-expert biases (a row per expert), last in a layer's
    // slot: a layer whose experts live in the host tier keeps the rest of its slot, cut where they
    // begin (llama.cpp's --n-cpu-moe moves the biases with their experts too).
    ffn_gate_exps,
    ffn_up_exps,
    ffn_down_exps,
    ffn_gate_exps_bias,
    ffn_up_exps_bias,
    ffn_down_exps_bias,
    count
};
inline constexpr std::size_t n_tensor_roles = static_cast<std::size_t>(tensor_role::count);

inline constexpr std::array<std::string_view, n_tensor_roles> role_names{
    "attn_norm.weight",
    "attn_q.weight",
    "attn_k.weight",
    "attn_v.weight",
    "attn_q.bias",
    "attn_k.bias",
    "attn_v.bias",
    "attn_output.weight",
    "ffn_norm.weight",
    "ffn_gate.weight",
    "ffn_up.weight",
    "ffn_down.weight",
    "attn_q_norm.weight",
    "attn_k_norm.weight",
    "post_attention_norm.weight",
    "post_ffw_norm.weight",
    "ffn_gate_inp.weight",
    "ffn_gate_inp_shexp.weight",
    "ffn_gate_shexp.weight",
    "ffn_up_shexp.weight",
    "ffn_down_shexp.weight",
    "attn_qkv.weight",
    "attn_sinks.weight",
    "attn_output.bias",
    "ffn_gate_inp.bias",
    "attn_q_a.weight",
    "attn_q_a_norm.weight",
    "attn_q_b.weight",
    "attn_kv_a_mqa.weight",
    "attn_kv_a_norm.weight",
    "attn_k_b.weight",
    "attn_v_b.weight",
    "exp_probs_b.bias",
    "ssm_in.weight",
    "ssm_conv1d.weight",
    "ssm_conv1d.bias",
    "ssm_dt.bias",
    "ssm_a",
    "ssm_d",
    "ssm_norm.weight",
    "ssm_out.weight",
    "ffn_gate_exps.weight",
    "ffn_up_exps.weight",
    "ffn_down_exps.weight",
    "ffn_gate_exps.bias",
    "ffn_up_exps.bias",
    "ffn_down_exps.bias",
};
static_assert(role_names.size() == n_tensor_roles && !role_names.back().empty(), "one name per tensor_role");
inline constexpr std::size_t first_routed_expert_role = static_cast<std::size_t>(tensor_role::ffn_gate_exps);
static_assert(first_routed_expert_role + 6 == n_tensor_roles, "the routed experts and their biases end a layer's slot");

constexpr std::string_view role_name(tensor_role r) { return role_names[static_cast<std::size_t>(r)]; }

constexpr bool is_norm(tensor_role r) {
    using enum tensor_role;
    return r == attn_norm || r == ffn_norm || r == attn_q_norm || r == attn_k_norm || r == post_attention_norm ||
           r == post_ffw_norm || r == attn_q_a_norm || r == attn_kv_a_norm || r == ssm_norm;
}
constexpr bool is_bias(tensor_role r) {
    using enum tensor_role;
    return r == attn_q_bias || r == attn_k_bias || r == attn_v_bias || r == attn_output_bias ||
           r == ffn_gate_inp_bias || r == ffn_gate_exps_bias || r == ffn_up_exps_bias || r == ffn_down_exps_bias ||
           r == exp_probs_b_bias || r == ssm_conv1d_bias || r == ssm_dt_bias;
}
// Norms, biases and the shared expert's gate row are vectors kept in f32, as llama.cpp keeps them,
// whatever the weight format; so are Mamba-2's per-head A and D and its convolution's taps, which
// llama.cpp's quantizer leaves unquantized (rows of 4 values).
constexpr bool is_vector(tensor_role r) {
    using enum tensor_role;
    return is_norm(r) || is_bias(r) || r == ffn_gate_inp_shexp || r == attn_sinks || r == ssm_a || r == ssm_d ||
           r == ssm_conv1d;
}
constexpr bool is_matrix(tensor_role r) { return !is_vector(r); }
// llama.cpp's quantizer leaves the router in f32 (it is small and decides which experts run), so a
// format policy does too.
constexpr bool is_router(tensor_role r) { return r == tensor_role::ffn_gate_inp; }
// The stacked experts and their biases: one plane (or bias row) per expert; a token reads
// n_expert_used of them.
constexpr bool is_routed_expert(tensor_role r) { return static_cast<std::size_t>(r) >= first_routed_expert_role; }

// Tensors outside the decoder blocks, stored once per model.
// rope_factors_long/short: LongRoPE's per-pair factors (Phi-3 128k, Phi-3.5), head_dim / 2 f32 each.
enum class global_tensor : std::uint8_t {
    token_embd,
    output_norm,
    output,
    rope_freqs,
    rope_factors_long,
    rope_factors_short,
    count
};
inline constexpr std::size_t n_global_tensors = static_cast<std::size_t>(global_tensor::count);
inline constexpr std::array<std::string_view, n_global_tensors> global_tensor_names{
    "token_embd.weight", "output_norm.weight",       "output.weight",
    "rope_freqs.weight", "rope_factors_long.weight", "rope_factors_short.weight"};
static_assert(global_tensor_names.size() == n_global_tensors && !global_tensor_names.back().empty(),
              "one name per global_tensor");
constexpr std::string_view global_tensor_name(global_tensor g) {
    return global_tensor_names[static_cast<std::size_t>(g)];
}

}  // namespace vramplan
