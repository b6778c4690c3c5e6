// The planner is reentrant and the runtime keeps no hidden globals: two arenas and two forward
// passes, each with its own backend, running on two threads at once give exactly the serial
// results; and the CPU thread pool hands out every index once however long its workers waited, in
// static shares and from its queue. A binary of its own, so CI can build and run it under
// ThreadSanitizer alone.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include "temp_path.hpp"

#include <atomic>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "test_model.hpp"
#include "vramplan/io/gguf_model.hpp"
#include "vramplan/kernels/cpu/thread_pool.hpp"
#include "vramplan/plan/plan.hpp"
#include "vramplan/runtime/arena.hpp"
#include "vramplan/runtime/cpu_backend.hpp"
#include "vramplan/runtime/forward_pass.hpp"
#include "vramplan/runtime/model_loader.hpp"

using namespace vramplan;

namespace {

// Plans, loads and runs one model: a prefill of `prompt` tokens in one pass (3 unless asked: 1, 7,
// 3), then greedy decode steps; the logits of every step, concatenated.
std::vector<float> run_model(const std::string& path, std::uint64_t device_budget, unsigned threads,
                             std::int32_t prompt = 3) {
    const auto file = io::gguf_file::open(path);
    const model_desc m = io::describe(file, "thread test");
    const std::uint64_t ubatch = prompt > 4 ? static_cast<std::uint64_t>(prompt) : 4;
    const plan p =
        plan_auto_offload(m, target_desc{"cpu", device_budget, 0}, {.context = ubatch + 28, .ubatch = ubatch});
    runtime::cpu_backend backend(device_budget, threads);
    runtime::arena<runtime::cpu_backend> a(p, backend);
    runtime::load_weights(file, a);
    runtime::forward_pass<runtime::cpu_backend> llm(a);
    std::vector<std::int32_t> tokens{1, 7, 3}, positions{0, 1, 2};
    for (std::int32_t t = 3; t < prompt; ++t) {
        tokens.push_back(1 + t * 5 % 60);
        positions.push_back(t);
    }
    std::vector<float> all;
    const float* logits = llm.forward(tokens, positions);
    for (std::int32_t at = prompt; at < prompt + 9; ++at) {
        all.insert(all.end(), logits, logits + m.shape.n_vocab);
        std::int32_t next = 0;
        for (std::int32_t v = 1; v < static_cast<std::int32_t>(m.shape.n_vocab); ++v)
            if (logits[v] > logits[next]) next = v;
        logits = llm.forward(std::span(&next, 1), std::span(&at, 1));
    }
    all.insert(all.end(), logits, logits + m.shape.n_vocab);
    return all;
}

// A device budget that keeps one layer resident and streams the others through staging.
std::uint64_t one_layer_resident(const std::string& path) {
    const auto file = io::gguf_file::open(path);
    const plan full =
        plan_inference(io::describe(file, "budget"), target_desc{"cpu", 1ull << 30, 0}, {.context = 32, .ubatch = 4});
    std::uint64_t budget = 0;
    needed_by_gpu_layers(full, [&](std::uint64_t g, std::uint64_t need) {
        if (g == 1) budget = need;
    });
    return budget;
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
    const std::uint64_t resident = 1ull << 30, streaming = one_layer_resident(b_path);
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

// The matrix products and attention hand their work out from the pool's queue, so which thread
// computes what changes from run to run and with the pool's size; no value may change with it,
// with the layers resident or streamed through staging.
TEST_CASE("a forward pass gives the same logits bit for bit on pools of one, two and three threads") {
    test_model::spec q8;
    q8.weights = format{format_id::q8_0};
    test_model::spec k_mix;  // llama.cpp's Q4_K_M mix of Q4_K and Q6_K (rows of 256 values)
    k_mix.embd = 256;
    k_mix.ff = 512;
    k_mix.head_dim = 64;
    k_mix.q4_k_m = true;
    for (const auto& [spec, seed] : {std::pair{q8, 33}, std::pair{k_mix, 34}}) {
        const std::string path = test_temp_path("vramplan_thread_pools.gguf");
        test_model::write(path, spec, seed);
        for (const std::uint64_t budget : {std::uint64_t{1} << 30, one_layer_resident(path)}) {
            CAPTURE(budget);
            const auto one = run_model(path, budget, 1);
            CHECK(run_model(path, budget, 2) == one);
            CHECK(run_model(path, budget, 3) == one);
        }
        // 64 tokens in one pass: the backend's norms, RoPE, adds and gated units large enough to
        // go to the pool, each thread on its own rows.
        const auto one = run_model(path, 1ull << 30, 1, 64);
        CHECK(run_model(path, 1ull << 30, 2, 64) == one);
        CHECK(run_model(path, 1ull << 30, 3, 64) == one);
        std::filesystem::remove(path);
    }
}

// A worker waits for the next call in three ways, one after another: spinning on the pause hint,
// then yielding its core, then asleep on the condition variable (thread_pool.hpp). Calls issued
// after idle gaps that end in each of them must each wake the workers and hand every index of the
// range to exactly one thread; a lost wake-up would hang here, and a share given twice or not at
// all shows in the counts.
TEST_CASE("parallel_for after idle gaps in each of the workers' ways of waiting covers every index once") {
    for (const unsigned threads : {2u, 3u}) {
        kernels::cpu::thread_pool pool(threads);
        constexpr std::uint64_t n = 1000;
        for (const auto gap : {std::chrono::microseconds(0), std::chrono::microseconds(20),
                               std::chrono::microseconds(2000), std::chrono::microseconds(300000)}) {
            for (int call = 0; call < 3; ++call) {
                std::this_thread::sleep_for(gap);
                std::vector<std::atomic<int>> hits(n);
                std::atomic<unsigned> shares{0};
                pool.parallel_for(n, [&](std::uint64_t b, std::uint64_t e) {
                    shares.fetch_add(1);
                    for (std::uint64_t i = b; i < e; ++i) hits[i].fetch_add(1);
                });
                CHECK(shares.load() == threads);
                std::uint64_t once = 0;
                for (const auto& h : hits) once += h.load() == 1;
                CHECK(once == n);
            }
        }
    }
}

// parallel_queue: every thread of the pool calls fn once, and the chunks its threads take cover
// [0, n) once, each at most `grain` long, whatever the grain (zero counts as one) and however
// unevenly the threads go (the caller's chunks are slowed here, so the workers take more of them).
TEST_CASE("parallel_queue hands every index to one thread once, in chunks of the grain") {
    for (const unsigned threads : {1u, 2u, 3u})
        for (const std::uint64_t n : {0u, 1u, 5u, 1000u})
            for (const std::uint64_t grain : {0u, 1u, 7u, 1000u, 5000u}) {
                CAPTURE(threads);
                CAPTURE(n);
                CAPTURE(grain);
                kernels::cpu::thread_pool pool(threads);
                const auto caller = std::this_thread::get_id();
                std::vector<std::atomic<int>> hits(n);
                std::atomic<unsigned> calls{0};
                std::atomic<std::uint64_t> longest{0};
                pool.parallel_queue(n, grain, [&](kernels::cpu::thread_pool::work_queue& queue) {
                    calls.fetch_add(1);
                    for (std::uint64_t b, e; queue.take(b, e);) {
                        if (std::this_thread::get_id() == caller && threads > 1)
                            std::this_thread::sleep_for(std::chrono::microseconds(50));
                        std::uint64_t seen = longest.load();
                        while (e - b > seen && !longest.compare_exchange_weak(seen, e - b)) {
                        }
                        for (std::uint64_t i = b; i < e; ++i) hits[i].fetch_add(1);
                    }
                });
                CHECK(calls.load() == threads);
                CHECK(longest.load() <= std::max<std::uint64_t>(grain, 1));
                std::uint64_t once = 0;
                for (const auto& h : hits) once += h.load() == 1;
                CHECK(once == n);
            }
}
