// The forward pass as data: an ordered list of ops over named activation buffers, each op naming
// the buffers it reads and writes and the weight it reads. The planner derives every activation
// buffer's size and lifetime from this list, and the one forward pass (runtime/forward_pass.hpp)
// executes the same list on any backend, so what is planned is what runs (as in ggml's graph
// allocator, but constexpr).
//
// A graph has three parts: global ops before the decoder blocks (inputs, embedding), the ops of
// the decoder block, run once per layer, and global ops after them (final norm, output head). The
// block's ops appear once and stand for every layer, which keeps compile-time planning cheap. A
// model whose layers differ in their feed-forward (dense layers before or between expert layers)
// has one block variant per feed-forward kind, one after the other, and a hybrid model one more per
// feed-forward kind for its Mamba-2 layers; each layer runs its own.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "vramplan/error.hpp"
#include "vramplan/model/tensor_role.hpp"

namespace vramplan {

inline constexpr std::uint8_t no_buffer = 0xff;
inline constexpr std::size_t max_graph_buffers = 40;
inline constexpr std::size_t max_graph_ops = 112;

// How many rows a buffer has in one pass: one per token of the micro-batch, one per output row
// (the last token of each sequence, or every token when all logits are asked for), or the fused
// attention's partial softmax states (sized by the planner from the context; see plan/activations.hpp).
enum class buffer_rows : std::uint8_t { tokens, outputs, attention_states, count };

// What one value of a buffer is: the model's activation format, or a fixed 4-byte type.
enum class buffer_elem : std::uint8_t { activation, f32, i32, count };

struct graph_buffer {
    std::string_view name;
    buffer_rows rows = buffer_rows::tokens;
    std::uint64_t cols = 0;  // values per row; attention_states: query heads
    buffer_elem elem = buffer_elem::activation;
    std::uint64_t head_dim = 0;  // attention_states only: each state is head_dim + 2 floats
    std::uint64_t per_row = 1;   // tokens rows: this many per token (the experts each token is routed to)
    friend constexpr bool operator==(const graph_buffer&, const graph_buffer&) = default;
};

enum class weight_scope : std::uint8_t { none, layer, global };

// The weight an op reads: a role of the current decoder layer, or a global tensor.
struct weight_ref {
    weight_scope scope = weight_scope::none;
    std::uint8_t index = 0;  // a tensor_role or a global_tensor
    friend constexpr bool operator==(const weight_ref&, const weight_ref&) = default;
    constexpr tensor_role role() const { return static_cast<tensor_role>(index); }
    constexpr global_tensor global() const { return static_cast<global_tensor>(index); }
    constexpr std::string_view name() const {
        return scope == weight_scope::layer    ? role_name(role())
               : scope == weight_scope::global ? global_tensor_name(global())
                                               : std::string_view{};
    }
};
constexpr weight_ref layer_weight(tensor_role r) { return {weight_scope::layer, static_cast<std::uint8_t>(r)}; }
constexpr weight_ref global_weight(global_tensor g) { return {weight_scope::global, static_cast<std::uint8_t>(g)}; }

// The ops a backend implements; runtime/backend.hpp documents each one's contract for backends.
// Every op works on the rows of the pass (T tokens) unless `output_rows` says the output rows.
enum class op_kind : std::uint8_t {
    inputs,         // out <- the pass's token ids, aux <- their positions (host to device)
    embed,          // out[t] = row in[0][t] of the weight (a token embedding table), widened to f32, times
                    // scale when scale is not 0 (Gemma: sqrt(n_embd))
    rms_norm,       // out = in[0] / rms(in[0]) * weight, n values per row, eps; with heads > 0 each row is
                    // heads rows of n (a norm per head, as Qwen3's q/k norms), and out may be in[0]
    matmul,         // out = in[0] x weight^T: n values per row out of k
    add_bias,       // out += weight (an f32 row of n values), in place
    rope,           // rotates out in place (heads x head_dim per row) at positions in[0]; a sliding layer
                    // rotates with rope_base_local and no scaling when that is not 0 (Gemma 3)
    kv_append,      // writes rows in[0] (K) and in[1] (V) into the layer's cache at positions in[2]
    attention,      // out = softmax(cap(q K^T * scale)) V over the layer's cache; q = in[0], positions in[1],
                    // aux = partial softmax states; cap(s) = softcap tanh(s / softcap), or s when softcap is 0;
                    // with v_dim, V is the first v_dim values of each K row (MLA's latent: planned only)
    add,            // out += in[0], n values per row, in place
    swiglu,         // out = silu(out) * in[0], n values per row, in place
    logits,         // hands in[0] (n values per output row) to the caller: the pass's result
    geglu,          // out = gelu(out) * in[0] (GELU's tanh form), n values per row, in place (Gemma)
    route,          // in[0]: router logits, n per row -> out: the k experts chosen per row (i32), aux: their
                    // weights: softmax over the n, the k largest, renormalized to sum 1 when `renorm`
    expert_matmul,  // row (t, j) of out = row t of in[0] (row (t, j) when in[0] has k rows per token) x
                    // plane out-of-k in[1][t, j] of the stacked weight, transposed: n values out of k
    expert_sum,     // out[t] = sum over j of in[1][t, j] x row (t, j) of in[0]: n values per row
    gate_scale,     // out[t] *= sigmoid(in[0][t]) (one value per row), n values per row, in place
    split,          // out[t] = values [k, k + n) of in[0][t] (a part of a fused projection: Phi-3's q/k/v)
    softcap,        // out = softcap tanh(out / softcap), n values per row, in place (Gemma 2's final logits)
    // Multi-head latent attention's ops (planned; the forward pass refuses MLA models before it runs):
    head_split,   // out[t] = values [k, k + n) of each of the `heads` parts (head_dim values each) of in[0][t]
    head_matmul,  // head h of out[t] (n values) = head h of in[0][t] (k values) x plane h of the weight,
                  // transposed (MLA: the query's unrotated part into the latent, the latent into the value)
    concat,       // head h of out[t] = head h of in[0][t] (n values) then of in[1][t] (k values); in[1] has
                  // one head when kv_heads is 1, which every head of out repeats
    // A Mamba-2 layer's ops (planned; the forward pass refuses hybrid models before it runs):
    ssm_conv,  // out[t] = silu(b + the causal convolution, head_dim taps per channel (the weight's rows), of
               // values [k, k + n) of in[0][t] after the sequence's convolution state, which it then updates;
               // b is the layer's ssm_conv1d.bias (0 without one)
    ssm_scan,  // out[t] = the selective scan of the x part (values [0, n)) of in[0][t], `heads` heads, with
               // its B and C parts (kv_heads groups of head_dim values each, after x) and one dt per head
               // from values [k, k + heads) of in[1][t], over the sequence's scan state (head_dim values per
               // channel), which it updates; reads the layer's ssm_a (the weight), ssm_d and ssm_dt.bias
    count
};
inline constexpr std::size_t n_op_kinds = static_cast<std::size_t>(op_kind::count);
inline constexpr std::array<std::string_view, n_op_kinds> op_names{
    "inputs", "embed",   "rms_norm",   "matmul",      "add_bias", "rope",          "kv_append",  "attention",
    "add",    "swiglu",  "logits",     "geglu",       "route",    "expert_matmul", "expert_sum", "gate_scale",
    "split",  "softcap", "head_split", "head_matmul", "concat",   "ssm_conv",      "ssm_scan"};
static_assert(!op_names.back().empty(), "one name per op_kind");
constexpr std::string_view op_name(op_kind k) { return op_names[static_cast<std::size_t>(k)]; }

struct graph_op {
    op_kind kind = op_kind::inputs;
    std::array<std::uint8_t, 3> in{no_buffer, no_buffer, no_buffer};
    std::uint8_t out = no_buffer;
    std::uint8_t aux = no_buffer;  // a second output (positions) or a scratch buffer (attention states)
    bool in_place = false;         // out is read as well as written
    bool output_rows = false;      // runs on the output rows (the last of each sequence) only
    weight_ref weight{};
    // Per-op parameters; each op kind reads the ones its comment above names.
    std::uint64_t n = 0, k = 0;
    std::uint64_t heads = 0, kv_heads = 0, head_dim = 0;
    std::uint64_t v_dim = 0;         // attention: the value width when not head_dim (MLA: the latent, the
                                     // first v_dim values of each cached row; kv_append then writes K alone)
    float eps = 0.0f;                // rms_norm
    float scale = 0.0f;              // attention: softmax scale; embed: the rows' factor (0: none)
    float softcap = 0.0f;            // attention, softcap: the cap c of c tanh(x / c) (0: none)
    float rope_base = 0.0f;          // rope: frequency base
    float freq_scale = 1.0f;         // rope: linear position scaling (1 / factor)
    float rope_base_local = 0.0f;    // rope: a sliding layer's base, unscaled (0: rope_base and freq_scale)
    bool neox = false;               // rope: pairs (i, i + head_dim/2) instead of (2i, 2i+1)
    bool renorm = false;             // route: the chosen experts' weights sum to 1
    std::uint64_t experts_used = 0;  // route, expert_matmul, expert_sum: experts per token
    friend constexpr bool operator==(const graph_op&, const graph_op&) = default;
};

// One block variant per kind of layer the graph distinguishes: attending layers (of any attention
// kind: a window is a property of the cache) with a dense or an expert feed-forward, then the
// same two for Mamba-2 layers. An attending layer's variant is its ffn_kind's index.
inline constexpr std::size_t n_block_variants = 4;
constexpr std::size_t block_variant(bool recurrent, bool moe) { return (recurrent ? 2u : 0u) + (moe ? 1u : 0u); }
inline constexpr std::array<std::string_view, n_block_variants> block_variant_names{"dense", "moe", "recurrent dense",
                                                                                    "recurrent moe"};

struct forward_graph {
    std::array<graph_buffer, max_graph_buffers> buffers{};
    std::array<graph_op, max_graph_ops> ops{};
    std::uint8_t n_buffers = 0;
    std::uint8_t n_ops = 0;
    std::uint8_t block_begin = 0, block_end = 0;  // ops [block_begin, block_end): the decoder blocks
    // A layer of feed-forward kind k runs ops [variant_begin[k], variant_end[k]) once; an empty
    // range: the model has no layer of that kind.
    std::array<std::uint8_t, n_block_variants> variant_begin{}, variant_end{};

