#include <doctest/doctest.h>

#include <cmath>
#include <cstring>

#include "vramplan/format/blocks.hpp"
#include "vramplan/format/bytes.hpp"
#include "vramplan/format/half.hpp"
#include "vramplan/format/types.hpp"

using namespace vramplan;

TEST_CASE("formats are found by name and by GGUF type id") {
    CHECK(format_by_name("Q4_0") == q4_0::value);
    CHECK(format_by_name("q6_k") == q6_k::value);
    CHECK(format_by_name("fp16") == f16::value);
    CHECK(format_by_name("int4_g128_zp") == int4_group<128, true>::value);
    CHECK(format_by_gguf_type(8) == q8_0::value);
    CHECK(format_by_gguf_type(30) == bf16::value);
    CHECK(name(int4_group<64>::value) == "int4_g64");
    CHECK_THROWS_WITH_AS(format_by_name("q4_9"), doctest::Contains("known formats: f32, f16"), error);
    CHECK_THROWS_WITH_AS(format_by_gguf_type(4), doctest::Contains("unknown GGUF tensor type id 4"),
                         error);                        // removed Q4_2
    CHECK_THROWS_AS(format_by_gguf_type(1000), error);  // vramplan-only ids are not GGUF types
    CHECK_FALSE(parse_format("int4_g7").has_value());
}

TEST_CASE("rows that are not whole blocks are a clear run-time error") {
    CHECK_THROWS_WITH_AS(row_bytes(q4_0::value, 172), doctest::Contains("multiple of 32"), error);
    CHECK_THROWS_WITH_AS(row_bytes(q6_k::value, 4000), doctest::Contains("multiple of 256"), error);
    CHECK(row_bytes(f16::value, 172) == 344);
}

TEST_CASE("byte quantities print in binary units with two decimals") {
    CHECK(to_string(bytes{512}) == "512 B");
    CHECK(to_string(bytes{1536}) == "1.50 KiB");
    CHECK(to_string(gib(8)) == "8.00 GiB");
    CHECK(to_string(bytes{4517937152}) == "4.21 GiB");
    CHECK(with_separators(4517937152) == "4,517,937,152");
    CHECK(with_separators(999) == "999");
    CHECK_THROWS_AS(bytes{1} - bytes{2}, error);
    CHECK_THROWS_WITH_AS(bytes{~0ull} + bytes{1}, doctest::Contains("overflow"), error);
    CHECK_THROWS_AS(tensor_bytes(f32::value, 1ull << 40, 1ull << 30), error);
}

TEST_CASE("fp16 conversion agrees with IEEE half precision") {
    CHECK(to_half(1.0f).bits == 0x3c00);
    CHECK(to_half(-2.0f).bits == 0xc000);
    CHECK(to_half(65504.0f).bits == 0x7bff);
    CHECK(to_half(65520.0f).bits == 0x7c00);  // rounds to infinity
    CHECK(to_half(0.1f).bits == 0x2e66);
    CHECK(to_half(std::ldexp(1.0f, -24)).bits == 0x0001);         // smallest subnormal
    CHECK(to_half(std::ldexp(1.0f, -25)).bits == 0x0000);         // halfway: ties to even (zero)
    CHECK(to_half(std::ldexp(3.0f, -26)).bits == 0x0001);         // above halfway rounds up
    CHECK(to_half(1.0f + std::ldexp(1.0f, -11)).bits == 0x3c00);  // halfway between 1 and next: to even
    CHECK(to_half(1.0f + std::ldexp(3.0f, -11)).bits == 0x3c02);  // halfway, odd below: up to even
    // Every finite half survives a round trip through float.
    for (std::uint32_t b = 0; b < 0x10000; ++b) {
        const half_bits h{static_cast<std::uint16_t>(b)};
        const float f = to_float(h);
        if (std::isnan(f)) continue;
        REQUIRE(to_half(f).bits == h.bits);
    }
    CHECK(to_float(half_bits{0x0001}) == std::ldexp(1.0f, -24));
    CHECK(to_float(half_bits{0x3555}) == doctest::Approx(0.33325195).epsilon(1e-7));
}

TEST_CASE("bf16 conversion rounds to nearest even") {
    CHECK(to_bf16(1.0f).bits == 0x3f80);
    CHECK(to_float(bf16_bits{0x4049}) == 3.140625f);
    float x;
    std::uint32_t u = 0x3f808000;  // exactly halfway between 0x3f80 and 0x3f81: to even
    std::memcpy(&x, &u, 4);
    CHECK(to_bf16(x).bits == 0x3f80);
    u = 0x3f818000;  // halfway, odd below: rounds up
    std::memcpy(&x, &u, 4);
    CHECK(to_bf16(x).bits == 0x3f82);
}
