// Models as types. Each layer template lists its named weight tensors as a Boost.Hana tuple of
// (name, tensor_spec) pairs and its KV state per token (activations come from the forward graph,
// model/decoder_graph.hpp); a decoder transformer composes them and describe()s itself as the plain model_desc the
// planner takes. Names are GGUF's, so a tensor of a type-level model and of a GGUF file are found the same way.
#pragma once

#include <boost/hana.hpp>
#include <cstdint>
#include <string_view>

#include "vramplan/format/types.hpp"
#include "vramplan/model/footprint.hpp"
#include "vramplan/model/model_desc.hpp"

namespace vramplan {

namespace hana = boost::hana;

struct tensor_spec {
    format fmt{};
    std::uint64_t rows = 0;
    std::uint64_t cols = 0;
    std::uint64_t planes = 1;  // stacked experts
    constexpr std::uint64_t bytes() const { return tensor_bytes(fmt, checked_mul(rows, planes), cols); }
    constexpr std::uint64_t elements() const { return checked_mul(checked_mul(rows, cols), planes); }
};

namespace detail {
template <class Prefix, class Tensors>
constexpr auto prefixed(Prefix prefix, Tensors tensors) {
    return hana::transform(tensors,
                           [=](auto pair) { return hana::make_pair(prefix + hana::first(pair), hana::second(pair)); });
}
}  // namespace detail

// Sum of a tensor collection's bytes / elements.
template <class Tensors>
constexpr std::uint64_t total_bytes(Tensors tensors) {
    return hana::fold(tensors, std::uint64_t{0},
                      [](std::uint64_t acc, auto pair) { return checked_add(acc, hana::second(pair).bytes()); });
}
template <class Tensors>
constexpr std::uint64_t total_elements(Tensors tensors) {
    return hana::fold(tensors, std::uint64_t{0},
                      [](std::uint64_t acc, auto pair) { return checked_add(acc, hana::second(pair).elements()); });
}

namespace layers {

template <std::uint64_t Vocab, std::uint64_t Dim, storage_format F>
struct embedding {
    static constexpr auto tensors() {
        return hana::make_tuple(hana::make_pair(BOOST_HANA_STRING("weight"), tensor_spec{F::value, Vocab, Dim}));
    }
};

template <std::uint64_t In, std::uint64_t Out, storage_format W, bool Bias = false>
struct linear {
    static constexpr auto tensors() {
        auto weight = hana::make_tuple(hana::make_pair(BOOST_HANA_STRING("weight"), tensor_spec{W::value, Out, In}));
        if constexpr (Bias)
            return hana::append(weight, hana::make_pair(BOOST_HANA_STRING("bias"), tensor_spec{f32::value, 1, Out}));
        else
            return weight;
    }
};

template <std::uint64_t Dim, storage_format F = f32>
struct rms_norm {
    static constexpr auto tensors() {
        return hana::make_tuple(hana::make_pair(BOOST_HANA_STRING("weight"), tensor_spec{F::value, 1, Dim}));
    }
};

// Multi-head attention with n_head query heads sharing n_head_kv K/V heads (MHA when equal, MQA
// when 1, GQA between), RoPE positions, and a KV cache in format Kv. QkNorm: an RMSNorm per q and
// k head (Qwen3, Gemma 3). Window > 0: layers attend to a sliding window of that many positions,
// all of them (WindowPeriod 0) or all but every WindowPeriod-th layer (Gemma's local/global).
// Chunk > 0 instead: those layers attend within chunks of that many positions (Llama 4). OutBias:
// the output projection has a bias; Sinks: a learned logit per query head (gpt-oss).
template <std::uint64_t Embd, std::uint64_t NHead, std::uint64_t NHeadKv, std::uint64_t HeadDim, storage_format W,
          bool QkvBias = false, std::uint32_t RopeBase = 10000, storage_format Wv = W, bool QkNorm = false,
          std::uint64_t Window = 0, std::uint64_t WindowPeriod = 0, std::uint64_t Chunk = 0, bool OutBias = false,
          bool Sinks = false>
struct attention {
    static_assert(NHead % NHeadKv == 0, "n_head must be a multiple of n_head_kv");
    static_assert(Window > 0 || Chunk > 0 || WindowPeriod == 0,
                  "a local/global pattern needs a sliding window or an attention chunk");
    static_assert(Window == 0 || Chunk == 0, "local layers either slide or attend within chunks, not both");
    static constexpr std::uint64_t n_embd = Embd, n_head = NHead, n_head_kv = NHeadKv, head_dim = HeadDim;
    static constexpr bool qkv_bias = QkvBias, qk_norm = QkNorm, attn_output_bias = OutBias, attn_sinks = Sinks;
    static constexpr std::uint64_t sliding_window = Window, window_period = WindowPeriod, attention_chunk = Chunk;
    static constexpr float rope_base =
        static_cast<float>(RopeBase);  // integral: float template arguments are C++20 but not in every compiler yet
    static constexpr auto tensors() {
        auto projections = hana::concat(
            hana::concat(
                detail::prefixed(BOOST_HANA_STRING("attn_q."), linear<Embd, NHead * HeadDim, W, QkvBias>::tensors()),
                detail::prefixed(BOOST_HANA_STRING("attn_k."), linear<Embd, NHeadKv * HeadDim, W, QkvBias>::tensors())),
            hana::concat(
                detail::prefixed(BOOST_HANA_STRING("attn_v."), linear<Embd, NHeadKv * HeadDim, Wv, QkvBias>::tensors()),
                detail::prefixed(BOOST_HANA_STRING("attn_output."),
                                 linear<NHead * HeadDim, Embd, W, OutBias>::tensors())));
        auto with_sinks = [&] {
            if constexpr (Sinks)
                return hana::append(projections, hana::make_pair(BOOST_HANA_STRING("attn_sinks.weight"),
                                                                 tensor_spec{f32::value, 1, NHead}));
            else
                return projections;
        }();
        if constexpr (QkNorm)
            return hana::concat(
                with_sinks,
                hana::concat(detail::prefixed(BOOST_HANA_STRING("attn_q_norm."), rms_norm<HeadDim>::tensors()),
                             detail::prefixed(BOOST_HANA_STRING("attn_k_norm."), rms_norm<HeadDim>::tensors())));
        else
            return with_sinks;
    }
    // K and V rows of one token in this layer.
    template <storage_format Kv>
    static constexpr std::uint64_t kv_bytes_per_token() {
        return checked_mul(row_bytes(Kv::value, NHeadKv * HeadDim), 2);
    }
};

template <std::uint64_t Embd, std::uint64_t Ff, storage_format W, storage_format WDown = W>
struct swiglu_mlp {
    static constexpr std::uint64_t n_ff = Ff;
    static constexpr auto tensors() {
        return hana::concat(
            detail::prefixed(BOOST_HANA_STRING("ffn_gate."), linear<Embd, Ff, W>::tensors()),
            hana::concat(detail::prefixed(BOOST_HANA_STRING("ffn_up."), linear<Embd, Ff, W>::tensors()),
                         detail::prefixed(BOOST_HANA_STRING("ffn_down."), linear<Ff, Embd, WDown>::tensors())));
    }
};

// A mixture of experts: a router (f32, as llama.cpp's quantizer leaves it) choosing NUsed of
// NExpert SwiGLU experts of FfExpert per token, stacked in one tensor per projection (GGUF's
// ffn_*_exps, the expert index outermost), and an optional shared expert of FfShared that every
// token runs, scaled by a sigmoid gate when SharedGate (Qwen2-MoE). ExpertBias: the router and each
// expert's projections have biases, a row per expert (gpt-oss).
template <std::uint64_t Embd, std::uint64_t FfExpert, std::uint64_t NExpert, std::uint64_t NUsed, storage_format W,
          std::uint64_t FfShared = 0, bool SharedGate = false, storage_format WExperts = W, bool ExpertBias = false>
struct moe_mlp {
    static_assert(NUsed >= 1 && NUsed <= NExpert, "a token uses 1 to n_expert experts");
    static constexpr std::uint64_t n_ff = FfExpert, n_ff_expert = FfExpert, n_expert = NExpert, n_expert_used = NUsed,
                                   n_ff_shared = FfShared;
    static constexpr bool shared_expert_gate = SharedGate, expert_bias = ExpertBias;
    static constexpr auto tensors() {
        auto experts = hana::make_tuple(
            hana::make_pair(BOOST_HANA_STRING("ffn_gate_inp.weight"), tensor_spec{f32::value, NExpert, Embd}),
            hana::make_pair(BOOST_HANA_STRING("ffn_gate_exps.weight"),
                            tensor_spec{WExperts::value, FfExpert, Embd, NExpert}),
            hana::make_pair(BOOST_HANA_STRING("ffn_up_exps.weight"),
                            tensor_spec{WExperts::value, FfExpert, Embd, NExpert}),
            hana::make_pair(BOOST_HANA_STRING("ffn_down_exps.weight"),
                            tensor_spec{WExperts::value, Embd, FfExpert, NExpert}));
        auto routed = [&] {
            if constexpr (ExpertBias)
                return hana::concat(experts,
                                    hana::make_tuple(hana::make_pair(BOOST_HANA_STRING("ffn_gate_inp.bias"),
                                                                     tensor_spec{f32::value, 1, NExpert}),
                                                     hana::make_pair(BOOST_HANA_STRING("ffn_gate_exps.bias"),
                                                                     tensor_spec{f32::value, 1, FfExpert, NExpert}),
                                                     hana::make_pair(BOOST_HANA_STRING("ffn_up_exps.bias"),
                                                                     tensor_spec{f32::value, 1, FfExpert, NExpert}),
                                                     hana::make_pair(BOOST_HANA_STRING("ffn_down_exps.bias"),
                                                                     tensor_spec{f32::value, 1, Embd, NExpert})));
            else
                return experts;
        }();
        if constexpr (FfShared == 0) {
            return routed;
        } else {
            auto shared = hana::concat(
                detail::prefixed(BOOST_HANA_STRING("ffn_gate_shexp."), linear<Embd, FfShared, W>::tensors()),
                hana::concat(
                    detail::prefixed(BOOST_HANA_STRING("ffn_up_shexp."), linear<Embd, FfShared, W>::tensors()),
                    detail::prefixed(BOOST_HANA_STRING("ffn_down_shexp."), linear<FfShared, Embd, W>::tensors())));
            if constexpr (SharedGate)
                return hana::append(
                    hana::concat(routed, shared),
                    hana::make_pair(BOOST_HANA_STRING("ffn_gate_inp_shexp.weight"), tensor_spec{f32::value, 1, Embd}));
            else
                return hana::concat(routed, shared);
        }
    }
};

template <class Mlp>
concept has_experts = requires {
    Mlp::n_expert;
};

// Pre-norm decoder block: x += attn(norm(x)); x += mlp(norm(x)). PostNorms: each sublayer's output
// is normed again before its residual add (Gemma 2/3).
template <class Attention, class Mlp, storage_format Norm = f32, bool PostNorms = false>
struct decoder_block {
    using attention_type = Attention;
    using mlp_type = Mlp;
    static constexpr bool post_norms = PostNorms;
    static constexpr auto tensors() {
        auto pre = hana::concat(
            hana::concat(
                detail::prefixed(BOOST_HANA_STRING("attn_norm."), rms_norm<Attention::n_embd, Norm>::tensors()),
                Attention::tensors()),
            hana::concat(detail::prefixed(BOOST_HANA_STRING("ffn_norm."), rms_norm<Attention::n_embd, Norm>::tensors()),
                         Mlp::tensors()));
        if constexpr (PostNorms)
            return hana::concat(pre, hana::concat(detail::prefixed(BOOST_HANA_STRING("post_attention_norm."),
                                                                   rms_norm<Attention::n_embd, Norm>::tensors()),
                                                  detail::prefixed(BOOST_HANA_STRING("post_ffw_norm."),
                                                                   rms_norm<Attention::n_embd, Norm>::tensors())));
        else
            return pre;
    }
};

struct tied {};  // output head shares the token embedding

// RopeFreqs: the model carries Llama 3.1's rope_freqs.weight (head_dim / 2 f32 divisors).
template <std::uint64_t Vocab, std::uint64_t NLayer, class Block, storage_format EmbedF, class OutputF = tied,
          storage_format Kv = f16, storage_format Act = f32, storage_format Norm = f32, bool RopeFreqs = false>
struct decoder_transformer {
    using block_type = Block;
    using attn = typename Block::attention_type;
    static constexpr bool is_tied = std::is_same_v<OutputF, tied>;

