// Gemma 2 and 3 run: GGUF files of both, written here, against the double-precision reference
// (embedding scale, post-norms, GELU, soft-capped scores and logits, Gemma 3's q/k norms and the
// local RoPE base of its sliding layers), and the numbers a file cannot show (the 27B query scale).
#include <doctest/doctest.h>

#include <cmath>

#include "fixtures.hpp"
#include "reference_run.hpp"
#include "vramplan/io/hf_config.hpp"
#include "vramplan/model/decoder_graph.hpp"
#include "vramplan/model/presets.hpp"

using namespace vramplan;
using reference_run::gap;
using reference_run::run;
using reference_run::written_model;

namespace {
// 24 positions: a prefill of 8, then 16 decode steps, so a 5-token window's ring (5 + 8 - 1 rows)
// wraps and overwrites positions the queries no longer see.
const std::vector<std::int32_t> prompt{5, 17, 33, 2,  40, 11, 29, 8,  3,  60, 14, 25,
                                       9, 50, 1,  44, 38, 6,  21, 12, 57, 30, 7,  19};
}  // namespace

TEST_CASE("a Gemma 2 file runs as the reference: embedding scale, post-norms, GELU and soft-capping") {
    test_model::spec s = test_model::gemma2_spec(5);
    s.weights = format{format_id::q8_0};
    s.layers = 4;
    const written_model written("vramplan_gemma2.gguf", s, 3);
    const auto& [path, weights, file, m] = written;
    CHECK(m.shape.embed_scale);
    CHECK(m.shape.attn_softcap == 1.5f);  // small caps, so that tanh bends random scores and logits
    CHECK(m.shape.final_softcap == 4.0f);
    CHECK(m.shape.tied_output);
    CHECK(m.layer(0).attention == attention_kind::sliding);
    CHECK(m.layer(1).attention == attention_kind::full);
    const auto ref = test_model::reference_logits(weights, prompt);
    const auto got = run(path, prompt, 8, 1ull << 30, format{format_id::f32});
    CHECK(gap(got.logits, ref).within_rounding());
    // A Q8_0 cache in the same ring stays within 2% of the logits' range, measured on f16 weights
    // so that the error is the cache's alone: Q8_0 weights round the activations to Q8_0 as well,
    // and those rounding steps, flipped by the cache's error, compound with it (6% here).
    {
        test_model::spec f16 = s;
        f16.weights = format{format_id::f16};
        const written_model w16("vramplan_gemma2_f16.gguf", f16, 3);
        const auto ref16 = test_model::reference_logits(w16.weights, prompt);
        const auto q8 = gap(run(w16.path, prompt, 8, 1ull << 30, format{format_id::q8_0}).logits, ref16);
        CHECK(q8.worst <= 0.02 * (1 + q8.scale));
    }
    for (const auto& row : got.logits)
        for (float v : row) CHECK(std::fabs(v) <= 4.0f);  // the final cap bounds every logit
    // Each Gemma detail matters: without any one of them the reference is far off.
    auto no_caps = weights;
    no_caps.s.attn_softcap = 0;
    CHECK(gap(test_model::reference_logits(no_caps, prompt), ref).far_beyond_rounding());
    auto no_post = weights;
    for (auto& b : no_post.blk) b.post_attn_norm.clear(), b.post_ffw_norm.clear();
    CHECK(gap(test_model::reference_logits(no_post, prompt), ref).far_beyond_rounding());
    auto no_window = weights;
    no_window.s.sliding_window = 0;
    CHECK(gap(test_model::reference_logits(no_window, prompt), ref).far_beyond_rounding());
    // The sliding layers' cache is the planned ring, not the context.
    const plan p = plan_inference(m, target_desc{"cpu", 1ull << 30, 0}, {.context = 64, .ubatch = 8});
    CHECK(p.kv_positions_of(0) == 12);
    CHECK(p.kv_positions_of(1) == 64);
}

