// The small kernels of a Llama forward pass on the GPU. Reductions (RMSNorm's sum of squares,
// softmax's max and sum, argmax) use cub::BlockReduce.
#pragma once

#include <cub/block/block_reduce.cuh>
#include <cuda/functional>

#include "vramplan/kernels/block_math.hpp"
#include "vramplan/kernels/cuda/check.cuh"
#include "vramplan/kernels/ffn_math.hpp"

namespace vramplan::gpu {

inline constexpr int reduce_threads = 256;

__global__ void rms_norm_kernel(const float* x, const float* w, float* y, std::uint64_t n, float eps) {
    using reduce = cub::BlockReduce<float, reduce_threads>;
    __shared__ typename reduce::TempStorage tmp;
    __shared__ float scale;
    const float* row = x + blockIdx.x * n;
    float ss = 0.0f;
    for (std::uint64_t i = threadIdx.x; i < n; i += reduce_threads) ss += row[i] * row[i];
    const float total = reduce(tmp).Sum(ss);
    if (threadIdx.x == 0) scale = rsqrtf(total / static_cast<float>(n) + eps);
    __syncthreads();
    for (std::uint64_t i = threadIdx.x; i < n; i += reduce_threads) y[blockIdx.x * n + i] = row[i] * scale * w[i];
}

inline void rms_norm(const float* x, const float* w, float* y, std::uint64_t rows, std::uint64_t n, float eps,
                     cudaStream_t s) {
    rms_norm_kernel<<<static_cast<unsigned>(rows), reduce_threads, 0, s>>>(x, w, y, n, eps);
    check_launch("rms_norm_kernel");
}

__global__ void rope_kernel(float* x, std::uint64_t heads, int head_dim, const std::int32_t* positions,
                            kernels::rope_config r) {
    const std::uint64_t t = blockIdx.y, h = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (h >= heads) return;
    kernels::rope_head(x + (t * heads + h) * head_dim, head_dim, static_cast<std::uint64_t>(positions[t]), r);
}

// r.freq_divisors, when set, points to device memory.
inline void rope(float* x, std::uint64_t rows, std::uint64_t heads, int head_dim, const std::int32_t* positions,
                 const kernels::rope_config& r, cudaStream_t s) {
    rope_kernel<<<dim3(static_cast<unsigned>((heads + 63) / 64), static_cast<unsigned>(rows)), 64, 0, s>>>(
        x, heads, head_dim, positions, r);
    check_launch("rope_kernel");
}

__global__ void swiglu_kernel(float* gate, const float* up, std::uint64_t n) {
    const std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) gate[i] = kernels::silu(gate[i]) * up[i];
}
__global__ void geglu_kernel(float* gate, const float* up, std::uint64_t n) {
    const std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) gate[i] = kernels::gelu(gate[i]) * up[i];
}
// x[t][i] *= sigmoid(s[t])
__global__ void gate_scale_kernel(float* x, const float* s, std::uint64_t rows, std::uint64_t n) {
    const std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n * rows) x[i] *= kernels::sigmoid(s[i / n]);
}
__global__ void softcap_kernel(float* x, std::uint64_t n, float cap) {
    const std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) x[i] = kernels::softcap(x[i], cap);
}
__global__ void add_kernel(float* x, const float* y, std::uint64_t n) {
    const std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) x[i] += y[i];
}
// y[t][i] += bias[i]
__global__ void add_rows_kernel(float* y, const float* bias, std::uint64_t n, std::uint64_t rows) {
    const std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n * rows) y[i] += bias[i % n];
}

inline unsigned blocks_for(std::uint64_t n) { return static_cast<unsigned>((n + 255) / 256); }

// One thread per value of n, 256 to a block, then the launch's error check.
template <class... Params, class... Args>
void launch_elementwise(void (*kernel)(Params...), std::uint64_t n, const char* name, cudaStream_t s, Args... args) {
    kernel<<<blocks_for(n), 256, 0, s>>>(args...);
    check_launch(name);
}

