// Mixtures of experts and fused projections run: the router's choice by hand, synthetic Mixtral,
// Qwen2-MoE, Qwen3-MoE and Phi-3 files against the double-precision reference, experts in the host
// tier and streamed layers exactly as resident ones, and the real stories260K MoE file producing
// llama.cpp's greedy text.
#include <doctest/doctest.h>

#include "fixtures.hpp"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>
#include <vector>

#include "device_double.hpp"
#include "greedy.hpp"
#include "isa_paths.hpp"
#include "random_values.hpp"
#include "reference_run.hpp"
#include "rounded_activations.hpp"
#include "vramplan/io/tokenizer.hpp"
#include "vramplan/kernels/cpu/experts.hpp"
#include "vramplan/kernels/ffn_math.hpp"
#include "vramplan/runtime/weight_layout.hpp"

using namespace vramplan;
using reference_run::file_bytes;
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

namespace {
// A stacked weight of four experts (planes of 20 rows: a panel of sixteen and four more, 256
// columns) in format F, random blocks with small finite scales, and its values as load<F> decodes.
template <kernels::kernel_format F>
std::pair<std::vector<std::uint8_t>, std::vector<double>> random_experts(std::uint64_t planes, std::uint64_t n,
                                                                         std::uint64_t k_in) {
    const std::uint64_t row = kernels::kernel_row_bytes(F, k_in);
    std::vector<std::uint8_t> w(planes * n * row);
    std::vector<double> values(planes * n * k_in);
    if constexpr (F == kernels::kernel_format::f32) {
        const auto v = test_data::random_values(planes * n * k_in, 5);
        std::memcpy(w.data(), v.data(), w.size());
    } else {
        using B = typename kernels::block_of<F>::type;
        std::mt19937 gen(3);
        for (auto& b : w) b = static_cast<std::uint8_t>(gen());
        auto* blocks = reinterpret_cast<B*>(w.data());
        for (std::uint64_t i = 0; i < w.size() / sizeof(B); ++i) {
            blocks[i].d = to_half(0.01f * static_cast<float>(1 + i % 7));
            if constexpr (requires { blocks[i].dmin; })
                blocks[i].dmin = to_half(0.002f * static_cast<float>(1 + i % 3));
        }
    }
    for (std::uint64_t r = 0; r < planes * n; ++r)
        for (std::uint64_t c = 0; c < k_in; ++c) values[r * k_in + c] = kernels::load<F>(w.data() + r * row, c);
    return {w, values};
}

// Thirteen tokens routed two ways each over four experts: expert 1 takes nine rows (enough for the
// panel kernels), expert 0 three, expert 2 the rest and expert 3 none. Each routed row against a
// double reference over its expert's decoded values and x rounded as the format's product rounds
// it, for x per token and x per routed row, on every path.
template <kernels::kernel_format F>
void check_expert_products() {
    namespace cpu = kernels::cpu;
    CAPTURE(kernels::kernel_format_name(F));
    constexpr std::uint64_t planes = 4, n = 20, k_in = 256, tokens = 13, k = 2;
    const auto [w, wv] = random_experts<F>(planes, n, k_in);
    std::vector<std::int32_t> ids(tokens * k);
    for (std::uint64_t t = 0; t < tokens; ++t) {
        ids[t * k] = t < 9 ? 1 : 2;
        ids[t * k + 1] = t < 3 ? 0 : 2;
    }
    const auto x = test_data::random_values(tokens * k * k_in, 9);
    const std::vector<double> xr = F == kernels::kernel_format::f32 ? std::vector<double>(x.begin(), x.end())
                                   : kernels::is_k_quant(F)         ? test_data::rounded_q8_k(x)
                                                                    : test_data::rounded_q8_0(x);
    // Each plane as panels, as the CPU backend holds them (one panel and four rows as stored), where
    // the format has panels.
    const format file_format{kernels::kernel_format_ids[static_cast<std::size_t>(F)]};
    constexpr bool has_panels =
        F == kernels::kernel_format::q8_0 || F == kernels::kernel_format::q4_0 || kernels::is_k_quant(F);
    std::vector<std::uint8_t> held(w);
    std::vector<std::uint8_t> scratch;
    for (std::uint64_t e = 0; has_panels && e < planes; ++e)
        runtime::convert_to_panels(file_format, reinterpret_cast<std::byte*>(held.data()) + e * held.size() / planes, n,
                                   k_in, scratch);
    cpu::thread_pool pool(2);
    for (const auto isa : test_data::cpu_paths())
        for (bool as_panels : {false, has_panels})
            for (bool per_route : {false, true}) {
                CAPTURE(cpu::cpu_isa_name(isa));
                const cpu::cpu_isa_scope path(isa);
                CAPTURE(as_panels);
                CAPTURE(per_route);
                std::vector<float> y(tokens * k * n, -1.0f);
                cpu::expert_matmul(cpu::find_matmul_rows(F),
                                   {F, as_panels ? held.data() : w.data(), n, k_in, as_panels}, planes, x.data(),
                                   per_route, ids.data(), y.data(), tokens, k, pool);
                for (std::uint64_t r = 0; r < tokens * k; ++r)
                    for (std::uint64_t i = 0; i < n; ++i) {
                        const std::uint64_t xrow = per_route ? r : r / k;
                        double ref = 0, mag = 0;
                        for (std::uint64_t c = 0; c < k_in; ++c) {
                            const double p = wv[(ids[r] * n + i) * k_in + c] * xr[xrow * k_in + c];
                            ref += p;
                            mag += std::fabs(p);
                        }
                        CHECK(std::fabs(y[r * n + i] - ref) <= 1e-5 * mag + 1e-6);
                    }
            }
}
}  // namespace