    static constexpr auto tensors() {
        auto global = hana::make_tuple(
            hana::make_pair(BOOST_HANA_STRING("token_embd.weight"), tensor_spec{EmbedF::value, Vocab, attn::n_embd}),
            hana::make_pair(BOOST_HANA_STRING("output_norm.weight"), tensor_spec{Norm::value, 1, attn::n_embd}));
        auto with_head = [&] {
            if constexpr (is_tied)
                return global;
            else
                return hana::append(global, hana::make_pair(BOOST_HANA_STRING("output.weight"),
                                                            tensor_spec{OutputF::value, Vocab, attn::n_embd}));
        }();
        if constexpr (RopeFreqs)
            return hana::append(with_head,
                                hana::make_pair(BOOST_HANA_STRING("rope_freqs.weight"), rope_freqs_tensor()));
        else
            return with_head;
    }
    static constexpr tensor_spec rope_freqs_tensor() { return {f32::value, 1, attn::head_dim / 2}; }

    static constexpr decoder_shape shape() {
        decoder_shape s;
        s.n_vocab = Vocab;
        s.n_embd = attn::n_embd;
        s.n_layer = NLayer;
        s.n_head = attn::n_head;
        s.n_head_kv = attn::n_head_kv;
        s.head_dim = attn::head_dim;
        s.n_ff = Block::mlp_type::n_ff;
        s.qkv_bias = attn::qkv_bias;
        s.attn_output_bias = attn::attn_output_bias;
        s.attn_sinks = attn::attn_sinks;
        s.tied_output = is_tied;
        s.rope_base = attn::rope_base;
        s.rope_freqs = RopeFreqs;
        s.qk_norm = attn::qk_norm;
        s.sliding_window = attn::sliding_window;
        s.window_period = attn::window_period;
        s.attention_chunk = attn::attention_chunk;
        s.post_norms = Block::post_norms;
        using mlp = typename Block::mlp_type;
        if constexpr (has_experts<mlp>) {
            s.n_expert = mlp::n_expert;
            s.n_expert_used = mlp::n_expert_used;
            s.n_ff_expert = mlp::n_ff_expert;
            s.n_ff_shared = mlp::n_ff_shared;
            s.shared_expert_gate = mlp::shared_expert_gate;
            s.expert_bias = mlp::expert_bias;
        }
        return s;
    }

