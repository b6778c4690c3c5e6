// Every CPU kernel against a naive double-precision reference on random data. Tolerances: the
// kernels accumulate in f32, so a sum of n products carries a relative error of order n * 2^-24;
// we allow 1e-5 * n * sum|terms| plus a small absolute floor. Quantization error itself is checked
// separately against its bound (half a quantization step).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>
#include <tuple>
#include <vector>

#include "isa_paths.hpp"
#include "random_values.hpp"

#include "vramplan/io/gguf_reader.hpp"
#include "vramplan/kernels/cpu/dispatch.hpp"
#include "vramplan/kernels/cpu/elementwise.hpp"
#include "vramplan/kernels/cpu/int8_panel.hpp"
#include "vramplan/runtime/weight_layout.hpp"

using namespace vramplan;
using namespace vramplan::kernels;

namespace {

using test_data::random_values;

// A row of n values stored in format F, and its exact dequantized values.
struct stored_row {
    std::vector<std::uint8_t> bytes;
    std::vector<double> values;
};

template <kernel_format F>
stored_row store(const std::vector<float>& x) {
    stored_row r;
    r.bytes.resize(kernel_row_bytes(F, x.size()));
    store_row<F>(x.data(), r.bytes.data(), x.size());
    for (std::size_t i = 0; i < x.size(); ++i) r.values.push_back(load<F>(r.bytes.data(), i));
    return r;
}

double tolerance(std::size_t n, double magnitude) { return 1e-5 * static_cast<double>(n) * magnitude + 1e-6; }

template <kernel_format F>
void check_dot(std::size_t n, std::uint64_t seed) {
    const auto w = random_values(n, seed), x = random_values(n, seed + 1);
    const auto r = store<F>(w);
    double ref = 0, mag = 0;
    for (std::size_t i = 0; i < n; ++i) {
        ref += r.values[i] * x[i];
        mag += std::fabs(r.values[i] * x[i]);
    }
    CAPTURE(kernel_format_name(F));
    CAPTURE(n);
    CHECK(std::fabs(cpu::dot<F>(r.bytes.data(), x.data(), n) - ref) <= tolerance(n, mag));
    CHECK(std::fabs(cpu::dot_portable<F>(r.bytes.data(), x.data(), n) - ref) <= tolerance(n, mag));
    // Dequantizing to floats (the general attention path) is exact: the same product d * q.
    const std::size_t start = n >= 64 ? 32 : 0;
    std::vector<float> y(n - start);
    cpu::to_f32<F>(r.bytes.data(), start, y.data(), n - start);
    for (std::size_t i = start; i < n; ++i) CHECK(y[i - start] == r.values[i]);
}

}  // namespace

TEST_CASE("Q8_0 and Q4_0 quantization stays within half a step") {
    const auto x = random_values(32 * 64, 7);
    const auto q8 = store<kernel_format::q8_0>(x);
    const auto q4 = store<kernel_format::q4_0>(x);
    for (std::size_t b = 0; b < 64; ++b) {
        double amax = 0, signed_max = 0;
        for (int j = 0; j < 32; ++j)
            if (std::fabs(x[b * 32 + j]) > amax) {
                amax = std::fabs(x[b * 32 + j]);
                signed_max = x[b * 32 + j];
            }
        for (int j = 0; j < 32; ++j) {
            const std::size_t i = b * 32 + j;
            // Steps are amax/127 and amax/8; the fp16 scale adds a relative 2^-11. Q4_0's range
            // [-8, 7] steps clips the side opposite the block's largest value by up to one step.
            CHECK(std::fabs(q8.values[i] - x[i]) <= amax / 127 * 0.5 + amax * 1e-3);
            const bool clipped_side = (x[i] > 0) != (signed_max > 0);
            CHECK(std::fabs(q4.values[i] - x[i]) <= amax / 8 * (clipped_side ? 1.0 : 0.5) + amax * 1e-3);
        }
    }
    // Zero blocks stay zero; the largest-magnitude value of a Q4_0 block is exact up to the fp16 scale.
    std::vector<float> z(32, 0.0f);
    CHECK(store<kernel_format::q4_0>(z).values == std::vector<double>(32, 0.0));
    std::vector<float> one(32, 0.0f);
    one[5] = -3.0f;
    CHECK(store<kernel_format::q4_0>(one).values[5] == doctest::Approx(-3.0));
}

TEST_CASE("the CPU's Q8_0 quantizer equals the shared one bit for bit, halves and zeros included") {
    // round_half_away against the C library's roundf: every quarter from -130 to 130 (ties at
    // every .5), and values just either side of the ties.
    for (int i = -520; i <= 520; ++i) {
        const float v = static_cast<float>(i) / 4.0f;
        for (float x : {v, std::nextafter(v, 0.0f), std::nextafter(v, 200.0f)}) {
            CAPTURE(x);
            CHECK(round_half_away(x) == std::roundf(x));
        }
    }
    // Blocks whose largest magnitude is 127 have the scale 1, so halves stay halves: x.5 ties of
    // both signs go through the vector rounding. Then random blocks over many magnitudes, an
    // all-zero block and one of tiny values (its f16 scale underflows to 0).
    std::vector<float> x(32 * 40);
    for (int j = 0; j < 32; ++j) x[j] = j == 0 ? 127.0f : (j % 2 ? 1.0f : -1.0f) * (static_cast<float>(j) + 0.5f);
    for (int j = 0; j < 32; ++j) x[32 + j] = j == 31 ? -127.0f : static_cast<float>(j) - 15.5f;
    const auto r = random_values(32 * 36, 11);
    for (std::size_t i = 0; i < r.size(); ++i) x[64 + i] = r[i] * std::ldexp(1.0f, static_cast<int>(i / 32) - 18);
    for (int j = 0; j < 32; ++j) x[32 * 38 + j] = 0.0f;
    for (int j = 0; j < 32; ++j) x[32 * 39 + j] = static_cast<float>(j) * 1e-37f;
    for (std::size_t b = 0; b < x.size() / 32; ++b) {
        CAPTURE(b);
        blocks::q8_0 shared, cpu_block;
        quantize_block(x.data() + 32 * b, shared);
        const std::int32_t sum = cpu::quantize_block_q8_0(x.data() + 32 * b, cpu_block);
        CHECK(cpu_block.d.bits == shared.d.bits);
        std::int32_t expected_sum = 0;
        for (int j = 0; j < 32; ++j) {
            CHECK(cpu_block.qs[j] == shared.qs[j]);
            expected_sum += shared.qs[j];
        }
        CHECK(sum == expected_sum);
        CHECK(cpu::quantize_block_q8_0_portable(x.data() + 32 * b, cpu_block) == expected_sum);
    }
    // The ties really were ties: -2.5 went to -3 and 3.5 to 4, away from zero.
    blocks::q8_0 b0;
    cpu::quantize_block_q8_0(x.data(), b0);
    CHECK(b0.qs[2] == -3);
    CHECK(b0.qs[3] == 4);
}

