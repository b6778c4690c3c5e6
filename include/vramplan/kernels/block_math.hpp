// The arithmetic every kernel shares, CPU and CUDA alike: block (de)quantization bit-exact with
// GGUF's reference quantizers, element access into a row of any supported format, and the
// online-softmax state of fused attention. All of it is VRAMPLAN_HOST_DEVICE, so the CPU tests
// exercise exactly the code the GPU runs.
#pragma once

#include <cmath>
#include <cstdint>

#include "vramplan/config.hpp"
#include "vramplan/format/blocks.hpp"
#include "vramplan/format/half.hpp"
#include "vramplan/kernels/block_decode.hpp"

namespace vramplan::kernels {

// Formats the kernels compute on, as a compact tag usable in device code and as a template argument:
// the float formats, the 32-value blocks and the K-quant super-blocks of 256.
enum class kernel_format : std::uint8_t {
    f32,
    f16,
    bf16,
    q8_0,
    q4_0,
    q4_1,
    q5_0,
    q5_1,
    iq4_nl,
    q2_k,
    q3_k,
    q4_k,
    q5_k,
    q6_k,
    count
};

VRAMPLAN_HOST_DEVICE constexpr bool is_k_quant(kernel_format f) {
    return f == kernel_format::q2_k || f == kernel_format::q3_k || f == kernel_format::q4_k ||
           f == kernel_format::q5_k || f == kernel_format::q6_k;
}
VRAMPLAN_HOST_DEVICE constexpr int block_size(kernel_format f) {
    return is_k_quant(f)                                                                    ? blocks::qk_k
           : f == kernel_format::f32 || f == kernel_format::f16 || f == kernel_format::bf16 ? 1
                                                                                            : blocks::qk;
}
VRAMPLAN_HOST_DEVICE constexpr int block_bytes(kernel_format f) {
    switch (f) {
        case kernel_format::f32: return 4;
        case kernel_format::f16:
        case kernel_format::bf16: return 2;
        case kernel_format::q8_0: return sizeof(blocks::q8_0);
        case kernel_format::q4_0: return sizeof(blocks::q4_0);
        case kernel_format::q4_1: return sizeof(blocks::q4_1);
        case kernel_format::q5_0: return sizeof(blocks::q5_0);
        case kernel_format::q5_1: return sizeof(blocks::q5_1);
        case kernel_format::iq4_nl: return sizeof(blocks::iq4_nl);
        case kernel_format::q2_k: return sizeof(blocks::q2_k);
        case kernel_format::q3_k: return sizeof(blocks::q3_k);
        case kernel_format::q4_k: return sizeof(blocks::q4_k);
        case kernel_format::q5_k: return sizeof(blocks::q5_k);
        case kernel_format::q6_k: return sizeof(blocks::q6_k);
        case kernel_format::count: break;
    }
    return 0;
}

// The block struct of a block format (decoded through block_decode.hpp beyond Q8_0 and Q4_0).
template <kernel_format F>
struct block_of;
template <>
struct block_of<kernel_format::q8_0> {
    using type = blocks::q8_0;
};
template <>
struct block_of<kernel_format::q4_0> {
    using type = blocks::q4_0;
};
template <>
struct block_of<kernel_format::q4_1> {
    using type = blocks::q4_1;
};
template <>
struct block_of<kernel_format::q5_0> {
    using type = blocks::q5_0;
};
template <>
struct block_of<kernel_format::q5_1> {
    using type = blocks::q5_1;
};
template <>
struct block_of<kernel_format::iq4_nl> {
    using type = blocks::iq4_nl;
};
template <>
struct block_of<kernel_format::q2_k> {
    using type = blocks::q2_k;
};
template <>
struct block_of<kernel_format::q3_k> {
    using type = blocks::q3_k;
};
template <>
struct block_of<kernel_format::q4_k> {
    using type = blocks::q4_k;
};
template <>
struct block_of<kernel_format::q5_k> {
    using type = blocks::q5_k;
};
template <>
struct block_of<kernel_format::q6_k> {
    using type = blocks::q6_k;
};
VRAMPLAN_HOST_DEVICE constexpr std::uint64_t kernel_row_bytes(kernel_format f, std::uint64_t n) {
    return n / block_size(f) * block_bytes(f);
}

// roundf(v) (halves away from zero) for |v| < 2^23. On the host, roundf and fmaxf are libm calls
// unless the compiler may assume SSE4.1 or finite math: two calls per value made the Q8_0
// quantizer take 7.5 ns a value, 2 to 3 without them. Truncation is one instruction and v - trunc(v)
// is exact, so this equals roundf wherever it is defined.
VRAMPLAN_HOST_DEVICE inline float round_half_away(float v) {
#if VRAMPLAN_DEVICE_PASS
    return roundf(v);
#else
    const float t = static_cast<float>(static_cast<std::int32_t>(v));
    const float frac = v - t;
    return frac >= 0.5f ? t + 1.0f : frac <= -0.5f ? t - 1.0f : t;
#endif
}

// ---- Q8_0: x = d * q, d = max|x| / 127 ----
VRAMPLAN_HOST_DEVICE inline void quantize_block(const float* x, blocks::q8_0& b) {
    float amax = 0.0f;
    for (int j = 0; j < blocks::qk; ++j) {
        const float a = fabsf(x[j]);
        amax = a > amax ? a : amax;  // fmaxf(amax, a), NaN included, without the libm call
    }
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    b.d = to_half(d);
    for (int j = 0; j < blocks::qk; ++j) b.qs[j] = static_cast<std::int8_t>(round_half_away(x[j] * id));
}

// The integer value of element j; the element is d times it.
VRAMPLAN_HOST_DEVICE inline int quant_value(const blocks::q8_0& b, int j) { return b.qs[j]; }
VRAMPLAN_HOST_DEVICE inline float dequantize(const blocks::q8_0& b, int j) {
    return to_float(b.d) * static_cast<float>(quant_value(b, j));
}

// ---- Q8_K: the activations K-quant weights meet, 256 values per block: x = d * q with
// iscale = -127 / max (max: the value of largest magnitude), q = nearest(iscale * x) (ties to
// even) clamped to 127, d = 1 / iscale, and bsums the sums of each 16 q (ggml's
// quantize_row_q8_K_ref; its all-zero block leaves bsums unset, here they are 0) ----
VRAMPLAN_HOST_DEVICE inline int nearest_int(float v) {
    // Adding 1.5 * 2^23 leaves the rounded integer in the low mantissa bits (ties to even).
    const float shifted = v + 12582912.0f;
    std::int32_t bits;
    __builtin_memcpy(&bits, &shifted, 4);
    return (bits & 0x007fffff) - 0x00400000;
}
// The first of x[0..n) with the largest magnitude, sign kept (0 when all are 0), as GGUF's Q4_0
// and Q8_K quantizers pick their scale.
VRAMPLAN_HOST_DEVICE inline float largest_magnitude(const float* x, int n) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < n; ++j)
        if (fabsf(x[j]) > amax) {
            amax = fabsf(x[j]);
            max = x[j];
        }
    return max;
}
VRAMPLAN_HOST_DEVICE inline void quantize_block(const float* x, blocks::q8_k& b) {
    const float max = largest_magnitude(x, blocks::qk_k);
    if (max == 0.0f) {
        b = blocks::q8_k{};
        return;
    }
    const float iscale = -127.0f / max;
    for (int j = 0; j < blocks::qk_k; ++j) {
        const int v = nearest_int(iscale * x[j]);
        b.qs[j] = static_cast<std::int8_t>(v < 127 ? v : 127);
    }
    for (int s = 0; s < blocks::qk_k / 16; ++s) {
        int sum = 0;
        for (int j = 0; j < 16; ++j) sum += b.qs[16 * s + j];
        b.bsums[s] = static_cast<std::int16_t>(sum);
    }
    b.d = 1.0f / iscale;
}

