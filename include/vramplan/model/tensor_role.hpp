// The weight tensors of one decoder block, named as GGUF names them (blk.N.<role>), so a GGUF
// file, a preset and a plan all use the same vocabulary.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace vramplan {

enum class tensor_role : std::uint8_t {
    attn_norm, attn_q, attn_k, attn_v, attn_q_bias, attn_k_bias, attn_v_bias, attn_output,
    ffn_norm, ffn_gate, ffn_up, ffn_down,
};
inline constexpr std::size_t n_tensor_roles = 12;

inline constexpr std::array<std::string_view, n_tensor_roles> role_names{
    "attn_norm.weight", "attn_q.weight", "attn_k.weight", "attn_v.weight",
    "attn_q.bias", "attn_k.bias", "attn_v.bias", "attn_output.weight",
    "ffn_norm.weight", "ffn_gate.weight", "ffn_up.weight", "ffn_down.weight",
};

constexpr std::string_view role_name(tensor_role r) { return role_names[static_cast<std::size_t>(r)]; }

constexpr bool is_norm(tensor_role r) { return r == tensor_role::attn_norm || r == tensor_role::ffn_norm; }
constexpr bool is_bias(tensor_role r) {
    return r == tensor_role::attn_q_bias || r == tensor_role::attn_k_bias || r == tensor_role::attn_v_bias;
}
// Norms and biases are vectors kept in f32, as llama.cpp keeps them, whatever the weight format.
constexpr bool is_matrix(tensor_role r) { return !is_norm(r) && !is_bias(r); }

}  // namespace vramplan
