// The planner is reentrant and the runtime keeps no hidden globals: two arenas and two forward
// passes, each with its own backend, running on two threads at once give exactly the serial
// results. A binary of its own, so CI can build and run it under ThreadSanitizer alone.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include "temp_path.hpp"

#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "test_model.hpp"
#include "vramplan/io/gguf_model.hpp"
#include "vramplan/plan/plan.hpp"
#include "vramplan/runtime/arena.hpp"
#include "vramplan/runtime/cpu_backend.hpp"
#include "vramplan/runtime/forward_pass.hpp"
#include "vramplan/runtime/model_loader.hpp"

using namespace vramplan;

namespace {

// Plans, loads and runs one model: a prefill of `prompt`, then greedy decode steps; the logits
// of every step, concatenated.
std::vector<float> run_model(const std::string& path, std::uint64_t device_budget, unsigned threads) {
    const auto file = io::gguf_file::open(path);
    const model_desc m = io::describe(file, "thread test");
    const plan p = plan_auto_offload(m, target_desc{"cpu", device_budget, 0}, {.context = 32, .ubatch = 4});
    runtime::cpu_backend backend(device_budget, threads);
    runtime::arena<runtime::cpu_backend> a(p, backend);
    runtime::load_weights(file, a);
    runtime::forward_pass<runtime::cpu_backend> llm(a);
    std::vector<std::int32_t> tokens{1, 7, 3}, positions{0, 1, 2};
    std::vector<float> all;
    const float* logits = llm.forward(tokens, positions);
    for (std::int32_t at = 3; at < 12; ++at) {
        all.insert(all.end(), logits, logits + m.shape.n_vocab);
        std::int32_t next = 0;
        for (std::int32_t v = 1; v < static_cast<std::int32_t>(m.shape.n_vocab); ++v)
            if (logits[v] > logits[next]) next = v;
        logits = llm.forward(std::span(&next, 1), std::span(&at, 1));
    }
    all.insert(all.end(), logits, logits + m.shape.n_vocab);
    return all;
}

}  // namespace

TEST_CASE("two forward passes on two threads equal the serial runs bit for bit") {
    test_model::spec q8;
    q8.weights = format{format_id::q8_0};
    test_model::spec q4 = q8;
    q4.weights = format{format_id::q4_0};
    q4.layers = 4;
    const std::string a_path = test_temp_path("vramplan_thread_a.gguf");
    const std::string b_path = test_temp_path("vramplan_thread_b.gguf");
    test_model::write(a_path, q8, 31);
    test_model::write(b_path, q4, 32);
    // One resident, one streaming all but one layer through staging: the streamer runs concurrently too.
    const std::uint64_t resident = 1ull << 30;
    std::uint64_t streaming = 0;
    {
        const auto file = io::gguf_file::open(b_path);
        const plan full =
            plan_inference(io::describe(file, "b"), target_desc{"cpu", resident, 0}, {.context = 32, .ubatch = 4});
        needed_by_gpu_layers(full, [&](std::uint64_t g, std::uint64_t need) {
            if (g == 1) streaming = need;
        });
    }
    const auto serial_a = run_model(a_path, resident, 2);
    const auto serial_b = run_model(b_path, streaming, 2);
    std::vector<float> parallel_a, parallel_b;
    std::thread ta([&] { parallel_a = run_model(a_path, resident, 2); });
    std::thread tb([&] { parallel_b = run_model(b_path, streaming, 2); });
    ta.join();
    tb.join();
    CHECK(parallel_a == serial_a);
    CHECK(parallel_b == serial_b);
    CHECK(serial_a != serial_b);  // two different models, so the comparison could fail
    std::filesystem::remove(a_path);
    std::filesystem::remove(b_path);
}
