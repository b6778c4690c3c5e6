// The CUDA twin of kernels/cpu/dispatch.hpp: run-time formats and head_dim select instantiated
// kernels here and nowhere else; the attention and KV sets are the CPU's, the weight formats a
// subset of them (kernels/supported.hpp's device_weight_formats) until the K-quants have CUDA twins.
#pragma once

#include <string>
#include <utility>

#include "vramplan/kernels/cuda/attention.cuh"
#include "vramplan/kernels/cuda/elementwise.cuh"
#include "vramplan/kernels/cuda/experts.cuh"
#include "vramplan/kernels/cuda/matmul.cuh"
#include "vramplan/kernels/cuda/matmul_planes.cuh"
#include "vramplan/kernels/supported.hpp"

namespace vramplan::gpu {

using matmul_fn = void (*)(const void*, const float*, float*, std::uint64_t, std::uint64_t, std::uint64_t,
                           cudaStream_t);
using matmul_half_fn = void (*)(const void*, const __half*, float*, std::uint64_t, std::uint64_t, std::uint64_t,
                                cudaStream_t);
using attention_fn = void (*)(const kernels::attention_args&, cudaStream_t);
using kv_append_fn = void (*)(const float*, const float*, const std::int32_t*, const std::int32_t*, std::uint64_t,
                              std::uint64_t, std::uint64_t, void*, void*, cudaStream_t);
using expert_matmul_fn = void (*)(const void*, const float*, bool, const std::int32_t*, float*, std::uint64_t,
                                  std::uint64_t, std::uint64_t, std::uint64_t, cudaStream_t);
using embed_fn = void (*)(const void*, const std::int32_t*, float*, std::uint64_t, std::uint64_t, float, cudaStream_t);

template <class A>
auto find_matmul(kernels::kernel_format w) {
    using fn = void (*)(const void*, const A*, float*, std::uint64_t, std::uint64_t, std::uint64_t, cudaStream_t);
    return kernels::with_device_weight_format(w, [](auto f) { return fn{&matmul<f(), A>}; });
}

// The plane kernel for a weight the backend holds in planes (kernels/weight_planes.hpp).
template <class A>
auto find_matmul_planes(kernels::kernel_format w) {
    using fn = void (*)(const void*, const A*, float*, std::uint64_t, std::uint64_t, std::uint64_t, cudaStream_t);
    return kernels::with_device_weight_format(w, [](auto f) { return fn{&matmul_planes<f(), A>}; });
}

inline expert_matmul_fn find_expert_matmul(kernels::kernel_format w) {
    return kernels::with_device_weight_format(w, [](auto f) { return expert_matmul_fn{&expert_matmul<f()>}; });
}

inline embed_fn find_embed(kernels::kernel_format f) {
    return kernels::with_device_weight_format(f, [](auto k) { return embed_fn{&embed<k()>}; });
}

inline attention_fn find_attention(kernels::kernel_format kv, std::uint64_t head_dim) {
    return kernels::with_attention_shape(kv, head_dim,
                                         [](auto k, auto d) { return attention_fn{&attention<k(), d()>}; });
}

inline kv_append_fn find_kv_append(kernels::kernel_format kv) {
    return kernels::with_kv_format(kv, [](auto k) { return kv_append_fn{&kv_append<k()>}; });
}

}  // namespace vramplan::gpu
