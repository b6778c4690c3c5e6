// Multi-head latent attention (DeepSeek-V2/V3, Kimi-K2): parameter counts derived here from the
// published config.json numbers tensor by tensor, the latent KV cache by hand (kv_lora_rank +
// qk_rope_head_dim values per token and layer, one plane), GGUF files written here in llama.cpp's
// deepseek2 layout, and config.json. Nothing here comes from vramplan's footprint code.
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
#include "vramplan/model/training.hpp"
#include "vramplan/plan/buffers.hpp"
#include "vramplan/plan/plan.hpp"
#include "vramplan/runtime/forward_pass.hpp"

using namespace vramplan;

namespace {
using u64 = std::uint64_t;

// One model's config.json numbers.
struct mla_numbers {
    u64 embd, heads, q_lora, kv_lora, nope, rope, v, ff, expert_ff, experts, used, shared, dense_lead, layers, vocab;
    bool probs_bias;
};
// q (through the bottleneck and its norm, or straight), kv_a_mqa, the latent's norm, k_b and v_b
// per head, the output projection; two norms; then a dense SwiGLU or the router (and its bias),
// the routed experts a token uses (or all) and the shared ones.
u64 layer_params(const mla_numbers& n, bool moe, bool active) {
    const u64 q = n.q_lora ? n.embd * n.q_lora + n.q_lora + n.q_lora * n.heads * (n.nope + n.rope)
                           : n.embd * n.heads * (n.nope + n.rope);
    const u64 attention = q + n.embd * (n.kv_lora + n.rope) + n.kv_lora + n.heads * n.kv_lora * n.nope +
                          n.heads * n.v * n.kv_lora + n.heads * n.v * n.embd;
    const u64 norms = 2 * n.embd;
    if (!moe) return attention + norms + 3 * n.embd * n.ff;
    const u64 expert = 3 * n.embd * n.expert_ff;
    return attention + norms + n.experts * n.embd + (n.probs_bias ? n.experts : 0) +
           (active ? n.used : n.experts) * expert + n.shared * expert;
}
u64 model_params(const mla_numbers& n, bool active = false) {
    return n.dense_lead * layer_params(n, false, active) + (n.layers - n.dense_lead) * layer_params(n, true, active) +
           2 * n.vocab * n.embd + n.embd;
}
double billions(u64 n, int decimals) {
    const double scale = std::pow(10.0, decimals);
    return std::round(static_cast<double>(n) / 1e9 * scale) / scale;
}

constexpr mla_numbers deepseek_v3{7168, 128, 1536, 512, 128, 64, 128, 18432, 2048, 256, 8, 1, 3, 61, 129280, true};
constexpr mla_numbers kimi_k2{7168, 64, 1536, 512, 128, 64, 128, 18432, 2048, 384, 8, 1, 1, 61, 163840, true};
constexpr mla_numbers deepseek_v2_lite{2048, 16, 0, 512, 128, 64, 128, 10944, 1408, 64, 6, 2, 1, 27, 102400, false};

}  // namespace

TEST_CASE("DeepSeek-V3 and Kimi-K2: parameter counts by hand from config.json, against the model cards") {
    using namespace presets;
    // DeepSeek-V3's card: 671B total, 37B activated (the main model; its multi-token-prediction
    // module, which GGUF conversions drop, is the rest of the 685B of the checkpoint).
    CHECK(billions(model_params(deepseek_v3), 0) == 671);
    CHECK(static_cast<u64>(static_cast<double>(model_params(deepseek_v3, true)) / 1e9) == 37);  // 37.55: the card cuts
    CHECK(param_count(deepseek_v3_entry.shape) == model_params(deepseek_v3));
    CHECK(active_param_count(deepseek_v3_entry.shape) == model_params(deepseek_v3, true));
    CHECK(deepseek_v3_entry.published_params == model_params(deepseek_v3));
    // Kimi-K2's card: 1 trillion total, 32 billion activated.
    CHECK(billions(model_params(kimi_k2), 2) == 1026.41);
    CHECK(static_cast<u64>(static_cast<double>(model_params(kimi_k2)) / 1e12) == 1);
    CHECK(static_cast<u64>(static_cast<double>(model_params(kimi_k2, true)) / 1e9) == 32);
    CHECK(param_count(kimi_k2_entry.shape) == model_params(kimi_k2));
    CHECK(active_param_count(kimi_k2_entry.shape) == model_params(kimi_k2, true));
}

