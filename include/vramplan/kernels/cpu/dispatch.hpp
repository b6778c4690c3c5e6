// The one place where run-time values (a tensor's format, the model's head_dim and KV format)
// select an instantiated CPU kernel. Unsupported combinations are an error that lists what is.
#pragma once

#include <array>
#include <string>
#include <utility>

#include "vramplan/kernels/cpu/attention.hpp"
#include "vramplan/kernels/cpu/matmul.hpp"
#include "vramplan/kernels/kernel_format.hpp"
#include "vramplan/kernels/supported.hpp"

namespace vramplan::kernels::cpu {

using matmul_fn = void (*)(const weight_view&, const float*, float*, std::uint64_t, thread_pool&);
using attention_fn = void (*)(const attention_args&, thread_pool&);
using kv_append_fn = void (*)(const float*, const float*, const std::int32_t*, const std::int32_t*, std::uint64_t, std::uint64_t,
                              std::uint64_t, void*, void*);

inline matmul_fn find_matmul(kernel_format w) {
    switch (w) {
        case kernel_format::f32: return &matmul<kernel_format::f32>;
        case kernel_format::f16: return &matmul<kernel_format::f16>;
        case kernel_format::bf16: return &matmul<kernel_format::bf16>;
        case kernel_format::q8_0: return &matmul<kernel_format::q8_0>;
        case kernel_format::q4_0: return &matmul<kernel_format::q4_0>;
    }
    throw error("no matmul kernel for this weight format");
}

namespace detail {
template <kernel_format Kv, std::size_t... I>
attention_fn attention_for_head_dim(std::uint64_t head_dim, std::index_sequence<I...>) {
    attention_fn fn = nullptr;
    ((head_dim == static_cast<std::uint64_t>(attention_head_dims[I]) ? (fn = &attention<Kv, attention_head_dims[I]>, 0) : 0), ...);
    return fn;
}
template <std::size_t... K>
attention_fn attention_for(kernel_format kv, std::uint64_t head_dim, std::index_sequence<K...>) {
    attention_fn fn = nullptr;
    ((kv == attention_kv_formats[K] ? (fn = attention_for_head_dim<attention_kv_formats[K]>(head_dim, std::make_index_sequence<attention_head_dims.size()>{}), 0) : 0), ...);
    return fn;
}
}  // namespace detail

inline attention_fn find_attention(kernel_format kv, std::uint64_t head_dim) {
    if (attention_fn fn = detail::attention_for(kv, head_dim, std::make_index_sequence<attention_kv_formats.size()>{})) return fn;
    throw_no_attention_kernel(kv, head_dim);
}

inline kv_append_fn find_kv_append(kernel_format kv) {
    switch (kv) {
        case kernel_format::f32: return &kv_append<kernel_format::f32>;
        case kernel_format::f16: return &kv_append<kernel_format::f16>;
        case kernel_format::q8_0: return &kv_append<kernel_format::q8_0>;
        case kernel_format::q4_0: return &kv_append<kernel_format::q4_0>;
        default: break;
    }
    throw_no_kv_kernel(kv);
}

}  // namespace vramplan::kernels::cpu
