// gpt-oss (20b and 120b): alternating sliding (128 positions) and full layers, attention sinks,
// biases on q, k, v, the output, the router and every expert, and MXFP4 experts. Expected values
// are derived here from the published config.json numbers, the MXFP4 block (32 values in 17
// bytes) and the model card (OpenAI's gpt-oss model card, table 1), not from vramplan's footprint
// code.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "fixtures.hpp"
#include "vramplan/io/gguf_model.hpp"
#include "vramplan/io/hf_config.hpp"
#include "vramplan/model/presets.hpp"
#include "vramplan/plan/buffers.hpp"
#include "vramplan/plan/plan.hpp"
#include "vramplan/runtime/forward_pass.hpp"

using namespace vramplan;

namespace {
using u64 = std::uint64_t;

// config.json: hidden 2880, 64 query heads and 8 KV heads of 64, experts of 2880 (gate, up and
// down, each with a bias row), 4 used per token, a 201088-token vocabulary, untied.
constexpr u64 embd = 2880, heads = 64, kv_heads = 8, head_dim = 64, ff = 2880, vocab = 201088;
constexpr u64 q_dim = heads * head_dim, kv_dim = kv_heads * head_dim;
// q, k, v and o with their biases, and one sink per query head.
constexpr u64 attention = embd * q_dim * 2 + embd * kv_dim * 2 + q_dim + 2 * kv_dim + embd + heads;
constexpr u64 router(u64 experts) { return experts * embd + experts; }
constexpr u64 expert = 3 * embd * ff + 2 * ff + embd;  // gate, up, down and their biases
constexpr u64 norms = 2 * embd;                        // before the attention and before the experts
constexpr u64 layer(u64 experts, u64 used) { return attention + norms + router(experts) + used * expert; }
constexpr u64 embedding = vocab * embd;  // and as many in the untied output head
constexpr u64 total(u64 layers, u64 experts) { return layers * layer(experts, experts) + 2 * embedding + embd; }

double billions(u64 n, int decimals) {
    const double scale = std::pow(10.0, decimals);
    return std::round(static_cast<double>(n) / 1e9 * scale) / scale;
}

constexpr format in_mxfp4{format_id::mxfp4}, in_bf16{format_id::bf16}, in_f32{format_id::f32};

}  // namespace

TEST_CASE("gpt-oss-20b and -120b: parameter counts by hand from config.json, against the model card") {
    using namespace presets;
    // Table 1 of the model card: 20.91B total, 3.61B active; 116.83B and 5.13B; MLP 19.12B and
    // 114.71B, attention 0.64B and 0.96B, embedding and unembedding 1.16B.
    const u64 t20 = total(24, 32), t120 = total(36, 128);
    CHECK(billions(t20, 2) == 20.91);
    CHECK(billions(t120, 2) == 116.83);
    CHECK(billions(24 * (router(32) + 32 * expert), 2) == 19.12);
    CHECK(billions(36 * (router(128) + 128 * expert), 2) == 114.71);
    CHECK(billions(24 * attention, 2) == 0.64);
    CHECK(billions(36 * attention, 2) == 0.96);
    CHECK(billions(2 * embedding, 2) == 1.16);
    CHECK(param_count(gpt_oss_20b_entry.shape) == t20);
    CHECK(param_count(gpt_oss_120b_entry.shape) == t120);
    CHECK(gpt_oss_20b_entry.published_params == t20);
    CHECK(gpt_oss_120b_entry.published_params == t120);
    // The active count: a token uses 4 experts and their bias rows. The card leaves the embedding
    // table out of it (a lookup, no compute); vramplan counts it whole, as other cards do.
    const u64 a20 = 24 * layer(32, 4) + 2 * embedding + embd, a120 = 36 * layer(128, 4) + 2 * embedding + embd;
    CHECK(active_param_count(gpt_oss_20b_entry.shape) == a20);
    CHECK(active_param_count(gpt_oss_120b_entry.shape) == a120);
    CHECK(billions(a20 - embedding, 2) == 3.61);
    CHECK(billions(a120 - embedding, 2) == 5.13);
}