TEST_CASE("latent attention's KV cache: kv_lora_rank + qk_rope_head_dim values per token and layer, one plane") {
    using namespace presets;
    const target_desc big{"big", 1ull << 42, 0};
    // DeepSeek-V3 at 32768 tokens, f16: 61 layers x 32768 x (512 + 64) x 2 bytes. Caching every
    // head's keys (128 + 64) and values (128) instead would take 128 x 320 / 576 = 71 times more.
    const plan p =
        plan_inference(describe(deepseek_v3_entry, uniform_policy(format{format_id::q4_0})), big, {.context = 32768});
    CHECK(p.kv_bytes() == 61ull * 32768 * 576 * 2);
    CHECK(kv_bytes_per_token(p.model) == 61ull * 576 * 2);
    // One plane per layer, named for what it holds.
    const auto all = buffers(p);
    const buffer_info* c0 = find_buffer(all, "cache_latent.0");
    REQUIRE(c0);
    CHECK(c0->bytes == 32768ull * 576 * 2);
    CHECK(find_buffer(all, "cache_k.0") == nullptr);
    CHECK(find_buffer(all, "cache_v.0") == nullptr);
    // Q8_0: 576 values are 18 blocks of 34 bytes.
    const plan q8 = plan_inference(describe(deepseek_v3_entry, uniform_policy(format{format_id::q4_0}, q8_0::value)),
                                   big, {.context = 32768});
    CHECK(q8.kv_bytes() == 61ull * 32768 * 18 * 34);
    // The graph: attention reads the latent, its accumulators as wide as the latent, and the heads'
    // outputs are mapped to 128-value heads before the output projection reads 128 x 128 values.
    const forward_graph& g = p.graph;
    const graph_op& att = g.ops[g.first_op(op_kind::attention)];
    CHECK(att.kv_heads == 1);
    CHECK(att.head_dim == 576);
    CHECK(att.v_dim == 512);
    CHECK(att.heads == 128);
    const graph_op& out = g.ops[g.weight_step(layer_weight(tensor_role::attn_output))];
    CHECK(out.k == 128 * 128);
    CHECK(g.ops[g.weight_step(layer_weight(tensor_role::attn_v_b))].kind == op_kind::head_matmul);
    // The packed activations stay at their lower bound.
    CHECK(p.gpu.activations.bytes == p.act_lower_bound);
    // The runtime says what it does not run yet.
    CHECK_THROWS_WITH_AS(runtime::check_runnable(p.model), doctest::Contains("multi-head latent attention"), error);
    // Training's saved activations are derived for grouped-query attention only: said, not guessed.
    CHECK_THROWS_WITH_AS(training_memory(p.model, training_config{}), doctest::Contains("inference only"), error);
}

