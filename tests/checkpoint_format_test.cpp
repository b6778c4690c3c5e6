// Hugging Face checkpoints' quantized layers as transformers holds them: bitsandbytes NF4/FP4
// (with and without double quantization) and LLM.int8(), GPTQ, AWQ, DeepSeek's fp8 blocks and
// AutoFP8's per-tensor fp8.
// Every expected size is derived here from the layouts' definitions (bitsandbytes' quantize_4bit
// and quantize_blockwise, AutoGPTQ's and AutoAWQ's packed tensors, DeepSeek-V3's
// weight_scale_inv, AutoFP8's scalar scales), tensor by tensor, for Llama-3-8B's published
// config.json.
#include <doctest/doctest.h>

#include <cstdint>
#include <filesystem>
#include <string>

#include "fixtures.hpp"
#include "vramplan/io/hf_config.hpp"
#include "vramplan/model/format_policy.hpp"
#include "vramplan/model/presets.hpp"
#include "vramplan/model/training.hpp"
#include "vramplan/plan/plan.hpp"

using namespace vramplan;

namespace {
using u64 = std::uint64_t;

u64 ceil_to(u64 n, u64 d) { return (n + d - 1) / d; }
// bitsandbytes 4-bit over n values: packed pairs, an f32 absmax per 64 and a 16-entry f32 code;
// double quantization: a uint8 absmax per 64, then per 256 of those an f32 absmax, plus a
// 256-entry f32 code and an f32 offset.
u64 bnb4(u64 n, bool dq) {
    const u64 blocks = ceil_to(n, 64);
    return n / 2 + (dq ? blocks + 4 * ceil_to(blocks, 256) + 256 * 4 + 4 : 4 * blocks) + 16 * 4;
}
// GPTQ: qweight int32 [cols * bits / 32, rows], qzeros int32 [groups, rows * bits / 32],
// scales f16 [groups, rows], g_idx int32 [cols].
u64 gptq(u64 rows, u64 cols, u64 bits, u64 group) {
    const u64 groups = group ? ceil_to(cols, group) : 1;
    return cols * bits / 32 * rows * 4 + groups * rows * bits / 32 * 4 + groups * rows * 2 + cols * 4;
}
// AWQ GEMM: qweight int32 [cols, rows / 8], qzeros int32 [groups, rows / 8], scales f16 [groups, rows].
u64 awq(u64 rows, u64 cols, u64 group) {
    return cols * rows / 8 * 4 + cols / group * rows / 8 * 4 + cols / group * rows * 2;
}

// Llama-3-8B's config.json (meta-llama/Meta-Llama-3-8B), its planning keys, and a quantization_config.
std::string llama3_8b(const std::string& quantization) {
    return R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 128256,
  "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
  "num_key_value_heads": 8, "rms_norm_eps": 1e-05, "rope_theta": 500000.0, "max_position_embeddings": 8192,
  "tie_word_embeddings": false, "torch_dtype": "bfloat16")" +
           (quantization.empty() ? std::string() : ", \"quantization_config\": " + quantization) + "}";
}

// Llama-3-8B's seven Linear layers of a block, as (rows, cols) = (out_features, in_features).
struct linear {
    u64 rows, cols;
};
constexpr linear llama3_block[] = {{4096, 4096},  {1024, 4096},  {1024, 4096}, {4096, 4096},
                                   {14336, 4096}, {14336, 4096}, {4096, 14336}};
// What stays in torch_dtype (bfloat16): the embedding, the head and the 65 norms.
constexpr u64 llama3_rest = 2 * 128256ull * 4096 * 2 + 65 * 4096 * 2;

template <class Fn>
u64 llama3_with(Fn&& linear_bytes) {
    u64 block = 0;
    for (const auto& l : llama3_block) block += linear_bytes(l);
    return 32 * block + llama3_rest;
}

model_desc from_config(const std::string& text, io::config_description* out = nullptr) {
    const std::string path = write_temp_text("vramplan_quantized_config.json", text);
    try {
        const io::config_description d = io::describe_config(path);
        std::filesystem::remove(path);
        if (out) *out = d;
        return io::checkpoint_model("llama3", d);
    } catch (...) {
        std::filesystem::remove(path);
        throw;
    }
}
std::string refused(const std::string& text) {
    try {
        (void)from_config(text);
    } catch (const error& e) {
        return e.what();
    }
    return "accepted";
}
}  // namespace

