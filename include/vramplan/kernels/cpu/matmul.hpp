// Matrix products with stored weights and f32 activations, f32 accumulation: Y[t][r] = sum_c
// W[r][c] X[t][c]. On the GPU the activations are f16 (W8A16, W4A16); here they are f32, except
// that the 32-value block formats (Q4_0, Q8_0 and the fallbacks Q4_1, Q5_0, Q5_1, IQ4_NL) meet
// activations rounded to Q8_0 (W4A8, W8A8: int8_dot.hpp) and K-quant weights activations rounded
// to Q8_K (kquant_dot.hpp), all multiplied in integers.
// Rows of W are split across threads; each weight row is read once per call whatever the number
// of tokens, which is what makes decode (one token) bandwidth-bound rather than compute-bound.
#pragma once

#include <algorithm>
#include <cstdint>

#include "vramplan/kernels/cpu/dot.hpp"
#include "vramplan/kernels/cpu/float_rows.hpp"
#include "vramplan/kernels/cpu/int8_dot.hpp"
#include "vramplan/kernels/cpu/int8_panel.hpp"
#include "vramplan/kernels/cpu/kquant_dot.hpp"
#include "vramplan/kernels/cpu/kquant_panel.hpp"
#include "vramplan/kernels/cpu/product_units.hpp"
#include "vramplan/kernels/cpu/quantize.hpp"
#include "vramplan/kernels/cpu/thread_pool.hpp"
#include "vramplan/kernels/cpu/token_rows.hpp"

