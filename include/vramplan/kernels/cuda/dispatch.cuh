// The CUDA twin of kernels/cpu/dispatch.hpp: run-time formats and head_dim select instantiated
// kernels here and nowhere else; the supported sets are the CPU's, so a model that runs on one
// runs on the other.
#pragma once

#include <string>
#include <utility>

#include "vramplan/kernels/supported.hpp"
#include "vramplan/kernels/cuda/attention.cuh"
#include "vramplan/kernels/cuda/elementwise.cuh"
#include "vramplan/kernels/cuda/matmul.cuh"

namespace vramplan::gpu {

using matmul_fn = void (*)(const void*, const float*, float*, std::uint64_t, std::uint64_t, std::uint64_t, cudaStream_t);
using matmul_half_fn = void (*)(const void*, const __half*, float*, std::uint64_t, std::uint64_t, std::uint64_t, cudaStream_t);
using attention_fn = void (*)(const kernels::attention_args&, cudaStream_t);
using kv_append_fn = void (*)(const float*, const float*, const std::int32_t*, const std::int32_t*, std::uint64_t, std::uint64_t, std::uint64_t, void*, void*,
                              cudaStream_t);
using embed_fn = void (*)(const void*, const std::int32_t*, float*, std::uint64_t, std::uint64_t, cudaStream_t);

template <class A>
auto find_matmul(kernels::kernel_format w) {
    using fn = void (*)(const void*, const A*, float*, std::uint64_t, std::uint64_t, std::uint64_t, cudaStream_t);
    switch (w) {
        case kernels::kernel_format::f32: return fn{&matmul<kernels::kernel_format::f32, A>};
        case kernels::kernel_format::f16: return fn{&matmul<kernels::kernel_format::f16, A>};
        case kernels::kernel_format::bf16: return fn{&matmul<kernels::kernel_format::bf16, A>};
        case kernels::kernel_format::q8_0: return fn{&matmul<kernels::kernel_format::q8_0, A>};
        case kernels::kernel_format::q4_0: return fn{&matmul<kernels::kernel_format::q4_0, A>};
    }
    throw error("no CUDA matmul kernel for this weight format");
}

inline embed_fn find_embed(kernels::kernel_format f) {
    switch (f) {
        case kernels::kernel_format::f32: return &embed<kernels::kernel_format::f32>;
        case kernels::kernel_format::f16: return &embed<kernels::kernel_format::f16>;
        case kernels::kernel_format::bf16: return &embed<kernels::kernel_format::bf16>;
        case kernels::kernel_format::q8_0: return &embed<kernels::kernel_format::q8_0>;
        case kernels::kernel_format::q4_0: return &embed<kernels::kernel_format::q4_0>;
    }
    throw error("no CUDA embedding kernel for this format");
}

namespace detail {
using kernels::attention_head_dims;
using kernels::attention_kv_formats;
template <kernels::kernel_format Kv, std::size_t... I>
attention_fn attention_for_head_dim(std::uint64_t head_dim, std::index_sequence<I...>) {
    attention_fn fn = nullptr;
    ((head_dim == static_cast<std::uint64_t>(attention_head_dims[I]) ? (fn = &attention<Kv, attention_head_dims[I]>, 0) : 0), ...);
    return fn;
}
template <std::size_t... K>
attention_fn attention_for(kernels::kernel_format kv, std::uint64_t head_dim, std::index_sequence<K...>) {
    attention_fn fn = nullptr;
    ((kv == attention_kv_formats[K] ? (fn = attention_for_head_dim<attention_kv_formats[K]>(head_dim, std::make_index_sequence<attention_head_dims.size()>{}), 0)
                                    : 0),
     ...);
    return fn;
}
}  // namespace detail

inline attention_fn find_attention(kernels::kernel_format kv, std::uint64_t head_dim) {
    if (attention_fn fn = detail::attention_for(kv, head_dim, std::make_index_sequence<detail::attention_kv_formats.size()>{})) return fn;
    kernels::throw_no_attention_kernel(kv, head_dim);
}

inline kv_append_fn find_kv_append(kernels::kernel_format kv) {
    switch (kv) {
        case kernels::kernel_format::f32: return &kv_append<kernels::kernel_format::f32>;
        case kernels::kernel_format::f16: return &kv_append<kernels::kernel_format::f16>;
        case kernels::kernel_format::q8_0: return &kv_append<kernels::kernel_format::q8_0>;
        case kernels::kernel_format::q4_0: return &kv_append<kernels::kernel_format::q4_0>;
        default: break;
    }
    kernels::throw_no_kv_kernel(kv);
}

}  // namespace vramplan::gpu