TEST_CASE("the CPU's Q8_K quantizer equals the shared one bit for bit, and takes the vector steps for ordinary blocks") {
    // Blocks of 256: random values over many magnitudes; scale 1 (largest magnitude -127), so that
    // x.5 ties of both signs reach the rounding (to even: 2.5 -> 2, 3.5 -> 4); the largest magnitude
    // negative, or held twice by one sign. Then the blocks the vector steps leave to the scalar ones:
    // +m and -m both present (the first decides the sign), all zeros, a NaN, an infinity, and values
    // so small that the inverse scale overflows.
    constexpr int n = blocks::qk_k;
    std::vector<std::vector<float>> ordinary, left;
    const auto r = random_values(n * 24, 21);
    for (int b = 0; b < 24; ++b) {
        std::vector<float> x(r.begin() + n * b, r.begin() + n * (b + 1));
        for (float& v : x) v *= std::ldexp(1.0f, 3 * b - 40);
        ordinary.push_back(x);
    }
    std::vector<float> ties(n);
    for (int j = 0; j < n; ++j) ties[j] = j == 7 ? -127.0f : (j % 2 ? 1.0f : -1.0f) * (static_cast<float>(j % 120) + 0.5f);
    ordinary.push_back(ties);
    std::vector<float> twice(n, 0.25f);
    twice[3] = twice[200] = 9.0f;
    ordinary.push_back(twice);
    std::vector<float> both = twice;
    both[100] = -9.0f;
    left.push_back(both);
    both[3] = -9.0f;  // now -9 comes first
    left.push_back(both);
    left.push_back(std::vector<float>(n, 0.0f));
    std::vector<float> special = ordinary[10];
    special[17] = std::nanf("");
    left.push_back(special);
    special[17] = -INFINITY;
    left.push_back(special);
    std::vector<float> tiny(n);
    for (int j = 0; j < n; ++j) tiny[j] = static_cast<float>(j - 100) * 1e-42f;
    left.push_back(tiny);

    const auto same = [](const blocks::q8_k& a, const blocks::q8_k& b) {
        return std::memcmp(&a.d, &b.d, sizeof a.d) == 0 && std::memcmp(a.qs, b.qs, sizeof a.qs) == 0 &&
               std::memcmp(a.bsums, b.bsums, sizeof a.bsums) == 0;
    };
    for (const auto* set : {&ordinary, &left})
        for (std::size_t i = 0; i < set->size(); ++i) {
            CAPTURE(set == &ordinary);
            CAPTURE(i);
            const float* x = (*set)[i].data();
            blocks::q8_k shared, cpu_block;
            quantize_block(x, shared);
            cpu::quantize_block_q8_k(x, cpu_block);
            CHECK(same(cpu_block, shared));
#if VRAMPLAN_X86_SIMD
            if (cpu::has_avx2()) {
                blocks::q8_k vector_block{};
                CHECK(cpu::simd::quantize_q8_k(x, vector_block) == (set == &ordinary));
                if (set == &ordinary) CHECK(same(vector_block, shared));
            }
#endif
        }
    // Against values worked out apart from either quantizer: the ties block has scale 1 (its
    // largest magnitude is 127), so each integer is the C library's round-to-nearest-even of the
    // value itself (-2.5 at j = 2 to -2, 3.5 at j = 3 to 4) and each sum that of sixteen of them.
    blocks::q8_k t;
    cpu::quantize_block_q8_k(ties.data(), t);
    CHECK(t.d == 1.0f);
    CHECK(t.qs[2] == -2);
    CHECK(t.qs[3] == 4);
    for (int j = 0; j < n; ++j) {
        CAPTURE(j);
        CHECK(t.qs[j] == static_cast<int>(std::nearbyint(ties[j])));
    }
    for (int s = 0; s < n / 16; ++s) {
        double sum = 0;
        for (int j = 0; j < 16; ++j) sum += std::nearbyint(ties[16 * s + j]);
        CHECK(t.bsums[s] == static_cast<int>(sum));
    }
#if VRAMPLAN_X86_SIMD
    if (!cpu::has_avx2()) MESSAGE("skipped: this processor lacks AVX2, so only the scalar steps ran");
#endif
}

TEST_CASE("quantizers are bit-exact with llama.cpp's on the stories260K files") {
    const std::string dir = std::string(VRAMPLAN_SHARED_DIR) + "/models/";
    if (!std::filesystem::exists(dir + "stories260K.gguf")) {
        MESSAGE("../shared/models absent: skipped");
        return;
    }
    const auto f32 = io::gguf_file::open(dir + "stories260K.gguf");
    for (auto [file, tensor, fmt] : {std::tuple{"stories260K-q8_0.gguf", "blk.2.ffn_up.weight", kernel_format::q8_0},
                                     std::tuple{"stories260K-q4_0.gguf", "blk.2.ffn_up.weight", kernel_format::q4_0},
                                     std::tuple{"stories260K-q4_0.gguf", "output.weight", kernel_format::q8_0}}) {
        CAPTURE(file);
        const auto q = io::gguf_file::open(dir + file);
        const auto* src = f32.find_tensor(tensor);
        const auto* dst = q.find_tensor(tensor);
        std::vector<float> x(src->elements());
        f32.read_tensor(*src, x.data());
        std::vector<std::uint8_t> expected(dst->bytes), ours(dst->bytes);
        q.read_tensor(*dst, expected.data());
        if (fmt == kernel_format::q8_0)
            store_row<kernel_format::q8_0>(x.data(), ours.data(), x.size());
        else
            store_row<kernel_format::q4_0>(x.data(), ours.data(), x.size());
        CHECK(ours == expected);
    }
}