TEST_CASE("gpt-oss as released: MXFP4 experts, bf16 matrices, f32 vectors and router, bytes by hand") {
    using namespace presets;
    // MXFP4: 32 values in 17 bytes (16 bytes of 4-bit values and an 8-bit shared exponent). The
    // router stays f32, as llama.cpp keeps it (the release has it in bf16), and so do the vectors.
    auto release_bytes = [](u64 layers, u64 experts) {
        const u64 matrices = embd * q_dim * 2 + embd * kv_dim * 2;  // q, o, k, v
        const u64 vectors = q_dim + 2 * kv_dim + embd + heads + norms + experts + experts * (2 * ff + embd);
        const u64 expert_values = experts * 3 * embd * ff;
        return layers * (matrices * 2 + (experts * embd + vectors) * 4 + expert_values / 32 * 17) + 2 * embedding * 2 +
               embd * 4;
    };
    const model_desc m20 = describe(gpt_oss_20b_entry, uniform_policy(in_bf16));
    CHECK(weight_bytes(m20) == release_bytes(24, 32));
    CHECK(m20.layer(0)[tensor_role::ffn_gate_exps] == in_mxfp4);
    CHECK(m20.layer(0)[tensor_role::ffn_down_exps_bias] == in_f32);
    CHECK(weight_bytes(describe(gpt_oss_120b_entry, uniform_policy(in_bf16))) == release_bytes(36, 128));
    // The type-level twin, with the release's MXFP4 experts by default, and with others on request.
    constexpr model_desc ct = gpt_oss_20b<bf16>::describe();
    CHECK(ct == m20);
    CHECK(gpt_oss_20b<bf16>::weight_bytes() == release_bytes(24, 32));
    constexpr model_desc q8 = gpt_oss_20b<q8_0, f16, q8_0, q8_0, f32, q8_0>::describe();
    CHECK(q8 == with_expert_format(describe(gpt_oss_20b_entry, uniform_policy(q8_0::value)), q8_0::value));
}

TEST_CASE("gpt-oss KV cache: full layers hold the context, sliding ones a ring of 128 + micro-batch - 1") {
    using namespace presets;
    const target_desc big{"big", 1ull << 40, 0};
    const limits lim{.context = 8192, .ubatch = 512};
    // A row is 8 KV heads x 64 values, f16; layer 0 slides, layer 1 attends to everything, and so on.
    const u64 row = kv_dim * 2;
    const plan p20 = plan_inference(describe(gpt_oss_20b_entry, uniform_policy(in_bf16)), big, lim);
    CHECK(p20.gpu.kv.bytes == (12 * 8192 + 12 * (128 + 512 - 1)) * row * 2);
    CHECK(p20.kv_positions_of(0) == 639);
    CHECK(p20.kv_positions_of(1) == 8192);
    const plan p120 = plan_inference(describe(gpt_oss_120b_entry, uniform_policy(in_bf16)), big, lim);
    CHECK(p120.gpu.kv.bytes == (18 * 8192 + 18 * 639) * row * 2);
    // One more token of context costs only the full layers: 18 x 2 x 1 KiB.
    CHECK(kv_bytes_per_token(p120.model) == 18 * row * 2);
    // Decoding one token at a time, the ring is the window itself.
    const plan d =
        plan_inference(describe(gpt_oss_20b_entry, uniform_policy(in_bf16)), big, {.context = 131072, .ubatch = 1});
    CHECK(d.gpu.kv.bytes == (12 * 131072 + 12 * 128) * row * 2);
}

