// Mixtures of experts and fused projections run: the router's choice by hand, synthetic Mixtral,
// Qwen2-MoE, Qwen3-MoE and Phi-3 files against the double-precision reference, experts in the host
// tier and streamed layers exactly as resident ones, and the real stories260K MoE file producing
// llama.cpp's greedy text.
#include <doctest/doctest.h>

#include "fixtures.hpp"

#include <cmath>
#include <filesystem>

#include "greedy.hpp"
#include "reference_run.hpp"
#include "vramplan/io/tokenizer.hpp"
#include "vramplan/kernels/ffn_math.hpp"

using namespace vramplan;
using reference_run::gap;
using reference_run::run;
using reference_run::written_model;

TEST_CASE("the router takes the softmax's k largest, ties to the lower index, renormalized or not") {
    const float logits[4] = {1.0f, 3.0f, 2.0f, 3.0f};
    std::int32_t ids[3];
    float w[3];
    kernels::route_row(logits, 4, 2, true, ids, w);
    CHECK(ids[0] == 1);
    CHECK(ids[1] == 3);  // the tie with expert 1 goes to the lower index first
    CHECK(w[0] == doctest::Approx(0.5).epsilon(1e-6));
    CHECK(w[1] == doctest::Approx(0.5).epsilon(1e-6));
    // Without renormalization the weights are the probabilities: e^3 / (e^1 + e^2 + 2 e^3).
    const double z = std::exp(1.0) + std::exp(2.0) + 2 * std::exp(3.0);
    kernels::route_row(logits, 4, 3, false, ids, w);
    CHECK(ids[0] == 1);
    CHECK(ids[1] == 3);
    CHECK(ids[2] == 2);
    CHECK(w[0] == doctest::Approx(std::exp(3.0) / z).epsilon(1e-6));
    CHECK(w[2] == doctest::Approx(std::exp(2.0) / z).epsilon(1e-6));
    // One expert of one: weight 1 renormalized, its probability 1 either way.
    kernels::route_row(logits, 1, 1, false, ids, w);
    CHECK(ids[0] == 0);
    CHECK(w[0] == doctest::Approx(1.0));
}

TEST_CASE("GELU is the tanh form and the sigmoid gate is 1 / (1 + e^-x)") {
    for (double x : {-3.0, -1.0, -0.25, 0.0, 0.5, 1.0, 2.5}) {
        const double tanh_form = 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
        CHECK(kernels::gelu(static_cast<float>(x)) == doctest::Approx(tanh_form).epsilon(1e-6));
        CHECK(kernels::sigmoid(static_cast<float>(x)) == doctest::Approx(1 / (1 + std::exp(-x))).epsilon(1e-6));
    }
    CHECK(kernels::gelu(1.0f) == doctest::Approx(0.8411920).epsilon(1e-6));  // published value of the tanh form
}

namespace {

test_model::spec moe_spec(const std::string& arch) {
    test_model::spec s = test_model::qwen2moe_spec();
    s.arch = arch;
    if (arch != "qwen2moe") s.shared_ff = 0;
    if (arch == "llama") s.expert_ff = s.ff;  // Mixtral's experts are feed_forward_length wide
    if (arch == "qwen3moe") s.head_dim = 64;  // q wider than the model, as in Qwen3
    return s;
}

const std::vector<std::int32_t> prompt{3, 14, 15, 9, 26, 5, 35};

}  // namespace

TEST_CASE("Mixtral, Qwen2-MoE and Qwen3-MoE files run as the double-precision reference") {
    for (const std::string arch : {"llama", "qwen2moe", "qwen3moe"}) {
        CAPTURE(arch);
        const written_model written("vramplan_moe_" + arch + ".gguf", moe_spec(arch), 31);
        const auto& [path, weights, file, m] = written;
        REQUIRE(m.shape.n_expert == 4);
        CHECK(m.shape.norm_topk_prob == (arch != "qwen2moe"));
        CHECK(m.shape.shared_expert_gate == (arch == "qwen2moe"));
        const auto ref = test_model::reference_logits(weights, prompt);
        const auto got = run(path, prompt, 5, 1ull << 30, format{format_id::f32});
        CHECK(got.host_expert_layers == 0);
        CHECK(gap(got.logits, ref).within_rounding());
        // The reference tells the routing rules apart: the other normalization is far off.
        auto other = weights;
        other.s.renorm_experts = !weights.s.renorm();
        CHECK(gap(test_model::reference_logits(other, prompt), ref).far_beyond_rounding());
    }
}