// x * y rounded to float, never fused into a following addition: GGUF's Q4_0 quantizer rounds
// the product before adding 8.5, and nvcc (or a host compiler with -ffp-contract=fast) would
// otherwise fuse them into one FMA, which rounds once and can move a value across a nibble edge.
VRAMPLAN_HOST_DEVICE inline float product_rounded(float x, float y) {
#if VRAMPLAN_DEVICE_PASS
    return __fmul_rn(x, y);
#else
    volatile float p = x * y;
    return p;
#endif
}

// ---- Q4_0: x = d * (q - 8), d = (the value of largest magnitude) / -8; element j in the low
// nibble of byte j, element j + 16 in its high nibble ----
VRAMPLAN_HOST_DEVICE inline void quantize_block(const float* x, blocks::q4_0& b) {
    const float max = largest_magnitude(x, blocks::qk);
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    b.d = to_half(d);
    for (int j = 0; j < blocks::qk / 2; ++j) {
        const float x0 = product_rounded(x[j], id), x1 = product_rounded(x[j + blocks::qk / 2], id);
        int q0 = static_cast<std::int8_t>(x0 + 8.5f), q1 = static_cast<std::int8_t>(x1 + 8.5f);
        q0 = q0 < 15 ? q0 : 15;
        q1 = q1 < 15 ? q1 : 15;
        b.qs[j] = static_cast<std::uint8_t>(q0 | (q1 << 4));
    }
}

