// The one forward pass: it walks the plan's forward graph (model/graph.hpp) on any backend that
// models compute_backend (runtime/backend.hpp), inside a planned arena. Every activation lives
// in the buffer the planner gave it, weights come from the arena (streamed through staging when
// the plan put the layer in the host tier), and nothing is allocated per pass. The input checks
// (token ids, positions, context, formats) live here and nowhere else.
//
// What the plan has the CPU compute (offload compute's host layers, the experts kept in the host
// tier) runs on the backend itself when its device tier is host memory. Beside a device whose
// memory the CPU cannot address (a GPU), the pass holds a CPU backend of its own for that work,
// which computes in the host tier's copy of the activations: a host layer's block gets only the
// buffers the block carries (the residual stream, positions), a host expert product only its
// input rows and expert ids, and each hands its output back. Either way the device reads no
// weight over the host link while computing.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "vramplan/error.hpp"
#include "vramplan/kernels/attention_layout.hpp"
#include "vramplan/kernels/kernel_format.hpp"
#include "vramplan/runtime/arena.hpp"
#include "vramplan/runtime/backend.hpp"
#include "vramplan/runtime/cpu_backend.hpp"
#include "vramplan/runtime/layer_streamer.hpp"
#include "vramplan/runtime/rope_call.hpp"
#include "vramplan/runtime/weight_layout.hpp"

namespace vramplan::runtime {

// What the forward pass cannot run in a model, whatever the backend and the limits: one clear
// error, which a program can ask for before it allocates or loads anything. The formats are
// checked by each backend when the pass is built.
inline void check_runnable(const model_desc& m) {
    const decoder_shape& s = m.shape;
    if (!s.activations_planned)
        throw error(
            "vramplan has no forward graph for this architecture: its weights and KV cache are planned, but it cannot "
            "run");
    if (m.checkpoint_weights)
        throw error(
            "this model's weights are planned from a checkpoint's safetensors headers; the runtime runs GGUF files "
            "(convert the checkpoint with llama.cpp's convert_hf_to_gguf.py)");
    // The block first: it is what a user asks about; RoPE scaling comes with it.
    if (s.attn_sinks || s.attn_output_bias || s.expert_bias)
        throw error(
            "gpt-oss's block (attention sinks, the output and expert biases, its clamped SwiGLU experts) is planned "
            "but not run yet");
    if (s.latent_attention())
        throw error(
            "multi-head latent attention (DeepSeek-V2/V3, Kimi-K2: a cached latent the heads read through attn_k_b "
            "and attn_v_b) is planned but not run yet");
    if (s.hybrid())
        throw error(
            "Mamba-2 layers (Granite-4.0-H's hybrid of state-space and attention layers) are planned, their states "
            "included, but not run yet");
    if (s.llama4_block)
        throw error(
            "Llama 4's block (a sigmoid router that weighs each expert's input, global layers without RoPE) is "
            "planned but not run yet");
    check_rope_supported(s);
    // Full and sliding-window layers run (a sliding layer's cache is its planned ring, and its
    // queries see their window); Llama 4's chunked layers are planned only.
    for (std::uint32_t k = 0; k < m.n_kinds; ++k)
        if (m.kinds[k].attention == attention_kind::chunked)
            throw error("this model's chunked layers (chunks of " + std::to_string(s.attention_chunk) +
                        " tokens) are planned but not run yet");
}

// The same for a plan: the model, and what the plan asks of the pass.
inline void check_runnable(const plan& p) {
    check_runnable(p.model);
    if (p.model.activations != format{format_id::f32})
        throw error("the forward pass keeps activations in f32; plan with f32 activations");
}

template <compute_backend Backend>
class forward_pass {
    // The CPU cannot compute on the device tier's memory: host work needs a CPU backend beside it.
    static constexpr bool beside_device = !Backend::device_is_host_memory;

public:
    // host_threads: the threads of the CPU backend that computes, beside a device, what the plan
    // puts on the host (unused when there is no such work, or the backend computes on host memory).
    explicit forward_pass(arena<Backend>& a, unsigned host_threads = 1) : a_(a), streamer_(a) {
        const plan& p = a.plan();
        const forward_graph& g = p.graph;
        if (a.weights_incomplete())
            throw error(
                "the arena's weights are incomplete: loading them failed part way; load them again before building a "
                "forward pass");
        check_runnable(p);
        // The GPU tier's activations, and the host tier's copy of them for what the CPU computes.
        for (std::size_t b = 0; b < g.n_buffers; ++b) {
            bufs_[0][b] = a.base(tier::gpu) + p.gpu.activations.offset + p.act_offset[b];
            if (p.host.activations.bytes != 0)
                bufs_[1][b] = a.base(tier::host) + p.host.activations.offset + p.act_offset[b];
        }
        carried_ = carried_buffers(g);
        // Resolve every op's kernel once (per layer kind for block ops), so a format the backend
        // cannot compute on fails here, at start-up, not mid-generation.
        // A kind prepares only the ops of its own block variant.
        for (std::size_t i = 0; i < g.n_ops; ++i)
            if (!g.in_block(i)) kernels_[0][i] = prepare(a.backend(), g.ops[i], 0);
        for (std::uint32_t kind = 0; kind < p.model.n_kinds; ++kind) {
            const auto v = block_variant(p.model.kinds[kind]);
            for (std::size_t i = g.variant_begin[v]; i < g.variant_end[v]; ++i)
                kernels_[kind][i] = prepare(a.backend(), g.ops[i], kind);
        }
        if (beside_device && (p.host_computed_layers() != 0 || p.host_expert_layer_count() != 0))
            make_host_side(host_threads);
        a.backend().reserve_logits(checked_mul(p.lim.output_rows(), p.model.shape.n_vocab));
    }