TEST_CASE("dot products of every format against a double reference") {
    for (std::size_t n : {32, 96, 128, 4096}) {
        check_dot<kernel_format::q8_0>(n, n);
        check_dot<kernel_format::q4_0>(n, n + 1);
    }
    for (std::size_t n : {1, 7, 37, 172, 4096}) {  // rows that are not a multiple of 32
        check_dot<kernel_format::f32>(n, n + 2);
        check_dot<kernel_format::f16>(n, n + 3);
        check_dot<kernel_format::bf16>(n, n + 4);
    }
}

namespace {
// Rows int8 rows of one format times activations rounded by rounded_blocks, through the row kernel
// of every path, against a double reference over the same rounded activations.
template <kernel_format F, int Rows>
void check_int8_rows(std::uint64_t n) {
    using B = typename block_of<F>::type;
    const std::uint64_t nb = n / 32;
    const auto x = random_values(n, 7);
    cpu::rounded_blocks<8> xq;
    xq.round(x.data(), 0, nb);
    if (nb % 2) xq.clear(nb);
    std::vector<stored_row> rows;
    const B* ptrs[Rows];
    for (int r = 0; r < Rows; ++r) rows.push_back(store<F>(random_values(n, 8 + r)));
    for (int r = 0; r < Rows; ++r) ptrs[r] = reinterpret_cast<const B*>(rows[r].bytes.data());
    for (const auto isa : test_data::cpu_paths()) {
        CAPTURE(cpu::cpu_isa_name(isa));
        CAPTURE(kernel_format_name(F));
        CAPTURE(n);
        const cpu::cpu_isa_scope path(isa);
        float out[Rows];
        cpu::paced_prefetch none;
        cpu::find_int8_rows<B, Rows>()(ptrs, {xq.qs, xq.d, xq.sum}, nb, out, none);
        for (int r = 0; r < Rows; ++r) {
            double ref = 0, mag = 0;
            for (std::uint64_t i = 0; i < n; ++i) {
                const double xi = static_cast<double>(xq.d[i / 32]) * xq.qs[i];
                ref += rows[r].values[i] * xi;
                mag += std::fabs(rows[r].values[i] * xi);
            }
            // Each block's integer sum is exact; what remains is f32 rounding of its scale, its
            // product and the running sum: a few ulps per block of the magnitudes summed.
            CHECK(std::fabs(out[r] - ref) <= (3.0 * static_cast<double>(nb) + 8) * 0x1p-24 * mag);
        }
    }
}
}  // namespace

TEST_CASE("instruction-set names: each parses to its path, and an unknown one is an error listing them") {
    CHECK(cpu::parse_cpu_isa("portable") == cpu::cpu_isa::portable);
    CHECK(cpu::parse_cpu_isa("avx2") == cpu::cpu_isa::avx2);
    CHECK(cpu::parse_cpu_isa("avx2-vnni") == cpu::cpu_isa::avx2_vnni);
    CHECK(cpu::parse_cpu_isa("avx512") == cpu::cpu_isa::avx512);
    CHECK(cpu::parse_cpu_isa("avx512-vnni") == cpu::cpu_isa::avx512_vnni);
    CHECK_THROWS_WITH_AS(cpu::parse_cpu_isa("AVX2"), doctest::Contains("use portable, avx2, avx2-vnni, avx512 or avx512-vnni"),
                         error);
    // A cap above the processor's best runs the best; a cap below it runs the cap.
    const cpu::cpu_isa_scope top(cpu::cpu_isa::avx512_vnni);
    CHECK(cpu::active_cpu_isa() == cpu::detected_cpu_isa());
    const cpu::cpu_isa_scope low(cpu::cpu_isa::portable);
    CHECK(cpu::active_cpu_isa() == cpu::cpu_isa::portable);
    CHECK_FALSE(cpu::has_avx2());
}

TEST_CASE("Q4_0 and Q8_0 rows times Q8_0-rounded activations on every path against a double reference") {
    for (std::uint64_t n : {32, 96, 128, 256}) {  // odd and even block counts (the AVX-512 path pairs blocks)
        check_int8_rows<kernel_format::q4_0, 3>(n);
        check_int8_rows<kernel_format::q4_0, 8>(n);
        check_int8_rows<kernel_format::q8_0, 1>(n);
        check_int8_rows<kernel_format::q8_0, 8>(n);
    }
}

namespace {
// Sixteen rows of one format as a panel times one to four tokens rounded by rounded_blocks,
// through the tile kernels of every path, against a double reference over the same rounded
// activations; unpacking the panel gives the rows' blocks back.
template <kernel_format F>
void check_panel_tiles(std::uint64_t n) {
    using B = typename block_of<F>::type;
    constexpr int rows = cpu::panel_rows;
    const std::uint64_t nb = n / 32;
    std::vector<stored_row> stored;
    const B* ptrs[rows];
    for (int r = 0; r < rows; ++r) stored.push_back(store<F>(random_values(n, 30 + r)));
    for (int r = 0; r < rows; ++r) ptrs[r] = reinterpret_cast<const B*>(stored[r].bytes.data());
    std::vector<cpu::panel_block<B>> panel(nb);
    cpu::pack_panel(ptrs, 0, nb, panel.data());
    for (std::uint64_t b = 0; b < nb; ++b)
        for (int r = 0; r < rows; ++r) {
            const B back = cpu::unpack_panel(panel[b], r);
            CHECK(std::memcmp(&back, &ptrs[r][b], sizeof(B)) == 0);
        }
    cpu::rounded_blocks<4 * 8> xq;
    for (int t = 0; t < 4; ++t) xq.round(random_values(n, 60 + t).data(), t * nb, nb);
    for (const auto isa : test_data::cpu_paths()) {
        CAPTURE(cpu::cpu_isa_name(isa));
        CAPTURE(kernel_format_name(F));
        CAPTURE(n);
        const cpu::cpu_isa_scope path(isa);
        const auto kernels = cpu::find_panel_kernels<B>();
        for (int tokens = 1; tokens <= cpu::panel_tokens; ++tokens) {
            CAPTURE(tokens);
            float out[cpu::panel_tokens * rows];
            kernels.tile[tokens - 1](panel.data(), 0, {xq.qs, xq.d, xq.sum}, nb, nb, out);
            for (int t = 0; t < tokens; ++t)
                for (int r = 0; r < rows; ++r) {
                    double ref = 0, mag = 0;
                    for (std::uint64_t i = 0; i < n; ++i) {
                        const std::uint64_t at = t * nb * 32 + i;
                        const double xi = static_cast<double>(xq.d[at / 32]) * xq.qs[at];
                        ref += stored[r].values[i] * xi;
                        mag += std::fabs(stored[r].values[i] * xi);
                    }
                    // As for the row kernels: exact block sums, a few ulps per block in f32.
                    CHECK(std::fabs(out[t * rows + r] - ref) <= (3.0 * static_cast<double>(nb) + 8) * 0x1p-24 * mag);
                }
        }
    }
}
}  // namespace