namespace {
// A small gpt-oss GGUF as llama.cpp's converter lays it out (the feed-forward's norm is named
// post_attention_norm), tensors zero-filled, experts in MXFP4. `tweak` breaks it.
struct gpt_oss_file {
    u64 layers = 2, embd = 64, heads = 4, kv_heads = 2, head_dim = 16, ff = 32, experts = 4, used = 2, vocab = 32;
    u64 window = 8;          // ~0: no attention.sliding_window key
    u64 pattern = 0;         // attention.sliding_window_pattern when not 0
    u64 down_bias_rows = 0;  // 0: experts
    void write(const std::string& path) const {
        io::gguf_writer w;
        w.set_string("general.architecture", "gpt-oss")
            .set_u32("gpt-oss.block_count", static_cast<std::uint32_t>(layers))
            .set_u32("gpt-oss.embedding_length", static_cast<std::uint32_t>(embd))
            .set_u32("gpt-oss.feed_forward_length", static_cast<std::uint32_t>(ff))
            .set_u32("gpt-oss.expert_feed_forward_length", static_cast<std::uint32_t>(ff))
            .set_u32("gpt-oss.attention.head_count", static_cast<std::uint32_t>(heads))
            .set_u32("gpt-oss.attention.head_count_kv", static_cast<std::uint32_t>(kv_heads))
            .set_u32("gpt-oss.attention.key_length", static_cast<std::uint32_t>(head_dim))
            .set_u32("gpt-oss.attention.value_length", static_cast<std::uint32_t>(head_dim))
            .set_u32("gpt-oss.expert_count", static_cast<std::uint32_t>(experts))
            .set_u32("gpt-oss.expert_used_count", static_cast<std::uint32_t>(used))
            .set_string("gpt-oss.rope.scaling.type", "yarn");
        if (window != ~0ull) w.set_u32("gpt-oss.attention.sliding_window", static_cast<std::uint32_t>(window));
        if (pattern) w.set_u32("gpt-oss.attention.sliding_window_pattern", static_cast<std::uint32_t>(pattern));
        auto tensor = [&](const std::string& name, std::vector<u64> dims, format f = in_f32) {
            add_zero_tensor(w, name, dims, f);
        };
        tensor("token_embd.weight", {embd, vocab});
        tensor("output_norm.weight", {embd});
        tensor("output.weight", {embd, vocab});
        const u64 q = heads * head_dim, kv = kv_heads * head_dim;
        for (u64 l = 0; l < layers; ++l) {
            const std::string p = "blk." + std::to_string(l) + ".";
            tensor(p + "attn_norm.weight", {embd});
            tensor(p + "attn_q.weight", {embd, q});
            tensor(p + "attn_k.weight", {embd, kv});
            tensor(p + "attn_v.weight", {embd, kv});
            tensor(p + "attn_q.bias", {q});
            tensor(p + "attn_k.bias", {kv});
            tensor(p + "attn_v.bias", {kv});
            tensor(p + "attn_output.weight", {q, embd});
            tensor(p + "attn_output.bias", {embd});
            tensor(p + "attn_sinks.weight", {heads});
            tensor(p + "post_attention_norm.weight", {embd});
            tensor(p + "ffn_gate_inp.weight", {embd, experts});
            tensor(p + "ffn_gate_inp.bias", {experts});
            tensor(p + "ffn_gate_exps.weight", {embd, ff, experts}, in_mxfp4);
            tensor(p + "ffn_up_exps.weight", {embd, ff, experts}, in_mxfp4);
            tensor(p + "ffn_down_exps.weight", {ff, embd, experts}, in_mxfp4);
            tensor(p + "ffn_gate_exps.bias", {ff, experts});
            tensor(p + "ffn_up_exps.bias", {ff, experts});
            tensor(p + "ffn_down_exps.bias", {embd, down_bias_rows ? down_bias_rows : experts});
        }
        w.write(path);
    }
};
}  // namespace

