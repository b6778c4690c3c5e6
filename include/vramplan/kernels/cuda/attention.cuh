// Fused causal attention on the GPU over an f32/f16/Q8_0/Q4_0 KV cache, with the same cache
// layout, the same split-and-merge of softmax states and the same block math as the CPU kernel.
//
// One block per (query row, KV head, context split) serves all the query heads of that KV head's
// GQA group (up to 8 per block), so each K and V row is read from memory once per group, not once
// per head. The split's keys go by in tiles: the block fetches tile i+1 (raw bits in registers,
// 8-value chunks, coalesced) while it computes on tile i from shared memory. Per tile: warp h
// scores head h against the tile's keys (one key per lane, so no cross-lane sum), updates head h's
// online-softmax state and leaves the tile's weights in shared memory; then every thread
// accumulates its (head, dimension) outputs from V. Scores never leave the tile: no tokens x
// context buffer exists. A second kernel merges the splits.
#pragma once

#include <cub/warp/warp_reduce.cuh>
#include <cuda/functional>

#include "vramplan/kernels/attention_args.hpp"
#include "vramplan/kernels/block_math.hpp"
#include "vramplan/kernels/cuda/check.cuh"
#include "vramplan/kernels/cuda/chunk8.cuh"

namespace vramplan::gpu {

namespace attention_tiling {
inline constexpr int threads = 256;
inline constexpr int warps = threads / 32;
inline constexpr int max_heads = warps;  // query heads per block: one warp scores each
// Two blocks per multiprocessor (registers capped at 128 per thread): a decode step has only
// n_head_kv x splits blocks (256 for Llama-3-8B), which must all be resident in one wave.
inline constexpr int blocks_per_sm = 2;
// Keys per tile: about 4096 values of K (and of V) per tile, at most 128 keys (the scores of a
// tile stay small), a multiple of 4 (V is accumulated four keys at a time).
template <int HeadDim>
inline constexpr int tile_keys = (4096 / HeadDim < 128 ? 4096 / HeadDim : 128) / 4 * 4;
}  // namespace attention_tiling

template <kernels::kernel_format Kv, int HeadDim>
__global__ void __launch_bounds__(attention_tiling::threads, attention_tiling::blocks_per_sm) attention_partial(kernels::attention_args a, std::uint64_t splits) {
    using namespace attention_tiling;
    static_assert(HeadDim % 8 == 0, "K and V rows are read in 8-value chunks");
    constexpr int TK = tile_keys<HeadDim>;
    constexpr int chunks_per_key = HeadDim / 8;
    constexpr int tile_chunks = TK * chunks_per_key;
    constexpr int chunks_per_thread = (tile_chunks + threads - 1) / threads;
    constexpr int k_stride = HeadDim + 4;  // padding: eight lanes reading eight keys hit eight bank groups
    constexpr int owned = (max_heads * HeadDim + threads - 1) / threads;  // (head, dim) outputs per thread
    using reduce = cub::WarpReduce<float>;
    __shared__ __align__(16) float ks[TK * k_stride];
    __shared__ __align__(16) float vs[TK * HeadDim];
    __shared__ __align__(16) float qs[max_heads * HeadDim];
    __shared__ __align__(16) float ps[max_heads * TK];  // the tile's softmax weights per head
    __shared__ float rescale[max_heads];
    __shared__ typename reduce::TempStorage tmp[warps];

    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const std::uint64_t t = blockIdx.z, s = blockIdx.y;
    const std::uint64_t group = a.n_head / a.n_head_kv, parts = (group + max_heads - 1) / max_heads;
    const std::uint64_t g = blockIdx.x / parts;
    const std::uint64_t h0 = g * group + (blockIdx.x % parts) * max_heads;
    const int nh = static_cast<int>(g * group + group - h0 < max_heads ? g * group + group - h0 : max_heads);
    const std::uint64_t keys = static_cast<std::uint64_t>(a.pos[t]) + 1;
    const std::uint64_t chunk = (keys + splits - 1) / splits;
    const std::uint64_t from = s * chunk < keys ? s * chunk : keys, to = from + chunk < keys ? from + chunk : keys;
    const std::uint64_t base = (a.seq ? static_cast<std::uint64_t>(a.seq[t]) : 0) * a.context;
    const std::uint64_t row_bytes = kernels::kernel_row_bytes(Kv, a.kv_dim());
    const auto* k_cache = static_cast<const std::uint8_t*>(a.k) + base * row_bytes;
    const auto* v_cache = static_cast<const std::uint8_t*>(a.v) + base * row_bytes;

    for (int i = tid; i < nh * HeadDim; i += threads) qs[i] = a.q[(t * a.n_head + h0) * HeadDim + i];

    chunk8<Kv> kc[chunks_per_thread], vc[chunks_per_thread];
    auto fetch = [&](std::uint64_t first) {
#pragma unroll
        for (int j = 0; j < chunks_per_thread; ++j) {
            const int c = tid + threads * j;
            const std::uint64_t key = first + c / chunks_per_key;
            if (c >= tile_chunks || key >= to) break;
            const std::uint64_t at = g * HeadDim + (c % chunks_per_key) * 8;
            kc[j].fetch(k_cache + key * row_bytes, at);
            vc[j].fetch(v_cache + key * row_bytes, at);
        }
    };

    float acc[owned] = {};
    float m = -INFINITY, l = 0.0f;  // head `warp`'s softmax state, the same in every lane of that warp
    fetch(from);
    for (std::uint64_t first = from; first < to; first += TK) {
        const int valid = static_cast<int>(to - first < TK ? to - first : TK);
        __syncthreads();  // every warp is done with the previous tile
#pragma unroll
        for (int j = 0; j < chunks_per_thread; ++j) {
            const int c = tid + threads * j;
            if (c >= tile_chunks) break;
            const int key = c / chunks_per_key, d = (c % chunks_per_key) * 8;
            float kv[8] = {}, vv[8] = {};  // keys past the split: zero V, so zero weights times V stay zero
            if (key < valid) {
                kc[j].decode(kv);
                vc[j].decode(vv);
            }
            auto* kd = reinterpret_cast<float4*>(ks + key * k_stride + d);
            auto* vd = reinterpret_cast<float4*>(vs + key * HeadDim + d);
            kd[0] = make_float4(kv[0], kv[1], kv[2], kv[3]);
            kd[1] = make_float4(kv[4], kv[5], kv[6], kv[7]);
            vd[0] = make_float4(vv[0], vv[1], vv[2], vv[3]);
            vd[1] = make_float4(vv[4], vv[5], vv[6], vv[7]);
        }
        if (first + TK < to) fetch(first + TK);  // in flight while this tile is computed
        __syncthreads();
        if (warp < nh) {
            constexpr int per_lane = (TK + 31) / 32;
            float sc[per_lane];
            float tile_max = -INFINITY;
#pragma unroll
            for (int i = 0; i < per_lane; ++i) {
                const int key = lane + 32 * i;
                float4 dot = make_float4(0.0f, 0.0f, 0.0f, 0.0f);  // four independent FMA chains
                if (key < TK) {
                    const float4* kr = reinterpret_cast<const float4*>(ks + key * k_stride);
                    const float4* qr = reinterpret_cast<const float4*>(qs + warp * HeadDim);
#pragma unroll
                    for (int d = 0; d < HeadDim / 4; ++d) {
                        const float4 kk = kr[d], qq = qr[d];
                        dot = make_float4(fmaf(kk.x, qq.x, dot.x), fmaf(kk.y, qq.y, dot.y), fmaf(kk.z, qq.z, dot.z), fmaf(kk.w, qq.w, dot.w));
                    }
                }
                sc[i] = ((dot.x + dot.y) + (dot.z + dot.w)) * a.scale;
                if (key < valid) tile_max = fmaxf(tile_max, sc[i]);
            }
            tile_max = __shfl_sync(0xffffffffu, reduce(tmp[warp]).Reduce(tile_max, ::cuda::maximum<float>{}), 0);
            __syncwarp();
            const float m_new = fmaxf(m, tile_max);  // finite: a tile holds at least one key
            float sum = 0.0f;
#pragma unroll
            for (int i = 0; i < per_lane; ++i) {
                const int key = lane + 32 * i;
                if (key >= TK) break;
                const float p = key < valid ? expf(sc[i] - m_new) : 0.0f;
                ps[warp * TK + key] = p;
                sum += p;
            }
            sum = __shfl_sync(0xffffffffu, reduce(tmp[warp]).Sum(sum), 0);
            __syncwarp();
            const float r = expf(m - m_new);  // 0 on the first tile (m = -inf)
            l = l * r + sum;
            m = m_new;
            if (lane == 0) rescale[warp] = r;
        }
        __syncthreads();
        const int keys4 = (valid + 3) / 4 * 4;  // past `valid`, weights and V are zero
#pragma unroll
        for (int j = 0; j < owned; ++j) {
            const int pair = tid + threads * j, h = pair / HeadDim, d = pair % HeadDim;
            if (h >= nh) break;
            float4 o = make_float4(acc[j] * rescale[h], 0.0f, 0.0f, 0.0f);  // four independent FMA chains
            const float4* pw = reinterpret_cast<const float4*>(ps + h * TK);
#pragma unroll 4
            for (int k = 0; k < keys4; k += 4) {
                const float4 w4 = pw[k / 4];
                o.x = fmaf(w4.x, vs[k * HeadDim + d], o.x);
                o.y = fmaf(w4.y, vs[(k + 1) * HeadDim + d], o.y);
                o.z = fmaf(w4.z, vs[(k + 2) * HeadDim + d], o.z);
                o.w = fmaf(w4.w, vs[(k + 3) * HeadDim + d], o.w);
            }
            acc[j] = (o.x + o.y) + (o.z + o.w);
        }
    }
    auto state = [&](int h) { return a.workspace + ((t * a.n_head + h0 + h) * splits + s) * (HeadDim + 2); };
    if (warp < nh && lane == 0) {
        state(warp)[0] = m;
        state(warp)[1] = l;
    }
#pragma unroll
    for (int j = 0; j < owned; ++j) {
        const int pair = tid + threads * j, h = pair / HeadDim, d = pair % HeadDim;
        if (h < nh) state(h)[2 + d] = acc[j];
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
    const std::uint64_t parts = (a.n_head / a.n_head_kv + attention_tiling::max_heads - 1) / attention_tiling::max_heads;
    const dim3 grid(static_cast<unsigned>(a.n_head_kv * parts), static_cast<unsigned>(splits), static_cast<unsigned>(a.tokens));
    attention_partial<Kv, HeadDim><<<grid, attention_tiling::threads, 0, stream>>>(a, splits);
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