    // Runs `tokens` at `positions` (one sequence) and returns the logits of the last token, or of
    // every token when all_logits: rows of n_vocab floats the host can read.
    const float* forward(std::span<const std::int32_t> tokens, std::span<const std::int32_t> positions,
                         bool all_logits = false) {
        const plan& p = a_.plan();
        const forward_graph& g = p.graph;
        const std::uint64_t T = tokens.size();
        if (T == 0 || T > p.lim.tokens_per_pass() || positions.size() != T)
            throw error("forward: 1 to " + std::to_string(p.lim.tokens_per_pass()) +
                        " tokens per pass, with one position each");
        if (all_logits && T > p.lim.output_rows())
            throw error("forward: the plan holds logits for " + std::to_string(p.lim.output_rows()) +
                        " rows; plan with all_logits to get one per token");
        for (auto pos : positions)
            if (pos < 0 || static_cast<std::uint64_t>(pos) >= p.lim.context)
                throw error("forward: position " + std::to_string(pos) + " is outside the planned context of " +
                            std::to_string(p.lim.context) + " tokens");
        for (auto t : tokens)
            if (t < 0 || static_cast<std::uint64_t>(t) >= p.model.shape.n_vocab)
                throw error("forward: token id " + std::to_string(t) + " is outside the vocabulary of " +
                            std::to_string(p.model.shape.n_vocab));
        pass_ = {tokens, positions, T, all_logits ? T : 1};

        Backend& b = a_.backend();
        for (std::size_t i = 0; i < g.block_begin; ++i) run(b, kernels_, i, 0, nullptr);
        for (std::uint64_t l = 0; l < p.model.shape.n_layer; ++l) {
            // A layer the CPU computes reads its weights, cache and activations in the host tier;
            // only the buffers the block carries (the residual stream, positions) cross over.
            const bool on_host = p.host_computed(l);
            use_activations(on_host);
            std::byte* w = on_host ? a_.base(tier::host) + p.layer_offset[l] : streamer_.acquire(l);
            const auto v = block_variant(p.model.layer(l));
            for (std::size_t i = g.variant_begin[v]; i < g.variant_end[v]; ++i) {
                if constexpr (beside_device)
                    if (on_host) {
                        run(cpu_side_->cpu, cpu_side_->kernels, i, l, w);
                        continue;
                    }
                run(b, kernels_, i, l, w);
            }
            if (!on_host) streamer_.release(l);
        }
        use_activations(false);
        for (std::size_t i = g.block_end; i < g.n_ops; ++i) run(b, kernels_, i, 0, nullptr);
        return result_;
    }

