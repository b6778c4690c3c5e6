// The Llama forward pass on the CPU kernels, inside a planned arena: every activation lives in its
// planned slot, weights come from the arena (streamed through staging when the plan put the layer
// in the host tier), and nothing is allocated per step.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <span>

#include "vramplan/kernels/cpu/convert.hpp"
#include "vramplan/kernels/cpu/dispatch.hpp"
#include "vramplan/kernels/cpu/elementwise.hpp"
#include "vramplan/kernels/kernel_format.hpp"
#include "vramplan/runtime/arena.hpp"
#include "vramplan/runtime/attention_call.hpp"
#include "vramplan/runtime/layer_streamer.hpp"
#include "vramplan/runtime/rope_call.hpp"

namespace vramplan::runtime {

template <class Backend>
class cpu_llama {
public:
    cpu_llama(arena<Backend>& a, kernels::cpu::thread_pool& pool) : a_(a), pool_(pool), streamer_(a) {
        const plan& p = a.plan();
        if (!Backend::device_is_host_memory) throw error("cpu_llama computes on host memory; use the CUDA forward pass for a GPU backend");
        if (p.model.activations != format{format_id::f32}) throw error("the CPU forward pass keeps activations in f32; plan with f32 activations");
        const auto& s = p.model.shape;
        check_rope_supported(s);
        kv_fmt_ = kernels::to_kernel_format(p.model.kv, "the KV cache");
        attention_ = kernels::cpu::find_attention(kv_fmt_, s.head_dim);
        kv_append_ = kernels::cpu::find_kv_append(kv_fmt_);
        // Resolve every weight's kernel once, so a bad format fails at start-up, not mid-generation.
        for (std::uint32_t k = 0; k < p.model.n_kinds; ++k)
            for (std::size_t r = 0; r < n_tensor_roles; ++r) {
                const auto role = static_cast<tensor_role>(r);
                if (!role_present(s, role)) continue;
                const auto f = kernels::to_kernel_format(p.model.kinds[k][role], "tensor blk.*." + std::string(role_name(role)));
                fmt_[k][r] = f;
                matmul_[k][r] = kernels::cpu::find_matmul(f);
            }
        embd_fmt_ = kernels::to_kernel_format(p.model.token_embd, "token_embd.weight");
        out_fmt_ = kernels::to_kernel_format(p.model.output, "output.weight");
        out_matmul_ = kernels::cpu::find_matmul(out_fmt_);
        norm_fmt_ = kernels::to_kernel_format(p.model.output_norm, "output_norm.weight");
    }