    friend constexpr bool operator==(const forward_graph&, const forward_graph&) = default;

    constexpr std::uint8_t add_buffer(const graph_buffer& b) {
        if (n_buffers == max_graph_buffers) throw error("a forward graph holds at most 40 activation buffers");
        buffers[n_buffers] = b;
        return n_buffers++;
    }
    constexpr void add_op(const graph_op& o) {
        if (n_ops == max_graph_ops) throw error("a forward graph holds at most 112 ops");
        ops[n_ops++] = o;
    }
    constexpr void begin_block() { block_begin = n_ops; }
    constexpr void end_block() { block_end = n_ops; }
    constexpr void begin_variant(std::size_t k) { variant_begin[k] = variant_end[k] = n_ops; }
    constexpr void end_variant(std::size_t k) { variant_end[k] = n_ops; }

    constexpr bool in_block(std::size_t op) const { return op >= block_begin && op < block_end; }
    // The first op that reads this weight, or n_ops if none does.
    constexpr std::uint16_t weight_step(weight_ref w) const {
        for (std::uint16_t i = 0; i < n_ops; ++i)
            if (ops[i].weight == w) return i;
        return n_ops;
    }
    // Whether ops read this weight and every one of them is of kind k.
    constexpr bool only_read_by(weight_ref w, op_kind k) const {
        bool read = false;
        for (std::uint16_t i = 0; i < n_ops; ++i)
            if (ops[i].weight == w) {
                if (ops[i].kind != k) return false;
                read = true;
            }
        return read;
    }
    // Whether ops read this weight and every one of them is a matmul: such a weight is only ever
    // multiplied, so a backend may hold it in a layout of its own (runtime/weight_layout.hpp).
    constexpr bool only_multiplied(weight_ref w) const { return only_read_by(w, op_kind::matmul); }
    constexpr std::uint16_t first_op(op_kind k) const {
        for (std::uint16_t i = 0; i < n_ops; ++i)
            if (ops[i].kind == k) return i;
        return n_ops;
    }
};

// The schedule steps (op indices) from the first to the last op that touches a buffer.
struct buffer_span {
    std::uint16_t first = 0;
    std::uint16_t last = 0;
};

namespace detail {
// sqrt by Newton's method from above, for constant evaluation: it stops when a step no longer
// decreases, within an ulp of the true root; a test checks that rounding it to float gives
// std::sqrt's float result for every head_dim a model can have.
constexpr double sqrt_newton(double x) {
    if (!(x > 0)) return 0;
    double r = x > 1 ? x : 1;
    for (int i = 0; i < 2048; ++i) {
        const double n = 0.5 * (r + x / r);
        if (n >= r) break;
        r = n;
    }
    return r;
}
template <class Fn>
constexpr void for_each_touch(const graph_op& o, Fn&& fn) {  // fn(buffer, written)
    for (auto b : o.in)
        if (b != no_buffer) fn(b, false);
    if (o.out != no_buffer) fn(o.out, true);
    if (o.aux != no_buffer) fn(o.aux, true);
}
}  // namespace detail

// Checks that the graph is executable: every buffer index exists, every buffer is used, and every
// buffer is written before it is read (the block read once, in order; each variant of the block
// writes what it reads, since a layer runs one of them).
constexpr void validate(const forward_graph& g) {
    if (g.block_begin > g.block_end || g.block_end > g.n_ops)
        throw error("forward graph: the decoder block's ops are out of range");
    for (std::size_t k = 0; k < n_block_variants; ++k)
        if (g.variant_begin[k] > g.variant_end[k] ||
            (g.variant_begin[k] != g.variant_end[k] &&
             (g.variant_begin[k] < g.block_begin || g.variant_end[k] > g.block_end)))
            throw error("forward graph: a block variant's ops are outside the decoder block");
    std::array<bool, max_graph_buffers> written{}, used{}, before_block{}, after_variants{};
    for (std::size_t i = 0; i < g.n_ops; ++i) {
        // Each variant starts from what the ops before the block wrote; after the block, whatever
        // any variant wrote is written.
        if (i == g.block_begin) before_block = written;
        for (std::size_t k = 0; k < n_block_variants; ++k) {
            if (g.variant_begin[k] == g.variant_end[k]) continue;
            if (i == g.variant_begin[k]) written = before_block;
            if (i == g.variant_end[k])
                for (std::size_t b = 0; b < max_graph_buffers; ++b) after_variants[b] = after_variants[b] || written[b];
        }
        if (i == g.block_end && g.block_end != g.block_begin)
            for (std::size_t b = 0; b < max_graph_buffers; ++b) written[b] = written[b] || after_variants[b];
        const graph_op& o = g.ops[i];
        detail::for_each_touch(o, [&](std::uint8_t b, bool) {
            if (b >= g.n_buffers) throw error("forward graph: an op names a buffer that does not exist");
        });
        for (auto b : o.in)
            if (b != no_buffer && !written[b])
                throw error("forward graph: buffer " + std::string(g.buffers[b].name) + " is read by " +
                            std::string(op_name(o.kind)) + " before any op writes it");
        if (o.in_place && o.out != no_buffer && !written[o.out])
            throw error("forward graph: buffer " + std::string(g.buffers[o.out].name) +
                        " is updated in place before any op writes it");
        detail::for_each_touch(o, [&](std::uint8_t b, bool w) {
            used[b] = true;
            if (w) written[b] = true;
        });
    }
    for (std::size_t b = 0; b < g.n_buffers; ++b)
        if (!used[b]) throw error("forward graph: buffer " + std::string(g.buffers[b].name) + " is never used");
}

// The buffers the decoder block shares with the ops outside it (the residual stream, positions):
// they carry values into the block, from layer to layer, and out of it.
constexpr std::array<bool, max_graph_buffers> carried_buffers(const forward_graph& g) {
    std::array<bool, max_graph_buffers> inside{}, outside{}, carried{};
    for (std::uint16_t i = 0; i < g.n_ops; ++i)
        detail::for_each_touch(g.ops[i], [&](std::uint8_t b, bool) { (g.in_block(i) ? inside : outside)[b] = true; });
    for (std::size_t b = 0; b < g.n_buffers; ++b) carried[b] = inside[b] && outside[b];
    return carried;
}

// Each buffer lives from the first op that touches it to the last. The block's ops stand for every
// layer, so a buffer the block shares with the ops outside it (the residual stream, positions)
// carries values from one layer to the next and must live through the whole block. With several
// variants a buffer's span covers its uses in all of them, more than any one needs: two buffers
// whose spans do not meet never meet in the variant a layer runs either.
// Why packing by these spans is safe: ops run in order and each finishes before the next starts
// (the CUDA backend issues them on one stream), so a buffer whose last op precedes another's first
// op is never read again once the other is written.
constexpr std::array<buffer_span, max_graph_buffers> buffer_spans(const forward_graph& g) {
    std::array<buffer_span, max_graph_buffers> s{};
    std::array<bool, max_graph_buffers> seen{};
    for (std::uint16_t i = 0; i < g.n_ops; ++i)
        detail::for_each_touch(g.ops[i], [&](std::uint8_t b, bool) {
            if (!seen[b]) s[b].first = i;
            seen[b] = true;
            s[b].last = i;
        });
    const auto carried = carried_buffers(g);
    for (std::size_t b = 0; b < g.n_buffers; ++b)
        if (carried[b]) {
            if (s[b].first > g.block_begin) s[b].first = g.block_begin;
            if (s[b].last < g.block_end - 1) s[b].last = static_cast<std::uint16_t>(g.block_end - 1);
        }
    return s;
}

// "matmul attn_q.weight", "add", ...: how the CLI and the SVG name a schedule step.
inline std::string step_name(const forward_graph& g, std::size_t op) {
    const graph_op& o = g.ops[op];
    const std::string_view what = o.weight.scope != weight_scope::none              ? o.weight.name()
                                  : o.out != no_buffer && o.kind != op_kind::inputs ? g.buffers[o.out].name
                                                                                    : std::string_view{};
    std::string s(op_name(o.kind));
    if (!what.empty()) s.append(1, ' ').append(what);
    return s;
}

}  // namespace vramplan