    const layer_streamer<Backend>& streamer() const { return streamer_; }

private:
    template <class B>
    struct prepared {
        typename B::matmul_kernel matmul{};
        typename B::expert_matmul_kernel expert_matmul{};
        typename B::embed_kernel embed{};
        typename B::kv_append_kernel kv_append{};
        typename B::attention_kernel attention{};
    };
    // Each op's kernels, per layer kind for block ops (index 0 for the others).
    template <class B>
    using kernel_table = std::array<std::array<prepared<B>, max_graph_ops>, max_block_kinds>;
    // Beside a device: the CPU backend that computes the plan's host work, its kernels for every
    // block op, and the device tier's RoPE divisors, which host layers read (a global tensor).
    struct host_side {
        cpu_backend cpu;
        kernel_table<cpu_backend> kernels{};
        std::vector<std::byte> rope_freqs;
        explicit host_side(unsigned threads) : cpu(0, threads) {}
    };
    struct pass {
        std::span<const std::int32_t> tokens, positions;
        std::uint64_t tokens_n = 0, outputs = 0;
    };

    format weight_format(const graph_op& o, std::uint32_t kind) const {
        const model_desc& m = a_.plan().model;
        return o.weight.scope == weight_scope::layer ? m.kinds[kind][o.weight.role()] : m.global(o.weight.global());
    }
    std::string weight_label(const graph_op& o) const {
        return (o.weight.scope == weight_scope::layer ? "tensor blk.*." : "tensor ") + std::string(o.weight.name());
    }

    template <class B>
    prepared<B> prepare(B& b, const graph_op& o, std::uint32_t kind) {
        const plan& p = a_.plan();
        prepared<B> k;
        switch (o.kind) {
            case op_kind::embed:
                k.embed = b.find_embed(kernels::to_kernel_format(weight_format(o, kind), weight_label(o)));
                break;
            case op_kind::matmul: {
                const auto kf = kernels::to_kernel_format(weight_format(o, kind), weight_label(o));
                k.matmul = b.find_matmul(kf);
                if constexpr (holds_panels<B>)
                    k.matmul.panels = held_as_panels(p.graph, o.weight, weight_format(o, kind), o.n);
                if constexpr (requires { b.find_matmul_planes(kf); })
                    if (holds_planes(b) && held_as_planes(p, o.weight, weight_format(o, kind)))
                        k.matmul = b.find_matmul_planes(kf);
                break;
            }
            case op_kind::rms_norm:
            case op_kind::add_bias:
                if (weight_format(o, kind) != format{format_id::f32})
                    throw error(weight_label(o) + " is stored as " + name(weight_format(o, kind)) +
                                "; norm and bias vectors must be f32");
                break;
            case op_kind::kv_append:
                k.kv_append = b.find_kv_append(kernels::to_kernel_format(p.model.kv, "the KV cache"));
                break;
            case op_kind::attention:
                k.attention = b.find_attention(kernels::to_kernel_format(p.model.kv, "the KV cache"), o.head_dim);
                break;
            case op_kind::expert_matmul:
                k.expert_matmul =
                    b.find_expert_matmul(kernels::to_kernel_format(weight_format(o, kind), weight_label(o)));
                if constexpr (holds_panels<B>)
                    k.expert_matmul.panels = held_as_panels(p.graph, o.weight, weight_format(o, kind), o.n);
                break;
            default: break;
        }
        return k;
    }

