// A decode step must not touch the heap: this binary replaces the global allocation functions and
// counts calls while one step runs (forward pass, sampling) after start-up.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include "device_double.hpp"
#include "temp_path.hpp"

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <new>

#include "../examples/common/count_allocations.hpp"
#include "test_model.hpp"
#include "vramplan/io/gguf_model.hpp"
#include "vramplan/runtime/arena.hpp"
#include "vramplan/runtime/cpu_backend.hpp"
#include "vramplan/runtime/forward_pass.hpp"
#include "vramplan/runtime/model_loader.hpp"
#include "vramplan/runtime/sampler.hpp"

using namespace vramplan;
using vramplan_alloc::allocations;
using vramplan_alloc::counting;

TEST_CASE("the allocation counter sees allocations") {
    allocations = 0;
    counting = true;
    auto* p = new std::vector<int>(100);
    counting = false;
    delete p;
    CHECK(allocations == 2);  // the vector object and its storage
}

namespace {
// Start-up (loading, the first pass), then 27 decode steps counted.
template <class Backend>
std::uint64_t decode_allocations(const test_model::spec& s, const plan_options& o) {
    const std::string path = test_temp_path("vramplan_noalloc.gguf");
    test_model::write(path, s, 3);
    const auto file = io::gguf_file::open(path);
    const model_desc m = io::describe(file, "test");
    const plan p = plan_inference(m, target_desc{"cpu", 1ull << 30, 0}, {.context = 64, .ubatch = 8}, o);
    Backend backend(0, 2);
    runtime::arena<Backend> a(p, backend);
    runtime::load_weights(file, a);
    runtime::forward_pass<Backend> llm(a, 2);
    runtime::sampler sample(m.shape.n_vocab, {.temperature = 0.8f, .top_k = 10, .top_p = 0.9f, .seed = 5});
    const std::int32_t prompt[3] = {1, 2, 3}, pos[3] = {0, 1, 2};
    std::int32_t next = sample.pick(llm.forward(prompt, pos));  // start-up: first pass
    allocations = 0;
    counting = true;
    for (std::int32_t at = 3; at < 30; ++at)  // past the ring of a 4-token window (11 rows)
        next = sample.pick(llm.forward(std::span(&next, 1), std::span(&at, 1)));
    counting = false;
    std::filesystem::remove(path);
    return allocations;
}
}  // namespace

TEST_CASE("a decode step allocates nothing on the host, for every architecture, resident or streamed") {
    // Llama; Qwen2-MoE (routing, experts, the gated shared expert; experts also in the host tier);
    // Phi-3 (fused projections); Gemma 2 (a sliding window whose ring wraps, soft-capping).
    test_model::spec llama;
    llama.weights = format{format_id::q4_0};
    for (const test_model::spec& s :
         {llama, test_model::qwen2moe_spec(), test_model::phi3_spec(), test_model::gemma2_spec(4)})
        for (std::uint64_t gpu_layers : {all_gpu_layers, std::uint64_t{1}, all_gpu_layers - 1}) {
            CAPTURE(s.arch);
            CAPTURE(gpu_layers);
            if (gpu_layers == all_gpu_layers - 1 && s.experts == 0) continue;
            plan_options o;
            o.gpu_layers = gpu_layers == all_gpu_layers - 1 ? all_gpu_layers : gpu_layers;
            if (gpu_layers == all_gpu_layers - 1) o.host_expert_layers = s.layers;  // experts in the host tier
            CHECK(decode_allocations<runtime::cpu_backend>(s, o) == 0);
        }
}

TEST_CASE("beside a device, the CPU's share of a decode step allocates nothing either") {
    // Qwen2-MoE's experts in the host tier, and a Llama with two of its three layers computed by the CPU.
    test_model::spec llama;
    llama.weights = format{format_id::q8_0};
    CHECK(decode_allocations<device_double>(test_model::qwen2moe_spec(), {.host_expert_layers = 3}) == 0);
    CHECK(decode_allocations<device_double>(llama, {.gpu_layers = 1, .offload = offload_mode::compute}) == 0);
}