namespace {
// A small deepseek2 GGUF as current llama.cpp converters write it (attn_k_b and attn_v_b, the
// MLA widths under key_length_mla), tensors zero-filled. 1 dense layer and 2 with experts.
struct deepseek2_file {
    u64 layers = 3, embd = 64, heads = 4, q_lora = 32, kv_lora = 32, nope = 16, rope = 16, v = 16, ff = 96,
        expert_ff = 32, experts = 4, used = 2, shared = 1, lead = 1, vocab = 32, mtp = 0;
    bool probs_bias = true, legacy_kv_b = false, kv_lora_key = true;
    void write(const std::string& path) const {
        io::gguf_writer w;
        const auto u32 = [](u64 x) { return static_cast<std::uint32_t>(x); };
        w.set_string("general.architecture", "deepseek2")
            .set_u32("deepseek2.block_count", u32(layers + mtp))
            .set_u32("deepseek2.embedding_length", u32(embd))
            .set_u32("deepseek2.feed_forward_length", u32(ff))
            .set_u32("deepseek2.expert_feed_forward_length", u32(expert_ff))
            .set_u32("deepseek2.attention.head_count", u32(heads))
            .set_u32("deepseek2.attention.head_count_kv", 1)
            .set_u32("deepseek2.rope.dimension_count", u32(rope))
            .set_u32("deepseek2.expert_count", u32(experts))
            .set_u32("deepseek2.expert_used_count", u32(used))
            .set_u32("deepseek2.expert_shared_count", u32(shared))
            .set_u32("deepseek2.leading_dense_block_count", u32(lead));
        if (q_lora) w.set_u32("deepseek2.attention.q_lora_rank", u32(q_lora));
        if (kv_lora_key) w.set_u32("deepseek2.attention.kv_lora_rank", u32(kv_lora));
        if (!legacy_kv_b) {
            w.set_u32("deepseek2.attention.key_length", u32(kv_lora + rope))
                .set_u32("deepseek2.attention.value_length", u32(kv_lora))
                .set_u32("deepseek2.attention.key_length_mla", u32(nope + rope))
                .set_u32("deepseek2.attention.value_length_mla", u32(v));
        } else {
            w.set_u32("deepseek2.attention.key_length", u32(nope + rope))
                .set_u32("deepseek2.attention.value_length", u32(v));
        }
        if (mtp) w.set_u32("deepseek2.nextn_predict_layers", u32(mtp));
        auto tensor = [&](const std::string& name, std::vector<u64> dims) { add_zero_tensor(w, name, dims); };
        tensor("token_embd.weight", {embd, vocab});
        tensor("output_norm.weight", {embd});
        tensor("output.weight", {embd, vocab});
        const u64 hd = nope + rope;
        for (u64 l = 0; l < layers + mtp; ++l) {
            const std::string p = "blk." + std::to_string(l) + ".";
            tensor(p + "attn_norm.weight", {embd});
            if (q_lora) {
                tensor(p + "attn_q_a.weight", {embd, q_lora});
                tensor(p + "attn_q_a_norm.weight", {q_lora});
                tensor(p + "attn_q_b.weight", {q_lora, heads * hd});
            } else {
                tensor(p + "attn_q.weight", {embd, heads * hd});
            }
            tensor(p + "attn_kv_a_mqa.weight", {embd, kv_lora + rope});
            tensor(p + "attn_kv_a_norm.weight", {kv_lora});
            if (legacy_kv_b) {
                tensor(p + "attn_kv_b.weight", {kv_lora, heads * (nope + v)});
            } else {
                tensor(p + "attn_k_b.weight", {nope, kv_lora, heads});
                tensor(p + "attn_v_b.weight", {kv_lora, v, heads});
            }
            tensor(p + "attn_output.weight", {heads * v, embd});
            tensor(p + "ffn_norm.weight", {embd});
            if (l < lead) {
                tensor(p + "ffn_gate.weight", {embd, ff});
                tensor(p + "ffn_up.weight", {embd, ff});
                tensor(p + "ffn_down.weight", {ff, embd});
                continue;
            }
            tensor(p + "ffn_gate_inp.weight", {embd, experts});
            if (probs_bias) tensor(p + "exp_probs_b.bias", {experts});
            tensor(p + "ffn_gate_exps.weight", {embd, expert_ff, experts});
            tensor(p + "ffn_up_exps.weight", {embd, expert_ff, experts});
            tensor(p + "ffn_down_exps.weight", {expert_ff, embd, experts});
            tensor(p + "ffn_gate_shexp.weight", {embd, expert_ff * shared});
            tensor(p + "ffn_up_shexp.weight", {embd, expert_ff * shared});
            tensor(p + "ffn_down_shexp.weight", {expert_ff * shared, embd});
            if (l >= layers) tensor(p + "nextn.eh_proj.weight", {2 * embd, embd});  // the MTP block's own
        }
        w.write(path);
    }
    mla_numbers numbers() const {
        return {embd,      heads,   q_lora, kv_lora, nope, rope,   v,     ff,
                expert_ff, experts, used,   shared,  lead, layers, vocab, probs_bias};
    }
};

model_desc described(const deepseek2_file& f) { return describe_written(f, "vramplan_deepseek2.gguf"); }
}  // namespace

TEST_CASE("a deepseek2 GGUF written here plans every tensor; its cache is the latent") {
    const deepseek2_file f;
    const model_desc m = described(f);
    const auto& s = m.shape;
    CHECK(s.latent_attention());
    CHECK(s.kv_lora_rank == 32);
    CHECK(s.q_lora_rank == 32);
    CHECK(s.head_dim == 32);
    CHECK(s.rope_dim == 16);
    CHECK(s.v_head_dim == 16);
    CHECK(s.n_ff_shared == 32);
    CHECK(s.expert_probs_bias);
    CHECK(m.layer(0).ffn == ffn_kind::dense);
    CHECK(m.layer(1).ffn == ffn_kind::moe);
    // Every tensor is f32 here: parameters x 4 bytes, and the count is the hand-derived one.
    CHECK(param_count(m) == model_params(f.numbers()));
    CHECK(weight_bytes(m) == 4 * model_params(f.numbers()));
    CHECK(active_param_count(s) == model_params(f.numbers(), true));
    // 100 tokens x (32 + 16) values x 3 layers, f16, one plane.
    const plan p =
        plan_inference(m, target_desc{"cpu", 1ull << 30, 0}, {.context = 100, .ubatch = 8}, {.alignment = 32});
    CHECK(p.kv_bytes() == 3ull * 100 * 48 * 2);
    // Without the query bottleneck (DeepSeek-V2-Lite): attn_q straight from the input.
    deepseek2_file lite;
    lite.q_lora = 0;
    lite.probs_bias = false;
    const model_desc l = described(lite);
    CHECK(l.shape.q_lora_rank == 0);
    CHECK(param_count(l) == model_params(lite.numbers()));
    // The multi-token-prediction block after the model's layers is left out of the plan.
    deepseek2_file with_mtp;
    with_mtp.mtp = 1;
    const model_desc t = described(with_mtp);
    CHECK(t.shape.n_layer == 3);
    CHECK(param_count(t) == model_params(f.numbers()));
}

