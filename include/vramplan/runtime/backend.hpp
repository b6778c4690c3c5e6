// What a backend is: the memory of a plan's two tiers, the copies between them, and one function
// per op kind of the forward graph (model/graph.hpp). The one forward pass
// (runtime/forward_pass.hpp) calls nothing else, so a new backend is a class that models
// `compute_backend`, and a new op is an op_kind, one function here and one in each backend.
//
// Memory (`memory_backend`, all an arena needs):
//   name                        a short name for messages ("cpu", "cuda")
//   device_is_host_memory       true when the GPU tier is ordinary host memory (weights load by memcpy)
//   allocate(tier, bytes)       one block for a whole tier, aligned for every kernel; throws on failure
//   release(tier, p)            frees what allocate returned (p may be null); never throws
//   device_memory()             free and total bytes of the GPU tier's memory, now
//   host_memory()               free and total bytes of pinned host memory, now
//   copy_to_device(dst, src, bytes, slot)
//                               host tier -> GPU tier into staging slot `slot`; it may return before the
//                               copy is done, but only after compute has released the slot
//   wait_for_copy(slot)         compute issued after this sees the slot's copy complete
//   release_slot(slot)          compute issued so far is the last to read the slot
//   upload(dst, src, bytes)     host memory -> GPU tier, complete on return (weights at start-up)
//   download(dst, src, bytes)   GPU tier -> host memory, complete on return
//
// Kernels are chosen once, when a forward pass is built, so a model the backend cannot run fails at
// start-up with the supported choices named: find_matmul(weight format), find_expert_matmul(the
// stacked experts' format), find_embed(table format), find_kv_append(cache format),
// find_attention(cache format, head_dim) each return a handle or throw. Rows are row-major f32 unless named otherwise;
// `rows` is the rows of the pass the op runs on (the micro-batch's tokens, or the output rows); every pointer is into
// the arena. Ops are issued in graph order and each sees the results of the ones before it.
//   inputs(tokens, positions, host_tokens, host_positions)
//                               the pass's token ids and positions (int32) from the caller's memory
//   embed(k, table, tokens, out, rows, n, scale)
//                               out[t] = row tokens[t] of the table (n values, any embed format) as f32,
//                               times scale unless scale is 0
//   rms_norm(x, w, y, rows, n, eps)
//                               y = x / sqrt(mean(x^2) + eps) * w, row by row (w: n f32)
//   matmul(k, w, x, y, n, k_in, rows)
//                               y[t] = W x[t] for a weight of n rows of k_in values in k's format
//   add_bias(y, bias, n, rows)  y[t] += bias (n f32 values)
//   rope(x, rows, heads, head_dim, positions, config)
//                               rotates each head of row t by position positions[t]
//   kv_append(k, keys, values, positions, rows, width, cache_rows, k_cache, v_cache)
//                               stores row t of keys and values (width f32 each) as cache row
//                               positions[t] mod cache_rows (a sliding layer's ring), converted to
//                               the cache format
//   attention(k, args)          fused attention as kernels/attention_args.hpp describes it
//   add(x, y, count)            x += y
//   swiglu(gate, up, count)     gate = silu(gate) * up
//   geglu(gate, up, count)      gate = gelu(gate) * up, GELU's tanh form (kernels/ffn_math.hpp)
//   split(out, in, rows, in_cols, first, n)
//                               out[t] = values [first, first + n) of in[t] (rows of in_cols values)
//   gate_scale(x, s, rows, n)   x[t] *= sigmoid(s[t]): rows of n values, one gate value per row
//   route(logits, ids, weights, rows, n, k, renorm)
//                               each row's k experts out of n (int32 ids, f32 weights, k per row), as
//                               kernels/ffn_math.hpp's route_row chooses and weighs them
//   expert_matmul(k, w, n_expert, x, x_per_route, ids, y, n, k_in, rows, used)
//                               routed row r = (t, j) of y (used rows per token) = plane ids[r] of the
//                               stacked weight w (n_expert planes of n rows of k_in values in
//                               find_expert_matmul's format) times x[t], or x[r] when x_per_route;
//                               w is in the host tier (experts the plan keeps there) only on a
//                               backend whose device tier is host memory: beside a device, the
//                               pass has a CPU backend of its own compute them
//   softcap(x, count, cap)      x = cap tanh(x / cap)
//   expert_sum(y, routed, weights, rows, n, k)
//                               y[t] = sum over j, in order, of weights[t][j] x routed[(t, j)]
//   logits(src, count)          makes count f32 values the host can read; returns where they are.
//                               reserve_logits(count) is called once, at start-up, with the most it
//                               will be asked for, so a backend that copies them back allocates then.
//
// Optional: a backend that holds weights in planes (kernels/weight_planes.hpp) says so with
// holds_planes() (a run-time choice) and gives find_matmul_planes(weight format), the matmul kernel
// for a weight held in planes; the loader converts those weights and the pass picks that kernel
// for them (runtime/weight_layout.hpp). The CPU backend holds its own layout, panels, instead.
//
// Not in the contract yet: latent attention's head_split, head_matmul and concat, attention's
// v_dim, and Mamba-2's ssm_conv and ssm_scan (model/graph.hpp). They are planned only;
// check_runnable refuses MLA and hybrid models before a backend could be asked for them.
#pragma once