    void make_host_side(unsigned threads) {
        const plan& p = a_.plan();
        const forward_graph& g = p.graph;
        cpu_side_ = std::make_unique<host_side>(threads);
        for (std::uint32_t kind = 0; kind < p.model.n_kinds; ++kind) {
            const auto v = block_variant(p.model.kinds[kind]);
            for (std::size_t i = g.variant_begin[v]; i < g.variant_end[v]; ++i)
                cpu_side_->kernels[kind][i] = prepare(cpu_side_->cpu, g.ops[i], kind);
        }
        if (p.host_computed_layers() != 0 && rope_freqs_bytes(p.model) != 0) {
            cpu_side_->rope_freqs.resize(rope_freqs_bytes(p.model));
            a_.backend().download(cpu_side_->rope_freqs.data(), a_.base(tier::gpu) + p.rope_freqs_offset,
                                  cpu_side_->rope_freqs.size());
        }
    }

    float* f32(std::uint8_t b) const { return reinterpret_cast<float*>(bufs_[host_][b]); }
    std::int32_t* i32(std::uint8_t b) const { return reinterpret_cast<std::int32_t*>(bufs_[host_][b]); }

    // Switches the ops to the host tier's activations (or back), handing the carried buffers over.
    void use_activations(bool host) {
        if (host == host_) return;
        const plan& p = a_.plan();
        for (std::size_t b = 0; b < p.graph.n_buffers; ++b) {
            if (!carried_[b]) continue;
            if (host)
                a_.backend().download(bufs_[1][b], bufs_[0][b], p.act[b].bytes);
            else
                a_.backend().upload(bufs_[0][b], bufs_[1][b], p.act[b].bytes);
        }
        host_ = host;
    }

    // The experts of a resident layer may live in the host tier (plan::experts_on_host).
    bool weight_in_host_tier(const graph_op& o, std::uint64_t layer) const {
        const plan& p = a_.plan();
        return o.weight.scope == weight_scope::layer && p.layer_tier(layer) == tier::gpu &&
               p.role_tier(layer, o.weight.role()) == tier::host;
    }

    const std::byte* weight(const graph_op& o, std::uint64_t layer, const std::byte* layer_base) const {
        const plan& p = a_.plan();
        if (o.weight.scope == weight_scope::layer) {
            if (weight_in_host_tier(o, layer))
                return a_.base(tier::host) + p.role_offset_in_tier(layer, o.weight.role());
            return layer_base + p.role_offset[p.model.layer_kind[layer]][o.weight.index];
        }
        switch (o.weight.global()) {
            case global_tensor::token_embd: return a_.base(p.token_embd_tier) + p.token_embd_offset;
            case global_tensor::output_norm: return a_.base(tier::gpu) + p.output_norm_offset;
            case global_tensor::output: return a_.base(tier::gpu) + p.output_offset;
            case global_tensor::rope_freqs:
                if (beside_device && host_) return cpu_side_->rope_freqs.data();  // a host layer's copy
                return a_.base(tier::gpu) + p.rope_freqs_offset;
            case global_tensor::rope_factors_long:
            case global_tensor::rope_factors_short: break;  // no op reads them: LongRoPE is refused
            case global_tensor::count: break;
        }
        throw error("internal: an op reads an unknown global tensor");
    }

    // Values an elementwise op covers: n per row, and a routed buffer has a row per chosen expert.
    std::uint64_t values(const graph_op& o, std::uint64_t rows) const {
        return rows * a_.plan().graph.buffers[o.out].per_row * o.n;
    }

