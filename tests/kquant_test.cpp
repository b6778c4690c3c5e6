// The K-quants and the 32-value fallback formats, decoded: every block here is packed by the test
// from GGUF's format description (ggml's block_q*_K layouts), with values chosen so that each
// element's expected value is exact, and then read back through the kernels' block math, their
// dot products and matrix products, and the real Q4_K_M model of ../shared/models.
#include <doctest/doctest.h>

#include "fixtures.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "greedy.hpp"
#include "isa_paths.hpp"
#include "random_values.hpp"
#include "rounded_activations.hpp"
#include "vramplan/io/gguf_model.hpp"
#include "vramplan/io/tokenizer.hpp"
#include "vramplan/kernels/cpu/convert.hpp"
#include "vramplan/kernels/cpu/dispatch.hpp"
#include "vramplan/kernels/cpu/elementwise.hpp"
#include "vramplan/kernels/cpu/int8_dot.hpp"
#include "vramplan/kernels/cpu/kquant_dot.hpp"
#include "vramplan/kernels/cpu/kquant_panel.hpp"
#include "vramplan/kernels/cpu/quantize.hpp"
#include "vramplan/plan/plan.hpp"
#include "vramplan/runtime/arena.hpp"
#include "vramplan/runtime/cpu_backend.hpp"
#include "vramplan/runtime/forward_pass.hpp"
#include "vramplan/runtime/model_loader.hpp"
#include "vramplan/runtime/weight_layout.hpp"

using namespace vramplan;
using namespace vramplan::kernels;
using test_data::rounded_q8_0;
using test_data::rounded_q8_k;