TEST_CASE("panels of sixteen Q4_0 and Q8_0 rows times one to four tokens on every path against a double reference") {
    for (std::uint64_t n : {32, 96, 256}) {
        check_panel_tiles<kernel_format::q4_0>(n);
        check_panel_tiles<kernel_format::q8_0>(n);
    }
}

TEST_CASE("Q8_0 weights of -128, which the AVX2 path's sign trick and VNNI's offset must both get right") {
    // GGUF's quantizer writes -127..127, but a file may hold -128; activations are -127..127.
    std::vector<blocks::q8_0> w(2);
    cpu::rounded_blocks<2> xq;
    for (int b = 0; b < 2; ++b) {
        w[b].d = to_half(0.5f);
        for (int j = 0; j < 32; ++j) {
            w[b].qs[j] = static_cast<std::int8_t>(j % 2 ? -128 : 127);
            xq.qs[b * 32 + j] = static_cast<std::int8_t>(j % 3 ? -127 : 127);
        }
        xq.d[b] = 0.25f;
        xq.sum[b] = 0;
        for (int j = 0; j < 32; ++j) xq.sum[b] += xq.qs[b * 32 + j];
    }
    double ref = 0;
    for (int b = 0; b < 2; ++b)
        for (int j = 0; j < 32; ++j) ref += 0.5 * 0.25 * w[b].qs[j] * xq.qs[b * 32 + j];
    const blocks::q8_0* rows[1] = {w.data()};
    for (const auto isa : test_data::cpu_paths()) {
        CAPTURE(cpu::cpu_isa_name(isa));
        const cpu::cpu_isa_scope path(isa);
        float out = 0;
        cpu::paced_prefetch none;
        cpu::find_int8_rows<blocks::q8_0, 1>()(rows, {xq.qs, xq.d, xq.sum}, 2, &out, none);
        CHECK(out == doctest::Approx(ref).epsilon(1e-6));
        // The panel kernels: sixteen copies of the row, their sign trick and offset the same way.
        const blocks::q8_0* copies[cpu::panel_rows];
        for (auto& c : copies) c = w.data();
        cpu::panel_block<blocks::q8_0> panel[2];
        cpu::pack_panel(copies, 0, 2, panel);
        float lanes[cpu::panel_tokens * cpu::panel_rows];
        cpu::find_panel_kernels<blocks::q8_0>().tile[0](panel, 0, {xq.qs, xq.d, xq.sum}, 2, 2, lanes);
        for (int r = 0; r < cpu::panel_rows; ++r) CHECK(lanes[r] == doctest::Approx(ref).epsilon(1e-6));
    }
}

TEST_CASE("matrix products against a double reference") {
    cpu::thread_pool pool(2);
    for (auto [fmt, rows, cols] :
         {std::tuple{kernel_format::f32, 37, 172}, std::tuple{kernel_format::f16, 64, 172},
          std::tuple{kernel_format::bf16, 5, 33}, std::tuple{kernel_format::q8_0, 45, 96},
          std::tuple{kernel_format::q8_0, 9, 2049 * 32}, std::tuple{kernel_format::q8_0, 167, 96},
          std::tuple{kernel_format::q4_0, 131, 256}, std::tuple{kernel_format::q4_0, 352, 64},
          std::tuple{kernel_format::q4_0, 3, 2050 * 32},
          std::tuple{kernel_format::q4_0, 5, 1023 * 32}}) {  // 3 tokens: passes of 2 and 1 (1024-block stride)
        // 9 tokens: Q4_0 and Q8_0 rows as stored go through panels packed on the way. One token
        // over held panels reads them four streams at a time and the rest one by one (167 and
        // 352 rows: 10 and 22 panels, taken by two threads in chunks of four, the last of two).
        for (std::uint64_t tokens : {1, 3, 9})
            for (const auto isa : test_data::cpu_paths()) {
                CAPTURE(kernel_format_name(fmt));
                CAPTURE(cpu::cpu_isa_name(isa));
                CAPTURE(tokens);
                const cpu::cpu_isa_scope path(isa);
                const auto w = random_values(rows * cols, rows);
                std::vector<std::uint8_t> stored(kernel_row_bytes(fmt, cols) * rows);
                std::vector<double> wv(rows * cols);
                for (int r = 0; r < rows; ++r) {
                    void* row = stored.data() + r * kernel_row_bytes(fmt, cols);
                    const float* src = w.data() + r * cols;
                    with_kernel_format(fmt, [&](auto k) {
                        if constexpr (stores_rows(k())) {
                            store_row<k()>(src, row, cols);
                            for (int c = 0; c < cols; ++c) wv[r * cols + c] = load<k()>(row, c);
                        }
                    });
                }
                const auto x = random_values(tokens * cols, 99);
                // Q4_0 and Q8_0 weights meet activations rounded to Q8_0 blocks: the reference rounds
                // them too (the rounding itself is checked above against llama.cpp's files and its
                // error bound).
                std::vector<double> xr(x.begin(), x.end());
                if (fmt == kernel_format::q4_0 || fmt == kernel_format::q8_0) {
                    const auto q = store<kernel_format::q8_0>(x);
                    xr = q.values;
                }
                // Q4_0 and Q8_0 also as the CPU backend holds them: whole panels of sixteen rows,
                // the rows after the last one as stored.
                std::vector<std::vector<std::uint8_t>> layouts{stored};
                if (fmt == kernel_format::q4_0 || fmt == kernel_format::q8_0) {
                    std::vector<std::uint8_t> scratch;
                    layouts.push_back(stored);
                    runtime::convert_to_panels(format{fmt == kernel_format::q4_0 ? format_id::q4_0 : format_id::q8_0},
                                               reinterpret_cast<std::byte*>(layouts.back().data()), rows, cols,
                                               scratch);
                }
                for (std::size_t held = 0; held < layouts.size(); ++held) {
                    CAPTURE(held);
                    std::vector<float> y(tokens * rows);
                    cpu::find_matmul(fmt)(cpu::weight_view{fmt, layouts[held].data(), static_cast<std::uint64_t>(rows),
                                                           static_cast<std::uint64_t>(cols), held == 1},
                                          x.data(), y.data(), tokens, pool);
                    for (std::uint64_t t = 0; t < tokens; ++t)
                        for (int r = 0; r < rows; ++r) {
                            double ref = 0, mag = 0;
                            for (int c = 0; c < cols; ++c) {
                                ref += wv[r * cols + c] * xr[t * cols + c];
                                mag += std::fabs(wv[r * cols + c] * xr[t * cols + c]);
                            }
                            REQUIRE(std::fabs(y[t * rows + r] - ref) <= tolerance(cols, mag));
                        }
                    // Threads take the product's units from a queue: one and three give the same bits.
                    for (unsigned threads : {1u, 3u}) {
                        cpu::thread_pool other(threads);
                        std::vector<float> again(tokens * rows);
                        cpu::find_matmul(fmt)(
                            cpu::weight_view{fmt, layouts[held].data(), static_cast<std::uint64_t>(rows),
                                             static_cast<std::uint64_t>(cols), held == 1},
                            x.data(), again.data(), tokens, other);
                        CHECK(again == y);
                    }
                }
            }
    }
}