TEST_CASE("checkpoint formats: one tensor's bytes by hand from each layout") {
    const format nf4{.id = format_id::bnb_nf4}, nf4_dq{.id = format_id::bnb_nf4, .double_quant = true};
    // 4096 x 4096: 8 MiB of pairs; 262,144 absmaxes in f32, or in uint8 with 1,024 f32 above them.
    CHECK(tensor_bytes(nf4, 4096, 4096) == 8388608 + 1048576 + 64);
    CHECK(tensor_bytes(nf4_dq, 4096, 4096) == 8388608 + 262144 + 4096 + 1024 + 4 + 64);
    CHECK(tensor_bytes(format{.id = format_id::bnb_fp4}, 4096, 4096) == tensor_bytes(nf4, 4096, 4096));
    // A tensor's last block may be partial: 3 x 100 values are 5 blocks of 64.
    CHECK(tensor_bytes(nf4, 3, 100) == 150 + 5 * 4 + 64);
    CHECK(tensor_bytes(format{format_id::bnb_int8}, 1024, 4096) == 1024 * (4096 + 4));
    const format gptq4{.id = format_id::gptq, .group = 128, .bits = 4};
    CHECK(tensor_bytes(gptq4, 4096, 4096) == 8388608 + 32 * 512 * 4 + 32 * 4096 * 2 + 4096 * 4);
    CHECK(tensor_bytes(format{.id = format_id::gptq, .bits = 3}, 4096, 4096) == gptq(4096, 4096, 3, 0));
    CHECK(tensor_bytes(format{.id = format_id::awq, .group = 128}, 4096, 4096) ==
          8388608 + 32 * 512 * 4 + 32 * 4096 * 2);
    // fp8 blocks: one f32 per 128 x 128 block, the edge blocks partial.
    CHECK(tensor_bytes(format{.id = format_id::fp8_block, .group = 128}, 100, 300) == 30000 + 1 * 3 * 4);
    // Names, as the options spell them.
    CHECK(format_by_name("nf4-dq") == nf4_dq);
    CHECK(format_by_name("NF4") == nf4);
    CHECK(format_by_name("gptq4_g128") == gptq4);
    CHECK(format_by_name("gptq3_row") == format{.id = format_id::gptq, .bits = 3});
    CHECK(format_by_name("awq_g64") == format{.id = format_id::awq, .group = 64});
    CHECK(format_by_name("fp8_b128") == format{.id = format_id::fp8_block, .group = 128});
    CHECK(format_by_name("fp8_tensor_static") == format{.id = format_id::fp8_tensor, .input_scale = true});
    CHECK(tensor_bytes(format{format_id::fp8_tensor}, 1024, 4096) == 1024 * 4096 + 4);
    CHECK(name(nf4_dq) == "nf4_dq");
    CHECK(name(gptq4) == "gptq4_g128");
    CHECK_FALSE(parse_format("gptq5_g128"));
    CHECK_FALSE(parse_format("gptq4_g100"));  // groups are whole int32 words of values
    CHECK_FALSE(parse_format("awq_g0"));
    // A weight layout is not a cache's: a KV cache in NF4 is refused with what to choose.
    model_desc m = presets::describe(presets::llama3_8b_entry, uniform_policy(format{format_id::f16}));
    m.kv = nf4;
    CHECK_THROWS_WITH_AS(validate_formats(m), doctest::Contains("a KV cache or activations are stored row by row"),
                         error);
    CHECK_THROWS_WITH_AS((void)row_bytes(nf4, 64), doctest::Contains("weights, not a cache"), error);
}