    // Runs `tokens` at `positions` (one sequence) and returns the logits of the last token, or of
    // every token when all_logits: rows of n_vocab floats in the plan's logits buffer.
    const float* forward(std::span<const std::int32_t> tokens, std::span<const std::int32_t> positions, bool all_logits = false) {
        const plan& p = a_.plan();
        const auto& s = p.model.shape;
        const std::uint64_t T = tokens.size();
        if (T == 0 || T > p.lim.tokens_per_pass() || positions.size() != T)
            throw error("forward: 1 to " + std::to_string(p.lim.tokens_per_pass()) + " tokens per pass, with one position each");
        if (all_logits && T > p.lim.output_rows()) throw error("forward: the plan holds logits for " + std::to_string(p.lim.output_rows()) + " rows");
        for (auto pos : positions)
            if (pos < 0 || static_cast<std::uint64_t>(pos) >= p.lim.context) throw error("forward: position outside the planned context");
        for (auto t : tokens)
            if (t < 0 || static_cast<std::uint64_t>(t) >= s.n_vocab) throw error("forward: token id outside the vocabulary");

        auto buf = [&](act which) { return a_.activation(which).template ptr<float>(); };
        auto* tok = a_.activation(act::tokens).template ptr<std::int32_t>();
        auto* pos = a_.activation(act::positions).template ptr<std::int32_t>();
        std::memcpy(tok, tokens.data(), T * 4);
        std::memcpy(pos, positions.data(), T * 4);
        float* x = buf(act::residual);
        const std::uint64_t E = s.n_embd, Q = s.q_dim(), KV = s.kv_dim(), F = s.n_ff;
        const kernels::rope_config rope = rope_config_of(p, a_.base(tier::gpu));

        const std::byte* embd = a_.base(p.token_embd_tier) + p.token_embd_offset;
        const std::uint64_t embd_row = tensor_bytes(p.model.token_embd, 1, E);
        for (std::uint64_t t = 0; t < T; ++t) kernels::cpu::dequantize_row(embd_fmt_, embd + static_cast<std::uint64_t>(tok[t]) * embd_row, x + t * E, E);

        for (std::uint64_t l = 0; l < s.n_layer; ++l) {
            std::byte* w = streamer_.acquire(l);
            const auto kind = p.model.layer_kind[l];
            auto tensor = [&](tensor_role r) { return w + p.role_offset[kind][static_cast<std::size_t>(r)]; };
            auto matmul = [&](tensor_role r, const float* in, float* out, std::uint64_t rows, std::uint64_t cols) {
                const auto i = static_cast<std::size_t>(r);
                matmul_[kind][i](kernels::cpu::weight_view{fmt_[kind][i], tensor(r), rows, cols}, in, out, T, pool_);
            };
            auto add_bias = [&](tensor_role r, float* y, std::uint64_t n) {
                const float* b = reinterpret_cast<const float*>(tensor(r));
                for (std::uint64_t t = 0; t < T; ++t) kernels::cpu::add(y + t * n, b, n);
            };
            // Attention.
            norm(tensor(tensor_role::attn_norm), fmt_[kind][static_cast<std::size_t>(tensor_role::attn_norm)], x, buf(act::attn_in), T);
            matmul(tensor_role::attn_q, buf(act::attn_in), buf(act::q), Q, E);
            matmul(tensor_role::attn_k, buf(act::attn_in), buf(act::k), KV, E);
            matmul(tensor_role::attn_v, buf(act::attn_in), buf(act::v), KV, E);
            if (s.qkv_bias) {
                add_bias(tensor_role::attn_q_bias, buf(act::q), Q);
                add_bias(tensor_role::attn_k_bias, buf(act::k), KV);
                add_bias(tensor_role::attn_v_bias, buf(act::v), KV);
            }
            kernels::cpu::rope(buf(act::q), T, s.n_head, static_cast<int>(s.head_dim), pos, rope);
            kernels::cpu::rope(buf(act::k), T, s.n_head_kv, static_cast<int>(s.head_dim), pos, rope);
            const auto kc = a_.kv(l, false), vc = a_.kv(l, true);
            kv_append_(buf(act::k), buf(act::v), pos, nullptr, T, KV, p.lim.context * p.lim.batch, kc.data, vc.data);
            const auto at = attention_call(p, T, buf(act::q), pos, kc.data, vc.data, buf(act::attn_out), buf(act::attn_scratch));
            attention_(at, pool_);
            matmul(tensor_role::attn_output, buf(act::attn_out), buf(act::attn_proj), E, Q);
            kernels::cpu::add(x, buf(act::attn_proj), T * E);
            // Feed-forward.
            norm(tensor(tensor_role::ffn_norm), fmt_[kind][static_cast<std::size_t>(tensor_role::ffn_norm)], x, buf(act::ffn_in), T);
            matmul(tensor_role::ffn_gate, buf(act::ffn_in), buf(act::gate), F, E);
            matmul(tensor_role::ffn_up, buf(act::ffn_in), buf(act::up), F, E);
            kernels::cpu::swiglu(buf(act::gate), buf(act::up), T * F);
            matmul(tensor_role::ffn_down, buf(act::gate), buf(act::ffn_proj), E, F);
            kernels::cpu::add(x, buf(act::ffn_proj), T * E);
            streamer_.release(l);
        }

        // Head: the output rows only.
        const std::uint64_t rows = all_logits ? T : 1;
        const float* last = x + (T - rows) * E;
        norm(a_.base(tier::gpu) + p.output_norm_offset, norm_fmt_, last, buf(act::out_in), rows);
        const std::byte* out_w = s.tied_output ? embd : a_.base(tier::gpu) + p.output_offset;
        if (s.tied_output && p.token_embd_tier != tier::gpu && !Backend::device_is_host_memory)
            throw error("internal: a tied output head must be resident");
        out_matmul_(kernels::cpu::weight_view{out_fmt_, out_w, s.n_vocab, E}, buf(act::out_in), buf(act::logits), rows, pool_);
        return buf(act::logits);
    }

    const layer_streamer<Backend>& streamer() const { return streamer_; }

private:
    void norm(const std::byte* weight, kernels::kernel_format f, const float* in, float* out, std::uint64_t rows) {
        const auto E = a_.plan().model.shape.n_embd;
        if (f != kernels::kernel_format::f32) throw error("norm weights must be f32");
        kernels::cpu::rms_norm(in, reinterpret_cast<const float*>(weight), out, rows, E, a_.plan().model.shape.norm_eps);
    }

    arena<Backend>& a_;
    kernels::cpu::thread_pool& pool_;
    layer_streamer<Backend> streamer_;
    kernels::kernel_format kv_fmt_{}, embd_fmt_{}, out_fmt_{}, norm_fmt_{};
    kernels::cpu::attention_fn attention_ = nullptr;
    kernels::cpu::kv_append_fn kv_append_ = nullptr;
    kernels::cpu::matmul_fn out_matmul_ = nullptr;
    kernels::kernel_format fmt_[max_block_kinds][n_tensor_roles]{};
    kernels::cpu::matmul_fn matmul_[max_block_kinds][n_tensor_roles]{};
};

}  // namespace vramplan::runtime