TEST_CASE("a gpt-oss GGUF written here plans every tensor at its exact bytes") {
    const std::string path = test_temp_path("vramplan_gpt_oss.gguf");
    gpt_oss_file{}.write(path);
    const model_desc m = io::describe(io::gguf_file::open(path));
    std::filesystem::remove(path);
    const auto& s = m.shape;
    CHECK(s.attn_sinks);
    CHECK(s.attn_output_bias);
    CHECK(s.expert_bias);
    CHECK(s.qkv_bias);
    CHECK(s.head_dim == 16);
    CHECK(s.sliding_window == 8);
    CHECK(m.layer(0).attention == attention_kind::sliding);
    CHECK(m.layer(1).attention == attention_kind::full);
    CHECK(m.layer(0)[tensor_role::ffn_up_exps] == in_mxfp4);
    // Per layer, f32 unless said: norms 2 x 64; q 64 x 64 and o 64 x 64 with biases of 64; k and v
    // 32 x 64 with biases of 32; 4 sinks; the router 4 x 64 and its 4 biases; MXFP4 experts of
    // 4 x 32 rows of 64 (gate, up: 2 blocks of 17 bytes a row) and 4 x 64 rows of 32 (down: 1 block);
    // expert biases 4 x 32, 4 x 32 and 4 x 64.
    const u64 f32_values = 2 * 64 + 2 * 64 * 64 + 2 * 64 + 2 * 32 * 64 + 2 * 32 + 4 + 4 * 64 + 4 + 4 * (32 + 32 + 64);
    const u64 layer = f32_values * 4 + 2 * (4 * 32 * 2 * 17) + 4 * 64 * 17;
    const u64 globals = (2 * 32 * 64 + 64) * 4;
    CHECK(weight_bytes(m) == 2 * layer + globals);
    const u64 expert_values = 3 * 4 * 32 * 64;
    CHECK(param_count(m) == 2 * (f32_values + expert_values) + 2 * 32 * 64 + 64);
    // A token uses 2 of the 4 experts and 2 of their bias rows.
    CHECK(active_param_count(s) == param_count(m) - 2 * (expert_values / 2 + 2 * (32 + 32 + 64)));
    // The plan holds every tensor at its own size.
    const plan p =
        plan_inference(m, target_desc{"cpu", 1ull << 30, 0}, {.context = 64, .ubatch = 4}, {.alignment = 32});
    const auto all = buffers(p);
    REQUIRE(find_buffer(all, "blk.1.ffn_down_exps.bias"));
    CHECK(find_buffer(all, "blk.1.ffn_down_exps.bias")->bytes == 4 * 64 * 4);
    CHECK(find_buffer(all, "blk.0.attn_output.bias")->bytes == 64 * 4);
    CHECK(p.kv_positions_of(0) == 8 + 4 - 1);
    CHECK(p.kv_positions_of(1) == 64);
    // Experts in the host tier take their biases with them (as llama.cpp's --n-cpu-moe does).
    const plan h = plan_inference(m, target_desc{"cpu", 1ull << 30, 0}, {.context = 64, .ubatch = 4},
                                  {.alignment = 32, .host_expert_layers = 2});
    CHECK(h.role_tier(0, tensor_role::ffn_up_exps_bias) == tier::host);
    CHECK(h.role_tier(0, tensor_role::ffn_gate_inp_bias) == tier::gpu);
    CHECK(h.host.weights.bytes == 2 * (2 * 4 * 32 * 2 * 17 + 4 * 64 * 17 + 4 * (32 + 32 + 64) * 4));
    // The runtime says what it does not run, by the model's name.
    CHECK_THROWS_WITH_AS(runtime::check_runnable(m), doctest::Contains("gpt-oss's block"), error);
}