TEST_CASE("Llama-3-8B in bitsandbytes NF4, with and without double quantization, derived from the block format") {
    for (bool dq : {false, true}) {
        CAPTURE(dq);
        io::config_description d;
        const model_desc m = from_config(llama3_8b(std::string(R"({"quant_method": "bitsandbytes", "load_in_4bit": true,
            "bnb_4bit_quant_type": "nf4", "bnb_4bit_compute_dtype": "bfloat16", "bnb_4bit_use_double_quant": )") +
                                                   (dq ? "true" : "false") + "}"),
                                         &d);
        CHECK(weight_bytes(m) == llama3_with([&](const linear& l) { return bnb4(l.rows * l.cols, dq); }));
        REQUIRE(d.notes.size() == 1);
        CHECK(d.notes[0].find(dq ? "bitsandbytes nf4_dq" : "bitsandbytes nf4 (4-bit") != std::string::npos);
        CHECK(d.notes[0].find("lm_head stay in 16 bits") != std::string::npos);
    }
    // Modules left unconverted stay in 16 bits, wherever they are.
    const model_desc kept = from_config(llama3_8b(R"({"quant_method": "bitsandbytes", "load_in_4bit": true,
        "bnb_4bit_quant_type": "nf4", "llm_int8_skip_modules": ["lm_head", "mlp.down_proj"]})"));
    CHECK(weight_bytes(kept) == llama3_with([](const linear& l) {
              return l.cols == 14336 ? l.rows * l.cols * 2 : bnb4(l.rows * l.cols, false);
          }));
    // LLM.int8(): int8 values and an f32 scale per output row.
    const model_desc int8 = from_config(llama3_8b(R"({"quant_method": "bitsandbytes", "load_in_8bit": true})"));
    CHECK(weight_bytes(int8) == llama3_with([](const linear& l) { return l.rows * (l.cols + 4); }));
    CHECK(refused(llama3_8b(R"({"quant_method": "bitsandbytes", "load_in_4bit": true, "load_in_8bit": true})"))
              .find("exactly one of them") != std::string::npos);
    CHECK(refused(llama3_8b(R"({"quant_method": "bitsandbytes", "load_in_4bit": true, "bnb_4bit_quant_type": "nf3"})"))
              .find("bnb_4bit_quant_type") != std::string::npos);
}

TEST_CASE("Llama-3-8B as GPTQ, AWQ and fp8-block checkpoints, tensor by tensor") {
    const model_desc g = from_config(llama3_8b(R"({"quant_method": "gptq", "bits": 4, "group_size": 128,
        "desc_act": true, "sym": true, "checkpoint_format": "gptq"})"));
    CHECK(weight_bytes(g) == llama3_with([](const linear& l) { return gptq(l.rows, l.cols, 4, 128); }));
    const model_desc row = from_config(llama3_8b(R"({"quant_method": "gptq", "bits": 8, "group_size": -1})"));
    CHECK(weight_bytes(row) == llama3_with([](const linear& l) { return gptq(l.rows, l.cols, 8, 0); }));
    const model_desc a = from_config(llama3_8b(R"({"quant_method": "awq", "bits": 4, "group_size": 128,
        "zero_point": true, "version": "gemm", "modules_to_not_convert": null})"));
    CHECK(weight_bytes(a) == llama3_with([](const linear& l) { return awq(l.rows, l.cols, 128); }));
    const model_desc f = from_config(llama3_8b(R"({"quant_method": "fp8", "fmt": "e4m3",
        "activation_scheme": "dynamic", "weight_block_size": [128, 128]})"));
    CHECK(weight_bytes(f) == llama3_with([](const linear& l) {
              return l.rows * l.cols + ceil_to(l.rows, 128) * ceil_to(l.cols, 128) * 4;
          }));
    // AutoFP8: an f32 weight_scale per tensor, and an f32 input_scale under a static scheme.
    const model_desc st = from_config(llama3_8b(R"({"quant_method": "fp8", "activation_scheme": "static",
        "ignored_layers": ["lm_head"]})"));
    CHECK(weight_bytes(st) == llama3_with([](const linear& l) { return l.rows * l.cols + 4 + 4; }));
    const model_desc dy = from_config(llama3_8b(R"({"quant_method": "fp8", "activation_scheme": "dynamic"})"));
    CHECK(weight_bytes(dy) == llama3_with([](const linear& l) { return l.rows * l.cols + 4; }));
    CHECK(refused(llama3_8b(R"({"quant_method": "gptq", "bits": 5})")).find("must be 2, 3, 4 or 8") !=
          std::string::npos);
    CHECK(refused(llama3_8b(R"({"quant_method": "awq", "version": "gemv"})")).find("GEMM layout") != std::string::npos);
    CHECK(refused(llama3_8b(R"({"quant_method": "fp8", "weight_block_size": [128, 64]})")).find("weight_block_size") !=
          std::string::npos);
    // A method not modeled yet is planned in 16 bits, and said so.
    io::config_description d;
    const model_desc ct = from_config(llama3_8b(R"({"quant_method": "compressed-tensors"})"), &d);
    CHECK(weight_bytes(ct) == llama3_with([](const linear& l) { return l.rows * l.cols * 2; }));
    REQUIRE(d.notes.size() == 1);
    CHECK(d.notes[0].find("not applied yet") != std::string::npos);
}