#include <concepts>
#include <cstdint>
#include <span>

#include "vramplan/kernels/attention_args.hpp"
#include "vramplan/kernels/block_math.hpp"
#include "vramplan/kernels/kernel_format.hpp"
#include "vramplan/plan/plan.hpp"
#include "vramplan/runtime/memory_info.hpp"

namespace vramplan::runtime {

template <class B>
concept memory_backend = requires(B& b, const B& cb, tier t, std::uint64_t n, void* p, const void* c, int slot) {
    { B::name } -> std::convertible_to<const char*>;
    { B::device_is_host_memory } -> std::convertible_to<bool>;
    { b.allocate(t, n) } -> std::same_as<void*>;
    b.release(t, p);
    { cb.device_memory() } -> std::same_as<memory_info>;
    { cb.host_memory() } -> std::same_as<memory_info>;
    b.copy_to_device(p, c, n, slot);
    b.wait_for_copy(slot);
    b.release_slot(slot);
    b.upload(p, c, n);
    b.download(p, c, n);
};

template <class B>
concept compute_backend = memory_backend<B> &&
    requires(B& b, const B& cb, kernels::kernel_format f, std::uint64_t n, float* y, const float* x, const std::byte* w,
             std::int32_t* ids, const std::int32_t* cids, std::span<const std::int32_t> host_ids,
             const kernels::rope_config& rope, const kernels::attention_args& args, void* cache) {
    { cb.find_matmul(f) } -> std::same_as<typename B::matmul_kernel>;
    { cb.find_embed(f) } -> std::same_as<typename B::embed_kernel>;
    { cb.find_kv_append(f) } -> std::same_as<typename B::kv_append_kernel>;
    { cb.find_attention(f, n) } -> std::same_as<typename B::attention_kernel>;
    { cb.find_expert_matmul(f) } -> std::same_as<typename B::expert_matmul_kernel>;
    b.inputs(ids, ids, host_ids, host_ids);
    b.embed(typename B::embed_kernel{}, w, cids, y, n, n, 1.0f);
    b.softcap(y, n, 1.0f);
    b.rms_norm(x, x, y, n, n, 1.0f);
    b.matmul(typename B::matmul_kernel{}, w, x, y, n, n, n);
    b.add_bias(y, x, n, n);
    b.rope(y, n, n, n, cids, rope);
    b.kv_append(typename B::kv_append_kernel{}, x, x, cids, n, n, n, cache, cache);
    b.attention(typename B::attention_kernel{}, args);
    b.add(y, x, n);
    b.swiglu(y, x, n);
    b.geglu(y, x, n);
    b.split(y, x, n, n, n, n);
    b.gate_scale(y, x, n, n);
    b.route(x, ids, y, n, n, n, true);
    b.expert_matmul(typename B::expert_matmul_kernel{}, w, n, x, true, cids, y, n, n, n, n);
    b.expert_sum(y, x, x, n, n, n);
    b.reserve_logits(n);
    { b.logits(x, n) } -> std::same_as<const float*>;
};

}  // namespace vramplan::runtime