namespace {
// Naive causal attention in double over the cache as stored (dequantized), every score
// materialized. For Q8_0 and Q4_0 caches the queries are rounded to Q8_0 blocks first when a head
// is a whole number of blocks, as the kernels promise (rounds_queries).
std::vector<double> reference_attention(const attention_args& a, kernel_format kv, bool round_queries = true) {
    std::vector<double> out(a.tokens * a.n_head * a.head_dim, 0.0);
    std::vector<float> qf(a.tokens * a.n_head * a.head_dim);
    for (std::size_t i = 0; i < qf.size(); ++i)
        qf[i] = a.q_format == kernel_format::f16 ? to_float(static_cast<const half_bits*>(a.q)[i])
                                                 : static_cast<const float*>(a.q)[i];
    std::vector<double> q(qf.begin(), qf.end());
    if (round_queries && (kv == kernel_format::q8_0 || kv == kernel_format::q4_0) && a.head_dim % 32 == 0)
        for (std::size_t b = 0; b < q.size() / 32; ++b) {
            blocks::q8_0 block;
            quantize_block(qf.data() + 32 * b, block);
            for (int j = 0; j < 32; ++j) q[32 * b + j] = static_cast<double>(to_float(block.d)) * block.qs[j];
        }
    const std::uint64_t row_bytes = kernel_row_bytes(kv, a.kv_dim());
    auto at = [&](const void* cache, std::uint64_t row, std::uint64_t i) -> double {
        const void* p = static_cast<const std::uint8_t*>(cache) + row * row_bytes;
        switch (kv) {
            case kernel_format::f32: return load<kernel_format::f32>(p, i);
            case kernel_format::f16: return load<kernel_format::f16>(p, i);
            case kernel_format::q8_0: return load<kernel_format::q8_0>(p, i);
            case kernel_format::q4_0: return load<kernel_format::q4_0>(p, i);
            default: return 0;
        }
    };
    const std::uint64_t group = a.n_head / a.n_head_kv;
    for (std::uint64_t t = 0; t < a.tokens; ++t)
        for (std::uint64_t h = 0; h < a.n_head; ++h) {
            // Positions first..pos are seen (a window's, or all); position p is in row p mod context.
            const std::uint64_t g = h / group, keys = a.pos[t] + 1;
            const std::uint64_t first = a.window && keys > a.window ? keys - a.window : 0;
            const std::uint64_t base = (a.seq ? a.seq[t] : 0) * a.context;
            std::vector<double> s(keys, -1e300);
            double m = -1e300;
            for (std::uint64_t p = first; p < keys; ++p) {
                double dotp = 0;
                for (std::uint64_t d = 0; d < a.head_dim; ++d)
                    dotp += q[(t * a.n_head + h) * a.head_dim + d] * at(a.k, base + p % a.context, g * a.head_dim + d);
                s[p] = dotp * a.scale;
                if (a.softcap > 0) s[p] = a.softcap * std::tanh(s[p] / a.softcap);
                m = std::max(m, s[p]);
            }
            double l = 0;
            for (auto& x : s) l += (x = std::exp(x - m));
            for (std::uint64_t p = first; p < keys; ++p)
                for (std::uint64_t d = 0; d < a.head_dim; ++d)
                    out[(t * a.n_head + h) * a.head_dim + d] +=
                        s[p] / l * at(a.v, base + p % a.context, g * a.head_dim + d);
        }
    return out;
}

// The fused kernel run once on a cache filled through the KV-append kernel, one position per row,
// queried by the last `tokens` positions (prefill of a chunk, or decode when tokens == 1). The
// values depend on the shape only, so caches of different formats hold the same numbers rounded
// differently.
struct attention_run {
    std::vector<std::uint8_t> k, v;
    std::vector<std::int32_t> pos;
    std::vector<float> q, out, ws;
    std::vector<half_bits> q16;
    attention_args a;