VRAMPLAN_HOST_DEVICE inline int quant_value(const blocks::q4_0& b, int j) {
    return (j < blocks::qk / 2 ? (b.qs[j] & 0x0f) : (b.qs[j - blocks::qk / 2] >> 4)) - 8;
}
VRAMPLAN_HOST_DEVICE inline float dequantize(const blocks::q4_0& b, int j) {
    return to_float(b.d) * static_cast<float>(quant_value(b, j));
}

// Element i of a row stored in format F.
template <kernel_format F>
VRAMPLAN_HOST_DEVICE inline float load(const void* row, std::uint64_t i) {
    if constexpr (F == kernel_format::f32)
        return static_cast<const float*>(row)[i];
    else if constexpr (F == kernel_format::f16)
        return to_float(static_cast<const half_bits*>(row)[i]);
    else if constexpr (F == kernel_format::bf16)
        return to_float(static_cast<const bf16_bits*>(row)[i]);
    else if constexpr (F == kernel_format::q8_0)
        return dequantize(static_cast<const blocks::q8_0*>(row)[i / 32], static_cast<int>(i % 32));
    else if constexpr (F == kernel_format::q4_0)
        return dequantize(static_cast<const blocks::q4_0*>(row)[i / 32], static_cast<int>(i % 32));
    else {
        constexpr int n = block_size(F);
        return decode_element(static_cast<const typename block_of<F>::type*>(row)[i / n], static_cast<int>(i % n));
    }
}

// Values [start, start + count) of a row in format F into out; whole blocks decode their scales once.
template <kernel_format F>
VRAMPLAN_HOST_DEVICE inline void decode_range(const void* row, std::uint64_t start, float* out, std::uint64_t count) {
    constexpr int n = block_size(F);
    if constexpr (n == blocks::qk_k || (n == blocks::qk && F != kernel_format::q8_0 && F != kernel_format::q4_0)) {
        using B = typename block_of<F>::type;
        std::uint64_t i = 0;
        for (; i < count && (start + i) % n != 0; ++i) out[i] = load<F>(row, start + i);
        for (; i + n <= count; i += n) decode_block<B, n>(static_cast<const B*>(row)[(start + i) / n], out + i);
        for (; i < count; ++i) out[i] = load<F>(row, start + i);
    } else {
        for (std::uint64_t i = 0; i < count; ++i) out[i] = load<F>(row, start + i);
    }
}

// The formats rows are written in (KV caches, test models): the others are only read.
VRAMPLAN_HOST_DEVICE constexpr bool stores_rows(kernel_format f) {
    return f == kernel_format::f32 || f == kernel_format::f16 || f == kernel_format::bf16 || f == kernel_format::q8_0 ||
           f == kernel_format::q4_0;
}

// Stores n values (n a multiple of the block) as a row in format F.
template <kernel_format F>
VRAMPLAN_HOST_DEVICE inline void store_row(const float* x, void* row, std::uint64_t n) {
    if constexpr (F == kernel_format::f32) {
        for (std::uint64_t i = 0; i < n; ++i) static_cast<float*>(row)[i] = x[i];
    } else if constexpr (F == kernel_format::f16) {
        for (std::uint64_t i = 0; i < n; ++i) static_cast<half_bits*>(row)[i] = to_half(x[i]);
    } else if constexpr (F == kernel_format::bf16) {
        for (std::uint64_t i = 0; i < n; ++i) static_cast<bf16_bits*>(row)[i] = to_bf16(x[i]);
    } else if constexpr (F == kernel_format::q8_0) {
        for (std::uint64_t b = 0; b < n / 32; ++b) quantize_block(x + b * 32, static_cast<blocks::q8_0*>(row)[b]);
    } else {
        static_assert(F == kernel_format::q4_0, "rows are written as f32, f16, bf16, q8_0 or q4_0 (stores_rows)");
        for (std::uint64_t b = 0; b < n / 32; ++b) quantize_block(x + b * 32, static_cast<blocks::q4_0*>(row)[b]);
    }
}

