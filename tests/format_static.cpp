// Compile-time tests: this translation unit compiles only if every assertion holds.
// Expected values are derived by hand from the GGUF block layouts (bytes per block / elements).
#include "vramplan/format/blocks.hpp"
#include "vramplan/format/bytes.hpp"
#include "vramplan/format/types.hpp"

namespace vp = vramplan;

// 4096 x 4096 Q4_0: 16,777,216 elements / 32 per block x 18 bytes.
static_assert(vp::tensor_bytes(vp::q4_0::value, 4096, 4096) == 9'437'184);
// Q8_0: 34 bytes per 32 elements.
static_assert(vp::q8_0::storage_bytes(32) == 34);
static_assert(vp::q8_0::storage_bytes(4096) == 4096 / 32 * 34);
// Q6_K: 210 bytes per 256; Q4_K 144; Q5_K 176; Q2_K 84; Q3_K 110.
static_assert(vp::q6_k::storage_bytes(256) == 210);
static_assert(vp::q6_k::storage_bytes(4096) == 16 * 210);
static_assert(vp::q4_k::storage_bytes(256) == 144 && vp::q5_k::storage_bytes(256) == 176);
static_assert(vp::q2_k::storage_bytes(256) == 84 && vp::q3_k::storage_bytes(256) == 110);
static_assert(vp::iq4_nl::storage_bytes(32) == 18 && vp::iq4_xs::storage_bytes(256) == 136);
static_assert(vp::q4_1::storage_bytes(32) == 20 && vp::q5_0::storage_bytes(32) == 22 &&
              vp::q5_1::storage_bytes(32) == 24);
// Dense formats.
static_assert(vp::f32::storage_bytes(10) == 40 && vp::f16::storage_bytes(10) == 20 &&
              vp::bf16::storage_bytes(10) == 20);
static_assert(vp::fp8_e4m3::storage_bytes(10) == 10 && vp::fp8_e5m2::storage_bytes(10) == 10);
// int8 per row: n values + one fp16 scale.
static_assert(vp::int8_row::storage_bytes(4096) == 4098);
// int4 groups of 128: n/2 bytes of values + 2 bytes per group (+ 4 bits of zero point per group).
static_assert(vp::int4_group<128>::storage_bytes(4096) == 2048 + 32 * 2);
static_assert(vp::int4_group<128, true>::storage_bytes(4096) == 2048 + 32 * 2 + 16);
static_assert(vp::int4_group<32, true>::storage_bytes(96) == 48 + 3 * 2 + 2);  // 3 zero points round up to 2 bytes
// Every format type satisfies the concept; other types do not.
static_assert(vp::storage_format<vp::q4_0> && vp::storage_format<vp::int4_group<64>> && vp::storage_format<vp::q6_k>);
static_assert(!vp::storage_format<int> && !vp::storage_format<vp::bytes>);
// Rows that are not whole blocks are rejected (row_fits_format is the non-throwing check).
static_assert(!vp::row_fits_format(vp::q4_0::value, 172) && vp::row_fits_format(vp::f16::value, 172));
template <class F, std::uint64_t N>
concept storable = requires {
    typename std::integral_constant<std::uint64_t, F::storage_bytes(N)>;
};
static_assert(!storable<vp::q4_0, 172> && storable<vp::q4_0, 192>);
// Byte quantities.
static_assert(vp::gib(1) == vp::bytes{1073741824} && vp::mib(3) + vp::kib(1) == vp::bytes{3 * 1048576 + 1024});
static_assert(vp::align_up(vp::bytes{1}, 256) == vp::bytes{256} && vp::align_up(vp::bytes{512}, 256) == vp::bytes{512});
static_assert(vp::align_up(100, 96) == 192);
// GGUF type ids are the enumerators' values.
static_assert(static_cast<int>(vp::format_id::q8_0) == 8 && static_cast<int>(vp::format_id::bf16) == 30 &&
              static_cast<int>(vp::format_id::q6_k) == 14);