TEST_CASE("a Gemma 3 file runs as the reference: q/k norms, and sliding layers rotate with base 10000") {
    test_model::spec s;
    s.arch = "gemma3";
    s.weights = format{format_id::f16};
    s.layers = 6;  // five sliding layers, then a global one
    s.sliding_window = 5;
    s.rope_base = 1e6f;
    const written_model written("vramplan_gemma3.gguf", s, 9);
    const auto& [path, weights, file, m] = written;
    CHECK(m.shape.qk_norm);
    CHECK(m.shape.rope_base_local == 10000.0f);
    CHECK(m.shape.attn_softcap == 0.0f);
    CHECK(m.layer(4).attention == attention_kind::sliding);
    CHECK(m.layer(5).attention == attention_kind::full);
    const auto ref = test_model::reference_logits(weights, prompt);
    const auto got = run(path, prompt, 7, 1ull << 30, format{format_id::f32});
    CHECK(gap(got.logits, ref).within_rounding());
    // One base for every layer is far off.
    auto one_base = weights;
    one_base.s.arch = "gemma2";  // same block otherwise, but no local base: check only the RoPE
    one_base.s.attn_softcap = one_base.s.final_softcap = 0;
    CHECK(gap(test_model::reference_logits(one_base, prompt), ref).far_beyond_rounding());
}

TEST_CASE("Gemma's softmax scale follows query_pre_attn_scalar, and the presets carry Gemma's numbers") {
    // Gemma 2 27B: query_pre_attn_scalar 144 (n_embd / n_head = 4608 / 32), not head_dim 128.
    decoder_shape s = presets::gemma2_9b_entry.shape;
    CHECK(s.query_pre_attn_scalar == 256.0f);
    CHECK(s.attn_softcap == 50.0f);
    CHECK(s.final_softcap == 30.0f);
    s.head_dim = 128;
    s.query_pre_attn_scalar = 144.0f;
    const forward_graph g = decoder_graph(s);
    const graph_op& att = g.ops[g.first_op(op_kind::attention)];
    CHECK(att.scale == doctest::Approx(1.0 / 12.0).epsilon(1e-7));
    CHECK(att.softcap == 50.0f);
    CHECK(g.ops[g.first_op(op_kind::softcap)].softcap == 30.0f);
    CHECK(g.ops[g.first_op(op_kind::embed)].scale == doctest::Approx(std::sqrt(3584.0)).epsilon(1e-7));
    CHECK(presets::gemma3_27b_entry.shape.query_pre_attn_scalar == 168.0f);  // 5376 / 32
    CHECK(presets::gemma3_4b_entry.shape.rope_base_local == 10000.0f);
}

TEST_CASE("a Gemma soft-capping or query scale that is not a positive number is refused, naming the key") {
    // GGUF: a cap of 0 would divide by zero in c tanh(x / c).
    test_model::spec s = test_model::gemma2_spec(5);
    s.attn_softcap = 0.0f;
    const std::string path = test_temp_path("vramplan_gemma2_bad_cap.gguf");
    test_model::write(path, s, 1);
    CHECK_THROWS_WITH_AS(
        io::describe(io::gguf_file::open(path)),
        doctest::Contains("metadata key 'gemma2.attn_logit_softcapping' is 0; a soft-capping value is a "
                          "positive number"),
        error);
    std::filesystem::remove(path);
    // config.json: the key is named with what it must be; null means none.
    const std::string config = write_temp_text("vramplan_gemma2_bad_scalar.json", R"({
        "model_type": "gemma2", "vocab_size": 256000, "hidden_size": 3584, "num_hidden_layers": 42,
        "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 256, "intermediate_size": 14336,
        "sliding_window": 4096, "query_pre_attn_scalar": -256, "final_logit_softcapping": null})");
    CHECK_THROWS_WITH_AS(io::shape_from_config(config),
                         doctest::Contains("'query_pre_attn_scalar' must be a positive number (or null: none)"), error);
    std::filesystem::remove(config);
}