namespace vramplan::kernels::cpu {

struct weight_view {
    kernel_format fmt = kernel_format::f32;
    const void* data = nullptr;
    std::uint64_t rows = 0;  // output features
    std::uint64_t cols = 0;  // input features (the stored row)
    // Q4_0, Q8_0 and the K-quants: the first rows / 16 panels of sixteen rows are held as panels
    // (int8_panel.hpp, kquant_panel.hpp), each in the bytes its rows had; the rows after them as stored.
    bool panels = false;
    const void* row(std::uint64_t r) const {
        return static_cast<const std::uint8_t*>(data) + r * kernel_row_bytes(fmt, cols);
    }
    const void* panel(std::uint64_t g) const { return row(g * panel_rows); }
};

namespace detail {
// 32-value block weights multiply activations rounded to Q8_0 blocks, on every path (int8_dot.hpp).
// Each thread rounds up to 2048 blocks of x on its stack (no allocation): a slice of the columns
// for as many tokens as fit, so that a prefill multiplies each group of weight rows with many
// tokens while the rows are in cache, instead of streaming the whole matrix from memory once per
// token. Each token's blocks start at an even block (the AVX-512 path loads two at a time, aligned),
// an odd count padded with a zero block.
template <class Block>
void int8_matmul(const weight_view& w, const token_rows& io, thread_pool& pool) {
    const std::uint64_t tokens = io.count;
    constexpr std::uint64_t stack_blocks = 2048;
    constexpr int group = 8;  // rows per pass: eight weight streams share each block of x
    const std::uint64_t nblocks = w.cols / blocks::qk;
    const std::uint64_t slice = std::min(nblocks, stack_blocks);  // columns (in blocks) per pass
    const std::uint64_t stride = slice + slice % 2;               // blocks per token in the buffer
    const std::uint64_t tokens_per_pass = std::max<std::uint64_t>(1, stack_blocks / std::max<std::uint64_t>(stride, 1));
    const std::uint64_t slices = (nblocks + slice - 1) / std::max<std::uint64_t>(slice, 1);
    const int8_rows_fn<Block, group> rows_fn = find_int8_rows<Block, group>();
    // Units from the pool's queue (product_units.hpp); with several slices a unit rounds its
    // activations again, a block of x costing about a group's product of it, so chunks hold 32
    // groups or more.
    const product_units units(tokens, tokens_per_pass, (w.rows + group - 1) / group, slices > 1 ? 32 : 1, pool.size());
    pool.parallel_queue(units.count(), 1, [&](thread_pool::work_queue& queue) {
        rounded_blocks<stack_blocks> xq;
        const auto round = [&](const product_units::unit& u, std::uint64_t b0, std::uint64_t nb) {
            for (std::uint64_t t = 0; t < u.nt; ++t) {
                xq.round(io.x_row(u.t0 + t, w.cols) + b0 * blocks::qk, t * stride, nb);
                if (nb % 2) xq.clear(t * stride + nb);
            }
        };
        take_units(
            units, queue, nblocks, slice, round, [&](const product_units::unit& u, std::uint64_t b0, std::uint64_t nb) {
                const auto [pass, t0, nt, begin, end] = u;
                for (std::uint64_t g = begin; g < end; ++g) {
                    // The last group repeats its last row where the matrix runs out.
                    const Block* rows[group];
                    for (std::uint64_t i = 0; i < group; ++i)
                        rows[i] = static_cast<const Block*>(w.row(std::min(group * g + i, w.rows - 1))) + b0;
                    // The next group's rows follow these in memory when the columns are one slice:
                    // requested while these are multiplied, once per pass, for rows under 2 KiB.
                    // Measured on two cores of the AMD EPYC: 2048-wide Q4_0 rows (1152 bytes) went
                    // from 8 to 13-14 GB/s; Q8_0's 2176-byte rows went from 16 to 14, and 14336-wide
                    // rows from 22 to 16, so longer rows are left to the hardware prefetcher.
                    paced_prefetch next;
                    if (nb == nblocks && g + 1 < end && t0 == 0 && kernel_row_bytes(w.fmt, w.cols) < 2048) {
                        const std::uint64_t first = group * (g + 1),
                                            count = std::min<std::uint64_t>(group, w.rows - first);
                        next = paced_prefetch(w.row(first), count * kernel_row_bytes(w.fmt, w.cols), (nb + 1) / 2);
                    }
                    for (std::uint64_t t = 0; t < nt; ++t) {
                        float part[group];
                        rows_fn(rows, {xq.qs + t * stride * blocks::qk, xq.d + t * stride, xq.sum + t * stride}, nb,
                                part, next);
                        float* out = io.y_row(t0 + t, w.rows);
                        for (std::uint64_t i = 0; i < group && group * g + i < w.rows; ++i)
                            out[group * g + i] = b0 == 0 ? part[i] : out[group * g + i] + part[i];
                    }
                }
            });
    });
}
}  // namespace detail

namespace detail {
// What a panel product needs of a format family: the panel, its packing and tile kernels, and the
// activations' rounding (Q8_0 blocks for Q4_0 and Q8_0, Q8_K blocks for the K-quants) held on the
// thread's stack.
template <class Block>
struct int8_panels {
    using panel = panel_block<Block>;
    static constexpr std::uint64_t elements = blocks::qk, x_blocks = 4096, pack_blocks = 256;  // 160 and 136 KiB
    static constexpr bool decode_streams = true;  // one token reads panel_streams panels side by side
    struct activations {
        rounded_blocks<x_blocks> r;
        void round(const float* x, std::uint64_t at, std::uint64_t n) { r.round(x, at, n); }
        rounded_view at(std::uint64_t i) const { return {r.qs + i * blocks::qk, r.d + i, r.sum + i}; }
    };
    static panel_kernels<Block> kernels() { return find_panel_kernels<Block>(); }
    static void pack(const Block* const* rows, std::uint64_t b0, std::uint64_t n, panel* out) {
        pack_panel(rows, b0, n, out);
    }
};
// Q5_0 and IQ4_NL rows packed into Q8_0 panels on the way (pack_panel_as_q8_0).
template <class Block>
struct q8_0_converted_panels : int8_panels<blocks::q8_0> {
    static void pack(const Block* const* rows, std::uint64_t b0, std::uint64_t n, panel* out) {
        pack_panel_as_q8_0(rows, b0, n, out);
    }
};
template <class Block>
struct k_panels {
    using panel = typename k_panel_of<Block>::type;
    static constexpr std::uint64_t elements = blocks::qk_k, x_blocks = 512, pack_blocks = 32;  // 146 and 105 KiB
    // One panel at a time in decode too. Four K-quant panels side by side (the int8 panels' decode
    // step, interleaved block by block) ran at 0.24-0.50 of the read loop, two at 0.45-0.70, against
    // 0.62-0.70 one at a time (4096 x 14336, two cores of the AMD EPYC, 2026-12-05), whether the
    // panels' software prefetch ran or not and with the four steps kept apart (no spills).
    static constexpr bool decode_streams = false;
    struct activations {
        blocks::q8_k q[x_blocks];
        void round(const float* x, std::uint64_t at, std::uint64_t n) {
            for (std::uint64_t b = 0; b < n; ++b) quantize_block_q8_k(x + b * blocks::qk_k, q[at + b]);
        }
        const blocks::q8_k* at(std::uint64_t i) const { return q + i; }
    };
    static k_panel_kernels<Block> kernels() { return find_k_panel_kernels<Block>(); }
    static void pack(const Block* const* rows, std::uint64_t b0, std::uint64_t n, panel* out) {
        pack_k_panel(rows, b0, n, out);
    }
};

// Weights as panels of sixteen rows against tiles of up to four tokens (int8_panel.hpp,
// kquant_panel.hpp). A panel the view does not hold as one (rows as stored, and the last rows when
// they are fewer than sixteen) is packed on the thread's stack, a slice of columns at a time.
// Threads take units of a pass times a chunk of panels from the pool's queue (product_units.hpp).
template <class Block, class Family>
void panel_matmul(const weight_view& w, const token_rows& io, thread_pool& pool) {
    const std::uint64_t tokens = io.count;
    using panel = typename Family::panel;
    constexpr std::uint64_t x_blocks = Family::x_blocks, pack_blocks = Family::pack_blocks;
    const std::uint64_t nblocks = w.cols / Family::elements;
    const std::uint64_t held = w.panels ? w.rows / panel_rows : 0;
    const std::uint64_t panels = (w.rows + panel_rows - 1) / panel_rows;
    // Held panels and few tokens: whole rows per pass.
    const std::uint64_t slice = std::min(nblocks, held == panels && tokens <= panel_tokens ? x_blocks : pack_blocks);
    const std::uint64_t slices = (nblocks + slice - 1) / std::max<std::uint64_t>(slice, 1);
    const std::uint64_t per_pass = std::max<std::uint64_t>(1, x_blocks / std::max<std::uint64_t>(slice, 1));
    // With several slices a unit rounds its activations again, a block of x costing about half a
    // panel's product of it, so chunks hold 32 panels or more; a chunk of held panels in decode
    // has a panel for each stream.
    const std::uint64_t least = slices > 1 ? 32 : Family::decode_streams ? panel_streams : 1;
    const product_units units(tokens, per_pass, panels, least, pool.size());
    const auto k = Family::kernels();
    pool.parallel_queue(units.count(), 1, [&](thread_pool::work_queue& queue) {
        typename Family::activations xq;
        panel packed[pack_blocks];
        const auto round = [&](const product_units::unit& u, std::uint64_t b0, std::uint64_t nb) {
            for (std::uint64_t t = 0; t < u.nt; ++t)
                xq.round(io.x_row(u.t0 + t, w.cols) + b0 * Family::elements, t * slice, nb);
        };
        take_units(
            units, queue, nblocks, slice, round, [&](const product_units::unit& u, std::uint64_t b0, std::uint64_t nb) {
                const auto [pass, t0, nt, begin, end] = u;
                // One token over held panels: panel_streams of them side by side, one from each
                // quarter of the chunk's held panels (int8_panel.hpp says why), then the rest.
                std::uint64_t first = begin;
                if constexpr (Family::decode_streams) {
                    if (nt == 1 && begin < held) {
                        const std::uint64_t quarter = (std::min(end, held) - begin) / panel_streams;
                        for (std::uint64_t i = 0; i < quarter; ++i) {
                            float part[panel_streams * panel_rows];
                            k.streams(static_cast<const panel*>(w.panel(begin + i)) + b0, quarter * nblocks, xq.at(0),
                                      slice, nb, part);
                            for (int s = 0; s < panel_streams; ++s) {
                                float* out = io.y_row(t0, w.rows) + panel_rows * (begin + s * quarter + i);
                                for (int r = 0; r < panel_rows; ++r)
                                    out[r] = b0 == 0 ? part[s * panel_rows + r] : out[r] + part[s * panel_rows + r];
                            }
                        }
                        first = begin + panel_streams * quarter;
                    }
                }
                for (std::uint64_t g = first; g < end; ++g) {
                    const panel* p = packed;
                    if (g < held) {
                        p = static_cast<const panel*>(w.panel(g)) + b0;
                    } else {
                        // The last panel repeats its last row where the matrix runs out.
                        const Block* rows[panel_rows];
                        for (std::uint64_t i = 0; i < panel_rows; ++i)
                            rows[i] = static_cast<const Block*>(w.row(std::min(panel_rows * g + i, w.rows - 1)));
                        Family::pack(rows, b0, nb, packed);
                    }
                    for (std::uint64_t tt = 0; tt < nt; tt += panel_tokens) {
                        const std::uint64_t n = std::min<std::uint64_t>(panel_tokens, nt - tt);
                        float part[panel_tokens * panel_rows];
                        k.tile[n - 1](p, 0, xq.at(tt * slice), slice, nb, part);
                        for (std::uint64_t t = 0; t < n; ++t) {
                            float* out = io.y_row(t0 + tt + t, w.rows) + panel_rows * g;
                            for (std::uint64_t r = 0; r < panel_rows && panel_rows * g + r < w.rows; ++r)
                                out[r] = b0 == 0 ? part[t * panel_rows + r] : out[r] + part[t * panel_rows + r];
                        }
                    }
                }
            });
    });
}

// f32, f16 and bf16 weights: groups of float_rows rows against each token (float_rows.hpp). Threads
// take chunks of groups from the pool's queue, about eight a thread, as the other products do.
template <kernel_format F>
void float_matmul(const weight_view& w, const token_rows& io, thread_pool& pool) {
    const float_rows_fn rows_fn = find_float_rows<F>();
    // Group g's rows against every token; the last group repeats its last row where the matrix
    // runs out.
    const auto group_product = [&](std::uint64_t g) {
        const void* rows[float_rows];
        for (std::uint64_t i = 0; i < float_rows; ++i) rows[i] = w.row(std::min(float_rows * g + i, w.rows - 1));
        for (std::uint64_t t = 0; t < io.count; ++t) {
            float part[float_rows];
            rows_fn(rows, io.x_row(t, w.cols), w.cols, part);
            float* out = io.y_row(t, w.rows) + float_rows * g;
            for (std::uint64_t i = 0; i < float_rows && float_rows * g + i < w.rows; ++i) out[i] = part[i];
        }
    };
    const std::uint64_t groups = (w.rows + float_rows - 1) / float_rows;
    const std::uint64_t grain = std::max<std::uint64_t>(1, groups / (8 * pool.size()));
    pool.parallel_queue(groups, grain, [&](thread_pool::work_queue& queue) {
        for (std::uint64_t begin, end; queue.take(begin, end);)
            for (std::uint64_t g = begin; g < end; ++g) group_product(g);
    });
}
}  // namespace detail

inline constexpr std::uint64_t panel_min_tokens = 8;

// The product over the rows io names (token_rows.hpp).
template <kernel_format F>
void matmul_rows(const weight_view& w, const token_rows& io, thread_pool& pool) {
    using namespace detail;
    const std::uint64_t tokens = io.count;
    if constexpr (widens_to_floats<F>) {
        return float_matmul<F>(w, io, pool);
    } else if constexpr (is_k_quant(F)) {
        using B = typename block_of<F>::type;
        if (w.panels || (tokens >= panel_min_tokens && k_panels_pay()))
            return panel_matmul<B, k_panels<B>>(w, io, pool);
        return kquant_matmul<F>(w.data, w.rows, w.cols, io, pool);
    } else {
        using B = typename block_of<F>::type;
        static_assert(int8_block<B>, "every kernel format has a matrix product");
        // Rows as stored: a few tokens (decode) read them with the row kernels; more tokens pack
        // them into panels on the way. Measured on two cores of the AMD EPYC (AVX-512 VNNI): at
        // 2 tokens packing ran at 0.65 of the row kernels, at 4 even, at 16 2.5x, at 512 3.5x;
        // panels held from load ran at 4-6x from 16 tokens on. Q5_0 and IQ4_NL rows pack into
        // Q8_0 panels for as many tokens; Q4_1 and Q5_1 (a minimum per block, which Q8_0 panels do
        // not carry) take their rows for every number of tokens.
        if constexpr (F == kernel_format::q4_0 || F == kernel_format::q8_0)
            if (w.panels || tokens >= panel_min_tokens) return panel_matmul<B, int8_panels<B>>(w, io, pool);
        if constexpr (F == kernel_format::q5_0 || F == kernel_format::iq4_nl)
            if (tokens >= panel_min_tokens) return panel_matmul<B, q8_0_converted_panels<B>>(w, io, pool);
        return int8_matmul<B>(w, io, pool);
    }
}

// Y's row t = W times x's row t, for tokens rows.
template <kernel_format F>
void matmul(const weight_view& w, const float* x, float* y, std::uint64_t tokens, thread_pool& pool) {
    matmul_rows<F>(w, token_rows{x, y, tokens}, pool);
}

}  // namespace vramplan::kernels::cpu