TEST_CASE("a dense layer before the expert layers runs its own block variant, as the reference") {
    test_model::spec s = moe_spec("qwen3moe");
    s.dense_lead = 1;
    const written_model written("vramplan_moe_dense_lead.gguf", s, 11);
    const auto& [path, weights, file, m] = written;
    REQUIRE(m.n_kinds == 2);
    CHECK(m.layer(0).ffn == ffn_kind::dense);
    CHECK(m.layer(1).ffn == ffn_kind::moe);
    const auto ref = test_model::reference_logits(weights, prompt);
    CHECK(gap(run(path, prompt, 5, 1ull << 30, format{format_id::f32}).logits, ref).within_rounding());
}

TEST_CASE("experts in the host tier and streamed MoE layers give exactly the resident logits") {
    const written_model written("vramplan_moe_tiers.gguf", moe_spec("qwen2moe"), 7);
    const auto& [path, weights, file, m] = written;
    const auto resident = run(path, prompt, 4, 1ull << 30, format{format_id::f32});
    const auto host = run(path, prompt, 4, 1ull << 30, format{format_id::f32}, {.host_expert_layers = 3});
    CHECK(host.host_expert_layers == 3);
    CHECK(host.logits == resident.logits);
    // One layer resident, its experts in the host tier: the other two stream through staging.
    const auto streamed =
        run(path, prompt, 4, 1ull << 30, format{format_id::f32}, {.gpu_layers = 1, .host_expert_layers = 3});
    CHECK(streamed.gpu_layers == 1);
    CHECK(streamed.host_expert_layers == 1);
    CHECK(streamed.streamed_copies > 0);
    CHECK(streamed.logits == resident.logits);
}

TEST_CASE("Phi-3's fused q/k/v and gate/up projections split into the reference's separate ones, every layer sliding") {
    test_model::spec s = test_model::phi3_spec();
    s.weights = format{format_id::f16};
    s.sliding_window = 6;  // every layer slides, and its ring wraps within the prompt
    const written_model written("vramplan_phi3.gguf", s, 5);
    const auto& [path, weights, file, m] = written;
    CHECK(m.layer(1).attention == attention_kind::sliding);
    CHECK(m.shape.fused_qkv);
    CHECK(m.shape.fused_gate_up);
    const std::vector<std::int32_t> longer{3, 14, 15, 9, 26, 5, 35, 8, 9, 7, 9, 3, 2, 38, 4, 6, 26, 43, 38, 32};
    const auto ref = test_model::reference_logits(weights, longer);
    const auto got = run(path, longer, 6, 1ull << 30, format{format_id::f32});
    CHECK(gap(got.logits, ref).within_rounding());
    // Swapping gate and up is far off: the split takes the gate's rows first.
    auto swapped = weights;
    for (auto& b : swapped.blk) std::swap(b.gate, b.up);
    CHECK(gap(test_model::reference_logits(swapped, longer), ref).far_beyond_rounding());
}

TEST_CASE("the real stories260K MoE file generates llama.cpp's greedy text, with experts resident or on the host") {
    VRAMPLAN_SHARED_MODEL_OR_SKIP(path, "stories260K-moe-f32.gguf");
    const auto file = io::gguf_file::open(path);
    const model_desc m = io::describe(file, "stories260K-moe");
    const io::tokenizer tok = io::tokenizer::from_gguf(file);
    const std::vector<std::int32_t> ids = tok.encode("Once upon a time");
    REQUIRE(ids == std::vector<std::int32_t>{1, 403, 407, 261, 378});
    std::vector<std::int32_t> first;
    for (std::uint64_t host_layers : {0, 5}) {
        CAPTURE(host_layers);
        const plan p = plan_inference(m, target_desc{"cpu", 1ull << 30, 0}, {.context = 64, .ubatch = 16},
                                      {.host_expert_layers = host_layers});
        CHECK(p.host_expert_layer_count() == host_layers);
        runtime::cpu_backend backend(0, 2);
        runtime::arena<runtime::cpu_backend> a(p, backend);
        runtime::load_weights(file, a);
        runtime::forward_pass<runtime::cpu_backend> llm(a);
        const std::vector<std::int32_t> out = greedy_tokens(llm, ids, 32, m.shape.n_vocab);
        // The models README: llama.cpp's greedy output for this file.
        CHECK("Once upon a time" + tok.decode(out) ==
              "Once upon a time, there was a little girl named Lily. She loved to play with her toys and her friends. "
              "One day, Lily went");
        if (first.empty()) first = out;
        CHECK(out == first);
    }
}