    // The block's formats role by role, read from its named tensors.
    static constexpr block_formats block_format_table() {
        block_formats b;
        for (auto& f : b.of) f = f32::value;
        hana::for_each(Block::tensors(), [&](auto pair) {
            const std::string_view n = hana::to<const char*>(hana::first(pair));
            for (std::size_t r = 0; r < n_tensor_roles; ++r)
                if (role_names[r] == n) b.of[r] = hana::second(pair).fmt;
        });
        return b;
    }

    static constexpr model_desc describe(std::string_view name = "model") {
        model_desc m;
        m.name = name;
        m.shape = shape();
        validate(m.shape);
        m.token_embd = EmbedF::value;
        if constexpr (!is_tied)
            m.output = OutputF::value;
        else
            m.output = EmbedF::value;
        m.output_norm = Norm::value;
        m.kv = Kv::value;
        m.activations = Act::value;
        const block_formats b = block_format_table();
        for (std::uint64_t l = 0; l < NLayer; ++l) m.set_layer(l, b);
        validate_formats(m);
        return m;
    }

    // Footprints straight from the type's tensor lists (the planner uses describe()).
    // rope_freqs is a fixed buffer, not a parameter: published counts leave it out.
    static constexpr std::uint64_t params() {
        const std::uint64_t buffers = RopeFreqs ? rope_freqs_tensor().elements() : 0;
        return checked_add(total_elements(tensors()) - buffers, checked_mul(NLayer, total_elements(Block::tensors())));
    }
    static constexpr std::uint64_t weight_bytes() {
        return checked_add(total_bytes(tensors()), checked_mul(NLayer, total_bytes(Block::tensors())));
    }
    // Sliding and chunked layers stop growing at their ring, so only the full layers cost more per
    // token.
    static constexpr std::uint64_t kv_bytes_per_token() {
        const std::uint64_t period = attn::window_period;
        const bool local = attn::sliding_window != 0 || attn::attention_chunk != 0;
        const std::uint64_t full = !local ? NLayer : period == 0 ? 0 : NLayer / period;
        return checked_mul(full, attn::template kv_bytes_per_token<Kv>());
    }
};

}  // namespace layers

// A type is a model when it can describe itself to the planner.
template <class T>
concept model_type = requires {
    { T::describe() } -> std::convertible_to<model_desc>;
};

}  // namespace vramplan