    attention_run(kernel_format kv, std::uint64_t head_dim, std::uint64_t n_head, std::uint64_t n_head_kv,
                  std::uint64_t context, std::uint64_t tokens, std::uint64_t max_splits, cpu::thread_pool& pool,
                  kernel_format q_format = kernel_format::f32) {
        const std::uint64_t kv_dim = n_head_kv * head_dim;
        k.resize(kernel_row_bytes(kv, kv_dim) * context);
        v.resize(k.size());
        const auto kf = random_values(context * kv_dim, context + head_dim),
                   vf = random_values(context * kv_dim, context * 3 + head_dim);
        pos.resize(context);
        for (std::uint64_t p = 0; p < context; ++p) pos[p] = static_cast<std::int32_t>(p);
        cpu::find_kv_append(kv)(kf.data(), vf.data(), pos.data(), nullptr, context, kv_dim, context, k.data(),
                                v.data());
        q = random_values(tokens * n_head * head_dim, 5 + tokens, 2.0f);
        out.assign(tokens * n_head * head_dim, 0.0f);
        a.tokens = tokens;
        a.n_head = n_head;
        a.n_head_kv = n_head_kv;
        a.head_dim = head_dim;
        a.context = context;
        a.scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
        a.q = q.data();
        if (q_format != kernel_format::f32) {
            for (float x : q) q16.push_back(to_half(x));
            a.q = q16.data();
        }
        a.q_format = q_format;
        a.pos = pos.data() + (context - tokens);
        a.k = k.data();
        a.v = v.data();
        a.out = out.data();
        a.max_splits = max_splits;
        a.workspace_rows = tokens * max_splits;
        ws.assign(a.workspace_rows * attention_state_layout{n_head, head_dim, 1}.row_floats(), 0.0f);
        a.workspace = ws.data();
        cpu::find_attention(kv, head_dim)(a, pool);
    }
    attention_run(const attention_run&) = delete;
    attention_run& operator=(const attention_run&) = delete;
};

template <class X>
double max_error(const std::vector<X>& x, const std::vector<double>& ref) {
    double worst = 0;
    for (std::size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::fabs(x[i] - ref[i]));
    return worst;
}

void check_attention(kernel_format kv, std::uint64_t head_dim, std::uint64_t n_head, std::uint64_t n_head_kv,
                     std::uint64_t context, std::uint64_t tokens, std::uint64_t max_splits, cpu::thread_pool& pool,
                     kernel_format q_format = kernel_format::f32) {
    CAPTURE(kernel_format_name(kv));
    CAPTURE(kernel_format_name(q_format));
    CAPTURE(head_dim);
    CAPTURE(n_head / n_head_kv);
    CAPTURE(context);
    CAPTURE(tokens);
    const attention_run run(kv, head_dim, n_head, n_head_kv, context, tokens, max_splits, pool, q_format);
    // Outputs are convex combinations of V values of magnitude ~1: f32 softmax arithmetic over up
    // to 4097 keys stays well within 2e-5.
    CHECK(max_error(run.out, reference_attention(run.a, kv)) <= 2e-5);
}
}  // namespace

TEST_CASE("fused attention against naive attention: head dims 8 to 256 and GQA 1 to 8 and contexts 1 and 4097") {
    cpu::thread_pool pool(2);
    for (kernel_format kv : {kernel_format::f16, kernel_format::q8_0, kernel_format::q4_0, kernel_format::f32}) {
        for (std::uint64_t group : {1, 2, 4, 8}) check_attention(kv, 128, 8, 8 / group, 300, 1, 4, pool);
        check_attention(kv, 8, 8, 4, 64, 5, 1, pool);      // stories260K's shape; Q8_0/Q4_0 blocks span heads
        check_attention(kv, 128, 4, 1, 1, 1, 32, pool);    // a single key: MQA
        check_attention(kv, 64, 4, 2, 4097, 1, 32, pool);  // long decode, split along the context
        check_attention(kv, 64, 4, 2, 97, 16, 1, pool);    // prefill chunk
        check_attention(kv, 80, 8, 4, 301, 1, 1, pool);    // one split: KV heads spread over threads
        check_attention(kv, 96, 6, 2, 45, 2, 2, pool);     // tiles of 16 keys with a partial last tile; groups of 3
        check_attention(kv, 64, 4, 4, 45, 1, 1,
                        pool);  // a last tile of 13 keys, one head per KV head (8 keys per reduction)
        check_attention(kv, 64, 4, 2, 45, 1, 1, pool);    // the same, two heads per KV head (4 keys per reduction)
        check_attention(kv, 32, 14, 2, 77, 1, 2, pool);   // groups of 7: one step of 4 heads and one of 3
        check_attention(kv, 64, 32, 1, 300, 1, 4, pool);  // 32 query heads on one KV head: the general path
        check_attention(kv, 256, 8, 4, 300, 1, 4, pool);  // Gemma's head_dim: decode, split
        check_attention(kv, 256, 4, 2, 45, 8, 1, pool);   // and a prefill chunk
    }
    CHECK_THROWS_WITH_AS(cpu::find_attention(kernel_format::q8_0, 100),
                         doctest::Contains("no fused attention kernel for head_dim 100"), error);
    // 128 query heads of 128 on one KV head: more rounded query values than a thread keeps.
    CHECK_THROWS_WITH_AS(attention_run(kernel_format::q4_0, 128, 128, 1, 2, 1, 1, pool),
                         doctest::Contains("at most 8192 query values per KV head"), error);
    CHECK_THROWS_WITH_AS(attention_run(kernel_format::q4_0, 128, 128, 1, 2, 1, 1, pool),
                         doctest::Contains("got 128 x 128; use an f16 KV cache for this model"), error);
    CHECK_THROWS_AS(cpu::find_kv_append(kernel_format::bf16), error);
}

TEST_CASE("a sliding window over a ring cache: positions wrap, queries see their window, scores soft-capped") {
    cpu::thread_pool pool(2);
    // 90 positions appended in order into a ring of window + tokens - 1 rows (later positions
    // overwrite earlier ones), then the last `tokens` positions query it.
    for (kernel_format kv : {kernel_format::f16, kernel_format::q8_0, kernel_format::q4_0, kernel_format::f32})
        for (auto [window, tokens, group, splits, cap] :
             {std::tuple{20, 1, 2, 4, 0.0f}, std::tuple{20, 8, 2, 1, 0.0f}, std::tuple{33, 3, 1, 2, 0.0f},
              std::tuple{16, 1, 4, 1, 0.0f}, std::tuple{20, 4, 2, 2, 0.5f}}) {
            CAPTURE(kernel_format_name(kv));
            CAPTURE(window);
            CAPTURE(tokens);
            CAPTURE(cap);
            constexpr std::uint64_t head_dim = 64, positions = 90;
            const std::uint64_t n_head_kv = 2, n_head = n_head_kv * static_cast<std::uint64_t>(group);
            const std::uint64_t ring = static_cast<std::uint64_t>(window + tokens - 1), kv_dim = n_head_kv * head_dim;
            std::vector<std::uint8_t> k(kernel_row_bytes(kv, kv_dim) * ring), v(k.size());
            const auto kf = random_values(positions * kv_dim, 71), vf = random_values(positions * kv_dim, 72);
            std::vector<std::int32_t> pos(positions);
            for (std::uint64_t p = 0; p < positions; ++p) pos[p] = static_cast<std::int32_t>(p);
            cpu::find_kv_append(kv)(kf.data(), vf.data(), pos.data(), nullptr, positions, kv_dim, ring, k.data(),
                                    v.data());
            const auto q = random_values(static_cast<std::uint64_t>(tokens) * n_head * head_dim, 73, 2.0f);
            std::vector<float> out(q.size()), ws(static_cast<std::uint64_t>(tokens * splits) * n_head * (head_dim + 2));
            attention_args a;
            a.tokens = static_cast<std::uint64_t>(tokens);
            a.n_head = n_head;
            a.n_head_kv = n_head_kv;
            a.head_dim = head_dim;
            a.context = ring;
            a.window = static_cast<std::uint64_t>(window);
            a.scale = 0.125f;
            a.softcap = cap;
            a.q = q.data();
            a.pos = pos.data() + (positions - static_cast<std::uint64_t>(tokens));
            a.k = k.data();
            a.v = v.data();
            a.out = out.data();
            a.workspace = ws.data();
            a.workspace_rows = static_cast<std::uint64_t>(tokens * splits);
            a.max_splits = static_cast<std::uint64_t>(splits);
            cpu::find_attention(kv, head_dim)(a, pool);
            CHECK(max_error(out, reference_attention(a, kv)) <= 2e-5);
        }
}

