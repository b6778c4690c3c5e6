// Configurations whose byte counts would overflow 64 bits are errors, never wrapped numbers; and
// regression cases for inputs that once misbehaved.
#include <doctest/doctest.h>

#include "vramplan/model/format_policy.hpp"
#include "vramplan/model/presets.hpp"
#include "vramplan/model/training.hpp"
#include "vramplan/plan/advice.hpp"
#include "vramplan/plan/plan.hpp"
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
        plan_inference(make_model("huge", s, uniform_policy(format{format_id::f32})), targets::by_name("h100"), {}),
        doctest::Contains("overflow"), error);
    const model_desc m = presets::describe(presets::llama3_8b_entry, uniform_policy(format{format_id::q4_0}));
    // 2^40 positions x 2^20 sequences of a 131,072-byte-per-token cache.
    CHECK_THROWS_WITH_AS(plan_inference(m, targets::by_name("h100"), {.context = 1ull << 40, .batch = 1ull << 20}),
                         doctest::Contains("overflow"), error);
    CHECK_THROWS_WITH_AS(kv_cache_bytes(m, 1ull << 50, 1ull << 20), doctest::Contains("overflow"), error);
    training_config c;
    c.seq = 1ull << 62;
    CHECK_THROWS_WITH_AS(training_memory(m, c), doctest::Contains("overflow"), error);
    // Huge but representable: a clear "does not fit", with exact numbers.
    const plan p = plan_inference(m, targets::by_name("h100"), {.context = 1ull << 30});
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
