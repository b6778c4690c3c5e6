// The forward pass of a Llama-style decoder as a graph: pre-norm blocks of grouped-query attention
// with RoPE and a SwiGLU feed-forward, between the token embedding and the output head. The
// variants of today's architectures are differences in this data, not flags in the executors:
// Qwen2's q/k/v biases are three add_bias ops, NeoX-style RoPE pairs, Llama 3.1's frequency
// divisors (rope_freqs.weight) and linear RoPE scaling are parameters of the rope ops, and a tied
// output head reads token_embd; Gemma's embedding scale, softmax scale and soft-capping are op
// parameters and its capped logits one more op. Qwen3's q/k norms are per-head rms_norm ops, Gemma's post-norms
// rms_norm ops on the sublayer outputs and its GELU gate a geglu op; a mixture of experts is a
// router matmul, a route op choosing each token's experts, expert_matmul ops over the routed rows
// and an expert_sum weighting them back into one row per token, with the shared expert a dense
// feed-forward beside it. A sliding-window layer runs the same ops: its window is a property of
// the layer's kind and its cache (model_desc.hpp, plan.hpp), not of the ops. A Mamba-2 layer
// (Granite-4.0-H) runs its own variant: ssm_in's projection split into the gate z and the x, B, C
// channels the convolution runs over, the scan, the gate and a grouped norm, and ssm_out, then
// the same feed-forward as an attending layer.
#pragma once

#include "vramplan/model/graph.hpp"
#include "vramplan/model/model_desc.hpp"

