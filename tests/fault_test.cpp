// Faults in the runtime: a backend that fails its Nth allocation, Nth upload or Nth staging copy,
// and a file cut inside its Nth tensor. For every N up to the number of such calls in a load and
// a few decode steps the call fails with a clear error, nothing leaks (the sanitizer build checks),
// and nothing half-built runs: a half-loaded arena refuses a forward pass, and a pass whose copy
// failed leaves the streamer consistent, so the next pass gives exactly the clean run's logits.
#include <doctest/doctest.h>

#include "temp_path.hpp"

#include <filesystem>
#include <string>
#include <vector>

#include "test_model.hpp"
#include "vramplan/io/gguf_model.hpp"
#include "vramplan/runtime/arena.hpp"
#include "vramplan/runtime/cpu_backend.hpp"
#include "vramplan/runtime/forward_pass.hpp"
#include "vramplan/runtime/model_loader.hpp"

using namespace vramplan;

namespace {

// The CPU backend as a GPU backend looks to the loader (uploads through a bounce buffer), failing
// on demand. fail_at.x = N fails the Nth call of x (1-based); 0 never fails.
struct faulty_backend : runtime::cpu_backend {
    static constexpr bool device_is_host_memory = false;
    struct counts {
        int allocate = 0, upload = 0, copy = 0;
    };
    counts fail_at{}, calls{};
    using cpu_backend::cpu_backend;

    void* allocate(tier t, std::uint64_t n) {
        if (++calls.allocate == fail_at.allocate)
            throw error("injected fault: allocation " + std::to_string(calls.allocate) + " failed");
        return cpu_backend::allocate(t, n);
    }
    void upload(void* dst, const void* src, std::uint64_t n) {
        if (++calls.upload == fail_at.upload)
            throw error("injected fault: upload " + std::to_string(calls.upload) + " failed");
        cpu_backend::upload(dst, src, n);
    }
    void copy_to_device(void* dst, const void* src, std::uint64_t n, int slot) {
        if (++calls.copy == fail_at.copy)
            throw error("injected fault: staging copy " + std::to_string(calls.copy) + " failed");
        cpu_backend::copy_to_device(dst, src, n, slot);
    }
};

struct model_file {
    std::string path;
    model_desc m;
    plan p;
};

// stories260K when ../shared is there (the model), else a generated llama; either way a
// plan that streams all but one layer, so staging copies happen every pass.
model_file streaming_model() {
    model_file f;
    const std::string shared = std::string(VRAMPLAN_SHARED_DIR) + "/models/stories260K.gguf";
    if (std::filesystem::exists(shared)) {
        f.path = shared;
    } else {
        f.path = test_temp_path("vramplan_faults.gguf");
        test_model::spec s;
        s.layers = 4;
        test_model::write(f.path, s, 41);
    }
    const auto file = io::gguf_file::open(f.path);
    f.m = io::describe(file, "faults");
    const limits lim{.context = 32, .ubatch = 4};
    const plan full = plan_inference(f.m, target_desc{"cpu", 1ull << 30, 0}, lim);
    std::uint64_t budget = 0;
    needed_by_gpu_layers(full, [&](std::uint64_t g, std::uint64_t need) {
        if (g == 1) budget = need;
    });
    f.p = plan_auto_offload(f.m, target_desc{"cpu", budget, 0}, lim);
    REQUIRE(f.p.gpu_layers == 1);
    return f;
}

const std::vector<std::int32_t> prompt{1, 2, 3}, prompt_pos{0, 1, 2};

// A load and three decode steps; the logits of the last.
std::vector<float> run_steps(runtime::forward_pass<faulty_backend>& llm, std::uint64_t vocab) {
    const float* lg = llm.forward(prompt, prompt_pos);
    for (std::int32_t at = 3; at < 6; ++at) {
        const std::int32_t next = static_cast<std::int32_t>(at * 7 % vocab);
        lg = llm.forward(std::span(&next, 1), std::span(&at, 1));
    }
    return {lg, lg + vocab};
}

}  // namespace

