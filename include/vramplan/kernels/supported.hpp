// What the attention and KV cache kernels are instantiated for, on the CPU and CUDA alike, and the
// errors that name those choices: both dispatchers (kernels/cpu/dispatch.hpp,
// kernels/cuda/dispatch.cuh) read these, so a model that runs on one runs on the other.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

#include "vramplan/error.hpp"
#include "vramplan/kernels/kernel_format.hpp"

namespace vramplan::kernels {

// 256: Gemma 2 and Gemma 3 (4B, 12B).
inline constexpr std::array<int, 7> attention_head_dims{8, 32, 64, 80, 96, 128, 256};
inline constexpr std::array<kernel_format, 4> attention_kv_formats{kernel_format::f32, kernel_format::f16,
                                                                   kernel_format::q8_0, kernel_format::q4_0};

[[noreturn]] inline void throw_no_attention_kernel(kernel_format kv, std::uint64_t head_dim) {
    std::string dims;
    for (int d : attention_head_dims) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
    throw error(std::string("no fused attention kernel for head_dim ") + std::to_string(head_dim) + " with a " +
                kernel_format_name(kv) + " KV cache; supported head dims: " + dims +
                "; KV formats: f32, f16, q8_0, q4_0");
}

[[noreturn]] inline void throw_no_kv_kernel(kernel_format kv) {
    throw error(std::string("no KV cache kernel for ") + kernel_format_name(kv) + "; use f32, f16, q8_0 or q4_0");
}

// fn(std::integral_constant<kernel_format, Kv>{}) for a run-time cache format the KV kernels take.
template <class Fn>
auto with_kv_format(kernel_format kv, Fn&& fn) {
    using R = decltype(fn(std::integral_constant<kernel_format, attention_kv_formats[0]>{}));
    return [&]<std::size_t... I>(std::index_sequence<I...>)->R {
        R r{};
        if (!((kv == attention_kv_formats[I]
                   ? (r = fn(std::integral_constant<kernel_format, attention_kv_formats[I]>{}), true)
                   : false) ||
              ...))
            throw_no_kv_kernel(kv);
        return r;
    }
    (std::make_index_sequence<attention_kv_formats.size()>{});
}

// The weight formats the CUDA matrix-product, expert and embedding kernels are instantiated for:
// every kernel_format, as on the CPU. f32, f16, bf16, Q8_0 and Q4_0 have 16-byte chunk readers
// (kernels/cuda/chunk8.cuh); the K-quants and the 32-value fallbacks are read element by element
// through the shared block math (kernels/block_decode.hpp): correct, not yet fast.
inline constexpr std::array<kernel_format, n_kernel_formats> device_weight_formats{
    kernel_format::f32,  kernel_format::f16,  kernel_format::bf16, kernel_format::q8_0,   kernel_format::q4_0,
    kernel_format::q4_1, kernel_format::q5_0, kernel_format::q5_1, kernel_format::iq4_nl, kernel_format::q2_k,
    kernel_format::q3_k, kernel_format::q4_k, kernel_format::q5_k, kernel_format::q6_k};
static_assert(device_weight_formats.back() == static_cast<kernel_format>(n_kernel_formats - 1),
              "one entry per kernel_format, in order");

// fn(std::integral_constant<kernel_format, W>{}) for a weight format the CUDA kernels take.
template <class Fn>
auto with_device_weight_format(kernel_format w, Fn&& fn) {
    using R = decltype(fn(std::integral_constant<kernel_format, device_weight_formats[0]>{}));
    return [&]<std::size_t... I>(std::index_sequence<I...>)->R {
        R r{};
        if (!((w == device_weight_formats[I]
                   ? (r = fn(std::integral_constant<kernel_format, device_weight_formats[I]>{}), true)
                   : false) ||
              ...))
            throw error(std::string("the CUDA kernels do not compute on ") + kernel_format_name(w) +
                        " weights; the CPU backend may (--device cpu)");
        return r;
    }
    (std::make_index_sequence<device_weight_formats.size()>{});
}

// fn(Kv, HeadDim) as integral constants for a run-time cache format and head_dim the attention
// kernels are instantiated for; anything else is the error that lists what is.
template <class Fn>
auto with_attention_shape(kernel_format kv, std::uint64_t head_dim, Fn&& fn) {
    return with_kv_format(kv, [&](auto k) {
        using R = decltype(fn(k, std::integral_constant<int, attention_head_dims[0]>{}));
        return [&]<std::size_t... J>(std::index_sequence<J...>)->R {
            R r{};
            if (!((head_dim == static_cast<std::uint64_t>(attention_head_dims[J])
                       ? (r = fn(k, std::integral_constant<int, attention_head_dims[J]>{}), true)
                       : false) ||
                  ...))
                throw_no_attention_kernel(kv, head_dim);
            return r;
        }
        (std::make_index_sequence<attention_head_dims.size()>{});
    });
}

}  // namespace vramplan::kernels
