// Planner speed and quality: run-time planning of each preset, the lifetime packer's arena against
// the lower bound on a seeded random corpus, and decode speed of the CPU runtime on a generated model.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <memory>
#include <random>
#include <vector>

#include "../tests/test_model.hpp"
#include "vramplan/io/gguf_model.hpp"
#include "vramplan/model/presets.hpp"
#include "vramplan/plan/plan.hpp"
#include "vramplan/runtime/cpu_backend.hpp"
#include "vramplan/runtime/forward_pass.hpp"
#include "vramplan/runtime/model_loader.hpp"
#include "vramplan/plan/advice.hpp"
#include "vramplan/target/catalog.hpp"

using namespace vramplan;

static void BM_plan_preset(benchmark::State& state) {
    const auto& e = presets::catalog[static_cast<std::size_t>(state.range(0))];
    // Q8_0 wherever a row is whole blocks of it (stories260K's 172-value ffn rows stay f16).
    const model_desc m =
        requantize_weights(presets::describe(e, uniform_policy(format{format_id::f16})), format{format_id::q8_0});
    for (auto _ : state)
        benchmark::DoNotOptimize(plan_auto_offload(m, targets::by_name("4090"), {.context = 8192}).needed());
    state.SetLabel(std::string(e.name));
}
BENCHMARK(BM_plan_preset)->DenseRange(0, static_cast<int>(presets::catalog.size()) - 1)->Unit(benchmark::kMicrosecond);

static void BM_packer_random(benchmark::State& state) {
    std::mt19937_64 rng(20261129);
    const int n = static_cast<int>(state.range(0));
    std::vector<std::vector<lifetime_request>> corpus(100);
    for (auto& req : corpus) {
        req.resize(n);
        for (auto& r : req) {
            r.first = static_cast<std::uint32_t>(rng() % 40);
            r.last = r.first + static_cast<std::uint32_t>(rng() % (40 - r.first));
            r.bytes = 256 * (1 + rng() % 4096);
        }
    }
    std::vector<std::uint64_t> off(n), scratch(n);
    std::vector<std::uint32_t> order(n);
    std::unique_ptr<bool[]> flags(new bool[n]);
    double ratio = 0;
    for (auto _ : state) {
        ratio = 0;
        for (const auto& req : corpus)
            ratio += static_cast<double>(pack_lifetimes(req, off, scratch, order, std::span<bool>(flags.get(), n))) /
                     lifetime_lower_bound(req);
    }
    state.counters["arena_over_lower_bound"] = ratio / corpus.size();
}
BENCHMARK(BM_packer_random)->Arg(16)->Arg(64)->Arg(256)->Unit(benchmark::kMillisecond);

// A generated 8-layer Q4_0 Llama (512 wide, 4096 vocabulary) loaded into its planned CPU arena.
struct generated_model {
    test_model::spec s{.vocab = 4096,
                       .embd = 512,
                       .layers = 8,
                       .heads = 8,
                       .kv_heads = 2,
                       .head_dim = 64,
                       .ff = 1536,
                       .weights = format{format_id::q4_0}};
    std::string path = (std::filesystem::temp_directory_path() / "vramplan_bench_model.gguf").string();
    test_model::weights w = test_model::write(path, s);
    io::gguf_file file = io::gguf_file::open(path);
    plan p =
        plan_inference(io::describe(file, "bench"), target_desc{"cpu", 1ull << 30, 0}, {.context = 1024, .ubatch = 64});
    runtime::cpu_backend backend{0, 2};
    runtime::arena<runtime::cpu_backend> a{p, backend};
    runtime::forward_pass<runtime::cpu_backend> llm = [this] {
        runtime::load_weights(file, a);
        return runtime::forward_pass<runtime::cpu_backend>(a);
    }();
    ~generated_model() { std::filesystem::remove(path); }
};

static void BM_generate_decode(benchmark::State& state) {
    generated_model g;
    std::int32_t token = 1, position = 0;
    for (auto _ : state) {
        const float* logits = g.llm.forward(std::span(&token, 1), std::span(&position, 1));
        token = static_cast<std::int32_t>(kernels::cpu::argmax(logits, g.s.vocab));
        position = (position + 1) % 1024;
    }
    state.counters["tokens_per_second"] =
        benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_generate_decode)->UseRealTime()->Unit(benchmark::kMillisecond);

// One micro-batch of 64 prompt tokens through the same model.
static void BM_generate_prefill(benchmark::State& state) {
    generated_model g;
    std::vector<std::int32_t> tokens(64), positions(64);
    for (int i = 0; i < 64; ++i) tokens[i] = 1 + i, positions[i] = i;
    for (auto _ : state) benchmark::DoNotOptimize(g.llm.forward(tokens, positions));
    state.counters["tokens_per_second"] =
        benchmark::Counter(64.0 * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_generate_prefill)->UseRealTime()->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