TEST_CASE("every allocation, upload and staging copy that fails is a clear error, and nothing half-built runs") {
    const model_file f = streaming_model();
    const auto file = io::gguf_file::open(f.path);
    // The clean run: how many calls of each kind there are, and the logits to recover.
    faulty_backend clean(f.p.target.capacity);
    std::vector<float> expected;
    {
        runtime::arena<faulty_backend> a(f.p, clean);
        runtime::load_weights(file, a);
        runtime::forward_pass<faulty_backend> llm(a);
        expected = run_steps(llm, f.m.shape.n_vocab);
    }
    const auto total = clean.calls;
    REQUIRE(total.allocate == 2);  // one per tier
    REQUIRE(total.upload > 0);
    REQUIRE(total.copy > 4);
    MESSAGE("calls in a load and four passes: " << total.allocate << " allocations, " << total.upload << " uploads, "
                                                << total.copy << " staging copies");

    for (int n = 1; n <= total.allocate; ++n) {
        CAPTURE(n);
        faulty_backend b(f.p.target.capacity);
        b.fail_at.allocate = n;
        CHECK_THROWS_WITH_AS(runtime::arena<faulty_backend>(f.p, b),
                             ("injected fault: allocation " + std::to_string(n) + " failed").c_str(), error);
    }
    for (int n = 1; n <= total.upload; ++n) {
        CAPTURE(n);
        faulty_backend b(f.p.target.capacity);
        b.fail_at.upload = n;
        runtime::arena<faulty_backend> a(f.p, b);
        CHECK_THROWS_WITH_AS(runtime::load_weights(file, a),
                             ("injected fault: upload " + std::to_string(n) + " failed").c_str(), error);
        CHECK(a.weights_incomplete());
        CHECK_THROWS_WITH_AS(runtime::forward_pass<faulty_backend>{a},
                             doctest::Contains("the arena's weights are incomplete"), error);
        runtime::load_weights(file, a);  // a whole load again makes it usable
        CHECK_FALSE(a.weights_incomplete());
    }
    for (int n = 1; n <= total.copy; ++n) {
        CAPTURE(n);
        faulty_backend b(f.p.target.capacity);
        b.fail_at.copy = n;
        runtime::arena<faulty_backend> a(f.p, b);
        runtime::load_weights(file, a);
        runtime::forward_pass<faulty_backend> llm(a);
        CHECK_THROWS_WITH_AS(run_steps(llm, f.m.shape.n_vocab),
                             ("injected fault: staging copy " + std::to_string(n) + " failed").c_str(), error);
        // The failed pass left nothing stale behind: the same steps again give the clean logits.
        CHECK(run_steps(llm, f.m.shape.n_vocab) == expected);
    }
}

TEST_CASE("a model file cut inside any of its tensors fails to load naming that tensor") {
    const model_file f = streaming_model();
    const auto whole = io::gguf_file::open(f.path);
    const std::string cut = test_temp_path("vramplan_cut_each.gguf");
    for (const auto& t : whole.tensors()) {
        CAPTURE(t.name);
        std::filesystem::copy_file(f.path, cut, std::filesystem::copy_options::overwrite_existing);
        const auto file = io::gguf_file::open(cut);              // the header is whole
        const std::uint64_t size = t.file_offset + t.bytes / 2;  // half of this tensor is gone
        std::filesystem::resize_file(cut, size);
        faulty_backend b(f.p.target.capacity);
        runtime::arena<faulty_backend> a(f.p, b);
        std::string message;
        try {
            runtime::load_weights(file, a);
        } catch (const error& e) {
            message = e.what();
        }
        CAPTURE(message);
        // The loader goes in plan order, so the first tensor it misses is this one or another
        // whose bytes lie past the cut too; the message names it and says the file is short.
        const auto at = message.find("tensor '");
        REQUIRE(at != std::string::npos);
        const std::string named = message.substr(at + 8, message.find('\'', at + 8) - at - 8);
        const io::gguf_tensor_info* info = whole.find_tensor(named);
        REQUIRE(info != nullptr);
        CHECK(info->file_offset + info->bytes > size);
        CHECK(message.find("the file ends sooner than its header says") != std::string::npos);
        CHECK(a.weights_incomplete());
    }
    std::filesystem::remove(cut);
}