    // An op on the output rows reads the last of them from a buffer that has a row per token.
    const float* input(const graph_op& o, int which) const {
        const std::uint8_t b = o.in[which];
        const graph_buffer& gb = a_.plan().graph.buffers[b];
        const std::uint64_t skip = o.output_rows && gb.rows == buffer_rows::tokens ? pass_.tokens_n - pass_.outputs : 0;
        return f32(b) + skip * gb.cols;
    }

    // Bytes of buffer b's rows in this pass (activations are f32, ids int32: 4 bytes each).
    std::uint64_t pass_bytes(std::uint8_t b, std::uint64_t rows) const {
        const graph_buffer& gb = a_.plan().graph.buffers[b];
        return rows * gb.per_row * gb.cols * 4;
    }

    // Beside a device, an expert product whose experts the plan keeps in the host tier: the CPU
    // computes it on the host tier's copies of its input rows and expert ids, and hands back the
    // routed rows it wrote.
    void host_expert_matmul(std::size_t i, const graph_op& o, std::uint64_t layer, std::uint64_t rows) {
        const plan& p = a_.plan();
        Backend& device = a_.backend();
        for (const std::uint8_t b : {o.in[0], o.in[1]}) device.download(bufs_[1][b], bufs_[0][b], pass_bytes(b, rows));
        cpu_side_->cpu.expert_matmul(
            cpu_side_->kernels[p.model.layer_kind[layer]][i].expert_matmul, weight(o, layer, nullptr),
            p.model.shape.n_expert, reinterpret_cast<const float*>(bufs_[1][o.in[0]]),
            p.graph.buffers[o.in[0]].per_row != 1, reinterpret_cast<const std::int32_t*>(bufs_[1][o.in[1]]),
            reinterpret_cast<float*>(bufs_[1][o.out]), o.n, o.k, rows, o.experts_used);
        device.upload(bufs_[0][o.out], bufs_[1][o.out], pass_bytes(o.out, rows));
    }

    // Op i on backend b (the pass's backend, or beside a device the CPU computing a host layer).
    template <class B>
    void run(B& b, const kernel_table<B>& table, std::size_t i, std::uint64_t layer, const std::byte* layer_base) {
        const plan& p = a_.plan();
        const graph_op& o = p.graph.ops[i];
        const prepared<B>& k = table[p.graph.in_block(i) ? p.model.layer_kind[layer] : 0][i];
        const std::uint64_t rows = o.output_rows ? pass_.outputs : pass_.tokens_n;
        auto w = [&] { return weight(o, layer, layer_base); };
        switch (o.kind) {
            case op_kind::inputs: b.inputs(i32(o.out), i32(o.aux), pass_.tokens, pass_.positions); break;
            case op_kind::embed: b.embed(k.embed, w(), i32(o.in[0]), f32(o.out), rows, o.n, o.scale); break;
            case op_kind::rms_norm:
                b.rms_norm(input(o, 0), reinterpret_cast<const float*>(w()), f32(o.out), rows * (o.heads ? o.heads : 1),
                           o.n, o.eps);
                break;
            case op_kind::matmul: b.matmul(k.matmul, w(), input(o, 0), f32(o.out), o.n, o.k, rows); break;
            case op_kind::add_bias: b.add_bias(f32(o.out), reinterpret_cast<const float*>(w()), o.n, rows); break;
            case op_kind::rope: {
                const float* divisors =
                    o.weight.scope == weight_scope::global ? reinterpret_cast<const float*>(w()) : nullptr;
                b.rope(f32(o.out), rows, o.heads, o.head_dim, i32(o.in[0]),
                       rope_config_of(o, divisors, p.model.layer(layer).attention == attention_kind::sliding));
                break;
            }
            case op_kind::kv_append: {
                const auto kc = a_.kv(layer, false), vc = a_.kv(layer, true);
                b.kv_append(k.kv_append, f32(o.in[0]), f32(o.in[1]), i32(o.in[2]), rows, o.n, p.kv_positions_of(layer),
                            kc.data, vc.data);
                break;
            }
            case op_kind::attention: b.attention(k.attention, attention_args_of(o, layer, rows)); break;
            case op_kind::add: b.add(f32(o.out), input(o, 0), values(o, rows)); break;
            case op_kind::swiglu: b.swiglu(f32(o.out), input(o, 0), values(o, rows)); break;
            case op_kind::logits: result_ = b.logits(input(o, 0), rows * o.n); break;
            case op_kind::softcap: b.softcap(f32(o.out), values(o, rows), o.softcap); break;
            case op_kind::geglu: b.geglu(f32(o.out), input(o, 0), values(o, rows)); break;
            case op_kind::split: b.split(f32(o.out), input(o, 0), rows, p.graph.buffers[o.in[0]].cols, o.k, o.n); break;
            case op_kind::gate_scale: b.gate_scale(f32(o.out), input(o, 0), rows, o.n); break;
            case op_kind::route:
                b.route(input(o, 0), i32(o.out), f32(o.aux), rows, o.n, o.experts_used, o.renorm);
                break;
            case op_kind::expert_matmul:
                if constexpr (beside_device && std::is_same_v<B, Backend>)
                    if (weight_in_host_tier(o, layer)) {
                        host_expert_matmul(i, o, layer, rows);
                        break;
                    }
                b.expert_matmul(k.expert_matmul, w(), p.model.shape.n_expert, input(o, 0),
                                p.graph.buffers[o.in[0]].per_row != 1, i32(o.in[1]), f32(o.out), o.n, o.k, rows,
                                o.experts_used);
                break;
            case op_kind::expert_sum:
                b.expert_sum(f32(o.out), input(o, 0), input(o, 1), rows, o.n, o.experts_used);
                break;
            case op_kind::head_split:
            case op_kind::head_matmul:
            case op_kind::concat:  // check_runnable refuses the models whose graphs have them
                throw error("internal: latent attention's ops are planned, not run");
            case op_kind::ssm_conv:
            case op_kind::ssm_scan: throw error("internal: Mamba-2's ops are planned, not run");
            case op_kind::count: throw error("internal: op kind count is not an op");
        }
    }

