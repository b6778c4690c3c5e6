// The fused-attention call of one layer of a planned forward pass, shared by the CPU and CUDA
// forward passes so both read the same cache layout and the same scratch sizing from the plan.
#pragma once

#include <cmath>
#include <cstdint>

#include "vramplan/kernels/attention_args.hpp"
#include "vramplan/model/activations.hpp"
#include "vramplan/plan/plan.hpp"

namespace vramplan::runtime {

inline kernels::attention_args attention_call(const plan& p, std::uint64_t tokens, const float* q, const std::int32_t* pos, const void* k, const void* v,
                                              float* out, float* scratch) {
    const auto& s = p.model.shape;
    kernels::attention_args a;
    a.tokens = tokens;
    a.n_head = s.n_head;
    a.n_head_kv = s.n_head_kv;
    a.head_dim = s.head_dim;
    a.context = p.lim.context;
    a.scale = 1.0f / std::sqrt(static_cast<float>(s.head_dim));
    a.q = q;
    a.pos = pos;
    a.k = k;
    a.v = v;
    a.out = out;
    a.workspace = scratch;
    // The plan sized attn_scratch for max(tokens, splits x batch) rows of per-head softmax states.
    a.workspace_rows = p.act[static_cast<std::size_t>(act::attn_scratch)].bytes / (s.n_head * (s.head_dim + 2) * 4);
    a.max_splits = kv_splits(p.lim.context);
    return a;
}

}  // namespace vramplan::runtime