TEST_CASE("torch_dtype: every tensor as transformers loads it, norms included") {
    // Llama-3-8B: 8,030,261,248 parameters, 2 bytes each in bfloat16, 4 in float32.
    CHECK(weight_bytes(from_config(llama3_8b(""))) == 2 * 8030261248ull);
    std::string f32 = llama3_8b("");
    f32.replace(f32.find("bfloat16"), 8, "float32");
    CHECK(weight_bytes(from_config(f32)) == 4 * 8030261248ull);
    std::string odd = llama3_8b("");
    odd.replace(odd.find("bfloat16"), 8, "float8");
    CHECK(refused(odd).find("a checkpoint's dtype is bfloat16, float16 or float32") != std::string::npos);
}

TEST_CASE("modules_to_not_convert names modules as transformers matches them") {
    using io::detail::names_module;
    CHECK(names_module("model.layers.*.self_attn", "model.layers.3.self_attn.q_proj"));
    CHECK(names_module("lm_head", "lm_head"));
    CHECK(names_module("mlp.gate", "model.layers.0.mlp.gate"));
    CHECK_FALSE(names_module("mlp.gate", "model.layers.0.mlp.gate_proj"));  // whole parts only
    CHECK_FALSE(names_module("lm_head", "model.layers.0.mlp.down_proj"));
    CHECK(names_module("model.layers.1", "model.layers.1.mlp.up_proj"));
    CHECK_FALSE(names_module("model.layers.1", "model.layers.11.mlp.up_proj"));
    // A layer left whole: its Linear layers stay in 16 bits, the others are converted.
    const model_desc m = from_config(llama3_8b(R"({"quant_method": "bitsandbytes", "load_in_8bit": true,
        "llm_int8_skip_modules": ["lm_head", "model.layers.0"]})"));
    u64 block16 = 0, block8 = 0;
    for (const auto& l : llama3_block) {
        block16 += l.rows * l.cols * 2;
        block8 += l.rows * (l.cols + 4);
    }
    CHECK(weight_bytes(m) == block16 + 31 * block8 + llama3_rest);
}

TEST_CASE("QLoRA's frozen base: NF4 with double quantization by default, another format on request") {
    const model_desc llama2 = presets::describe(presets::llama2_7b_entry, uniform_policy(format{format_id::f16}));
    training_config q;
    q.lora_rank = 8;
    q.qlora = true;
    // Llama-2-7B's blocks: 4 projections of 4096 x 4096 and 3 of 11008 x 4096, 32 times; embedding,
    // head and norms bf16; the adapters (19,988,480 parameters) bf16.
    const u64 base = 32 * (4 * bnb4(4096ull * 4096, true) + 3 * bnb4(11008ull * 4096, true));
    const u64 rest = 2 * 32000ull * 4096 * 2 + 65 * 4096 * 2;
    CHECK(training_memory(llama2, q).weights == base + rest + 19988480ull * 2);
    q.qlora_base = format_by_name("nf4");
    CHECK(training_memory(llama2, q).weights ==
          32 * (4 * bnb4(4096ull * 4096, false) + 3 * bnb4(11008ull * 4096, false)) + rest + 19988480ull * 2);
}

TEST_CASE("DeepSeek's kv_b_proj is one tensor in a checkpoint format, though vramplan splits it per head") {
    // DeepSeek-V3's: 128 heads of 128 + 128 outputs of the 512-value latent, one Linear.
    model_desc m = presets::describe(presets::deepseek_v3_entry, uniform_policy(format{format_id::bf16}));
    const format nf4{.id = format_id::bnb_nf4, .double_quant = true};
    m = map_layers(m, [&](std::uint64_t, block_kind& b) { b[tensor_role::attn_k_b] = b[tensor_role::attn_v_b] = nf4; });
    const block_kind& b = m.layer(0);
    CHECK(role_bytes(m, b, tensor_role::attn_k_b) + role_bytes(m, b, tensor_role::attn_v_b) ==
          bnb4(128ull * (128 + 128) * 512, true));
    // In a row format the split is the same bytes as the one tensor.
    const model_desc r = presets::describe(presets::deepseek_v3_entry, uniform_policy(format{format_id::q8_0}));
    CHECK(role_bytes(r, r.layer(0), tensor_role::attn_k_b) + role_bytes(r, r.layer(0), tensor_role::attn_v_b) ==
          128ull * 256 * 512 / 32 * 34);
}