TEST_CASE("deepseek2 GGUF metadata: what is missing or from an older converter is one error naming it") {
    auto refused = [](const deepseek2_file& f) -> std::string {
        try {
            (void)described(f);
        } catch (const error& e) {
            return e.what();
        }
        return "accepted";
    };
    deepseek2_file legacy;
    legacy.legacy_kv_b = true;
    const std::string e = refused(legacy);
    CHECK(e.find("attn_kv_b") != std::string::npos);
    CHECK(e.find("convert it again") != std::string::npos);
    deepseek2_file no_latent;
    no_latent.kv_lora_key = false;
    CHECK(refused(no_latent).find("kv_lora_rank") != std::string::npos);
    deepseek2_file no_rope;
    no_rope.rope = 0;  // latent attention rotates a part of each head
    CHECK(refused(no_rope).find("rope.dimension_count") != std::string::npos);
}

TEST_CASE(
    "DeepSeek-V3's and DeepSeek-V2-Lite's config.json give their shapes, and the MTP layer is said to be left out") {
    const std::string v3 = R"({
  "architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "vocab_size": 129280,
  "hidden_size": 7168, "intermediate_size": 18432, "moe_intermediate_size": 2048, "num_hidden_layers": 61,
  "num_nextn_predict_layers": 1, "num_attention_heads": 128, "num_key_value_heads": 128, "n_shared_experts": 1,
  "n_routed_experts": 256, "ep_size": 1, "routed_scaling_factor": 2.5, "kv_lora_rank": 512, "q_lora_rank": 1536,
  "qk_rope_head_dim": 64, "v_head_dim": 128, "qk_nope_head_dim": 128, "topk_method": "noaux_tc", "n_group": 8,
  "topk_group": 4, "num_experts_per_tok": 8, "moe_layer_freq": 1, "first_k_dense_replace": 3,
  "norm_topk_prob": true, "scoring_func": "sigmoid", "hidden_act": "silu", "max_position_embeddings": 163840,
  "rms_norm_eps": 1e-06, "rope_theta": 10000, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
  "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 1.0, "mscale_all_dim": 1.0,
                   "original_max_position_embeddings": 4096, "type": "yarn"},
  "quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
                          "weight_block_size": [128, 128]}
})";
    const std::string path = write_temp_text("vramplan_deepseek_v3_config.json", v3);
    const io::config_description d = io::describe_config(path);
    std::filesystem::remove(path);
    CHECK(d.shape == presets::deepseek_v3_entry.shape);
    // Its FP8 weights: e4m3 values with an f32 scale per 128 x 128 block in every projection
    // (checkpoint_format_test.cpp derives those bytes), and the notes say so.
    CHECK_FALSE(d.expert_format);
    CHECK(d.linear_format == format{.id = format_id::fp8_block, .group = 128});
    REQUIRE(d.notes.size() == 2);
    CHECK(d.notes[0].find("fp8 (e4m3) in blocks of 128 x 128") != std::string::npos);
    CHECK(d.notes[1].find("1 multi-token-prediction layer") != std::string::npos);
    // V2-Lite: no query bottleneck (q_lora_rank null), 2 shared experts, no choice bias; 15.7B.
    const std::string lite = R"({
  "model_type": "deepseek_v2", "vocab_size": 102400, "hidden_size": 2048, "intermediate_size": 10944,
  "moe_intermediate_size": 1408, "num_hidden_layers": 27, "num_attention_heads": 16, "num_key_value_heads": 16,
  "n_shared_experts": 2, "n_routed_experts": 64, "kv_lora_rank": 512, "q_lora_rank": null, "qk_rope_head_dim": 64,
  "v_head_dim": 128, "qk_nope_head_dim": 128, "topk_method": "greedy", "num_experts_per_tok": 6,
  "moe_layer_freq": 1, "first_k_dense_replace": 1, "norm_topk_prob": false, "max_position_embeddings": 163840,
  "rms_norm_eps": 1e-06, "rope_theta": 10000, "tie_word_embeddings": false
})";
    const std::string lite_path = write_temp_text("vramplan_deepseek_v2_lite_config.json", lite);
    const decoder_shape s = io::shape_from_config(lite_path);
    std::filesystem::remove(lite_path);
    CHECK(param_count(s) == model_params(deepseek_v2_lite));
    CHECK(billions(param_count(s), 1) == 15.7);
    CHECK_FALSE(s.norm_topk_prob);
    CHECK(s.n_ff_shared == 2 * 1408);
    CHECK_FALSE(s.expert_probs_bias);
    // A number past a double's range is one error naming the file (the config.json fuzzer's find).
    const std::string huge = write_temp_text("vramplan_huge_number.json", R"({"model_type": "llama", "x": 4e0960})");
    CHECK_THROWS_WITH_AS(io::shape_from_config(huge), doctest::Contains("number too large"), error);
    std::filesystem::remove(huge);
}
