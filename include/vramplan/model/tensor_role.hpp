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
    count
};
inline constexpr std::size_t n_tensor_roles = static_cast<std::size_t>(tensor_role::count);

inline constexpr std::array<std::string_view, n_tensor_roles> role_names{
    "attn_norm.weight", "attn_q.weight",      "attn_k.weight",   "attn_v.weight",   "attn_q.bias",   "attn_k.bias",
    "attn_v.bias",      "attn_output.weight", "ffn_norm.weight", "ffn_gate.weight", "ffn_up.weight", "ffn_down.weight",
};
static_assert(role_names.size() == n_tensor_roles && !role_names.back().empty(), "one name per tensor_role");

constexpr std::string_view role_name(tensor_role r) { return role_names[static_cast<std::size_t>(r)]; }

constexpr bool is_norm(tensor_role r) { return r == tensor_role::attn_norm || r == tensor_role::ffn_norm; }
constexpr bool is_bias(tensor_role r) {
    return r == tensor_role::attn_q_bias || r == tensor_role::attn_k_bias || r == tensor_role::attn_v_bias;
}
// Norms and biases are vectors kept in f32, as llama.cpp keeps them, whatever the weight format.
constexpr bool is_matrix(tensor_role r) { return !is_norm(r) && !is_bias(r); }

// Tensors outside the decoder blocks, stored once per model.
enum class global_tensor : std::uint8_t { token_embd, output_norm, output, rope_freqs, count };
inline constexpr std::size_t n_global_tensors = static_cast<std::size_t>(global_tensor::count);
inline constexpr std::array<std::string_view, n_global_tensors> global_tensor_names{
    "token_embd.weight", "output_norm.weight", "output.weight", "rope_freqs.weight"};
static_assert(global_tensor_names.size() == n_global_tensors && !global_tensor_names.back().empty(),
              "one name per global_tensor");
constexpr std::string_view global_tensor_name(global_tensor g) {
    return global_tensor_names[static_cast<std::size_t>(g)];
}

}  // namespace vramplan
