#include <doctest/doctest.h>

#include "vramplan/model/presets.hpp"
#include "vramplan/model/training.hpp"
#include "vramplan/plan/training_fit.hpp"

using namespace vramplan;

namespace {
// Each type-level preset against its run-time twin, for one weight/KV format choice.
template <class Type>
void check_twin(const presets::preset_entry& e, format w, format kv) {
    constexpr model_desc compile_time = Type::describe();
    const model_desc run_time = presets::describe(e, uniform_policy(w, kv));
    CHECK(compile_time == run_time);
    CHECK(param_count(run_time.shape) == e.published_params);
    CHECK(Type::weight_bytes() == weight_bytes(run_time));
}
}  // namespace

TEST_CASE("every preset has equal type-level and run-time descriptions") {
    check_twin<presets::llama2_7b<q4_0, f16>>(presets::llama2_7b_entry, q4_0::value, f16::value);
    check_twin<presets::llama2_13b<q8_0, q8_0>>(presets::llama2_13b_entry, q8_0::value, q8_0::value);
    check_twin<presets::llama3_8b<q4_0, f16>>(presets::llama3_8b_entry, q4_0::value, f16::value);
    check_twin<presets::llama31_8b<q8_0, q8_0>>(presets::llama31_8b_entry, q8_0::value, q8_0::value);
    check_twin<presets::llama31_70b<q4_k, q8_0>>(presets::llama31_70b_entry, q4_k::value, q8_0::value);
    check_twin<presets::mistral_7b<f16, f16>>(presets::mistral_7b_entry, f16::value, f16::value);
    check_twin<presets::qwen25_7b<q8_0, f16>>(presets::qwen25_7b_entry, q8_0::value, f16::value);
    check_twin<presets::tinyllama_1b<q4_0, q4_0>>(presets::tinyllama_entry, q4_0::value, q4_0::value);
    check_twin<presets::phi3_mini<bf16, f16>>(presets::phi3_mini_entry, bf16::value, f16::value);
    check_twin<presets::stories260k<f32, f16>>(presets::stories260k_entry, f32::value, f16::value);
    // Experts (moe_mlp), q/k norms, windows and post-norms: the layer templates of current models.
    check_twin<presets::qwen3_06b<q8_0, f16>>(presets::qwen3_06b_entry, q8_0::value, f16::value);
    check_twin<presets::qwen3_8b<q4_k, q8_0>>(presets::qwen3_8b_entry, q4_k::value, q8_0::value);
    check_twin<presets::qwen3_32b<q4_k, f16>>(presets::qwen3_32b_entry, q4_k::value, f16::value);
    check_twin<presets::qwen3_30b_a3b<q4_k, f16>>(presets::qwen3_30b_a3b_entry, q4_k::value, f16::value);
    check_twin<presets::qwen3_235b_a22b<q4_k, q8_0>>(presets::qwen3_235b_a22b_entry, q4_k::value, q8_0::value);
    check_twin<presets::mixtral_8x7b<q4_0, f16>>(presets::mixtral_8x7b_entry, q4_0::value, f16::value);
    check_twin<presets::gemma2_9b<q8_0, f16>>(presets::gemma2_9b_entry, q8_0::value, f16::value);
    check_twin<presets::gemma3_4b<q4_0, f16>>(presets::gemma3_4b_entry, q4_0::value, f16::value);
    check_twin<presets::gemma3_12b<q8_0, q8_0>>(presets::gemma3_12b_entry, q8_0::value, q8_0::value);
    check_twin<presets::gemma3_27b<q4_k, f16>>(presets::gemma3_27b_entry, q4_k::value, f16::value);
    check_twin<presets::llama32_1b<q8_0, f16>>(presets::llama32_1b_entry, q8_0::value, f16::value);
    check_twin<presets::llama32_3b<q4_0, f16>>(presets::llama32_3b_entry, q4_0::value, f16::value);
    check_twin<presets::llama33_70b<q4_k, f16>>(presets::llama33_70b_entry, q4_k::value, f16::value);
    check_twin<presets::llama4_scout<q4_k, q8_0>>(presets::llama4_scout_entry, q4_k::value, q8_0::value);
}

