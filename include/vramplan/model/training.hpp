// Training footprint: weights, gradients, optimizer state, fp32 master weights, and the
// activations saved for the backward pass of one micro-batch, with and without activation
// checkpointing, for full fine-tuning, LoRA and QLoRA. Every count below is exact for what it
// names; what is counted is documented next to it.
#pragma once

#include <cstdint>

#include "vramplan/format/bytes.hpp"
#include "vramplan/limits.hpp"
#include "vramplan/model/footprint.hpp"
#include "vramplan/model/format_policy.hpp"

namespace vramplan {

enum class optimizer : std::uint8_t {
    sgd,           // no state
    sgd_momentum,  // one fp32 momentum per trainable parameter
    adamw,         // fp32 first and second moments: 8 bytes per trainable parameter
    adamw_8bit,    // 8-bit moments, block-wise quantized: 2 bytes + two fp32 absmax per 2048 parameters
};

enum class precision : std::uint8_t {
    fp32,   // weights and gradients in fp32
    mixed,  // bf16/fp16 weights and gradients, fp32 master copy of the trainable parameters
};

struct training_config {
    optimizer opt = optimizer::adamw;
    precision prec = precision::mixed;
    std::uint64_t seq = 2048;       // tokens per sequence
    std::uint64_t micro_batch = 1;  // sequences per forward/backward pass
    bool checkpointing = false;     // keep only each block's input; recompute the rest in backward
    std::uint64_t lora_rank = 0;    // 0: full fine-tuning
    bool qlora = false;             // LoRA over a frozen 4-bit base
    // The frozen base's Linear layers under QLoRA: bitsandbytes' NF4 with double quantization, the
    // QLoRA paper's and PEFT's default (bnb_4bit_quant_type "nf4", bnb_4bit_use_double_quant).
    format qlora_base{.id = format_id::bnb_nf4, .double_quant = true};
    attention_kernel attention = attention_kernel::fused;
};

inline constexpr std::uint64_t adamw_8bit_block = 2048;

struct training_footprint {
    std::uint64_t trainable_params = 0;
    std::uint64_t weights = 0;  // the model as it sits in memory (frozen base included)
    std::uint64_t gradients = 0;
    std::uint64_t optimizer_state = 0;
    std::uint64_t master_weights = 0;
    std::uint64_t activations = 0;  // saved for backward, one micro-batch
    constexpr std::uint64_t total() const {
        return checked_add(checked_add(checked_add(weights, gradients), checked_add(optimizer_state, master_weights)),
                           activations);
    }
};

// LoRA adapters A (r x in) and B (out x r) on every linear of every block (each expert its own;
// the router is not adapted).
constexpr std::uint64_t lora_params(const decoder_shape& s, std::uint64_t rank) {
    std::uint64_t per_layer = 0;
    for (std::size_t r = 0; r < n_tensor_roles; ++r) {
        const auto role = static_cast<tensor_role>(r);
        if (!is_matrix(role) || is_router(role) ||
            !role_present(s, block_kind{{}, attention_kind::full, layer_ffn(s, 0)}, role))
            continue;
        const auto e = role_extent(s, role);
        // Stacked experts get an adapter each.
        per_layer = checked_add(per_layer, checked_mul(checked_mul(rank, checked_add(e.rows, e.cols)), e.planes));
    }
    return checked_mul(per_layer, s.n_layer);
}

inline constexpr std::uint64_t n_linear_roles = 7;

// Bytes saved for backward per token of one block: the inputs of both norms, both normalized
// activations, q, k, v (after RoPE), the attention output, gate, up and their SwiGLU product, the
// two norms' f32 reciprocal RMS, and the attention's own state: an f32 log-sum-exp per head when
// fused; the scores and their softmax (2 x heads x seq values) when naive.
constexpr std::uint64_t saved_per_token_per_layer(const decoder_shape& s, const training_config& c) {
    const std::uint64_t p = c.prec == precision::mixed ? 2 : 4;
    std::uint64_t values = checked_add(checked_add(checked_mul(4, s.n_embd), checked_mul(2, s.q_dim())),
                                       checked_add(checked_mul(2, s.kv_dim()), checked_mul(3, s.n_ff)));
    if (c.lora_rank) values = checked_add(values, checked_mul(n_linear_roles, c.lora_rank));  // x·A of each adapter
    std::uint64_t b = checked_add(checked_mul(values, p), 2 * 4);
    if (c.attention == attention_kernel::fused)
        b = checked_add(b, checked_mul(s.n_head, 4));
    else
        b = checked_add(b, checked_mul(checked_mul(2, s.n_head), checked_mul(c.seq, p)));
    return b;
}

// The head: final norm input and output (activation precision) and f32 logits plus their gradient.
constexpr std::uint64_t head_per_token(const decoder_shape& s, const training_config& c) {
    const std::uint64_t p = c.prec == precision::mixed ? 2 : 4;
    return checked_add(checked_mul(2 * p, s.n_embd), checked_mul(8, s.n_vocab));
}

constexpr training_footprint training_memory(const model_desc& m, const training_config& c) {
    validate(m.shape);
    if (c.seq == 0 || c.micro_batch == 0) throw error("sequence length and micro-batch must be at least 1");
    // The saved activations below are those of grouped-query attention's block.
    if (m.shape.latent_attention())
        throw error(
            "training memory is derived for grouped-query attention; multi-head latent attention (DeepSeek, Kimi) is "
            "planned for inference only");
    if (m.shape.hybrid())
        throw error(
            "training memory is derived for attention blocks; Mamba-2 layers (Granite-4.0-H's hybrid) are planned for "
            "inference only");
    const decoder_shape& s = m.shape;
    const std::uint64_t p = c.prec == precision::mixed ? 2 : 4;
    training_footprint f;
    if (c.lora_rank == 0) {
        f.trainable_params = param_count(s);
        f.weights = checked_mul(f.trainable_params, p);
    } else {
        f.trainable_params = lora_params(s, c.lora_rank);
        // Frozen base: 16-bit for LoRA; block linears in the 4-bit format for QLoRA (embeddings,
        // head and norms stay 16-bit, as in the QLoRA paper).
        format_policy base = uniform_policy(format{format_id::bf16});
        base.norms = format{format_id::bf16};
        if (c.qlora) base.weights = c.qlora_base;
        f.weights = checked_add(weight_bytes(make_model(m.name, s, base)), checked_mul(f.trainable_params, p));
    }
    f.gradients = checked_mul(f.trainable_params, p);
    switch (c.opt) {
        case optimizer::sgd: f.optimizer_state = 0; break;
        case optimizer::sgd_momentum: f.optimizer_state = checked_mul(f.trainable_params, 4); break;
        case optimizer::adamw: f.optimizer_state = checked_mul(f.trainable_params, 8); break;
        case optimizer::adamw_8bit:
            f.optimizer_state = checked_add(checked_mul(f.trainable_params, 2),
                                            checked_mul(ceil_div(f.trainable_params, adamw_8bit_block), 8));
            break;
    }
    f.master_weights = c.prec == precision::mixed ? checked_mul(f.trainable_params, 4) : 0;
    const std::uint64_t tokens = checked_mul(c.seq, c.micro_batch);
    const std::uint64_t layer = saved_per_token_per_layer(s, c);
    const std::uint64_t per_token =
        c.checkpointing
            // each block's input for every layer, plus one block's full set while it is recomputed
            ? checked_add(checked_mul(checked_mul(p, s.n_embd), s.n_layer), layer)
            : checked_mul(layer, s.n_layer);
    f.activations = checked_mul(tokens, checked_add(per_token, head_per_token(s, c)));
    return f;
}

}  // namespace vramplan