TEST_CASE("gpt-oss GGUF metadata: the window is required, its pattern may be given, and errors name what is wrong") {
    const std::string path = test_temp_path("vramplan_gpt_oss_bad.gguf");
    auto describe = [&](const gpt_oss_file& f) -> std::string {
        f.write(path);
        try {
            const model_desc m = io::describe(io::gguf_file::open(path));
            std::filesystem::remove(path);
            std::string kinds;
            for (u64 l = 0; l < m.shape.n_layer; ++l)
                kinds += std::string(attention_kind_name(m.layer(l).attention)) + " ";
            return kinds;
        } catch (const error& e) {
            std::filesystem::remove(path);
            return e.what();
        }
    };
    gpt_oss_file four;
    four.layers = 4;
    CHECK(describe(four) == "sliding full sliding full ");
    four.pattern = 4;  // three sliding layers to each full one
    CHECK(describe(four) == "sliding sliding sliding full ");
    four.pattern = 1;  // llama.cpp: a period of 1 makes every layer full
    CHECK(describe(four) == "full full full full ");
    four.pattern = 0;
    gpt_oss_file no_window;
    no_window.window = ~0ull;
    CHECK(describe(no_window).find("attention.sliding_window") != std::string::npos);
    gpt_oss_file zero_window;
    zero_window.window = 0;
    CHECK(describe(zero_window).find("is 0") != std::string::npos);
    gpt_oss_file bad_bias;
    bad_bias.down_bias_rows = 3;
    const std::string e = describe(bad_bias);
    CHECK(e.find("blk.0.ffn_down_exps.bias") != std::string::npos);
    CHECK(e.find("[64, 3]") != std::string::npos);
    CHECK(e.find("[64, 4]") != std::string::npos);
}

TEST_CASE("gpt-oss's config.json gives the preset's shape") {
    std::string layer_types;
    for (int l = 0; l < 24; ++l)
        layer_types += std::string(l ? ", " : "") + (l % 2 ? "\"full_attention\"" : "\"sliding_attention\"");
    const std::string config = R"({
  "architectures": ["GptOssForCausalLM"], "attention_bias": true, "attention_dropout": 0.0,
  "eos_token_id": 200002, "experts_per_token": 4, "head_dim": 64, "hidden_act": "silu",
  "hidden_size": 2880, "initial_context_length": 4096, "initializer_range": 0.02,
  "intermediate_size": 2880, "layer_types": [)" +
                               layer_types + R"(],
  "max_position_embeddings": 131072, "model_type": "gpt_oss", "num_attention_heads": 64,
  "num_experts_per_tok": 4, "num_hidden_layers": 24, "num_key_value_heads": 8, "num_local_experts": 32,
  "output_router_logits": false, "pad_token_id": 199999,
  "quantization_config": {"modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router",
                          "model.embed_tokens", "lm_head"], "quant_method": "mxfp4"},
  "rms_norm_eps": 1e-05,
  "rope_scaling": {"beta_fast": 32.0, "beta_slow": 1.0, "factor": 32.0, "original_max_position_embeddings": 4096,
                   "rope_type": "yarn", "truncate": false},
  "rope_theta": 150000, "router_aux_loss_coef": 0.9, "sliding_window": 128, "swiglu_limit": 7.0,
  "tie_word_embeddings": false, "torch_dtype": "bfloat16", "use_cache": true, "vocab_size": 201088
})";
    const std::string path = write_temp_text("vramplan_gpt_oss_config.json", config);
    const io::config_description d = io::describe_config(path);
    const decoder_shape& s = d.shape;
    CHECK(s == presets::gpt_oss_20b_entry.shape);
    // quantization_config's MXFP4 is the experts' format, as the preset's release format is.
    REQUIRE(d.expert_format);
    CHECK(*d.expert_format == in_mxfp4);
    REQUIRE(d.notes.size() == 1);
    CHECK(d.notes[0].find("MXFP4") != std::string::npos);
    const model_desc from_config =
        with_expert_format(make_model("config", s, uniform_policy(in_bf16)), *d.expert_format);
    CHECK(weight_bytes(from_config) ==
          weight_bytes(presets::describe(presets::gpt_oss_20b_entry, uniform_policy(in_bf16))));
    // A layer_types list that does not alternate is refused, naming the layer.
    std::string broken = config;
    broken.replace(broken.find("\"full_attention\""), 16, "\"sliding_attention\"");
    std::filesystem::remove(path);
    const std::string bad = write_temp_text("vramplan_gpt_oss_config.json", broken);
    CHECK_THROWS_WITH_AS(io::shape_from_config(bad), doctest::Contains("layer 1"), error);
    std::filesystem::remove(bad);
}