namespace {
// The token counts of the products expert_matmul asks for, each then computed as f32.
std::vector<std::uint64_t> product_tokens;
void counting_product(const kernels::cpu::weight_view& w, const kernels::cpu::token_rows& io,
                      kernels::cpu::thread_pool& pool) {
    product_tokens.push_back(io.count);
    kernels::cpu::find_matmul_rows(kernels::kernel_format::f32)(w, io, pool);
}
}  // namespace

TEST_CASE("an expert's routed rows are one matrix product: each routed row against a double reference") {
    // One product per expert that has rows, in expert order: 3, 9 and 14 rows, none for expert 3.
    {
        constexpr std::uint64_t n = 4, k_in = 8, tokens = 13, k = 2;
        std::vector<float> w(4 * n * k_in, 0.5f), x(tokens * k_in, 1.0f), y(tokens * k * n);
        std::vector<std::int32_t> ids(tokens * k);
        for (std::uint64_t t = 0; t < tokens; ++t) {
            ids[t * k] = t < 9 ? 1 : 2;
            ids[t * k + 1] = t < 3 ? 0 : 2;
        }
        kernels::cpu::thread_pool pool(2);
        product_tokens.clear();
        kernels::cpu::expert_matmul(&counting_product, {kernels::kernel_format::f32, w.data(), n, k_in}, 4, x.data(),
                                    false, ids.data(), y.data(), tokens, k, pool);
        CHECK(product_tokens == std::vector<std::uint64_t>{3, 9, 14});
        for (float v : y) CHECK(v == 4.0f);  // 8 columns of 0.5 x 1
    }
    check_expert_products<kernels::kernel_format::f32>();
    check_expert_products<kernels::kernel_format::q8_0>();
    check_expert_products<kernels::kernel_format::q4_0>();
    check_expert_products<kernels::kernel_format::q5_0>();
    check_expert_products<kernels::kernel_format::q4_k>();
    check_expert_products<kernels::kernel_format::q6_k>();
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

TEST_CASE(
    "the CPU backend holds each expert's plane as panels, the file's bytes rearranged, and runs it as the reference") {
    test_model::spec s = moe_spec("qwen2moe");  // Q8_0
    s.expert_ff = 96;                           // gate and up planes of six panels, down planes of eight
    const written_model written("vramplan_moe_panels.gguf", s, 17);
    const auto& [path, weights, file, m] = written;
    const plan p = plan_inference(m, target_desc{"cpu", 1ull << 30, 0}, {.context = 32, .ubatch = 4});
    runtime::cpu_backend backend(1ull << 30);
    runtime::arena<runtime::cpu_backend> a(p, backend);
    runtime::load_weights(file, a);
    // Stacked experts are read only by expert_matmul ops, one plane at a time.
    for (const std::string tensor : {"blk.0.ffn_gate_exps.weight", "blk.2.ffn_down_exps.weight"}) {
        CAPTURE(tensor);
        const io::gguf_tensor_info* info = file.find_tensor(tensor);
        std::vector<std::uint8_t> want(info->bytes);
        file.read_tensor(*info, reinterpret_cast<std::byte*>(want.data()));
        const auto view = a.view(tensor);
        REQUIRE(view.bytes == want.size());
        const std::uint64_t plane_rows = view.rows / 4, row_bytes = want.size() / view.rows, nb = view.cols / 32;
        CHECK(plane_rows == (tensor.find("down") != std::string::npos ? s.embd : s.expert_ff));
        // Row r of plane e: block b of panel r / 16 of that plane, lane r % 16 (a plane's rows are a
        // row length of another tensor, so a multiple of 32 in Q8_0: whole panels; check_expert_products
        // covers a plane's last rows as stored).
        std::uint64_t differ = 0, rows_as_panels = 0;
        for (std::uint64_t e = 0; e < 4; ++e)
            for (std::uint64_t r = 0; r < plane_rows; ++r) {
                const std::uint8_t* plane =
                    reinterpret_cast<const std::uint8_t*>(view.data) + e * plane_rows * row_bytes;
                const bool in_panel = r < plane_rows / 16 * 16;
                rows_as_panels += in_panel;
                for (std::uint64_t b = 0; b < nb; ++b) {
                    const blocks::q8_0 got = in_panel
                                                 ? kernels::cpu::unpack_panel(
                                                       reinterpret_cast<const kernels::cpu::panel_block<blocks::q8_0>*>(
                                                           plane + r / 16 * 16 * row_bytes)[b],
                                                       static_cast<int>(r % 16))
                                                 : reinterpret_cast<const blocks::q8_0*>(plane + r * row_bytes)[b];
                    differ += std::memcmp(&got, want.data() + (e * plane_rows + r) * row_bytes + b * sizeof(got),
                                          sizeof(got)) != 0;
                }
            }
        CHECK(differ == 0);
        CHECK(rows_as_panels == 4 * (plane_rows / 16 * 16));
        CHECK(std::memcmp(view.data, want.data(), want.size()) != 0);
    }
    // Decode and prefill over the held planes against the double-precision reference; the experts in
    // the host tier (held alike) give the same logits.
    const auto ref = test_model::reference_logits(weights, prompt);
    const auto resident = run(path, prompt, 4, 1ull << 30, format{format_id::f32});
    CHECK(gap(resident.logits, ref).within_rounding());
    const auto host = run(path, prompt, 4, 1ull << 30, format{format_id::f32}, {.host_expert_layers = 3});
    CHECK(host.host_expert_layers == 3);
    CHECK(host.logits == resident.logits);
}

TEST_CASE("beside a device, the CPU computes the experts kept in the host tier, held as its panels, as the reference") {
    test_model::spec s = moe_spec("qwen2moe");  // Q8_0
    s.expert_ff = 96;                           // planes of whole panels
    const written_model written("vramplan_moe_beside_device.gguf", s, 17);
    const auto& [path, weights, file, m] = written;
    const auto ref = test_model::reference_logits(weights, prompt);
    // Every expert on the device: the device computes every product.
    const auto resident = run<device_double>(path, prompt, 4, 1ull << 30, format{format_id::f32});
    CHECK(gap(resident.logits, ref).within_rounding());
    CHECK(resident.device_expert_products > 0);
    CHECK(resident.host_weight_products == 0);
    // Every layer's experts in the host tier: the device computes none of them and reads no host
    // weight; the pass's CPU backend computes them, and the logits stay the reference's.
    const auto host =
        run<device_double>(path, prompt, 4, 1ull << 30, format{format_id::f32}, {.host_expert_layers = 3});
    CHECK(host.host_expert_layers == 3);
    CHECK(host.device_expert_products == 0);
    CHECK(host.host_weight_products == 0);
    CHECK(gap(host.logits, ref).within_rounding());
    // One layer's: the device computes the other two layers' experts.
    const auto one = run<device_double>(path, prompt, 4, 1ull << 30, format{format_id::f32}, {.host_expert_layers = 1});
    CHECK(one.host_expert_layers == 1);
    CHECK(one.device_expert_products == 2 * 3 * 4);  // 2 layers x gate, up, down x 4 passes
    CHECK(gap(one.logits, ref).within_rounding());
    // The layout: the device's own matrices as the file stores them, the experts the CPU computes as
    // its panels (the file's bytes rearranged, so they differ from the file's order).
    const plan p =
        plan_inference(m, target_desc{"cpu", 1ull << 30, 0}, {.context = 32, .ubatch = 4}, {.host_expert_layers = 1});
    CHECK(p.host.activations.bytes == p.gpu.activations.bytes);  // the CPU's copy of the arena
    device_double backend(1ull << 30);
    runtime::arena<device_double> a(p, backend);
    runtime::load_weights(file, a);
    for (const std::string tensor :
         {"blk.0.ffn_gate_exps.weight", "blk.1.ffn_gate_exps.weight", "blk.0.attn_q.weight"}) {
        CAPTURE(tensor);
        const auto want = file_bytes(file, tensor);
        const auto view = a.view(tensor);
        REQUIRE(view.bytes == want.size());
        CHECK(view.where == (tensor == "blk.0.ffn_gate_exps.weight" ? tier::host : tier::gpu));
        const bool as_stored = std::memcmp(view.data, want.data(), want.size()) == 0;
        CHECK(as_stored == (view.where == tier::gpu));
    }
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