    kernels::attention_args attention_args_of(const graph_op& o, std::uint64_t layer, std::uint64_t rows) const {
        const plan& p = a_.plan();
        kernels::attention_args at;
        at.tokens = rows;
        at.n_head = o.heads;
        at.n_head_kv = o.kv_heads;
        at.head_dim = o.head_dim;
        // A sliding layer's cache is its ring: position q in row q mod its positions.
        at.context = p.kv_positions_of(layer);
        at.window = p.model.layer(layer).attention == attention_kind::sliding ? p.model.shape.sliding_window : 0;
        at.scale = o.scale;
        at.softcap = o.softcap;
        at.q = f32(o.in[0]);
        at.pos = i32(o.in[1]);
        at.k = a_.kv(layer, false).data;
        at.v = a_.kv(layer, true).data;
        at.out = f32(o.out);
        at.workspace = f32(o.aux);
        // The plan sized the states buffer for max(tokens, splits x batch) rows of states.
        const kernels::attention_state_layout states{o.heads, o.head_dim, 1};
        at.workspace_rows = p.act[o.aux].bytes / (states.row_floats() * 4);
        at.max_splits = kv_splits(p.lim.context);
        return at;
    }

    arena<Backend>& a_;
    layer_streamer<Backend> streamer_;
    std::array<std::array<std::byte*, max_graph_buffers>, 2> bufs_{};  // [0] GPU tier, [1] host tier
    std::array<bool, max_graph_buffers> carried_{};
    bool host_ = false;  // the ops use the host tier's activations
    kernel_table<Backend> kernels_{};
    std::unique_ptr<host_side> cpu_side_;  // beside a device, when the plan has the CPU compute
    pass pass_{};
    const float* result_ = nullptr;
};

}  // namespace vramplan::runtime