TEST_CASE("presets are found by name and alias and unknown names list the choices") {
    CHECK(presets::by_name("llama-3-8b").shape.n_head_kv == 8);
    CHECK(presets::by_name("Llama3.1-70B").shape.n_layer == 80);
    CHECK(presets::by_name("mistral").shape.n_vocab == 32768);
    // Llama-3 and Llama-3.1 8B share a shape, not a trained context.
    CHECK(presets::by_name("llama-3-8b").shape.n_ctx_train == 8192);
    CHECK(presets::by_name("llama-3.1-8b").shape.n_ctx_train == 131'072);
    CHECK(presets::by_name("llama-3.1-8b").name == "Llama-3.1-8B");
    CHECK_THROWS_WITH_AS(presets::by_name("gpt-5"), doctest::Contains("built-in models: Llama-2-7B"), error);
}

TEST_CASE("GGUF-style mixes like stories260K as llama.cpp quantizes it to Q8_0") {
    // 32 Q8_0 matrices, ffn_down kept F16 (its 172-value rows are not whole 32-blocks), norms F32.
    format_policy p = uniform_policy(q8_0::value);
    p.with({tensor_role::ffn_down, f16::value});
    const model_desc m = presets::describe(presets::stories260k_entry, p);
    // Per layer: q,o 64 rows x 68 B; k,v 32 x 68; gate,up 172 x 68; down 64 x 172 x 2; norms 2 x 256.
    const std::uint64_t layer = 2 * 4352 + 2 * 2176 + 2 * 11696 + 22016 + 512;
    CHECK(layer == 58976);
    CHECK(weight_bytes(m) == 5 * layer + 2 * 512 * 68 + 256);
    CHECK(m.n_kinds == 1);
    // A per-layer override creates a second block kind, shared by equal layers.
    p.with({tensor_role::attn_v, q6_k::value, 0});
    // attn_v rows hold 64 values: not a whole 256-value Q6_K super-block.
    CHECK_THROWS_WITH_AS(presets::describe(presets::stories260k_entry, p),
                         doctest::Contains("blk.*.attn_v.weight has rows of 64 values"), error);
    format_policy p2 = uniform_policy(q8_0::value);
    p2.with({tensor_role::ffn_down, f16::value})
        .with({tensor_role::attn_v, f16::value, 2})
        .with({tensor_role::attn_v, f16::value, 4});
    const model_desc m2 = presets::describe(presets::stories260k_entry, p2);
    CHECK(m2.n_kinds == 2);
    CHECK(weight_bytes(m2) == weight_bytes(m) + 2 * (32 * 64 * 2 - 2176));
}

TEST_CASE("invalid shapes are rejected with a reason") {
    decoder_shape s = presets::llama3_8b_entry.shape;
    s.n_head_kv = 5;
    CHECK_THROWS_WITH_AS(make_model("bad", s, {}), doctest::Contains("multiple of n_head_kv"), error);
    s = presets::llama3_8b_entry.shape;
    s.n_layer = 0;
    CHECK_THROWS_WITH_AS(make_model("bad", s, {}), doctest::Contains("zero dimension"), error);
    s.n_layer = 300;
    CHECK_THROWS_AS(make_model("bad", s, {}), error);
}

TEST_CASE("training footprints derived by hand") {
    const model_desc llama2 = presets::describe(presets::llama2_7b_entry, uniform_policy(f16::value));
    const std::uint64_t n = 6'738'415'616;
    training_config c;
    auto f = training_memory(llama2, c);
    CHECK(f.weights == 2 * n);
    CHECK(f.gradients == 2 * n);
    CHECK(f.master_weights == 4 * n);
    CHECK(f.optimizer_state == 8 * n);
    c.prec = precision::fp32;
    f = training_memory(llama2, c);
    CHECK(f.weights + f.gradients + f.optimizer_state + f.master_weights == 16 * n);  // 4 + 4 + 8
    c.opt = optimizer::adamw_8bit;
    f = training_memory(llama2, c);
    CHECK(f.optimizer_state == 2 * n + (n + 2047) / 2048 * 8);
    c.opt = optimizer::sgd;
    CHECK(training_memory(llama2, c).optimizer_state == 0);

    // LoRA r=8 on every linear of Llama-2-7B: 19,988,480 trainable parameters (what PEFT reports).
    CHECK(lora_params(llama2.shape, 8) == 19'988'480);
    training_config q;
    q.lora_rank = 8;
    q.qlora = true;
    q.qlora_base = format{format_id::int4_group, 64, false};  // the default, NF4: checkpoint_format_test.cpp
    f = training_memory(llama2, q);
    // Frozen base: matrices as 4-bit + fp16 scale per 64 (34 bytes / 64 values), embeddings, head
    // and norms bf16; adapters bf16.
    CHECK(f.weights == 6'476'005'376ull / 64 * 34 + 2 * 131'072'000ull * 2 + 266'240 * 2 + 19'988'480ull * 2);
    CHECK(f.gradients == 19'988'480ull * 2);
    CHECK(f.master_weights == 19'988'480ull * 4);

    // Activations of stories260K, sequence 256, mixed precision, fused attention:
    // per layer per token (4*64 + 2*64 + 2*32 + 3*172) x 2 B + 2 x 4 B (rms) + 8 heads x 4 B (lse) = 1968;
    // head per token 2 x 2 x 64 + 8 x 512 = 4352.
    const model_desc tiny = presets::describe(presets::stories260k_entry, uniform_policy(f32::value));
    training_config t;
    t.seq = 256;
    CHECK(training_memory(tiny, t).activations == 256 * (5 * 1968 + 4352));
    t.checkpointing = true;  // block inputs (64 x 2 B x 5 layers) + one block recomputed
    CHECK(training_memory(tiny, t).activations == 256 * (5 * 128 + 1968 + 4352));
    t.checkpointing = false;
    t.attention = attention_kernel::naive;  // scores + probabilities: 2 x 8 heads x 256 x 2 B instead of the lse
    CHECK(training_memory(tiny, t).activations == 256 * (5 * (1968 - 32 + 2 * 8 * 256 * 2) + 4352));
}

TEST_CASE("largest training micro-batch and accumulation steps") {
    const model_desc tiny = presets::describe(presets::stories260k_entry, uniform_policy(f32::value));
    training_config c;
    c.seq = 256;
    const std::uint64_t fixed = 16 * 292'800ull;                    // weights, grads, master, AdamW
    const std::uint64_t per_seq = 256ull * (5 * 1968 + 4352);       // activations of one sequence
    target_desc t{"tiny", fixed + 3 * per_seq + 100 + 4096, 4096};  // room for exactly 3 sequences
    const auto fit = fit_micro_batch(tiny, c, t, 32);
    CHECK(fit.micro_batch == 3);
    CHECK(fit.accumulation_steps == 11);  // ceil(32 / 3)
    t.capacity = fixed;                   // not even one sequence
    CHECK(fit_micro_batch(tiny, c, t, 32).micro_batch == 0);
}