namespace vramplan {

// The block variant layers of kind b run.
constexpr std::size_t block_variant(const block_kind& b) {
    return block_variant(b.attention == attention_kind::recurrent, b.ffn == ffn_kind::moe);
}

constexpr forward_graph decoder_graph(const decoder_shape& s) {
    using enum op_kind;
    forward_graph g;
    const std::uint64_t E = s.n_embd, Q = s.q_dim(), KV = s.kv_dim(), F = s.n_ff;
    auto buffer = [&](std::string_view name, std::uint64_t cols, buffer_elem e = buffer_elem::activation,
                      buffer_rows r = buffer_rows::tokens) {
        return g.add_buffer({name, r, cols, e, 0});
    };
    // Creation order is the packer's tie-break order: keep it stable.
    const auto tokens = buffer("tokens", 1, buffer_elem::i32);
    const auto positions = buffer("positions", 1, buffer_elem::i32);
    const auto x = buffer("residual", E, buffer_elem::f32);  // the residual stream stays f32
    const auto attn_in = buffer("attn_in", E);
    // Which kinds of layer there are: a block variant, and its buffers, for each.
    std::array<bool, n_block_variants> has{};
    for (std::uint64_t l = 0; l < s.n_layer; ++l)
        has[block_variant(block_kind{{}, layer_attention(s, l), layer_ffn(s, l)})] = true;
    const bool attending = has[block_variant(false, false)] || has[block_variant(false, true)];
    const bool recurrent = has[block_variant(true, false)] || has[block_variant(true, true)];
    const auto qkv = s.fused_qkv ? buffer("qkv", Q + 2 * KV) : no_buffer;
    const bool mla = s.latent_attention();
    const auto q = attending ? buffer("q", Q) : no_buffer;
    const auto k = mla || !attending ? no_buffer : buffer("k", KV), v = mla || !attending ? no_buffer : buffer("v", KV);
    // MLA attends over the latent (L values) and the shared rotated key (R): each query head is
    // absorbed into the latent's space (L + R values) and its output, L values per head, is
    // mapped to the value head (attn_v_b) before the output projection.
    const std::uint64_t L = s.kv_lora_rank, R = s.rope_dim, QL = s.q_lora_rank, H = s.n_head;
    const auto q_a = mla && QL ? buffer("q_a", QL) : no_buffer;
    const auto q_nope = mla ? buffer("q_nope", checked_mul(H, s.qk_nope_dim())) : no_buffer;
    const auto q_pe = mla ? buffer("q_rope", checked_mul(H, R)) : no_buffer;
    const auto kv_a = mla ? buffer("latent_rope", checked_add(L, R)) : no_buffer;
    const auto latent = mla ? buffer("latent", L) : no_buffer, k_pe = mla ? buffer("k_rope", R) : no_buffer;
    const auto q_abs = mla ? buffer("q_absorbed", checked_mul(H, L)) : no_buffer;
    const auto q_lat = mla ? buffer("q_latent", checked_mul(H, checked_add(L, R))) : no_buffer;
    const auto k_lat = mla ? buffer("k_latent", checked_add(L, R)) : no_buffer;
    const auto attn_lat = mla ? buffer("attn_latent", checked_mul(H, L)) : no_buffer;
    // The attention's accumulators are as wide as its values: the latent under MLA.
    const auto states = attending ? g.add_buffer({"attn_scratch", buffer_rows::attention_states, s.n_head,
                                                  buffer_elem::f32, mla ? L : s.head_dim})
                                  : no_buffer;
    const auto attn_out = attending ? buffer("attn_out", s.v_dim()) : no_buffer;
    // Mamba-2: ssm_in's output (z, then the x, B, C channels, then dt), the gate z, the convolved
    // channels and the scan's output.
    const std::uint64_t I = s.ssm_inner, C = s.ssm_conv_channels(), G = s.ssm_groups;
    const auto ssm_proj = recurrent ? buffer("ssm_zxbcdt", s.ssm_in_dim()) : no_buffer;
    const auto ssm_z = recurrent ? buffer("ssm_z", I) : no_buffer;
    const auto ssm_xbc = recurrent ? buffer("ssm_xbc", C) : no_buffer;
    const auto ssm_y = recurrent ? buffer("ssm_y", I) : no_buffer;
    const auto attn_proj = buffer("attn_proj", E);
    const bool has_dense = has[block_variant(false, false)] || has[block_variant(true, false)];
    const bool has_moe = has[block_variant(false, true)] || has[block_variant(true, true)];
    const bool moe = has_moe, shared = moe && s.n_ff_shared != 0;
    const std::uint64_t X = s.n_ff_expert, K = s.n_expert_used, S = s.n_ff_shared;
    const auto ffn_in = buffer("ffn_in", E);
    const auto gate_up = s.fused_gate_up ? buffer("gate_up", 2 * F) : no_buffer;
    const auto gate = has_dense ? buffer("gate", F) : no_buffer, up = has_dense ? buffer("up", F) : no_buffer;
    // Routed rows: K per token, the inputs and outputs of the experts each token was sent to.
    auto routed = [&](std::string_view name, std::uint64_t cols) {
        return g.add_buffer({name, buffer_rows::tokens, cols, buffer_elem::activation, 0, K});
    };
    const auto router = moe ? buffer("router_logits", s.n_expert, buffer_elem::f32) : no_buffer;
    const auto chosen = moe ? buffer("expert_ids", K, buffer_elem::i32) : no_buffer;
    const auto chosen_w = moe ? buffer("expert_weights", K, buffer_elem::f32) : no_buffer;
    const auto exp_gate = moe ? routed("expert_gate", X) : no_buffer, exp_up = moe ? routed("expert_up", X) : no_buffer;
    const auto exp_out = moe ? routed("expert_out", E) : no_buffer;
    const auto sh_gate = shared ? buffer("shared_gate", S) : no_buffer,
               sh_up = shared ? buffer("shared_up", S) : no_buffer;
    const auto sh_out = shared ? buffer("shared_out", E) : no_buffer;
    const auto sh_scale = shared && s.shared_expert_gate ? buffer("shared_scale", 1, buffer_elem::f32) : no_buffer;
    const auto ffn_proj = buffer("ffn_proj", E);
    const auto out_in = buffer("out_in", E, buffer_elem::activation, buffer_rows::outputs);
    const auto logits_buf = buffer("logits", s.n_vocab, buffer_elem::f32, buffer_rows::outputs);

    auto norm = [&](weight_ref w, std::uint8_t in, std::uint8_t out, bool outputs = false, std::uint64_t n = 0,
                    std::uint64_t heads = 0) {
        g.add_op({.kind = rms_norm,
                  .in = {in, no_buffer, no_buffer},
                  .out = out,
                  .output_rows = outputs,
                  .weight = w,
                  .n = n ? n : E,
                  .heads = heads,
                  .eps = s.norm_eps});
    };
    auto experts = [&](tensor_role r, std::uint8_t in, std::uint8_t out, std::uint64_t n, std::uint64_t k_in) {
        g.add_op({.kind = expert_matmul,
                  .in = {in, chosen, no_buffer},
                  .out = out,
                  .weight = layer_weight(r),
                  .n = n,
                  .k = k_in,
                  .experts_used = K});
    };
    const op_kind gated = s.gelu ? geglu : swiglu;
    auto part = [&](std::uint8_t from, std::uint8_t to, std::uint64_t first, std::uint64_t n) {
        g.add_op({.kind = split, .in = {from, no_buffer, no_buffer}, .out = to, .n = n, .k = first});
    };
    auto linear = [&](weight_ref w, std::uint8_t in, std::uint8_t out, std::uint64_t n, std::uint64_t k_in,
                      bool outputs = false) {
        g.add_op({.kind = matmul,
                  .in = {in, no_buffer, no_buffer},
                  .out = out,
                  .output_rows = outputs,
                  .weight = w,
                  .n = n,
                  .k = k_in});
    };
    auto in_place = [&](op_kind kind, std::uint8_t out, std::uint8_t in, std::uint64_t n, weight_ref w = {}) {
        g.add_op({.kind = kind, .in = {in, no_buffer, no_buffer}, .out = out, .in_place = true, .weight = w, .n = n});
    };
    const bool linear_scaling = s.scaling == rope_scaling::linear && s.scaling_factor > 0.0f;
    auto rotate = [&](std::uint8_t buf, std::uint64_t heads, std::uint64_t head_dim) {
        g.add_op({.kind = rope,
                  .in = {positions, no_buffer, no_buffer},
                  .out = buf,
                  .in_place = true,
                  .weight = s.rope_freqs ? global_weight(global_tensor::rope_freqs) : weight_ref{},
                  .heads = heads,
                  .head_dim = head_dim,
                  .rope_base = s.rope_base,
                  .freq_scale = linear_scaling ? 1.0f / s.scaling_factor : 1.0f,
                  .rope_base_local = s.rope_base_local,
                  .neox = s.rope_neox});
    };

    g.add_op({.kind = inputs, .out = tokens, .aux = positions});
    g.add_op({.kind = embed,
              .in = {tokens, no_buffer, no_buffer},
              .out = x,
              .weight = global_weight(global_tensor::token_embd),
              .n = E,
              .scale = s.embed_scale ? static_cast<float>(detail::sqrt_newton(static_cast<double>(E))) : 0.0f});

    g.begin_block();
    // One variant per kind of layer there is (attending dense, attending moe, then Mamba-2 dense and
    // moe): the token mixer, then that feed-forward. A layer runs the variant of its kind.
    auto mamba2 = [&]() {
        linear(layer_weight(tensor_role::ssm_in), attn_in, ssm_proj, s.ssm_in_dim(), E);
        part(ssm_proj, ssm_z, 0, I);
        g.add_op({.kind = ssm_conv,
                  .in = {ssm_proj, no_buffer, no_buffer},
                  .out = ssm_xbc,
                  .weight = layer_weight(tensor_role::ssm_conv1d),
                  .n = C,
                  .k = I,
                  .head_dim = s.ssm_conv_kernel});
        g.add_op({.kind = ssm_scan,
                  .in = {ssm_xbc, ssm_proj, no_buffer},
                  .out = ssm_y,
                  .weight = layer_weight(tensor_role::ssm_a),
                  .n = I,
                  .k = checked_add(I, C),
                  .heads = s.ssm_heads,
                  .kv_heads = G,
                  .head_dim = s.ssm_state});
        in_place(swiglu, ssm_z, ssm_y, I);                                         // y gated by silu(z), into z
        norm(layer_weight(tensor_role::ssm_norm), ssm_z, ssm_z, false, I / G, G);  // one norm per group
        linear(layer_weight(tensor_role::ssm_out), ssm_z, attn_proj, E, I);
    };
    auto attention_mixer = [&]() {
        const auto softmax_scale =
            1.0f / static_cast<float>(detail::sqrt_newton(s.query_pre_attn_scalar > 0.0f
                                                              ? static_cast<double>(s.query_pre_attn_scalar)
                                                              : static_cast<double>(s.head_dim)));
        if (mla) {
            if (QL) {
                linear(layer_weight(tensor_role::attn_q_a), attn_in, q_a, QL, E);
                norm(layer_weight(tensor_role::attn_q_a_norm), q_a, q_a, false, QL);
                linear(layer_weight(tensor_role::attn_q_b), q_a, q, Q, QL);
            } else {
                linear(layer_weight(tensor_role::attn_q), attn_in, q, Q, E);
            }
            g.add_op({.kind = head_split,
                      .in = {q, no_buffer, no_buffer},
                      .out = q_nope,
                      .n = s.qk_nope_dim(),
                      .k = 0,
                      .heads = H,
                      .head_dim = s.head_dim});
            g.add_op({.kind = head_split,
                      .in = {q, no_buffer, no_buffer},
                      .out = q_pe,
                      .n = R,
                      .k = s.qk_nope_dim(),
                      .heads = H,
                      .head_dim = s.head_dim});
            linear(layer_weight(tensor_role::attn_kv_a_mqa), attn_in, kv_a, L + R, E);
            part(kv_a, latent, 0, L);
            part(kv_a, k_pe, L, R);
            norm(layer_weight(tensor_role::attn_kv_a_norm), latent, latent, false, L);
            rotate(q_pe, H, R);
            rotate(k_pe, 1, R);
            g.add_op({.kind = head_matmul,
                      .in = {q_nope, no_buffer, no_buffer},
                      .out = q_abs,
                      .weight = layer_weight(tensor_role::attn_k_b),
                      .n = L,
                      .k = s.qk_nope_dim(),
                      .heads = H});
            g.add_op({.kind = concat,
                      .in = {q_abs, q_pe, no_buffer},
                      .out = q_lat,
                      .n = L,
                      .k = R,
                      .heads = H,
                      .kv_heads = H});
            g.add_op({.kind = concat,
                      .in = {latent, k_pe, no_buffer},
                      .out = k_lat,
                      .n = L,
                      .k = R,
                      .heads = 1,
                      .kv_heads = 1});
            g.add_op({.kind = kv_append, .in = {k_lat, no_buffer, positions}, .n = KV});
            g.add_op({.kind = attention,
                      .in = {q_lat, positions, no_buffer},
                      .out = attn_lat,
                      .aux = states,
                      .heads = H,
                      .kv_heads = 1,
                      .head_dim = L + R,
                      .v_dim = L,
                      .scale = softmax_scale});
            const std::uint64_t V = s.v_head_dim ? s.v_head_dim : s.head_dim;
            g.add_op({.kind = head_matmul,
                      .in = {attn_lat, no_buffer, no_buffer},
                      .out = attn_out,
                      .weight = layer_weight(tensor_role::attn_v_b),
                      .n = V,
                      .k = L,
                      .heads = H});
        } else if (s.fused_qkv) {
            linear(layer_weight(tensor_role::attn_qkv), attn_in, qkv, Q + 2 * KV, E);
            part(qkv, q, 0, Q);
            part(qkv, k, Q, KV);
            part(qkv, v, Q + KV, KV);
        } else {
            linear(layer_weight(tensor_role::attn_q), attn_in, q, Q, E);
            linear(layer_weight(tensor_role::attn_k), attn_in, k, KV, E);
            linear(layer_weight(tensor_role::attn_v), attn_in, v, KV, E);
        }
        if (!mla) {
            if (s.qkv_bias) {
                in_place(add_bias, q, no_buffer, Q, layer_weight(tensor_role::attn_q_bias));
                in_place(add_bias, k, no_buffer, KV, layer_weight(tensor_role::attn_k_bias));
                in_place(add_bias, v, no_buffer, KV, layer_weight(tensor_role::attn_v_bias));
            }
            if (s.qk_norm) {
                norm(layer_weight(tensor_role::attn_q_norm), q, q, false, s.head_dim, s.n_head);
                norm(layer_weight(tensor_role::attn_k_norm), k, k, false, s.head_dim, s.n_head_kv);
            }
            rotate(q, s.n_head, s.head_dim);
            rotate(k, s.n_head_kv, s.head_dim);
            g.add_op({.kind = kv_append, .in = {k, v, positions}, .n = KV});
            g.add_op({.kind = attention,
                      .in = {q, positions, no_buffer},
                      .out = attn_out,
                      .aux = states,
                      .heads = s.n_head,
                      .kv_heads = s.n_head_kv,
                      .head_dim = s.head_dim,
                      .scale = softmax_scale,
                      .softcap = s.attn_softcap});
        }
        linear(layer_weight(tensor_role::attn_output), attn_out, attn_proj, E, s.v_dim());
        if (s.attn_output_bias)
            in_place(add_bias, attn_proj, no_buffer, E, layer_weight(tensor_role::attn_output_bias));
        if (s.post_norms) norm(layer_weight(tensor_role::post_attention_norm), attn_proj, attn_proj);
    };
    auto feed_forward = [&](bool moe_layer) {
        norm(layer_weight(tensor_role::ffn_norm), x, ffn_in);
        if (!moe_layer) {
            if (s.fused_gate_up) {  // the gate's rows first, as Phi-3 stores them
                linear(layer_weight(tensor_role::ffn_up), ffn_in, gate_up, 2 * F, E);
                part(gate_up, gate, 0, F);
                part(gate_up, up, F, F);
            } else {
                linear(layer_weight(tensor_role::ffn_gate), ffn_in, gate, F, E);
                linear(layer_weight(tensor_role::ffn_up), ffn_in, up, F, E);
            }
            in_place(gated, gate, up, F);
            linear(layer_weight(tensor_role::ffn_down), gate, ffn_proj, E, F);
        } else {
            linear(layer_weight(tensor_role::ffn_gate_inp), ffn_in, router, s.n_expert, E);
            g.add_op({.kind = route,
                      .in = {router, no_buffer, no_buffer},
                      .out = chosen,
                      .aux = chosen_w,
                      .n = s.n_expert,
                      .renorm = s.norm_topk_prob,
                      .experts_used = K});
            experts(tensor_role::ffn_gate_exps, ffn_in, exp_gate, X, E);
            experts(tensor_role::ffn_up_exps, ffn_in, exp_up, X, E);
            in_place(gated, exp_gate, exp_up, X);
            experts(tensor_role::ffn_down_exps, exp_gate, exp_out, E, X);
            g.add_op(
                {.kind = expert_sum, .in = {exp_out, chosen_w, no_buffer}, .out = ffn_proj, .n = E, .experts_used = K});
            if (shared) {
                linear(layer_weight(tensor_role::ffn_gate_shexp), ffn_in, sh_gate, S, E);
                linear(layer_weight(tensor_role::ffn_up_shexp), ffn_in, sh_up, S, E);
                in_place(gated, sh_gate, sh_up, S);
                linear(layer_weight(tensor_role::ffn_down_shexp), sh_gate, sh_out, E, S);
                if (s.shared_expert_gate) {
                    linear(layer_weight(tensor_role::ffn_gate_inp_shexp), ffn_in, sh_scale, 1, E);
                    in_place(gate_scale, sh_out, sh_scale, E);
                }
                in_place(add, ffn_proj, sh_out, E);
            }
        }
        if (s.post_norms) norm(layer_weight(tensor_role::post_ffw_norm), ffn_proj, ffn_proj);
        in_place(add, x, ffn_proj, E);
    };
    auto block = [&](bool recurrent_layer, bool moe_layer) {
        const auto variant = block_variant(recurrent_layer, moe_layer);
        g.begin_variant(variant);
        norm(layer_weight(tensor_role::attn_norm), x, attn_in);
        if (recurrent_layer) {
            mamba2();
        } else {
            attention_mixer();
        }
        in_place(add, x, attn_proj, E);
        feed_forward(moe_layer);
        g.end_variant(variant);
    };
    for (std::size_t v = 0; v < n_block_variants; ++v)
        if (has[v]) block(v >= block_variant(true, false), v % 2 == 1);
    g.end_block();

    norm(global_weight(global_tensor::output_norm), x, out_in, true);
    linear(global_weight(s.tied_output ? global_tensor::token_embd : global_tensor::output), out_in, logits_buf,
           s.n_vocab, E, true);
    if (s.final_softcap > 0.0f)
        g.add_op({.kind = softcap,
                  .out = logits_buf,
                  .in_place = true,
                  .output_rows = true,
                  .n = s.n_vocab,
                  .softcap = s.final_softcap});
    g.add_op({.kind = logits, .in = {logits_buf, no_buffer, no_buffer}, .output_rows = true, .n = s.n_vocab});
    validate(g);
    return g;
}

}  // namespace vramplan
