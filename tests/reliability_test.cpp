// Configurations whose byte counts would overflow 64 bits are errors, never wrapped numbers; and
// regression cases for inputs that once misbehaved.
#include <doctest/doctest.h>

#include "temp_path.hpp"

#include <filesystem>
#include <fstream>

#include "test_model.hpp"
#include "vramplan/io/gguf_model.hpp"
#include "vramplan/io/input_file.hpp"
#include "vramplan/model/format_policy.hpp"
#include "vramplan/model/presets.hpp"
#include "vramplan/model/training.hpp"
#include "vramplan/plan/advice.hpp"
#include "vramplan/plan/plan.hpp"
#include "vramplan/runtime/arena.hpp"
#include "vramplan/runtime/cpu_backend.hpp"
#include "vramplan/runtime/model_loader.hpp"
#include "vramplan/target/catalog.hpp"

using namespace vramplan;

TEST_CASE("byte counts that would overflow 64 bits are rejected") {
    decoder_shape s = presets::llama3_8b_entry.shape;
    s.n_vocab = 1ull << 40;
    s.n_embd = 1ull << 30;  // the embedding alone: 2^70 values
    CHECK_THROWS_WITH_AS(param_count(s), doctest::Contains("overflow"), error);
    CHECK_THROWS_WITH_AS(weight_bytes(make_model("huge", s, uniform_policy(format{format_id::f32}))),
                         doctest::Contains("overflow"), error);
    CHECK_THROWS_WITH_AS(
        plan_inference(make_model("huge", s, uniform_policy(format{format_id::f32})), targets::by_name("h100 sxm"), {}),
        doctest::Contains("overflow"), error);
    const model_desc m = presets::describe(presets::llama3_8b_entry, uniform_policy(format{format_id::q4_0}));
    // 2^40 positions x 2^20 sequences of a 131,072-byte-per-token cache.
    CHECK_THROWS_WITH_AS(plan_inference(m, targets::by_name("h100 sxm"), {.context = 1ull << 40, .batch = 1ull << 20}),
                         doctest::Contains("overflow"), error);
    CHECK_THROWS_WITH_AS(kv_cache_bytes(m, 1ull << 50, 1ull << 20, 512), doctest::Contains("overflow"), error);
    training_config c;
    c.seq = 1ull << 62;
    CHECK_THROWS_WITH_AS(training_memory(m, c), doctest::Contains("overflow"), error);
    // Huge but representable: a clear "does not fit", with exact numbers.
    const plan p = plan_inference(m, targets::by_name("h100 sxm"), {.context = 1ull << 30});
    CHECK_FALSE(p.fits());
    CHECK(p.gpu.kv.bytes == (1ull << 30) * 131'072ull);
}

TEST_CASE("alignment and layer limits are validated") {
    const model_desc m = presets::describe(presets::stories260k_entry, uniform_policy(format{format_id::f32}));
    plan_options o;
    o.alignment = 0;
    CHECK_THROWS_WITH_AS(plan_inference(m, targets::by_name("4090"), {}, o), doctest::Contains("alignment"), error);
    o.alignment = 96;  // not a power of two: allowed, every offset a multiple of 96
    const plan p = plan_inference(m, targets::by_name("4090"), {.context = 64}, o);
    CHECK(p.layer_offset[3] % 96 == 0);
    CHECK(p.gpu.kv.offset % 96 == 0);
}

TEST_CASE("a file that shrinks while it is read is an error saying where it ended, not a short buffer") {
    const std::string path = test_temp_path("vramplan_shrinks.bin");
    std::ofstream(path, std::ios::binary) << std::string(4096, 'x');
    const auto f = io::input_file::open(path, "test file");
    CHECK(f.size() == 4096);
    std::filesystem::resize_file(path, 1000);  // another process truncates it
    char buf[512];
    f.read_at(0, buf, sizeof buf);  // still there
    CHECK_THROWS_WITH_AS(f.read_at(900, buf, sizeof buf),
                         ("'" + path +
                          "' ends at byte 1000, before the 512 bytes at offset 900 it should hold (truncated, or "
                          "changed while it was read)")
                             .c_str(),
                         error);
    CHECK_THROWS_WITH_AS(f.read_all(100, "test file"), doctest::Contains("more than a test file can be (at most 100)"),
                         error);
    std::filesystem::remove(path);
}

TEST_CASE("a GGUF file cut inside its tensor data fails to load with the tensor named") {
    test_model::spec s;
    const std::string path = test_temp_path("vramplan_cut_tensors.gguf");
    test_model::write(path, s, 2);
    const auto file = io::gguf_file::open(path);  // the header is whole
    const model_desc m = io::describe(file, "test");
    std::filesystem::resize_file(path, std::filesystem::file_size(path) - 100);
    const plan p = plan_inference(m, target_desc{"cpu", 1ull << 30, 0}, {.context = 16, .ubatch = 4});
    runtime::cpu_backend backend;
    runtime::arena<runtime::cpu_backend> a(p, backend);
    CHECK_THROWS_WITH_AS(runtime::load_weights(file, a), doctest::Contains("the file ends sooner than its header says"),
                         error);
    std::filesystem::remove(path);
}