namespace {

constexpr half_bits half_0_5{0x3800}, half_0_25{0x3400}, half_minus_1_25{0xBD00}, half_0_75{0x3A00};

// Element e's integer value in [0, m): a hash, so that no two positions a layout could confuse
// (the low and high nibble of one byte, neighbouring sub-blocks, the two halves) hold equal values
// everywhere, as a pattern like (7 e) % 16 would.
constexpr int value_at(int e, int m) {
    return static_cast<int>((static_cast<std::uint32_t>(e + 1) * 2654435761u >> 11) % m);
}

// A block packed by hand and the values it stands for.
template <class Block, int N>
struct packed {
    Block block{};
    double expected[N]{};
};

// Q4_K: d = 0.5, dmin = 0.25; sub-block s (32 values) has scale sc[s] and minimum mn[s], 6 bits
// each, in 12 bytes: s < 4 in the low 6 bits of bytes s and s + 4, s >= 4 split into the nibbles of
// byte s + 4 (scale low, minimum high) and the top 2 bits of bytes s - 4 (scale) and s (minimum).
constexpr int sc[8] = {1, 2, 3, 4, 17, 33, 50, 63}, mn[8] = {0, 5, 9, 63, 16, 31, 47, 62};
void pack_k4_scales(std::uint8_t* s) {
    for (int i = 0; i < 4; ++i) {
        s[i] = static_cast<std::uint8_t>((sc[i] & 63) | ((sc[i + 4] >> 4) << 6));
        s[i + 4] = static_cast<std::uint8_t>((mn[i] & 63) | ((mn[i + 4] >> 4) << 6));
        s[i + 8] = static_cast<std::uint8_t>((sc[i + 4] & 15) | ((mn[i + 4] & 15) << 4));
    }
}

packed<blocks::q4_k, 256> q4_k_block() {
    packed<blocks::q4_k, 256> p;
    p.block.d = half_0_5;
    p.block.dmin = half_0_25;
    pack_k4_scales(p.block.scales);
    for (int e = 0; e < 256; ++e) {
        const int q = value_at(e, 16), g = e / 64, w = e % 64;
        // In each 64 values the first 32 are low nibbles of 32 bytes, the next 32 their high nibbles.
        p.block.qs[32 * g + w % 32] |= static_cast<std::uint8_t>(w < 32 ? q : q << 4);
        p.expected[e] = 0.5 * sc[e / 32] * q - 0.25 * mn[e / 32];
    }
    return p;
}

packed<blocks::q5_k, 256> q5_k_block() {
    packed<blocks::q5_k, 256> p;
    p.block.d = half_0_5;
    p.block.dmin = half_0_25;
    pack_k4_scales(p.block.scales);
    for (int e = 0; e < 256; ++e) {
        const int q = value_at(e, 32), g = e / 64, w = e % 64;
        p.block.qs[32 * g + w % 32] |= static_cast<std::uint8_t>(w < 32 ? (q & 15) : (q & 15) << 4);
        // The 5th bit: bit 2g (first 32 of the 64) or 2g + 1 (next 32) of qh[w % 32].
        p.block.qh[w % 32] |= static_cast<std::uint8_t>((q >> 4) << (2 * g + (w < 32 ? 0 : 1)));
        p.expected[e] = 0.5 * sc[e / 32] * q - 0.25 * mn[e / 32];
    }
    return p;
}

// Q6_K: d = 0.5, 16 signed scales of sub-blocks of 16, values q - 32 of 6 bits: in half h, quarter
// k, element r has its low 4 bits in ql[64h + r + 32 (k odd)] (low nibble for k < 2) and its top
// 2 bits at bits 2k of qh[32h + r].
packed<blocks::q6_k, 256> q6_k_block() {
    packed<blocks::q6_k, 256> p;
    p.block.d = half_0_5;
    for (int s = 0; s < 16; ++s) p.block.scales[s] = static_cast<std::int8_t>(s * 9 - 70);
    for (int e = 0; e < 256; ++e) {
        const int v = value_at(e, 64), h = e / 128, k = (e % 128) / 32, r = e % 32;
        p.block.ql[64 * h + r + 32 * (k % 2)] |= static_cast<std::uint8_t>(k < 2 ? (v & 15) : (v & 15) << 4);
        p.block.qh[32 * h + r] |= static_cast<std::uint8_t>((v >> 4) << (2 * k));
        p.expected[e] = 0.5 * (e / 16 * 9 - 70) * (v - 32);
    }
    return p;
}

// Q2_K: scales[s] = scale (low nibble) | minimum (high nibble) of sub-block s (16 values); 2-bit
// values, element 128h + 32i + r at bits 2i of qs[32h + r].
packed<blocks::q2_k, 256> q2_k_block() {
    packed<blocks::q2_k, 256> p;
    p.block.d = half_0_5;
    p.block.dmin = half_0_25;
    for (int s = 0; s < 16; ++s) p.block.scales[s] = static_cast<std::uint8_t>(s | ((15 - s) << 4));
    for (int e = 0; e < 256; ++e) {
        const int q = value_at(e, 4), h = e / 128, i = (e % 128) / 32, r = e % 32;
        p.block.qs[32 * h + r] |= static_cast<std::uint8_t>(q << (2 * i));
        p.expected[e] = 0.5 * (e / 16) * q - 0.25 * (15 - e / 16);
    }
    return p;
}

// Q3_K: 6-bit scales minus 32 (low 4 bits: nibble s / 8 of byte s % 8; top 2 bits: bits 2 (s / 4)
// of byte 8 + s % 4); values in [-4, 4): 2 low bits as Q2_K, minus 4 unless bit 4h + i of
// hmask[r] is set.
packed<blocks::q3_k, 256> q3_k_block() {
    packed<blocks::q3_k, 256> p;
    p.block.d = half_0_5;
    int scale[16];
    for (int s = 0; s < 16; ++s) {
        scale[s] = (s * 13 + 5) % 64;
        p.block.scales[s % 8] |= static_cast<std::uint8_t>((scale[s] & 15) << (4 * (s / 8)));
        p.block.scales[8 + s % 4] |= static_cast<std::uint8_t>((scale[s] >> 4) << (2 * (s / 4)));
    }
    for (int e = 0; e < 256; ++e) {
        const int v = value_at(e, 8) - 4, h = e / 128, i = (e % 128) / 32, r = e % 32;
        const bool high = v >= 0;
        p.block.qs[32 * h + r] |= static_cast<std::uint8_t>((high ? v : v + 4) << (2 * i));
        if (high) p.block.hmask[r] |= static_cast<std::uint8_t>(1 << (4 * h + i));
        p.expected[e] = 0.5 * (scale[e / 16] - 32) * v;
    }
    return p;
}

// The 32-value formats: element j < 16 in the low nibble of byte j, j >= 16 in the high nibble
// of byte j - 16; Q5_0/Q5_1's 5th bit of element j is bit j of the little-endian qh.
void pack_nibbles(std::uint8_t* qs, int j, int q) {
    qs[j % 16] |= static_cast<std::uint8_t>(j < 16 ? (q & 15) : (q & 15) << 4);
}
packed<blocks::q4_1, 32> q4_1_block() {
    packed<blocks::q4_1, 32> p;
    p.block.d = half_0_5;
    p.block.m = half_minus_1_25;
    for (int j = 0; j < 32; ++j) {
        pack_nibbles(p.block.qs, j, value_at(j, 16));
        p.expected[j] = 0.5 * value_at(j, 16) - 1.25;
    }
    return p;
}
packed<blocks::q5_0, 32> q5_0_block() {
    packed<blocks::q5_0, 32> p;
    p.block.d = half_0_5;
    for (int j = 0; j < 32; ++j) {
        const int q = value_at(j, 32);
        pack_nibbles(p.block.qs, j, q);
        p.block.qh[j / 8] |= static_cast<std::uint8_t>((q >> 4) << (j % 8));
        p.expected[j] = 0.5 * (q - 16);
    }
    return p;
}
packed<blocks::q5_1, 32> q5_1_block() {
    packed<blocks::q5_1, 32> p;
    p.block.d = half_0_5;
    p.block.m = half_0_75;
    for (int j = 0; j < 32; ++j) {
        const int q = value_at(j + 7, 32);
        pack_nibbles(p.block.qs, j, q);
        p.block.qh[j / 8] |= static_cast<std::uint8_t>((q >> 4) << (j % 8));
        p.expected[j] = 0.5 * q + 0.75;
    }
    return p;
}
// IQ4_NL: the nibble indexes GGUF's 16-value non-linear grid.
packed<blocks::iq4_nl, 32> iq4_nl_block() {
    constexpr int grid[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
    packed<blocks::iq4_nl, 32> p;
    p.block.d = half_0_5;
    for (int j = 0; j < 32; ++j) {
        pack_nibbles(p.block.qs, j, value_at(j, 16));
        p.expected[j] = 0.5 * grid[value_at(j, 16)];
    }
    return p;
}

// Every element through load<F>, decode_range and the row converter equals the hand value exactly.
template <kernel_format F, class Block, int N>
void check_block(const packed<Block, N>& p) {
    CAPTURE(kernel_format_name(F));
    static_assert(sizeof(Block) == block_bytes(F) && N == block_size(F));
    for (int j = 0; j < N; ++j) {
        CAPTURE(j);
        REQUIRE(static_cast<double>(load<F>(&p.block, j)) == p.expected[j]);
    }
    float out[N];
    decode_range<F>(&p.block, 0, out, N);
    for (int j = 0; j < N; ++j) REQUIRE(static_cast<double>(out[j]) == p.expected[j]);
    cpu::dequantize_row(F, &p.block, out, N);
    for (int j = 0; j < N; ++j) REQUIRE(static_cast<double>(out[j]) == p.expected[j]);
    // A range that starts and ends inside blocks.
    decode_range<F>(&p.block, 3, out, N - 5);
    for (int j = 0; j < N - 5; ++j) REQUIRE(static_cast<double>(out[j]) == p.expected[j + 3]);
}

// The sums are exact in integers or short in floats: a few roundings of the largest terms, far
// below any mistake in a scale or a bit.
double tight(double magnitude) { return 1e-5 * magnitude + 1e-6; }

template <kernel_format F, class Block, int N>
void check_products(const packed<Block, N>& p) {
    CAPTURE(kernel_format_name(F));
    // Rows of 4 blocks, each block the hand-packed one with its scale bytes varied per row, and
    // their decoded values (checked above) as the double reference.
    constexpr int rows = 5, per_row = 4, cols = N * per_row;
    std::vector<Block> w(rows * per_row, p.block);
    std::vector<double> wv(rows * cols);
    for (int r = 0; r < rows; ++r)
        for (int b = 0; b < per_row; ++b) {
            w[r * per_row + b].d = to_half(0.5f + 0.125f * static_cast<float>(r + b));
            for (int j = 0; j < N; ++j) wv[r * cols + b * N + j] = load<F>(&w[r * per_row + b], j);
        }
    const auto x = test_data::random_values(2 * cols, 7);
    // Row r times token t of xs, in double, with the sum of the products' magnitudes.
    auto reference = [&](int r, const auto& xs, int t) {
        double ref = 0, mag = 0;
        for (int c = 0; c < cols; ++c) {
            ref += wv[r * cols + c] * xs[t * cols + c];
            mag += std::fabs(wv[r * cols + c] * xs[t * cols + c]);
        }
        return std::pair{ref, mag};
    };
    for (int r = 0; r < rows; ++r) {
        const auto [ref, mag] = reference(r, x, 0);
        CHECK(std::fabs(cpu::dot<F>(&w[r * per_row], x.data(), cols) - ref) <= tight(mag));
    }
    // Matrix products: K-quant weights meet activations rounded to Q8_K, the 32-value formats
    // activations rounded to Q8_0, and multiply in integers.
    const std::vector<double> xr = is_k_quant(F) ? rounded_q8_k(x) : rounded_q8_0(x);
    cpu::thread_pool pool(2);
    std::vector<float> y(2 * rows);
    cpu::find_matmul(F)(cpu::weight_view{F, w.data(), rows, cols}, x.data(), y.data(), 2, pool);
    for (int t = 0; t < 2; ++t)
        for (int r = 0; r < rows; ++r) {
            const auto [ref, mag] = reference(r, xr, t);
            CHECK(std::fabs(y[t * rows + r] - ref) <= tight(mag));
            if constexpr (is_k_quant(F)) {
                blocks::q8_k xq[per_row];
                for (int b = 0; b < per_row; ++b) quantize_block(x.data() + t * cols + b * 256, xq[b]);
                CHECK(std::fabs(cpu::dot_q8_k_portable<F>(&w[r * per_row], xq, per_row) - ref) <= tight(mag));
            }
        }
}

// check.template operator()<F>(block) for every format here, with its hand-packed block.
template <class Check>
void for_every_format(Check&& check) {
    check.template operator()<kernel_format::q4_k>(q4_k_block());
    check.template operator()<kernel_format::q5_k>(q5_k_block());
    check.template operator()<kernel_format::q6_k>(q6_k_block());
    check.template operator()<kernel_format::q2_k>(q2_k_block());
    check.template operator()<kernel_format::q3_k>(q3_k_block());
    check.template operator()<kernel_format::q4_1>(q4_1_block());
    check.template operator()<kernel_format::q5_0>(q5_0_block());
    check.template operator()<kernel_format::q5_1>(q5_1_block());
    check.template operator()<kernel_format::iq4_nl>(iq4_nl_block());
}

}  // namespace

TEST_CASE("K-quant and fallback blocks packed by hand from GGUF's layouts decode to their exact values") {
    for_every_format([]<kernel_format F>(const auto& p) { check_block<F>(p); });
}

TEST_CASE("dot and matrix products on K-quant and fallback rows against a double reference") {
    for_every_format([]<kernel_format F>(const auto& p) { check_products<F>(p); });
}

namespace {
// Row r of wv times token t of xr (rows and tokens of cols values), in double, with the sum of the
// products' magnitudes.
std::pair<double, double> row_times_token(const std::vector<double>& wv, const std::vector<double>& xr, int cols, int r,
                                          int t) {
    double ref = 0, mag = 0;
    for (int c = 0; c < cols; ++c) {
        ref += wv[r * cols + c] * xr[t * cols + c];
        mag += std::fabs(wv[r * cols + c] * xr[t * cols + c]);
    }
    return {ref, mag};
}

// rows x per_row copies of a hand-packed block, every copy's bytes varied (values, high bits,
// scales) so that no row or lane can stand in for another, then given finite scales (d, and dmin
// or m), with the values load<F> decodes from them (a row is per_row * N values).
template <kernel_format F, class Block, int N>
std::pair<std::vector<Block>, std::vector<double>> varied_rows(const packed<Block, N>& p, int rows, int per_row) {
    const int cols = N * per_row;
    std::vector<Block> w(rows * per_row, p.block);
    std::vector<double> wv(rows * cols);
    for (int r = 0; r < rows; ++r)
        for (int b = 0; b < per_row; ++b) {
            Block& blk = w[r * per_row + b];
            auto* bytes = reinterpret_cast<std::uint8_t*>(&blk);
            for (std::size_t i = 0; i < sizeof(Block); ++i)
                bytes[i] ^= static_cast<std::uint8_t>(value_at(static_cast<int>(i) + 997 * (r * per_row + b), 256));
            blk.d = to_half(0.5f + 0.125f * static_cast<float>(r + b));
            if constexpr (requires { blk.dmin; }) blk.dmin = to_half(0.25f + 0.0625f * static_cast<float>(r));
            if constexpr (requires { blk.m; }) blk.m = to_half(-1.25f + 0.375f * static_cast<float>(r - b));
            for (int j = 0; j < N; ++j) wv[r * cols + b * N + j] = load<F>(&blk, j);
        }
    return {w, wv};
}

// Nineteen rows of a 32-value fallback made from the hand-packed block, every row's bytes varied
// (values, fifth bits, d and m) so that no row or lane can stand in for another, through every
// path's row kernels (eight rows, and three) and matrix products of one, two and nine tokens (Q5_0
// and IQ4_NL then packed into Q8_0 panels: one of sixteen rows and one of three), against a double
// reference over the values load<F> decodes and x rounded to Q8_0. Three blocks a row: the AVX-512
// row kernels pair blocks, so the last one meets x's zero block.
template <kernel_format F, class Block, int N>
void check_fallback_rows(const packed<Block, N>& p) {
    CAPTURE(kernel_format_name(F));
    constexpr int rows = 19, per_row = 3, cols = N * per_row, tokens = 9;
    const auto varied = varied_rows<F>(p, rows, per_row);
    const std::vector<Block>& w = varied.first;
    const std::vector<double>& wv = varied.second;
    const auto x = test_data::random_values(tokens * cols, 13);
    const auto xr = rounded_q8_0(x);
    auto reference = [&](int r, int t) { return row_times_token(wv, xr, cols, r, t); };
    cpu::rounded_blocks<per_row + 1> xq;
    xq.round(x.data(), 0, per_row);
    xq.clear(per_row);
    const Block* ptrs[8];
    for (int r = 0; r < 8; ++r) ptrs[r] = &w[r * per_row];
    cpu::thread_pool pool(2);
    for (const auto isa : test_data::cpu_paths()) {
        CAPTURE(cpu::cpu_isa_name(isa));
        const cpu::cpu_isa_scope path(isa);
        float out[8];
        cpu::paced_prefetch none;
        cpu::find_int8_rows<Block, 8>()(ptrs, {xq.qs, xq.d, xq.sum}, per_row, out, none);
        for (int r = 0; r < 8; ++r) CHECK(std::fabs(out[r] - reference(r, 0).first) <= tight(reference(r, 0).second));
        cpu::find_int8_rows<Block, 3>()(ptrs + 5, {xq.qs, xq.d, xq.sum}, per_row, out, none);
        for (int r = 0; r < 3; ++r)
            CHECK(std::fabs(out[r] - reference(5 + r, 0).first) <= tight(reference(5 + r, 0).second));
        for (int n : {1, 2, tokens}) {
            CAPTURE(n);
            std::vector<float> y(n * rows);
            cpu::find_matmul(F)(cpu::weight_view{F, w.data(), rows, cols}, x.data(), y.data(), n, pool);
            for (int t = 0; t < n; ++t)
                for (int r = 0; r < rows; ++r) {
                    const auto [ref, mag] = reference(r, t);
                    CHECK(std::fabs(y[t * rows + r] - ref) <= tight(mag));
                }
        }
    }
}
}  // namespace

TEST_CASE("Q4_1, Q5_0, Q5_1 and IQ4_NL rows times Q8_0-rounded activations on every path against a double reference") {
    check_fallback_rows<kernel_format::q4_1>(q4_1_block());
    check_fallback_rows<kernel_format::q5_0>(q5_0_block());
    check_fallback_rows<kernel_format::q5_1>(q5_1_block());
    check_fallback_rows<kernel_format::iq4_nl>(iq4_nl_block());
}

namespace {
// 148 rows of a K-quant made from the hand-packed block, every row's bytes varied (values,
// scales, d) so that no lane can stand in for another: as panels of sixteen rows (packing undone
// gives the blocks back), through every path's tile kernels for one to four tokens, and through
// the matrix product on panels held as the CPU backend holds them (nine panels shared by two
// threads and four rows as stored) for one token and for nine, against a double reference over
// the values load<F> decodes.
template <kernel_format F, class Block, int N>
void check_panels(const packed<Block, N>& p) {
    CAPTURE(kernel_format_name(F));
    constexpr int rows = 9 * cpu::panel_rows + 4, per_row = 3, cols = N * per_row;
    const auto varied = varied_rows<F>(p, rows, per_row);
    const std::vector<Block>& w = varied.first;
    const std::vector<double>& wv = varied.second;
    using panel = typename cpu::k_panel_of<Block>::type;
    std::vector<panel> panels(per_row);
    const Block* ptrs[cpu::panel_rows];
    for (int r = 0; r < cpu::panel_rows; ++r) ptrs[r] = &w[r * per_row];
    cpu::pack_k_panel(ptrs, 0, per_row, panels.data());
    for (int b = 0; b < per_row; ++b)
        for (int r = 0; r < cpu::panel_rows; ++r) {
            const Block back = cpu::unpack_k_panel(panels[b], r);
            CHECK(std::memcmp(&back, &ptrs[r][b], sizeof(Block)) == 0);
        }
    constexpr int tokens = cpu::panel_tokens;
    const auto x = test_data::random_values(tokens * cols, 11);
    const auto xr = rounded_q8_k(x);
    blocks::q8_k xq[tokens * per_row];
    for (int b = 0; b < tokens * per_row; ++b) quantize_block(x.data() + b * 256, xq[b]);
    auto reference = [&](int r, int t) { return row_times_token(wv, xr, cols, r, t); };
    std::vector<Block> held(w);
    std::vector<std::uint8_t> scratch;
    runtime::convert_to_panels(format{kernel_format_ids[static_cast<std::size_t>(F)]},
                               reinterpret_cast<std::byte*>(held.data()), rows, cols, scratch);
    cpu::thread_pool pool(2);
    for (const auto isa : test_data::cpu_paths()) {
        CAPTURE(cpu::cpu_isa_name(isa));
        const cpu::cpu_isa_scope path(isa);
        const auto kernels = cpu::find_k_panel_kernels<Block>();
        for (int n = 1; n <= tokens; ++n) {
            CAPTURE(n);
            float out[tokens * cpu::panel_rows];
            kernels.tile[n - 1](panels.data(), 0, xq, per_row, per_row, out);
            for (int t = 0; t < n; ++t)
                for (int r = 0; r < cpu::panel_rows; ++r) {
                    const auto [ref, mag] = reference(r, t);
                    CHECK(std::fabs(out[t * cpu::panel_rows + r] - ref) <= tight(mag));
                }
        }
        // Held panels, and rows as stored with enough tokens to be packed on the way (9: two
        // passes of four and one of one).
        std::vector<float> xs(9 * cols);
        for (int t = 0; t < 9; ++t)
            std::copy(x.begin() + (t % tokens) * cols, x.begin() + (t % tokens + 1) * cols, xs.begin() + t * cols);
        for (bool as_panels : {true, false})
            for (int n : {1, 9}) {
                CAPTURE(as_panels);
                CAPTURE(n);
                std::vector<float> y(n * rows);
                cpu::find_matmul(F)(cpu::weight_view{F, as_panels ? held.data() : w.data(), rows, cols, as_panels},
                                    xs.data(), y.data(), n, pool);
                for (int t = 0; t < n; ++t)
                    for (int r = 0; r < rows; ++r) {
                        const auto [ref, mag] = reference(r, t % tokens);
                        CHECK(std::fabs(y[t * rows + r] - ref) <= tight(mag));
                    }
            }
    }
}
}  // namespace

TEST_CASE(
    "Every K-quant's rows as panels of sixteen (packed and unpacked, on every path, in matrix products) against a double reference") {
    check_panels<kernel_format::q2_k>(q2_k_block());
    check_panels<kernel_format::q3_k>(q3_k_block());
    check_panels<kernel_format::q4_k>(q4_k_block());
    check_panels<kernel_format::q5_k>(q5_k_block());
    check_panels<kernel_format::q6_k>(q6_k_block());
}

namespace {
// Sixteen equal rows of two super-blocks whose every value has the format's largest magnitude
// (`value`, worked out by hand from the block's bytes, with d = dmin = 1), times tokens of ones
// (Q8_K: every value -127 at d = -1/127): each sub-block's integer sum at its bound, where the
// kernels keep sums in 16 bits (the 512-bit tiles pair Q2_K's and Q3_K's) or scale them as
// integers. Every row of every token is 512 * value.
template <class Block>
void check_panel_bounds(Block block, double value) {
    using panel = typename cpu::k_panel_of<Block>::type;
    block.d = to_half(1.0f);
    if constexpr (requires { block.dmin; }) block.dmin = to_half(1.0f);
    const Block* rows[cpu::panel_rows];
    const Block two[2] = {block, block};
    for (auto& r : rows) r = two;
    panel panels[2];
    cpu::pack_k_panel(rows, 0, 2, panels);
    const std::vector<float> ones(2 * blocks::qk_k, 1.0f);
    blocks::q8_k xq[2 * cpu::panel_tokens];
    for (int b = 0; b < 2 * cpu::panel_tokens; ++b) quantize_block(ones.data(), xq[b]);
    for (const auto isa : test_data::cpu_paths()) {
        CAPTURE(cpu::cpu_isa_name(isa));
        const cpu::cpu_isa_scope path(isa);
        for (int n = 1; n <= cpu::panel_tokens; ++n) {
            CAPTURE(n);
            float out[cpu::panel_tokens * cpu::panel_rows];
            cpu::find_k_panel_kernels<Block>().tile[n - 1](panels, 0, xq, 2, 2, out);
            for (int i = 0; i < n * cpu::panel_rows; ++i) CHECK(out[i] == doctest::Approx(512 * value).epsilon(1e-6));
        }
    }
}
}  // namespace

TEST_CASE("K-quant panels with every value at its largest magnitude: integer sums at their bounds on every path") {
    blocks::q2_k q2{};  // scale and minimum 15, q = 3: 15 * 3 - 15
    std::memset(q2.scales, 0xff, sizeof q2.scales);
    std::memset(q2.qs, 0xff, sizeof q2.qs);
    check_panel_bounds(q2, 30.0);
    blocks::q3_k q3{};  // 6-bit scales 0, so -32; q = 0 with no third bit, so -4
    check_panel_bounds(q3, 128.0);
    blocks::q4_k q4{};  // scales and minimums 63, q = 15: 63 * 15 - 63
    std::memset(q4.scales, 0xff, sizeof q4.scales);
    std::memset(q4.qs, 0xff, sizeof q4.qs);
    check_panel_bounds(q4, 882.0);
    blocks::q5_k q5{};  // Q4_K's with the fifth bits: q = 31
    std::memcpy(q5.scales, q4.scales, sizeof q5.scales);
    std::memset(q5.qs, 0xff, sizeof q5.qs);
    std::memset(q5.qh, 0xff, sizeof q5.qh);
    check_panel_bounds(q5, 63.0 * 31 - 63);
    blocks::q6_k q6{};  // scales -128, q = 0, so -32
    std::memset(q6.scales, 0x80, sizeof q6.scales);
    check_panel_bounds(q6, 4096.0);
}

namespace {
// Rows of forty blocks (two slices of the prefill product: thirty-two, then eight), held as panels
// and as stored (36 rows: two panels and four rows packed on the way), for 70 tokens (passes of
// sixteen, the last of six) and for 5 (rows as stored: the row product, kquant_matmul), on pools
// of one, two and three threads taking the product's units from its queue: against a double
// reference, and bit for bit the same whatever the pool.
template <kernel_format F, class Block, int N>
void check_wide_rows(const packed<Block, N>& p) {
    CAPTURE(kernel_format_name(F));
    constexpr int rows = 2 * cpu::panel_rows + 4, per_row = 40, cols = N * per_row, most = 70;
    static_assert(per_row > cpu::detail::k_panels<Block>::pack_blocks, "two slices");
    const auto varied = varied_rows<F>(p, rows, per_row);
    const auto x = test_data::random_values(most * cols, 12);
    const auto xr = rounded_q8_k(x);
    std::vector<Block> held(varied.first);
    std::vector<std::uint8_t> scratch;
    runtime::convert_to_panels(format{kernel_format_ids[static_cast<std::size_t>(F)]},
                               reinterpret_cast<std::byte*>(held.data()), rows, cols, scratch);
    for (bool as_panels : {true, false})
        for (int tokens : {most, 5}) {
            CAPTURE(as_panels);
            CAPTURE(tokens);
            const cpu::weight_view w{F, as_panels ? held.data() : varied.first.data(), rows, cols, as_panels};
            std::vector<float> one_thread;
            for (unsigned threads : {1u, 2u, 3u}) {
                CAPTURE(threads);
                cpu::thread_pool pool(threads);
                std::vector<float> y(tokens * rows);
                cpu::find_matmul(F)(w, x.data(), y.data(), tokens, pool);
                if (threads == 1) {
                    for (int t = 0; t < tokens; ++t)
                        for (int r = 0; r < rows; ++r) {
                            const auto [ref, mag] = row_times_token(varied.second, xr, cols, r, t);
                            CHECK(std::fabs(y[t * rows + r] - ref) <= tight(mag));
                        }
                    one_thread = y;
                } else {
                    CHECK(y == one_thread);
                }
            }
        }
}
}  // namespace

TEST_CASE("K-quant products over two slices of columns, of five tokens and of five passes, on one to three threads") {
    check_wide_rows<kernel_format::q2_k>(q2_k_block());
    check_wide_rows<kernel_format::q3_k>(q3_k_block());
    check_wide_rows<kernel_format::q4_k>(q4_k_block());
    check_wide_rows<kernel_format::q6_k>(q6_k_block());
}

TEST_CASE("the real Q4_K_M model (Q4_K, Q6_K, Q5_0 and F32 tensors) generates llama.cpp's greedy text") {
    VRAMPLAN_SHARED_MODEL_OR_SKIP(path, "stories260K-wide-q4_k_m.gguf");
    const auto file = io::gguf_file::open(path);
    const model_desc m = io::describe(file, "wide");
    CHECK(m.layer(0)[tensor_role::attn_q] == format{format_id::q4_k});
    CHECK(m.layer(0)[tensor_role::attn_output] == format{format_id::q5_0});
    CHECK(m.output == format{format_id::q6_k});
    CHECK(m.shape.head_dim == 8);  // key_length: not n_embd / n_head (256 / 8)
    const io::tokenizer tok = io::tokenizer::from_gguf(file);
    const plan p = plan_inference(m, target_desc{"cpu", 1ull << 30, 0}, {.context = 64, .ubatch = 16});
    runtime::cpu_backend backend(0, 2);
    runtime::arena<runtime::cpu_backend> a(p, backend);
    runtime::load_weights(file, a);
    runtime::forward_pass<runtime::cpu_backend> llm(a);
    std::vector<std::int32_t> ids = tok.encode("Once upon a time");
    REQUIRE(ids == std::vector<std::int32_t>{1, 403, 407, 261, 378});
    const std::vector<std::int32_t> out = greedy_tokens(llm, ids, 32, m.shape.n_vocab);
    // The README's text from llama.cpp's greedy run on this file.
    CHECK("Once upon a time" + tok.decode(out) ==
          "Once upon a time, there was a little girl named Lily. She loved to play with her toys and run around in "
          "the par");
}