inline void swiglu(float* gate, const float* up, std::uint64_t n, cudaStream_t s) {
    launch_elementwise(swiglu_kernel, n, "swiglu_kernel", s, gate, up, n);
}
inline void geglu(float* gate, const float* up, std::uint64_t n, cudaStream_t s) {
    launch_elementwise(geglu_kernel, n, "geglu_kernel", s, gate, up, n);
}
inline void gate_scale(float* x, const float* g, std::uint64_t rows, std::uint64_t n, cudaStream_t s) {
    launch_elementwise(gate_scale_kernel, n * rows, "gate_scale_kernel", s, x, g, rows, n);
}
inline void softcap(float* x, std::uint64_t n, float cap, cudaStream_t s) {
    launch_elementwise(softcap_kernel, n, "softcap_kernel", s, x, n, cap);
}
inline void add(float* x, const float* y, std::uint64_t n, cudaStream_t s) {
    launch_elementwise(add_kernel, n, "add_kernel", s, x, y, n);
}
inline void add_rows(float* y, const float* bias, std::uint64_t n, std::uint64_t rows, cudaStream_t s) {
    launch_elementwise(add_rows_kernel, n * rows, "add_rows_kernel", s, y, bias, n, rows);
}

// Embedding rows of any kernel format (the table may sit in pinned host memory: it is mapped).
template <kernels::kernel_format F>
__global__ void embed_kernel(const void* table, const std::int32_t* tokens, float* x, std::uint64_t n, float scale) {
    const std::uint64_t t = blockIdx.y, i = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const void* row = static_cast<const std::uint8_t*>(table) +
                      static_cast<std::uint64_t>(tokens[t]) * kernels::kernel_row_bytes(F, n);
    const float v = kernels::load<F>(row, i);
    x[t * n + i] = scale != 0.0f ? v * scale : v;
}

// scale: each row's factor (0: none).
template <kernels::kernel_format F>
void embed(const void* table, const std::int32_t* tokens, float* x, std::uint64_t rows, std::uint64_t n, float scale,
           cudaStream_t s) {
    embed_kernel<F><<<dim3(blocks_for(n), static_cast<unsigned>(rows)), 256, 0, s>>>(table, tokens, x, n, scale);
    check_launch("embed_kernel");
}

// In place over each row of n values.
__global__ void softmax_kernel(float* x, std::uint64_t n) {
    using reduce = cub::BlockReduce<float, reduce_threads>;
    __shared__ typename reduce::TempStorage tmp;
    __shared__ float shared;
    float* row = x + blockIdx.x * n;
    float m = -INFINITY;
    for (std::uint64_t i = threadIdx.x; i < n; i += reduce_threads) m = fmaxf(m, row[i]);
    const float rowmax = reduce(tmp).Reduce(m, ::cuda::maximum<float>{});
    if (threadIdx.x == 0) shared = rowmax;
    __syncthreads();
    const float mx = shared;
    float sum = 0.0f;
    for (std::uint64_t i = threadIdx.x; i < n; i += reduce_threads) sum += (row[i] = expf(row[i] - mx));
    __syncthreads();
    const float total = reduce(tmp).Sum(sum);
    if (threadIdx.x == 0) shared = total;
    __syncthreads();
    for (std::uint64_t i = threadIdx.x; i < n; i += reduce_threads) row[i] /= shared;
}

inline void softmax(float* x, std::uint64_t rows, std::uint64_t n, cudaStream_t s) {
    softmax_kernel<<<static_cast<unsigned>(rows), reduce_threads, 0, s>>>(x, n);
    check_launch("softmax_kernel");
}

// The first index of the largest value of each row.
__global__ void argmax_kernel(const float* x, std::uint64_t n, std::int32_t* out) {
    using pair = cub::KeyValuePair<int, float>;
    using reduce = cub::BlockReduce<pair, reduce_threads>;
    __shared__ typename reduce::TempStorage tmp;
    const float* row = x + blockIdx.x * n;
    pair best{-1, -INFINITY};
    for (std::uint64_t i = threadIdx.x; i < n; i += reduce_threads)
        if (row[i] > best.value) best = pair{static_cast<int>(i), row[i]};
    const pair r = reduce(tmp).Reduce(best, cub::ArgMax());
    if (threadIdx.x == 0) out[blockIdx.x] = r.key;
}

inline void argmax(const float* x, std::uint64_t rows, std::uint64_t n, std::int32_t* out, cudaStream_t s) {
    argmax_kernel<<<static_cast<unsigned>(rows), reduce_threads, 0, s>>>(x, n, out);
    check_launch("argmax_kernel");
}

}  // namespace vramplan::gpu