// Attention over a Q8_0 or Q4_0 cache rounds each query head to Q8_0 blocks when its head_dim is
// a whole number of blocks, on every path (CPU and CUDA, SIMD or not), so results depend on the
// model's shape and formats, never on the processor. Rounded, a query meets a key block in
// integers (32 products per vpmaddubsw on the CPU) instead of converting every key value to a
// float, which is where the quantized caches' attention spends its time once their smaller reads
// overlap the arithmetic. llama.cpp's CPU attention does the same: a quantized K cache's dot
// product takes its query as Q8_0. Each query value moves by at most half its block's step,
// max |q| / 254, an error of the same size as the one the cache's own Q8_0 keys carry.
VRAMPLAN_HOST_DEVICE constexpr bool rounds_queries(kernel_format kv, int head_dim) {
    return (kv == kernel_format::q8_0 || kv == kernel_format::q4_0) && head_dim % 32 == 0;
}

// x[0..32) replaced by the values its Q8_0 block stands for.
VRAMPLAN_HOST_DEVICE inline void round_to_q8_0(float* x) {
    blocks::q8_0 b;
    quantize_block(x, b);
    for (int j = 0; j < blocks::qk; ++j) x[j] = dequantize(b, j);
}

// Online softmax (Milakov & Gimelshein): a running max m, a running sum l of exp(s - m) and an
// accumulator of exp(s - m) * v, rescaled whenever m grows. Two states over disjoint key ranges
// merge into the state of their union, which is what lets decode split a long cache.
struct softmax_state {
    float m = -INFINITY;
    float l = 0.0f;

    // Adds score s; returns (scale for the old accumulator, weight of the new value).
    VRAMPLAN_HOST_DEVICE inline void add(float s, float& rescale, float& weight) {
        const float m_new = fmaxf(m, s);
        rescale = expf(m - m_new);
        weight = expf(s - m_new);
        l = l * rescale + weight;
        m = m_new;
    }
    // Merges `o` into this; returns the scales of this accumulator and of o's.
    VRAMPLAN_HOST_DEVICE inline void merge(const softmax_state& o, float& mine, float& theirs) {
        const float m_new = fmaxf(m, o.m);
        mine = m == -INFINITY ? 0.0f : expf(m - m_new);
        theirs = o.m == -INFINITY ? 0.0f : expf(o.m - m_new);
        l = l * mine + o.l * theirs;
        m = m_new;
    }
};

VRAMPLAN_HOST_DEVICE inline float silu(float x) { return x / (1.0f + expf(-x)); }

// How a model rotates its queries and keys (passed by value to device code, hence no Hana, no strings).
struct rope_config {
    float base = 10000.0f;
    float freq_scale = 1.0f;               // linear scaling: 1 / factor
    const float* freq_divisors = nullptr;  // Llama 3.1's rope_freqs.weight (head_dim / 2 values), or none
    bool neox = false;                     // pairs (i, i + d/2) (GPT-NeoX, Qwen2) instead of (2i, 2i+1)
};
static_assert(sizeof(rope_config) == 24);

// RoPE: pair i of a head, (2i, 2i+1) in Llama ("normal") style or (i, i + d/2) in NeoX style,
// rotates by freq_scale * pos * base^(-2i/d) / freq_divisors[i], as GGML's rope with freq factors
// and no YaRN extrapolation. The angle advances by repeated multiplication, as GGML computes it, so
// results match llama.cpp's rounding.
VRAMPLAN_HOST_DEVICE inline void rope_head(float* x, int dims, std::uint64_t pos, const rope_config& r) {
    const float theta_scale = powf(r.base, -2.0f / static_cast<float>(dims));
    float theta = static_cast<float>(pos);
    for (int i = 0; i < dims / 2; ++i) {
        const float angle = r.freq_scale * (r.freq_divisors ? theta / r.freq_divisors[i] : theta);
        const float c = cosf(angle), s = sinf(angle);
        float& a = x[r.neox ? i : 2 * i];
        float& b = x[r.neox ? i + dims / 2 : 2 * i + 1];
        const float x0 = a, x1 = b;
        a = x0 * c - x1 * s;
        b = x0 * s + x1 * c;
        theta *= theta_scale;
    }
}

}  // namespace vramplan::kernels