TEST_CASE("fused attention reads f16 queries as the f32 values they stand for") {
    // The reference widens the same f16 queries, so any difference is the kernel's own arithmetic:
    // the same 2e-5 as with f32 queries.
    cpu::thread_pool pool(2);
    for (kernel_format kv : {kernel_format::f16, kernel_format::q8_0, kernel_format::q4_0, kernel_format::f32}) {
        check_attention(kv, 128, 8, 2, 300, 1, 4, pool, kernel_format::f16);  // GQA 4: the group step
        check_attention(kv, 64, 4, 2, 97, 16, 1, pool, kernel_format::f16);   // prefill chunk
        check_attention(kv, 8, 8, 4, 64, 5, 1, pool, kernel_format::f16);     // head_dim 8: no vector path
        check_attention(kv, 64, 32, 1, 300, 1, 4, pool,
                        kernel_format::f16);  // 32 query heads on one KV head: the general path
        check_attention(kv, 80, 8, 4, 301, 1, 1, pool, kernel_format::f16);  // one split: KV heads spread over threads
    }
    // Query values a thread cannot stage, and query formats the kernels do not read.
    CHECK_THROWS_WITH_AS(attention_run(kernel_format::f16, 128, 128, 1, 2, 1, 1, pool, kernel_format::f16),
                         doctest::Contains("with f16 queries takes at most 8192 query values per KV head"), error);
    CHECK_THROWS_WITH_AS(attention_run(kernel_format::f16, 128, 128, 1, 2, 1, 1, pool, kernel_format::f16),
                         doctest::Contains("pass f32 queries for this model"), error);
    CHECK_THROWS_WITH_AS(attention_run(kernel_format::q8_0, 128, 128, 1, 2, 1, 1, pool, kernel_format::f16),
                         doctest::Contains("use an f16 KV cache and f32 queries for this model"), error);
    CHECK_THROWS_WITH_AS(attention_run(kernel_format::f16, 64, 4, 2, 8, 1, 1, pool, kernel_format::bf16),
                         doctest::Contains("reads f32 or f16 queries, got bf16"), error);
}

TEST_CASE("rounding the queries to Q8_0 adds an error of the size of a Q8_0 cache's own rounding") {
    // Decode over 1000 keys with Llama-3-8B's head size and GQA ratio. The exact result uses f32
    // keys, values and queries; the cache's own error is that of the Q8_0 cache with f32 queries;
    // the kernel's adds the queries' rounding, of the same size per value as the keys' (half a
    // block step), so the two errors are alike and largely independent: together about sqrt(2)
    // of one.
    cpu::thread_pool pool(2);
    const attention_run f32(kernel_format::f32, 128, 8, 2, 1000, 1, 8, pool),
        q8(kernel_format::q8_0, 128, 8, 2, 1000, 1, 8, pool);
    const auto exact = reference_attention(f32.a, kernel_format::f32);
    const double cache_error = max_error(reference_attention(q8.a, kernel_format::q8_0, false), exact);
    const double kernel_error = max_error(q8.out, exact);
    MESSAGE("largest error against f32: Q8_0 cache " << cache_error << ", with the queries rounded too "
                                                     << kernel_error);
    CHECK(cache_error > 0);
    CHECK(kernel_error <= 2 * cache_error);
}

namespace {
// One tile step through whichever path the processor takes, against the portable step, from an
// empty state and from one that already holds keys with a larger max (so the rescale is exercised).
template <int HeadDim>
void check_tile_step(int n, std::uint64_t seed) {
    CAPTURE(HeadDim);
    CAPTURE(n);
    const auto q = random_values(HeadDim, seed, 2.0f), k = random_values(cpu::key_tile * HeadDim, seed + 1),
               v = random_values(cpu::key_tile * HeadDim, seed + 2);
    cpu::key_slices<HeadDim> ks, vs;
    for (int j = 0; j < cpu::key_tile; ++j)
        for (int d = 0; d < HeadDim; ++d) ks[j][d] = k[j * HeadDim + d], vs[j][d] = v[j * HeadDim + d];
    for (float cap : {0.0f, 1.5f})  // without and with Gemma 2's soft-capping of the scores
        for (float prior_max : {-INFINITY, 0.5f, 9.0f}) {
            CAPTURE(cap);
            std::vector<float> fast(HeadDim + 2, 0.0f), slow;
            fast[0] = prior_max;
            fast[1] = prior_max == -INFINITY ? 0.0f : 3.0f;
            for (int d = 0; d < HeadDim && prior_max != -INFINITY; ++d) fast[2 + d] = v[d];
            slow = fast;
            cpu::tile_step<HeadDim>(q.data(), ks, vs, n, 0.25f, cpu::head_state{fast.data()}, cap);
            cpu::tile_step_portable(q.data(), &ks[0][0], &vs[0][0], HeadDim, n, 0.25f, cpu::head_state{slow.data()},
                                    cap);
            CHECK(fast[0] == doctest::Approx(slow[0]).epsilon(1e-6));
            // Both sum HeadDim products in f32, in different orders: their rounding grows with the length.
            const double tol = 1e-5 * std::max(1.0, HeadDim / 128.0);
            for (int i = 1; i < HeadDim + 2; ++i) CHECK(std::fabs(fast[i] - slow[i]) <= tol * (1 + std::fabs(slow[i])));
        }
}
}  // namespace

TEST_CASE("the attention tile step agrees with its portable version for head dims 8 to 256 and partial tiles") {
    for (int n : {1, 7, 8, 13, cpu::key_tile}) {
        check_tile_step<8>(n, 40);
        check_tile_step<80>(n, 41);
        check_tile_step<128>(n, 42);
        check_tile_step<256>(n, 43);
    }
}

