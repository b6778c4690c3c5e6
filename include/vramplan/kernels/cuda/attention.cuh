// Fused causal attention on the GPU over an f32/f16/Q8_0/Q4_0 KV cache, with the same cache
// layout, the same split-and-merge of softmax states and the same block math as the CPU kernel.
// One warp per (query row, head, context split): lanes own head dimensions, the warp reduces each
// score with cub::WarpReduce, and the online-softmax state never leaves registers until the split
// ends. A second kernel merges the splits.
#pragma once

#include <cub/warp/warp_reduce.cuh>

#include "vramplan/kernels/block_math.hpp"
#include "vramplan/kernels/attention_args.hpp"
#include "vramplan/kernels/cuda/check.cuh"

namespace vramplan::gpu {

template <kernels::kernel_format Kv, int HeadDim>
__global__ void attention_partial(kernels::attention_args a, std::uint64_t splits) {
    constexpr int per_lane = (HeadDim + 31) / 32;
    using reduce = cub::WarpReduce<float>;
    __shared__ typename reduce::TempStorage tmp;
    const std::uint64_t t = blockIdx.z, h = blockIdx.x, s = blockIdx.y;
    const int lane = threadIdx.x;
    const std::uint64_t g = h / (a.n_head / a.n_head_kv);
    const std::uint64_t keys = static_cast<std::uint64_t>(a.pos[t]) + 1;
    const std::uint64_t chunk = (keys + splits - 1) / splits;
    const std::uint64_t from = s * chunk, to = from + chunk < keys ? from + chunk : keys;
    const std::uint64_t base = (a.seq ? static_cast<std::uint64_t>(a.seq[t]) : 0) * a.context;
    const std::uint64_t row_bytes = kernels::kernel_row_bytes(Kv, a.kv_dim());
    float q[per_lane], acc[per_lane];
    for (int i = 0; i < per_lane; ++i) {
        const int d = lane + 32 * i;
        q[i] = d < HeadDim ? a.q[(t * a.n_head + h) * HeadDim + d] : 0.0f;
        acc[i] = 0.0f;
    }
    kernels::softmax_state st;
    for (std::uint64_t p = from; p < to; ++p) {
        const void* krow = static_cast<const std::uint8_t*>(a.k) + (base + p) * row_bytes;
        const void* vrow = static_cast<const std::uint8_t*>(a.v) + (base + p) * row_bytes;
        float part = 0.0f;
        for (int i = 0; i < per_lane; ++i) {
            const int d = lane + 32 * i;
            if (d < HeadDim) part += q[i] * kernels::load<Kv>(krow, g * HeadDim + d);
        }
        const float score = __shfl_sync(0xffffffffu, reduce(tmp).Sum(part), 0) * a.scale;
        __syncwarp();  // tmp is reused by the next key
        float rescale, weight;
        st.add(score, rescale, weight);
        for (int i = 0; i < per_lane; ++i) {
            const int d = lane + 32 * i;
            if (d < HeadDim) acc[i] = acc[i] * rescale + weight * kernels::load<Kv>(vrow, g * HeadDim + d);
        }
    }
    float* out = a.workspace + ((t * a.n_head + h) * splits + s) * (HeadDim + 2);
    if (lane == 0) {
        out[0] = st.m;
        out[1] = st.l;
    }
    for (int i = 0; i < per_lane; ++i) {
        const int d = lane + 32 * i;
        if (d < HeadDim) out[2 + d] = acc[i];
    }
}

template <int HeadDim>
__global__ void attention_merge(kernels::attention_args a, std::uint64_t splits) {
    const std::uint64_t t = blockIdx.y, h = blockIdx.x;
    const int d = threadIdx.x;
    if (d >= HeadDim) return;
    kernels::softmax_state st;
    float acc = 0.0f;
    for (std::uint64_t s = 0; s < splits; ++s) {
        const float* p = a.workspace + ((t * a.n_head + h) * splits + s) * (HeadDim + 2);
        float mine, theirs;
        st.merge(kernels::softmax_state{p[0], p[1]}, mine, theirs);
        acc = acc * mine + p[2 + d] * theirs;
    }
    a.out[(t * a.n_head + h) * HeadDim + d] = st.l > 0 ? acc / st.l : 0.0f;
}

template <kernels::kernel_format Kv, int HeadDim>
void attention(const kernels::attention_args& a, cudaStream_t stream) {
    const std::uint64_t splits = a.splits();
    attention_partial<Kv, HeadDim><<<dim3(static_cast<unsigned>(a.n_head), static_cast<unsigned>(splits), static_cast<unsigned>(a.tokens)), 32, 0, stream>>>(a, splits);
    check_launch("attention_partial");
    attention_merge<HeadDim><<<dim3(static_cast<unsigned>(a.n_head), static_cast<unsigned>(a.tokens)), HeadDim < 32 ? 32 : HeadDim, 0, stream>>>(a, splits);
    check_launch("attention_merge");
}

// Quantizes new K and V rows into the cache: one thread per block (or element for dense formats).
template <kernels::kernel_format Kv>
__global__ void kv_append_kernel(const float* k_new, const float* v_new, const std::int32_t* pos, const std::int32_t* seq, std::uint64_t kv_dim,
                                 std::uint64_t context, void* k_cache, void* v_cache) {
    const std::uint64_t t = blockIdx.y;
    const std::uint64_t unit = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    const int bs = kernels::block_size(Kv);
    if (unit * bs >= kv_dim) return;
    const std::uint64_t row = (seq ? static_cast<std::uint64_t>(seq[t]) : 0) * context + static_cast<std::uint64_t>(pos[t]);
    const std::uint64_t row_bytes = kernels::kernel_row_bytes(Kv, kv_dim);
    const std::uint64_t offset = unit * kernels::block_bytes(Kv);
    kernels::store_row<Kv>(k_new + t * kv_dim + unit * bs, static_cast<std::uint8_t*>(k_cache) + row * row_bytes + offset, bs);
    kernels::store_row<Kv>(v_new + t * kv_dim + unit * bs, static_cast<std::uint8_t*>(v_cache) + row * row_bytes + offset, bs);
}

template <kernels::kernel_format Kv>
void kv_append(const float* k_new, const float* v_new, const std::int32_t* pos, const std::int32_t* seq, std::uint64_t tokens, std::uint64_t kv_dim,
               std::uint64_t context, void* k_cache, void* v_cache, cudaStream_t stream) {
    const std::uint64_t units = kv_dim / kernels::block_size(Kv);
    kv_append_kernel<Kv><<<dim3(static_cast<unsigned>((units + 127) / 128), static_cast<unsigned>(tokens)), 128, 0, stream>>>(k_new, v_new, pos, seq, kv_dim,
                                                                                                                           context, k_cache, v_cache);
    check_launch("kv_append_kernel");
}

}  // namespace vramplan::gpu
