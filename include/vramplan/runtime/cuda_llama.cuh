// The Llama forward pass on the CUDA kernels inside a planned arena: the CUDA twin of cpu_llama,
// step for step, with streamed layers arriving through the backend's copy stream.
#pragma once

#include <cmath>
#include <span>

#include "vramplan/kernels/cuda/dispatch.cuh"
#include "vramplan/kernels/kernel_format.hpp"
#include "vramplan/runtime/arena.hpp"
#include "vramplan/runtime/attention_call.hpp"
#include "vramplan/runtime/cuda_backend.cuh"
#include "vramplan/runtime/layer_streamer.hpp"
#include "vramplan/runtime/rope_call.hpp"

namespace vramplan::runtime {

class cuda_llama {
public:
    // `logits_host` must hold n_vocab floats of pinned host memory (the caller's start-up buffer).
    cuda_llama(arena<cuda_backend>& a, float* logits_host) : a_(a), streamer_(a), logits_host_(logits_host) {
        const plan& p = a.plan();
        if (p.model.activations != format{format_id::f32}) throw error("the CUDA forward pass keeps activations in f32; plan with f32 activations");
        const auto& s = p.model.shape;
        check_rope_supported(s);
        const auto kv = kernels::to_kernel_format(p.model.kv, "the KV cache");
        attention_ = gpu::find_attention(kv, s.head_dim);
        kv_append_ = gpu::find_kv_append(kv);
        for (std::uint32_t k = 0; k < p.model.n_kinds; ++k)
            for (std::size_t r = 0; r < n_tensor_roles; ++r) {
                const auto role = static_cast<tensor_role>(r);
                if (!role_present(s, role) || is_norm(role) || is_bias(role)) continue;
                matmul_[k][r] = gpu::find_matmul<float>(kernels::to_kernel_format(p.model.kinds[k][role], "tensor blk.*." + std::string(role_name(role))));
            }
        embed_ = gpu::find_embed(kernels::to_kernel_format(p.model.token_embd, "token_embd.weight"));
        out_matmul_ = gpu::find_matmul<float>(kernels::to_kernel_format(p.model.output, "output.weight"));
    }

    const float* forward(std::span<const std::int32_t> tokens, std::span<const std::int32_t> positions) {
        const plan& p = a_.plan();
        const auto& s = p.model.shape;
        const std::uint64_t T = tokens.size();
        if (T == 0 || T > p.lim.tokens_per_pass() || positions.size() != T) throw error("forward: bad token count");
        cudaStream_t st = a_.backend().compute_stream();
        auto buf = [&](act which) { return a_.activation(which).template ptr<float>(); };
        auto* tok = a_.activation(act::tokens).template ptr<std::int32_t>();
        auto* pos = a_.activation(act::positions).template ptr<std::int32_t>();
        gpu::check(cudaMemcpyAsync(tok, tokens.data(), T * 4, cudaMemcpyHostToDevice, st), "cudaMemcpyAsync(tokens)");
        gpu::check(cudaMemcpyAsync(pos, positions.data(), T * 4, cudaMemcpyHostToDevice, st), "cudaMemcpyAsync(positions)");
        const std::uint64_t E = s.n_embd, Q = s.q_dim(), KV = s.kv_dim(), F = s.n_ff;
        const kernels::rope_config rope = rope_config_of(p, a_.base(tier::gpu));
        float* x = buf(act::residual);
        const std::byte* embd = a_.base(p.token_embd_tier) + p.token_embd_offset;
        embed_(embd, tok, x, T, E, st);
        for (std::uint64_t l = 0; l < s.n_layer; ++l) {
            std::byte* w = streamer_.acquire(l);
            const auto kind = p.model.layer_kind[l];
            auto tensor = [&](tensor_role r) { return w + p.role_offset[kind][static_cast<std::size_t>(r)]; };
            auto matmul = [&](tensor_role r, const float* in, float* out, std::uint64_t rows, std::uint64_t cols) {
                matmul_[kind][static_cast<std::size_t>(r)](tensor(r), in, out, rows, cols, T, st);
            };
            auto norm_w = [&](tensor_role r) { return reinterpret_cast<const float*>(tensor(r)); };
            gpu::rms_norm(x, norm_w(tensor_role::attn_norm), buf(act::attn_in), T, E, s.norm_eps, st);
            matmul(tensor_role::attn_q, buf(act::attn_in), buf(act::q), Q, E);
            matmul(tensor_role::attn_k, buf(act::attn_in), buf(act::k), KV, E);
            matmul(tensor_role::attn_v, buf(act::attn_in), buf(act::v), KV, E);
            if (s.qkv_bias) {
                gpu::add_rows(buf(act::q), norm_w(tensor_role::attn_q_bias), Q, T, st);
                gpu::add_rows(buf(act::k), norm_w(tensor_role::attn_k_bias), KV, T, st);
                gpu::add_rows(buf(act::v), norm_w(tensor_role::attn_v_bias), KV, T, st);
            }
            gpu::rope(buf(act::q), T, s.n_head, static_cast<int>(s.head_dim), pos, rope, st);
            gpu::rope(buf(act::k), T, s.n_head_kv, static_cast<int>(s.head_dim), pos, rope, st);
            const auto kc = a_.kv(l, false), vc = a_.kv(l, true);
            kv_append_(buf(act::k), buf(act::v), pos, nullptr, T, KV, p.lim.context * p.lim.batch, kc.data, vc.data, st);
            const auto at = attention_call(p, T, buf(act::q), pos, kc.data, vc.data, buf(act::attn_out), buf(act::attn_scratch));
            attention_(at, st);
            matmul(tensor_role::attn_output, buf(act::attn_out), buf(act::attn_proj), E, Q);
            gpu::add(x, buf(act::attn_proj), T * E, st);
            gpu::rms_norm(x, norm_w(tensor_role::ffn_norm), buf(act::ffn_in), T, E, s.norm_eps, st);
            matmul(tensor_role::ffn_gate, buf(act::ffn_in), buf(act::gate), F, E);
            matmul(tensor_role::ffn_up, buf(act::ffn_in), buf(act::up), F, E);
            gpu::swiglu(buf(act::gate), buf(act::up), T * F, st);
            matmul(tensor_role::ffn_down, buf(act::gate), buf(act::ffn_proj), E, F);
            gpu::add(x, buf(act::ffn_proj), T * E, st);
            streamer_.release(l);
        }
        gpu::rms_norm(x + (T - 1) * E, reinterpret_cast<const float*>(a_.base(tier::gpu) + p.output_norm_offset), buf(act::out_in), 1, E, s.norm_eps, st);
        const std::byte* out_w = s.tied_output ? embd : a_.base(tier::gpu) + p.output_offset;
        out_matmul_(out_w, buf(act::out_in), buf(act::logits), s.n_vocab, E, 1, st);
        a_.backend().download(logits_host_, buf(act::logits), s.n_vocab * 4);
        return logits_host_;
    }

    const layer_streamer<cuda_backend>& streamer() const { return streamer_; }

private:
    arena<cuda_backend>& a_;
    layer_streamer<cuda_backend> streamer_;
    float* logits_host_;
    gpu::attention_fn attention_ = nullptr;
    gpu::kv_append_fn kv_append_ = nullptr;
    gpu::embed_fn embed_ = nullptr;
    gpu::matmul_fn out_matmul_ = nullptr;
    gpu::matmul_fn matmul_[max_block_kinds][n_tensor_roles]{};
};

}  // namespace vramplan::runtime
