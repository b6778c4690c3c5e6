// A small random Llama model written with the GGUF writer, for runtime tests, and a naive
// double-precision forward pass of the same model to compare against.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "vramplan/io/gguf_writer.hpp"
#include "vramplan/kernels/block_math.hpp"
#include "vramplan/model/model_desc.hpp"

namespace test_model {

using namespace vramplan;

struct spec {
    std::uint64_t vocab = 64, embd = 128, layers = 3, heads = 4, kv_heads = 2, head_dim = 32, ff = 96;
    format weights{format_id::f32};
    std::uint64_t context_length = 0;  // written as llama.context_length when not 0
    std::uint64_t sliding_window = 0;  // written as attention.sliding_window when not 0 (every layer slides)
    bool rope_freqs = false;           // Llama 3.1's rope_freqs.weight: divisors 1 to 8 across the pairs
    std::string stray_tensor;          // when not empty, a 4-value f32 tensor of that name no llama model has
    bool byte_tokens = false;          // tokens 3..258 are SentencePiece's byte fallbacks "<0x00>".."<0xFF>"
    // llama.cpp's Q4_K_M mix instead of `weights` (bench/ only: the reference does not round
    // activations to Q8_K): Q6_K for the head and, in the layers use_more_bits picks, attn_v and
    // ffn_down; Q4_K for the rest, random valid blocks.
    bool q4_k_m = false;
    // false (bench/ only): quantized tensors are random bytes under fixed block scales, written
    // without computing or keeping their values, so multi-gigabyte files take seconds; the
    // returned weights are then empty for those tensors and no reference can be computed.
    bool keep_values = true;
    std::string rope_scaling;  // when not empty, llama.rope.scaling.type (with .factor)
    float rope_scaling_factor = 1.0f;
    bool legacy_linear_key = false;  // linear scaling written as older files do: rope.scale_linear alone
    std::string arch = "llama";      // "qwen2": q/k/v biases and NeoX-style RoPE pairs; "qwen3": NeoX
                                     // pairs and an RMSNorm of each q and k head; "qwen2moe" and
                                     // "qwen3moe": theirs with experts; "phi3": NeoX pairs, q/k/v
                                     // stored as one attn_qkv and gate/up as one ffn_up
    // A mixture of experts in every layer (llama: Mixtral's layout): `experts` SwiGLU experts of
    // expert_ff, `used` per token, and a shared expert of shared_ff (qwen2moe: with its sigmoid gate).
    std::uint64_t experts = 0, used = 0, expert_ff = 0, shared_ff = 0;
    std::uint64_t dense_lead = 0;  // with experts: the first layers are dense (leading_dense_block_count)
    bool moe_layer(std::uint64_t l) const { return experts != 0 && l >= dense_lead; }
    bool qkv_bias() const { return arch == "qwen2" || arch == "qwen2moe"; }
    bool gemma() const { return arch == "gemma2" || arch == "gemma3"; }
    bool qk_norm() const { return arch == "qwen3" || arch == "qwen3moe" || arch == "gemma3"; }
    bool neox() const { return arch != "llama"; }
    std::optional<bool> renorm_experts;  // the reference's choice, when not the architecture's
    bool renorm() const { return renorm_experts.value_or(arch != "qwen2moe"); }  // Qwen2-MoE does not
    bool fused() const { return arch == "phi3"; }
    // Gemma ("gemma2": every other layer slides, layer 0 first; "gemma3": five of every six, with
    // q/k norms): the embedding scaled by sqrt(embd), norms after each sublayer, a GELU gate, a tied
    // head; gemma2 soft-caps scores and logits by these; gemma3's sliding layers rotate with base
    // 10000 while the global ones use rope_base.
    float attn_softcap = 0.0f, final_softcap = 0.0f;
    float rope_base = 10000.0f;
    std::uint64_t window_period() const { return arch == "gemma2" ? 2 : arch == "gemma3" ? 6 : 0; }
    bool sliding(std::uint64_t l) const {
        return sliding_window != 0 && (window_period() == 0 || l % window_period() != window_period() - 1);
    }
};

// The architectures' small test models. Qwen2-MoE: four experts of 64, two per token, a gated
// shared expert of 96 (q8_0 weights).
inline spec qwen2moe_spec() {
    spec s;
    s.arch = "qwen2moe";
    s.weights = format{format_id::q8_0};
    s.experts = 4;
    s.used = 2;
    s.expert_ff = 64;
    s.shared_ff = 96;
    return s;
}
// Phi-3: fused projections, as many KV heads as query heads (Phi-3-mini's).
inline spec phi3_spec() {
    spec s;
    s.arch = "phi3";
    s.kv_heads = s.heads;
    return s;
}
// Gemma 2: a sliding window of `window` positions, caps small enough to bend random scores.
inline spec gemma2_spec(std::uint64_t window) {
    spec s;
    s.arch = "gemma2";
    s.sliding_window = window;
    s.attn_softcap = 1.5f;
    s.final_softcap = 4.0f;
    return s;
}

// Weights as the file stores them, dequantized, in double.
struct weights {
    spec s;
    std::vector<double> embd, out_norm, out, rope_divisors;  // rope_divisors empty: none
    struct layer {
        std::vector<double> attn_norm, q, k, v, o, ffn_norm, gate, up, down, q_bias, k_bias,
            v_bias;                                         // biases: qwen2 only
        std::vector<double> q_norm, k_norm;                 // head_dim each: qwen3 only
        std::vector<double> post_attn_norm, post_ffw_norm;  // gemma only
        // Experts: the router (experts x embd), each expert's gate, up and down, the shared expert
        // and its gate (one row of embd: qwen2moe only).
        std::vector<double> router, sh_gate, sh_up, sh_down, sh_scale;
        std::vector<std::vector<double>> x_gate, x_up, x_down;
    };
    std::vector<layer> blk;
};

inline std::vector<float> random(std::size_t n, std::mt19937_64& rng, float scale) {
    std::normal_distribution<float> d(0.0f, scale);
    std::vector<float> v(n);
    for (auto& x : v) x = d(rng);
    return v;
}

// llama.cpp's choice for a Q4_K_M file (llama_tensor_get_type in src/llama-quant.cpp): Q6_K for
// output.weight, and for attn_v and ffn_down in the first and last eighth of the layers and every
// third between (use_more_bits); Q4_K for every other matrix.
inline format q4_k_m_format(const std::string& name, std::uint64_t layers) {
    if (name == "output.weight") return format{format_id::q6_k};
    const bool v = name.find("attn_v.weight") != std::string::npos,
               down = name.find("ffn_down.weight") != std::string::npos;
    if (v || down) {
        const std::uint64_t l = std::stoull(name.substr(4));
        const bool more = l < layers / 8 || l >= 7 * layers / 8 || (l - layers / 8) % 3 == 2;
        if (more) return format{format_id::q6_k};
    }
    return format{format_id::q4_k};
}

// Each block's scales in random bytes of Q8_0, Q4_0, Q4_K or Q6_K, set so that its values spread
// about `scale`.
inline void set_block_scales(format f, std::vector<std::uint8_t>& bytes, float scale) {
    auto each = [&](auto* blocks, auto set) {
        for (std::size_t i = 0; i < bytes.size() / sizeof(*blocks); ++i) set(blocks[i]);
    };
    switch (f.id) {
        case format_id::q8_0:  // values -128..127: standard deviation about 74 d
            each(reinterpret_cast<blocks::q8_0*>(bytes.data()), [&](auto& b) { b.d = to_half(scale / 74.0f); });
            break;
        case format_id::q4_0:  // values -8..7: about 4.6 d
            each(reinterpret_cast<blocks::q4_0*>(bytes.data()), [&](auto& b) { b.d = to_half(scale / 4.6f); });
            break;
        case format_id::q4_k:  // sub-block scales and mins are 0..63, values 0..15
            each(reinterpret_cast<blocks::q4_k*>(bytes.data()), [&](auto& b) {
                b.d = to_half(scale / (63.0f * 8.0f));
                b.dmin = to_half(scale / 63.0f);
            });
            break;
        case format_id::q6_k:  // scales -128..127, values -32..31
            each(reinterpret_cast<blocks::q6_k*>(bytes.data()),
                 [&](auto& b) { b.d = to_half(scale / (127.0f * 32.0f)); });
            break;
        default: throw error("set_block_scales: not a format written as random blocks");
    }
}

// Random valid Q4_K or Q6_K blocks whose values have about `scale`'s size, and those values.
inline std::vector<std::uint8_t> random_k_quant(std::uint64_t rows, std::uint64_t cols, format f, float scale,
                                                std::mt19937_64& rng, std::vector<double>& dst) {
    std::vector<std::uint8_t> bytes(tensor_bytes(f, rows, cols));
    std::uniform_int_distribution<int> byte(0, 255);
    for (auto& b : bytes) b = static_cast<std::uint8_t>(byte(rng));
    set_block_scales(f, bytes, scale);
    const std::uint64_t n = rows * cols / 256;
    dst.resize(rows * cols);
    float values[256];
    for (std::uint64_t i = 0; i < n; ++i) {
        if (f.id == format_id::q4_k)
            kernels::decode_block<blocks::q4_k, 256>(reinterpret_cast<const blocks::q4_k*>(bytes.data())[i], values);
        else
            kernels::decode_block<blocks::q6_k, 256>(reinterpret_cast<const blocks::q6_k*>(bytes.data())[i], values);
        for (int j = 0; j < 256; ++j) dst[i * 256 + j] = values[j];
    }
    return bytes;
}

// Random bytes in whole blocks of Q8_0, Q4_0, Q4_K or Q6_K under set_block_scales (a splitmix64
// stream: gigabytes per second, unlike a distribution).
inline std::vector<std::uint8_t> random_block_bytes(std::uint64_t rows, std::uint64_t cols, format f, float scale,
                                                    std::uint64_t seed) {
    std::vector<std::uint8_t> bytes(tensor_bytes(f, rows, cols));
    std::uint64_t state = seed;
    for (std::size_t i = 0; i < bytes.size(); i += 8) {
        std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        std::memcpy(bytes.data() + i, &z, std::min<std::size_t>(8, bytes.size() - i));
    }
    set_block_scales(f, bytes, scale);
    return bytes;
}

// Writes the model and returns its weights as stored.
inline weights write(const std::string& path, const spec& s, std::uint64_t seed = 42) {
    std::mt19937_64 rng(seed);
    io::gguf_writer w;
    const std::string a = s.arch + ".";
    w.set_string("general.architecture", s.arch)
        .set_u32(a + "block_count", static_cast<std::uint32_t>(s.layers))
        .set_u32(a + "embedding_length", static_cast<std::uint32_t>(s.embd))
        .set_u32(a + "feed_forward_length", static_cast<std::uint32_t>(s.ff))
        .set_u32(a + "attention.head_count", static_cast<std::uint32_t>(s.heads))
        .set_u32(a + "attention.head_count_kv", static_cast<std::uint32_t>(s.kv_heads))
        .set_f32(a + "attention.layer_norm_rms_epsilon", 1e-5f)
        .set_f32(a + "rope.freq_base", s.rope_base)
        .set_string("tokenizer.ggml.model", "llama");
    if (s.experts) {
        w.set_u32(a + "expert_count", static_cast<std::uint32_t>(s.experts))
            .set_u32(a + "expert_used_count", static_cast<std::uint32_t>(s.used));
        if (s.arch != "llama") w.set_u32(a + "expert_feed_forward_length", static_cast<std::uint32_t>(s.expert_ff));
        if (s.shared_ff) w.set_u32(a + "expert_shared_feed_forward_length", static_cast<std::uint32_t>(s.shared_ff));
        if (s.dense_lead) w.set_u32(a + "leading_dense_block_count", static_cast<std::uint32_t>(s.dense_lead));
    }
    if (s.arch == "gemma2")
        w.set_f32(a + "attn_logit_softcapping", s.attn_softcap).set_f32(a + "final_logit_softcapping", s.final_softcap);
    if (s.sliding_window) w.set_u32(a + "attention.sliding_window", static_cast<std::uint32_t>(s.sliding_window));
    if (s.context_length) w.set_u32(a + "context_length", static_cast<std::uint32_t>(s.context_length));
    if (s.head_dim * s.heads != s.embd)  // as Qwen3's files say it
        w.set_u32(a + "attention.key_length", static_cast<std::uint32_t>(s.head_dim))
            .set_u32(a + "attention.value_length", static_cast<std::uint32_t>(s.head_dim));
    if (s.legacy_linear_key)
        w.set_f32(a + "rope.scale_linear", s.rope_scaling_factor);
    else if (!s.rope_scaling.empty())
        w.set_string(a + "rope.scaling.type", s.rope_scaling).set_f32(a + "rope.scaling.factor", s.rope_scaling_factor);
    std::vector<std::string> tokens;
    for (std::uint64_t i = 0; i < s.vocab; ++i)
        tokens.push_back(std::to_string(i).insert(0, 1, 't'));  // "t" + ... trips GCC 12's -Wrestrict
    if (s.byte_tokens)
        for (int b = 0; b < 256 && 3 + static_cast<std::uint64_t>(b) < s.vocab; ++b) {
            char name[8];
            std::snprintf(name, sizeof name, "<0x%02X>", b);
            tokens[3 + b] = name;
        }
    w.set_strings("tokenizer.ggml.tokens", tokens);
    weights out;
    out.s = s;
    // Random rows in format f: their bytes as stored, and their values as stored into dst.
    std::uint64_t tensors_made = 0;
    auto make = [&](std::uint64_t rows, std::uint64_t cols, format f, float scale, std::vector<double>& dst) {
        ++tensors_made;
        if (!s.keep_values && f.id != format_id::f32 && f.id != format_id::f16)
            return random_block_bytes(rows, cols, f, scale, seed * 1000003 + tensors_made);
        if (f.id == format_id::q4_k || f.id == format_id::q6_k) return random_k_quant(rows, cols, f, scale, rng, dst);
        const auto v = random(rows * cols, rng, scale);
        std::vector<std::uint8_t> bytes(tensor_bytes(f, rows, cols));
        const auto kf = f.id == format_id::f32    ? kernels::kernel_format::f32
                        : f.id == format_id::f16  ? kernels::kernel_format::f16
                        : f.id == format_id::q8_0 ? kernels::kernel_format::q8_0
                                                  : kernels::kernel_format::q4_0;
        const std::uint64_t rb = kernels::kernel_row_bytes(kf, cols);
        dst.resize(rows * cols);
        for (std::uint64_t r = 0; r < rows; ++r) {
            void* row = bytes.data() + r * rb;
            switch (kf) {
                case kernels::kernel_format::f32:
                    kernels::store_row<kernels::kernel_format::f32>(v.data() + r * cols, row, cols);
                    break;
                case kernels::kernel_format::f16:
                    kernels::store_row<kernels::kernel_format::f16>(v.data() + r * cols, row, cols);
                    break;
                case kernels::kernel_format::q8_0:
                    kernels::store_row<kernels::kernel_format::q8_0>(v.data() + r * cols, row, cols);
                    break;
                default: kernels::store_row<kernels::kernel_format::q4_0>(v.data() + r * cols, row, cols); break;
            }
            for (std::uint64_t c = 0; c < cols; ++c) {
                switch (kf) {
                    case kernels::kernel_format::f32:
                        dst[r * cols + c] = kernels::load<kernels::kernel_format::f32>(row, c);
                        break;
                    case kernels::kernel_format::f16:
                        dst[r * cols + c] = kernels::load<kernels::kernel_format::f16>(row, c);
                        break;
                    case kernels::kernel_format::q8_0:
                        dst[r * cols + c] = kernels::load<kernels::kernel_format::q8_0>(row, c);
                        break;
                    default: dst[r * cols + c] = kernels::load<kernels::kernel_format::q4_0>(row, c); break;
                }
            }
        }
        return bytes;
    };
    auto add = [&](const std::string& name, std::uint64_t rows, std::uint64_t cols, format f, float scale,
                   std::vector<double>& dst) {
        if (s.q4_k_m && f == s.weights && rows > 1) f = q4_k_m_format(name, s.layers);
        const auto bytes = make(rows, cols, f, scale, dst);
        if (rows == 1)
            w.add_tensor(name, {cols}, f, bytes.data(), bytes.size());
        else
            w.add_tensor(name, {cols, rows}, f, bytes.data(), bytes.size());
    };
    // Matrices stored one after the other as one tensor: planes of a 3-D tensor (experts), or the
    // rows of a fused projection (Phi-3's attn_qkv, its gate and up in one ffn_up).
    auto add_stacked = [&](const std::string& name, std::uint64_t rows, std::uint64_t cols, format f, float scale,
                           std::vector<std::vector<double>*> dst, bool planes) {
        std::vector<std::uint8_t> all;
        for (auto* d : dst) {
            const auto bytes = make(rows, cols, f, scale, *d);
            all.insert(all.end(), bytes.begin(), bytes.end());
        }
        const std::uint64_t n = dst.size();
        if (planes)
            w.add_tensor(name, {cols, rows, n}, f, all.data(), all.size());
        else
            w.add_tensor(name, {cols, rows * n}, f, all.data(), all.size());
    };
    const format f32{format_id::f32};
    const std::uint64_t q = s.heads * s.head_dim, kv = s.kv_heads * s.head_dim;
    add("token_embd.weight", s.vocab, s.embd, s.weights, 1.0f, out.embd);
    add("output_norm.weight", 1, s.embd, f32, 1.0f, out.out_norm);
    if (s.gemma())  // the head is the embedding (no output.weight)
        out.out = out.embd;
    else
        add("output.weight", s.vocab, s.embd, s.weights, 0.2f, out.out);
    if (!s.stray_tensor.empty()) {
        const float four[4] = {1, 2, 3, 4};
        w.add_tensor(s.stray_tensor, {4}, f32, four, sizeof four);
    }
    if (s.rope_freqs) {
        std::vector<float> div(s.head_dim / 2);
        for (std::size_t i = 0; i < div.size(); ++i)
            div[i] = 1.0f + 7.0f * static_cast<float>(i) / static_cast<float>(div.size() - 1);
        out.rope_divisors.assign(div.begin(), div.end());
        w.add_tensor("rope_freqs.weight", {div.size()}, f32, div.data(), div.size() * 4);
    }
    out.blk.resize(s.layers);
    for (std::uint64_t l = 0; l < s.layers; ++l) {
        auto& b = out.blk[l];
        const std::string p = "blk." + std::to_string(l) + ".";
        add(p + "attn_norm.weight", 1, s.embd, f32, 1.0f, b.attn_norm);
        if (s.fused()) {  // q, k and v are as wide here, so one stack of three holds them
            if (q != kv) throw std::logic_error("test_model: a fused phi3 model needs heads == kv_heads");
            add_stacked(p + "attn_qkv.weight", q, s.embd, s.weights, 0.15f, {&b.q, &b.k, &b.v}, false);
        } else {
            add(p + "attn_q.weight", q, s.embd, s.weights, 0.15f, b.q);
            add(p + "attn_k.weight", kv, s.embd, s.weights, 0.15f, b.k);
            add(p + "attn_v.weight", kv, s.embd, s.weights, 0.15f, b.v);
        }
        if (s.qkv_bias()) {
            add(p + "attn_q.bias", 1, q, f32, 0.5f, b.q_bias);
            add(p + "attn_k.bias", 1, kv, f32, 0.5f, b.k_bias);
            add(p + "attn_v.bias", 1, kv, f32, 0.5f, b.v_bias);
        }
        if (s.qk_norm()) {
            add(p + "attn_q_norm.weight", 1, s.head_dim, f32, 1.0f, b.q_norm);
            add(p + "attn_k_norm.weight", 1, s.head_dim, f32, 1.0f, b.k_norm);
        }
        add(p + "attn_output.weight", s.embd, q, s.weights, 0.1f, b.o);
        if (s.gemma()) add(p + "post_attention_norm.weight", 1, s.embd, f32, 1.0f, b.post_attn_norm);
        add(p + "ffn_norm.weight", 1, s.embd, f32, 1.0f, b.ffn_norm);
        if (s.gemma()) add(p + "post_ffw_norm.weight", 1, s.embd, f32, 1.0f, b.post_ffw_norm);
        if (s.moe_layer(l)) {
            add(p + "ffn_gate_inp.weight", s.experts, s.embd, f32, 0.5f, b.router);
            b.x_gate.resize(s.experts), b.x_up.resize(s.experts), b.x_down.resize(s.experts);
            auto planes = [&](std::vector<std::vector<double>>& v) {
                std::vector<std::vector<double>*> d;
                for (auto& m : v) d.push_back(&m);
                return d;
            };
            add_stacked(p + "ffn_gate_exps.weight", s.expert_ff, s.embd, s.weights, 0.1f, planes(b.x_gate), true);
            add_stacked(p + "ffn_up_exps.weight", s.expert_ff, s.embd, s.weights, 0.1f, planes(b.x_up), true);
            add_stacked(p + "ffn_down_exps.weight", s.embd, s.expert_ff, s.weights, 0.1f, planes(b.x_down), true);
            if (s.shared_ff) {
                add(p + "ffn_gate_shexp.weight", s.shared_ff, s.embd, s.weights, 0.1f, b.sh_gate);
                add(p + "ffn_up_shexp.weight", s.shared_ff, s.embd, s.weights, 0.1f, b.sh_up);
                add(p + "ffn_down_shexp.weight", s.embd, s.shared_ff, s.weights, 0.1f, b.sh_down);
                if (s.arch == "qwen2moe") add(p + "ffn_gate_inp_shexp.weight", 1, s.embd, f32, 0.5f, b.sh_scale);
            }
        } else if (s.fused()) {  // the gate's rows first
            add_stacked(p + "ffn_up.weight", s.ff, s.embd, s.weights, 0.1f, {&b.gate, &b.up}, false);
            add(p + "ffn_down.weight", s.embd, s.ff, s.weights, 0.1f, b.down);
        } else {
            add(p + "ffn_gate.weight", s.ff, s.embd, s.weights, 0.1f, b.gate);
            add(p + "ffn_up.weight", s.ff, s.embd, s.weights, 0.1f, b.up);
            add(p + "ffn_down.weight", s.embd, s.ff, s.weights, 0.1f, b.down);
        }
    }
    w.write(path);
    return out;
}

// Logits of every position of `tokens`, computed naively in double.
inline std::vector<std::vector<double>> reference_logits(const weights& w, const std::vector<std::int32_t>& tokens) {
    const auto& s = w.s;
    const std::uint64_t T = tokens.size(), E = s.embd, HD = s.head_dim, Q = s.heads * HD, KV = s.kv_heads * HD;
    // Q4_0 and Q8_0 weights meet activations rounded to Q8_0 blocks (W4A8 and W8A8, as the CPU
    // kernels define them); f32 matrices (the router) meet them as they are.
    const bool round_to_q8_0 = s.weights.id == format_id::q4_0 || s.weights.id == format_id::q8_0;
    auto matvec = [&](const std::vector<double>& m, const std::vector<double>& x_in, std::uint64_t rows,
                      std::uint64_t cols, bool stored_in_weights_format = true) {
        std::vector<double> x = x_in;
        if (round_to_q8_0 && stored_in_weights_format)
            for (std::uint64_t b = 0; b < cols / 32; ++b) {
                float block[32];
                for (int j = 0; j < 32; ++j) block[j] = static_cast<float>(x[b * 32 + j]);
                blocks::q8_0 q;
                kernels::quantize_block(block, q);
                for (int j = 0; j < 32; ++j) x[b * 32 + j] = kernels::dequantize(q, j);
            }
        std::vector<double> y(rows, 0.0);
        for (std::uint64_t r = 0; r < rows; ++r)
            for (std::uint64_t c = 0; c < cols; ++c) y[r] += m[r * cols + c] * x[c];
        return y;
    };
    auto norm = [&](const std::vector<double>& x, const std::vector<double>& g) {
        double ss = 0;
        for (auto v : x) ss += v * v;
        const double scale = 1.0 / std::sqrt(ss / static_cast<double>(x.size()) + 1e-5);
        std::vector<double> y(x.size());
        for (std::size_t i = 0; i < x.size(); ++i) y[i] = x[i] * scale * g[i];
        return y;
    };
    auto rope = [&](std::vector<double>& v, std::uint64_t heads, std::uint64_t pos, double base) {
        for (std::uint64_t h = 0; h < heads; ++h)
            for (std::uint64_t i = 0; i < HD / 2; ++i) {
                const double linear = s.rope_scaling == "linear" ? s.rope_scaling_factor : 1.0;
                const double th = static_cast<double>(pos) / linear *
                                  std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(HD)) /
                                  (w.rope_divisors.empty() ? 1.0 : w.rope_divisors[i]);
                const bool neox = s.neox();  // pairs (i, i + HD/2)
                double& a = v[h * HD + (neox ? i : 2 * i)];
                double& b = v[h * HD + (neox ? i + HD / 2 : 2 * i + 1)];
                const double x0 = a, x1 = b;
                a = x0 * std::cos(th) - x1 * std::sin(th);
                b = x0 * std::sin(th) + x1 * std::cos(th);
            }
    };
    std::vector<std::vector<double>> x(T);
    for (std::uint64_t t = 0; t < T; ++t)
        x[t].assign(w.embd.begin() + tokens[t] * E, w.embd.begin() + (tokens[t] + 1) * E);
    if (s.gemma())
        for (auto& row : x)
            for (auto& v : row) v *= std::sqrt(static_cast<double>(E));
    auto cap = [](double v, double c) { return c > 0 ? c * std::tanh(v / c) : v; };
    for (std::uint64_t l = 0; l < s.layers; ++l) {
        const auto& b = w.blk[l];
        std::vector<std::vector<double>> qs(T), ks(T), vs(T);
        for (std::uint64_t t = 0; t < T; ++t) {
            const auto n = norm(x[t], b.attn_norm);
            qs[t] = matvec(b.q, n, Q, E);
            ks[t] = matvec(b.k, n, KV, E);
            vs[t] = matvec(b.v, n, KV, E);
            for (std::size_t i = 0; i < b.q_bias.size(); ++i) qs[t][i] += b.q_bias[i];
            for (std::size_t i = 0; i < b.k_bias.size(); ++i) ks[t][i] += b.k_bias[i];
            for (std::size_t i = 0; i < b.v_bias.size(); ++i) vs[t][i] += b.v_bias[i];
            // Qwen3: each head of q and k RMS-normalized with its own weights, before RoPE.
            auto head_norm = [&](std::vector<double>& v, std::uint64_t heads, const std::vector<double>& g) {
                for (std::uint64_t h = 0; h < heads && !g.empty(); ++h) {
                    const std::vector<double> head(v.begin() + h * HD, v.begin() + (h + 1) * HD);
                    const auto n = norm(head, g);
                    std::copy(n.begin(), n.end(), v.begin() + h * HD);
                }
            };
            head_norm(qs[t], s.heads, b.q_norm);
            head_norm(ks[t], s.kv_heads, b.k_norm);
            const double base = s.arch == "gemma3" && s.sliding(l) ? 10000.0 : s.rope_base;
            rope(qs[t], s.heads, t, base);
            rope(ks[t], s.kv_heads, t, base);
        }
        for (std::uint64_t t = 0; t < T; ++t) {
            std::vector<double> att(Q, 0.0);
            for (std::uint64_t h = 0; h < s.heads; ++h) {
                const std::uint64_t g = h / (s.heads / s.kv_heads);
                // A sliding layer's query sees itself and the window - 1 positions before it.
                const std::uint64_t W = s.sliding_window;
                const std::uint64_t first = s.sliding(l) && t + 1 > W ? t + 1 - W : 0;
                std::vector<double> sc(t + 1, -1e300);
                double m = -1e300;
                for (std::uint64_t p = first; p <= t; ++p) {
                    double d = 0;
                    for (std::uint64_t i = 0; i < HD; ++i) d += qs[t][h * HD + i] * ks[p][g * HD + i];
                    sc[p] = cap(d / std::sqrt(static_cast<double>(HD)), s.attn_softcap);
                    m = std::max(m, sc[p]);
                }
                double l = 0;
                for (auto& v : sc) l += (v = std::exp(v - m));
                for (std::uint64_t p = first; p <= t; ++p)
                    for (std::uint64_t i = 0; i < HD; ++i) att[h * HD + i] += sc[p] / l * vs[p][g * HD + i];
            }
            auto o = matvec(b.o, att, E, Q);
            if (!b.post_attn_norm.empty()) o = norm(o, b.post_attn_norm);
            for (std::uint64_t i = 0; i < E; ++i) x[t][i] += o[i];
            const auto n = norm(x[t], b.ffn_norm);
            auto swiglu = [&](const std::vector<double>& g, const std::vector<double>& u,
                              const std::vector<double>& down, std::uint64_t F, const std::vector<double>& in) {
                auto gate = matvec(g, in, F, E);
                const auto up = matvec(u, in, F, E);
                for (std::uint64_t i = 0; i < F; ++i) {
                    const double g = gate[i];
                    const double act = s.gemma()
                                           ? 0.5 * g * (1 + std::tanh(std::sqrt(2 / M_PI) * (g + 0.044715 * g * g * g)))
                                           : g / (1.0 + std::exp(-g));
                    gate[i] = act * up[i];
                }
                return matvec(down, gate, E, F);
            };
            std::vector<double> d(E, 0.0);
            if (s.moe_layer(l)) {
                // The router's softmax, its `used` largest, their weights renormalized or not.
                auto p = matvec(b.router, n, s.experts, E, false);
                const double m = *std::max_element(p.begin(), p.end());
                double sum = 0;
                for (auto& v : p) sum += (v = std::exp(v - m));
                for (auto& v : p) v /= sum;
                std::vector<std::uint64_t> order(s.experts);
                for (std::uint64_t e = 0; e < s.experts; ++e) order[e] = e;
                std::stable_sort(order.begin(), order.end(), [&](auto i, auto j) { return p[i] > p[j]; });
                double chosen = 0;
                for (std::uint64_t j = 0; j < s.used; ++j) chosen += p[order[j]];
                for (std::uint64_t j = 0; j < s.used; ++j) {
                    const std::uint64_t e = order[j];
                    const double weight = s.renorm() ? p[e] / chosen : p[e];
                    const auto y = swiglu(b.x_gate[e], b.x_up[e], b.x_down[e], s.expert_ff, n);
                    for (std::uint64_t i = 0; i < E; ++i) d[i] += weight * y[i];
                }
                if (s.shared_ff) {
                    const auto y = swiglu(b.sh_gate, b.sh_up, b.sh_down, s.shared_ff, n);
                    double g = 1;
                    if (!b.sh_scale.empty()) {
                        double z = 0;
                        for (std::uint64_t i = 0; i < E; ++i) z += b.sh_scale[i] * n[i];
                        g = 1 / (1 + std::exp(-z));
                    }
                    for (std::uint64_t i = 0; i < E; ++i) d[i] += g * y[i];
                }
            } else {
                d = swiglu(b.gate, b.up, b.down, s.ff, n);
            }
            if (!b.post_ffw_norm.empty()) d = norm(d, b.post_ffw_norm);
            for (std::uint64_t i = 0; i < E; ++i) x[t][i] += d[i];
        }
    }
    std::vector<std::vector<double>> logits(T);
    for (std::uint64_t t = 0; t < T; ++t) {
        logits[t] = matvec(w.out, norm(x[t], w.out_norm), s.vocab, E);
        for (auto& v : logits[t]) v = cap(v, s.final_softcap);
    }
    return logits;
}

}  // namespace test_model
