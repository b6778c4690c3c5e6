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
using matmul_rows_fn = void (*)(const weight_view&, const token_rows&, thread_pool&);
using attention_fn = void (*)(const attention_args&, thread_pool&);
using kv_append_fn = void (*)(const float*, const float*, const std::int32_t*, const std::int32_t*, std::uint64_t,
                              std::uint64_t, std::uint64_t, void*, void*);

inline matmul_fn find_matmul(kernel_format w) {
    return with_kernel_format(w, [](auto f) { return matmul_fn{&matmul<f()>}; });
}

inline matmul_rows_fn find_matmul_rows(kernel_format w) {
    return with_kernel_format(w, [](auto f) { return matmul_rows_fn{&matmul_rows<f()>}; });
}

inline attention_fn find_attention(kernel_format kv, std::uint64_t head_dim) {
    return with_attention_shape(kv, head_dim, [](auto k, auto d) { return attention_fn{&attention<k(), d()>}; });
}

inline kv_append_fn find_kv_append(kernel_format kv) {
    return with_kv_format(kv, [](auto k) { return kv_append_fn{&kv_append<k()>}; });
}

}  // namespace vramplan::kernels::cpu