namespace {
// Five splits' states, the third empty (no keys: max -inf), merged through whichever path the
// processor takes and through the portable one; and a cleared state, both ways.
template <int HeadDim>
void check_merge_states() {
    CAPTURE(HeadDim);
    constexpr std::uint64_t splits = 5, stride = HeadDim + 2;
    auto states = random_values(splits * stride, 50 + HeadDim);
    for (std::uint64_t s = 0; s < splits; ++s)
        states[s * stride + 1] = 1.0f + static_cast<float>(s);  // sums are positive
    states[2 * stride] = -INFINITY;
    states[2 * stride + 1] = 0.0f;
    std::vector<float> fast(HeadDim), slow(HeadDim);
    cpu::merge_states<HeadDim>(states.data(), splits, fast.data());
    cpu::merge_states_portable(states.data(), splits, HeadDim, slow.data());
    for (int d = 0; d < HeadDim; ++d) CHECK(std::fabs(fast[d] - slow[d]) <= 1e-6 * (1 + std::fabs(slow[d])));
    std::vector<float> a(stride, 7.0f), b(stride, 7.0f);
    cpu::clear_state<HeadDim>(cpu::head_state{a.data()});
    cpu::clear_state_portable(cpu::head_state{b.data()}, HeadDim);
    CHECK(a == b);
    CHECK(a[0] == -INFINITY);
}
}  // namespace

TEST_CASE("merging split states agrees with its portable version for head dims 8 to 256") {
    check_merge_states<8>();
    check_merge_states<80>();
    check_merge_states<128>();
    check_merge_states<256>();
}

#if VRAMPLAN_X86_SIMD
TEST_CASE("the vectorized exp is within 2 ulp of std::exp on [-86 0]") {
    if (!cpu::has_avx2()) return;
    std::vector<float> x;
    for (float v = -86.0f; v <= 0.0f; v += 0.0137f) x.push_back(v);
    x.push_back(0.0f);
    x.push_back(-1e-30f);
    while (x.size() % 8) x.push_back(-0.5f);
    std::vector<float> y(x.size());
    cpu::simd::exp_nonpositive(x.data(), y.data(), x.size());
    double worst_ulps = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        const double exact = std::exp(static_cast<double>(x[i]));
        const double ulp =
            static_cast<double>(std::nextafter(static_cast<float>(exact), INFINITY) - static_cast<float>(exact));
        worst_ulps = std::max(worst_ulps, std::fabs(y[i] - exact) / ulp);
    }
    CHECK(worst_ulps <= 2.0);
    std::vector<float> minus_inf(8, -INFINITY), below(8);
    cpu::simd::exp_nonpositive(minus_inf.data(), below.data(), 8);
    CHECK(below[0] <= 5e-38f);  // clamped to e^-86: negligible next to the tile maximum's weight of 1
}
#endif

TEST_CASE("RMSNorm and RoPE and SwiGLU and residual add and softmax and argmax against double references") {
    const std::size_t n = 172;
    const auto x = random_values(2 * n, 1), w = random_values(n, 2);
    std::vector<float> y(2 * n);
    cpu::rms_norm(x.data(), w.data(), y.data(), 2, n, 1e-5f);
    for (int r = 0; r < 2; ++r) {
        double ss = 0;
        for (std::size_t i = 0; i < n; ++i) ss += double(x[r * n + i]) * x[r * n + i];
        const double scale = 1.0 / std::sqrt(ss / n + 1e-5);
        for (std::size_t i = 0; i < n; ++i)
            CHECK(y[r * n + i] == doctest::Approx(x[r * n + i] * scale * w[i]).epsilon(1e-5));
    }
    // RoPE: pair i of a head at position p turns by p * base^(-2i/d), times the linear scale, divided
    // by divisor i when the model has them (Llama 3.1: 1 for high frequencies, 8 for low).
    const float divisors[4] = {1.0f, 1.5f, 4.0f, 8.0f};
    for (const rope_config r : {rope_config{}, rope_config{10000.0f, 1.0f, divisors},
                                rope_config{10000.0f, 0.25f, nullptr}, rope_config{10000.0f, 1.0f, nullptr, true}}) {
        auto q = random_values(2 * 3 * 8, 3);
        const auto q0 = q;
        const std::int32_t pos[2] = {0, 37};
        cpu::rope(q.data(), 2, 3, 8, pos, r);
        for (int t = 0; t < 2; ++t)
            for (int h = 0; h < 3; ++h)
                for (int i = 0; i < 4; ++i) {
                    const double theta = r.freq_scale * pos[t] * std::pow(10000.0, -2.0 * i / 8) /
                                         (r.freq_divisors ? r.freq_divisors[i] : 1.0);
                    // Pair i: (2i, 2i+1), or (i, i+4) in NeoX style.
                    const std::size_t at = (t * 3 + h) * 8 + (r.neox ? i : 2 * i), other = at + (r.neox ? 4 : 1);
                    CHECK(q[at] ==
                          doctest::Approx(q0[at] * std::cos(theta) - q0[other] * std::sin(theta)).epsilon(1e-4));
                    CHECK(q[other] ==
                          doctest::Approx(q0[at] * std::sin(theta) + q0[other] * std::cos(theta)).epsilon(1e-4));
                }
    }
    auto g = random_values(n, 4);
    const auto g0 = g, u = random_values(n, 5);
    cpu::swiglu(g.data(), u.data(), n);
    for (std::size_t i = 0; i < n; ++i)
        CHECK(g[i] == doctest::Approx(g0[i] / (1 + std::exp(-double(g0[i]))) * u[i]).epsilon(1e-5));
    auto s = random_values(n, 6, 5.0f);
    const auto s0 = s;
    cpu::add(s.data(), u.data(), n);
    CHECK(s[7] == doctest::Approx(s0[7] + u[7]));
    const std::uint64_t best = cpu::argmax(s0.data(), n);
    for (std::size_t i = 0; i < n; ++i) CHECK(s0[i] <= s0[best]);
    s = s0;
    cpu::softmax(s.data(), n);
    double sum = 0, denom = 0;
    for (auto v : s0) denom += std::exp(double(v) - s0[best]);
    for (std::size_t i = 0; i < n; ++i) {
        sum += s[i];
        CHECK(s[i] == doctest::Approx(std::exp(double(s0[i]) - s0[best]) / denom).epsilon(1e-5));
    }
    CHECK(sum == doctest::Approx(1.0));
}
