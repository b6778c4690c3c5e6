// A small random Llama model written with the GGUF writer, for runtime tests, and a naive
// double-precision forward pass of the same model to compare against.
#pragma once

#include <cmath>
#include <random>
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
    bool rope_freqs = false;           // Llama 3.1's rope_freqs.weight: divisors 1 to 8 across the pairs
    std::string stray_tensor;          // when not empty, a 4-value f32 tensor of that name no llama model has
    std::string rope_scaling;          // when not empty, llama.rope.scaling.type (with .factor)
    float rope_scaling_factor = 1.0f;
    bool legacy_linear_key = false;  // linear scaling written as older files do: rope.scale_linear alone
    std::string arch = "llama";      // "qwen2": q/k/v biases and NeoX-style RoPE pairs; "qwen3": NeoX
                                     // pairs and an RMSNorm of each q and k head
    bool neox() const { return arch == "qwen2" || arch == "qwen3"; }
};

// Weights as the file stores them, dequantized, in double.
struct weights {
    spec s;
    std::vector<double> embd, out_norm, out, rope_divisors;  // rope_divisors empty: none
    struct layer {
        std::vector<double> attn_norm, q, k, v, o, ffn_norm, gate, up, down, q_bias, k_bias,
            v_bias;                          // biases: qwen2 only
        std::vector<double> q_norm, k_norm;  // head_dim each: qwen3 only
    };
    std::vector<layer> blk;
};

inline std::vector<float> random(std::size_t n, std::mt19937_64& rng, float scale) {
    std::normal_distribution<float> d(0.0f, scale);
    std::vector<float> v(n);
    for (auto& x : v) x = d(rng);
    return v;
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
        .set_f32(a + "rope.freq_base", 10000.0f)
        .set_string("tokenizer.ggml.model", "llama");
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
    w.set_strings("tokenizer.ggml.tokens", tokens);
    weights out;
    out.s = s;
    auto add = [&](const std::string& name, std::uint64_t rows, std::uint64_t cols, format f, float scale,
                   std::vector<double>& dst) {
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
        if (rows == 1)
            w.add_tensor(name, {cols}, f, bytes.data(), bytes.size());
        else
            w.add_tensor(name, {cols, rows}, f, bytes.data(), bytes.size());
    };
    const format f32{format_id::f32};
    const std::uint64_t q = s.heads * s.head_dim, kv = s.kv_heads * s.head_dim;
    add("token_embd.weight", s.vocab, s.embd, s.weights, 1.0f, out.embd);
    add("output_norm.weight", 1, s.embd, f32, 1.0f, out.out_norm);
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
        add(p + "attn_q.weight", q, s.embd, s.weights, 0.15f, b.q);
        add(p + "attn_k.weight", kv, s.embd, s.weights, 0.15f, b.k);
        add(p + "attn_v.weight", kv, s.embd, s.weights, 0.15f, b.v);
        if (s.arch == "qwen2") {
            add(p + "attn_q.bias", 1, q, f32, 0.5f, b.q_bias);
            add(p + "attn_k.bias", 1, kv, f32, 0.5f, b.k_bias);
            add(p + "attn_v.bias", 1, kv, f32, 0.5f, b.v_bias);
        }
        if (s.arch == "qwen3") {
            add(p + "attn_q_norm.weight", 1, s.head_dim, f32, 1.0f, b.q_norm);
            add(p + "attn_k_norm.weight", 1, s.head_dim, f32, 1.0f, b.k_norm);
        }
        add(p + "attn_output.weight", s.embd, q, s.weights, 0.1f, b.o);
        add(p + "ffn_norm.weight", 1, s.embd, f32, 1.0f, b.ffn_norm);
        add(p + "ffn_gate.weight", s.ff, s.embd, s.weights, 0.1f, b.gate);
        add(p + "ffn_up.weight", s.ff, s.embd, s.weights, 0.1f, b.up);
        add(p + "ffn_down.weight", s.embd, s.ff, s.weights, 0.1f, b.down);
    }
    w.write(path);
    return out;
}

// Logits of every position of `tokens`, computed naively in double.
inline std::vector<std::vector<double>> reference_logits(const weights& w, const std::vector<std::int32_t>& tokens) {
    const auto& s = w.s;
    const std::uint64_t T = tokens.size(), E = s.embd, HD = s.head_dim, Q = s.heads * HD, KV = s.kv_heads * HD;
    // Q4_0 weights meet activations rounded to Q8_0 blocks (W4A8, as the CPU kernel defines it).
    const bool round_to_q8_0 = s.weights.id == format_id::q4_0;
    auto matvec = [&](const std::vector<double>& m, const std::vector<double>& x_in, std::uint64_t rows,
                      std::uint64_t cols) {
        std::vector<double> x = x_in;
        if (round_to_q8_0)
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
    auto rope = [&](std::vector<double>& v, std::uint64_t heads, std::uint64_t pos) {
        for (std::uint64_t h = 0; h < heads; ++h)
            for (std::uint64_t i = 0; i < HD / 2; ++i) {
                const double linear = s.rope_scaling == "linear" ? s.rope_scaling_factor : 1.0;
                const double th = static_cast<double>(pos) / linear *
                                  std::pow(10000.0, -2.0 * static_cast<double>(i) / static_cast<double>(HD)) /
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
    for (const auto& b : w.blk) {
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
            rope(qs[t], s.heads, t);
            rope(ks[t], s.kv_heads, t);
        }
        for (std::uint64_t t = 0; t < T; ++t) {
            std::vector<double> att(Q, 0.0);
            for (std::uint64_t h = 0; h < s.heads; ++h) {
                const std::uint64_t g = h / (s.heads / s.kv_heads);
                std::vector<double> sc(t + 1);
                double m = -1e300;
                for (std::uint64_t p = 0; p <= t; ++p) {
                    double d = 0;
                    for (std::uint64_t i = 0; i < HD; ++i) d += qs[t][h * HD + i] * ks[p][g * HD + i];
                    sc[p] = d / std::sqrt(static_cast<double>(HD));
                    m = std::max(m, sc[p]);
                }
                double l = 0;
                for (auto& v : sc) l += (v = std::exp(v - m));
                for (std::uint64_t p = 0; p <= t; ++p)
                    for (std::uint64_t i = 0; i < HD; ++i) att[h * HD + i] += sc[p] / l * vs[p][g * HD + i];
            }
            const auto o = matvec(b.o, att, E, Q);
            for (std::uint64_t i = 0; i < E; ++i) x[t][i] += o[i];
            const auto n = norm(x[t], b.ffn_norm);
            auto gate = matvec(b.gate, n, s.ff, E);
            const auto up = matvec(b.up, n, s.ff, E);
            for (std::uint64_t i = 0; i < s.ff; ++i) gate[i] = gate[i] / (1.0 + std::exp(-gate[i])) * up[i];
            const auto d = matvec(b.down, gate, E, s.ff);
            for (std::uint64_t i = 0; i < E; ++i) x[t][i] += d[i];
        }
    }
    std::vector<std::vector<double>> logits(T);
    for (std::uint64_t t = 0; t < T; ++t) logits[t] = matvec(w.out, norm(x[t], w.out_norm), s.vocab, E);
    return logits;
}

}  // namespace test_model
