// Fused causal attention on the GPU over an f32/f16/Q8_0/Q4_0 KV cache, with the same cache
// layout, the same split-and-merge of softmax states and the same block math as the CPU kernel.
//
// One block per (query row, KV head, context split) serves up to four query heads of that KV
// head's GQA group, so each K and V row is read from memory once per four heads. The split's keys
// go by in tiles. A key's row is read by a group of lanes, one 8-value chunk each (coalesced), and
// K and V never go through shared memory: each thread keeps its 8 dimensions of the four output
// accumulators in registers, scores its chunk against the four query heads, and the key's lanes
// sum the partial scores with shuffles. Only the scores (a few hundred floats) and the query
// vectors (widened to f32 when they come as f16) meet in shared memory, where warp h turns head
// h's scores into online-softmax weights.
// Loads of the next tile's K (and later V) are issued as soon as the current tile's are decoded,
// so they are in flight while the tile is computed. Scores never leave the tile: no tokens x
// context buffer exists. A second kernel merges the splits. (The sums use raw shuffles: CUB's warp
// reductions cover contiguous lane groups, and the final sum runs over lanes L apart.)
#pragma once

#include <cub/warp/warp_reduce.cuh>
#include <cuda/functional>

#include "vramplan/kernels/attention_args.hpp"
#include "vramplan/kernels/block_math.hpp"
#include "vramplan/kernels/cuda/check.cuh"
#include "vramplan/kernels/cuda/chunk8.cuh"
#include "vramplan/kernels/ffn_math.hpp"

namespace vramplan::gpu {

namespace attention_tiling {
inline constexpr int threads = 256;
inline constexpr int warps = threads / 32;
inline constexpr int max_heads = 4;  // query heads per block: each thread holds 8 outputs of each
// Two blocks per multiprocessor (registers capped at 128 per thread): a decode step has only
// n_head_kv x splits blocks (256 for Llama-3-8B), which must all be resident in one wave.
inline constexpr int blocks_per_sm = 2;
inline constexpr int passes = 4;  // keys per thread per tile: a tile of loads in flight per block
constexpr int power_of_two_at_least(int n) { return n <= 1 ? 1 : 2 * power_of_two_at_least((n + 1) / 2); }
// Lanes reading one key: its HeadDim / 8 chunks, rounded up to a power of two so that a score is
// a shuffle sum over an aligned lane group (head dims 80 and 96 leave some of the 16 lanes idle).
template <int HeadDim>
inline constexpr int lanes_per_key = power_of_two_at_least(HeadDim / 8);
template <int HeadDim>
inline constexpr int tile_keys = threads / lanes_per_key<HeadDim>* passes;
}  // namespace attention_tiling

template <kernels::kernel_format Kv, int HeadDim>
__global__ void __launch_bounds__(attention_tiling::threads, attention_tiling::blocks_per_sm)
    attention_partial(kernels::attention_args a, std::uint64_t splits) {
    using namespace attention_tiling;
    static_assert(HeadDim % 8 == 0 && lanes_per_key<HeadDim> <= 32,
                  "K and V rows are read in 8-value chunks, one warp at most per key");
    constexpr int L = lanes_per_key<HeadDim>;
    constexpr int keys_per_pass = threads / L;
    constexpr int TK = tile_keys<HeadDim>;
    using reduce = cub::WarpReduce<float>;
    __shared__ __align__(16) float qs[max_heads * HeadDim];
    __shared__ float ps[max_heads * TK];  // the tile's scores, then its softmax weights, per head
    __shared__ float rescale[max_heads];
    __shared__ float partial_out[warps][max_heads * HeadDim];
    __shared__ typename reduce::TempStorage tmp[warps];

    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int sub = tid % L, slot = tid / L;  // this thread's chunk of a key, and its key in each pass
    const bool reads = sub < HeadDim / 8;
    const std::uint64_t t = blockIdx.z, s = blockIdx.y;
    const std::uint64_t group = a.n_head / a.n_head_kv, parts = (group + max_heads - 1) / max_heads;
    const std::uint64_t g = blockIdx.x / parts;
    const std::uint64_t h0 = g * group + (blockIdx.x % parts) * max_heads;
    const int nh = static_cast<int>(g * group + group - h0 < max_heads ? g * group + group - h0 : max_heads);
    // Keys are counted from the first position the query sees (its window's start, or 0); key i is
    // position lo + i, in ring row (lo mod context) + i, less context once past the ring's end.
    const std::uint64_t lo = a.first_key(t), lo_row = lo % a.context;
    const std::uint64_t keys = static_cast<std::uint64_t>(a.pos[t]) + 1 - lo;
    const std::uint64_t chunk = (keys + splits - 1) / splits;
    const std::uint64_t from = s * chunk < keys ? s * chunk : keys, to = from + chunk < keys ? from + chunk : keys;
    const std::uint64_t base = a.first_row(t);
    const std::uint64_t row_bytes = kernels::kernel_row_bytes(Kv, a.kv_dim());
    const std::uint64_t column = g * HeadDim + static_cast<std::uint64_t>(sub) * 8;
    const auto* k_cache = static_cast<const std::uint8_t*>(a.k) + base * row_bytes;
    const auto* v_cache = static_cast<const std::uint8_t*>(a.v) + base * row_bytes;

    for (int i = tid; i < max_heads * HeadDim; i += threads)
        qs[i] = i < nh * HeadDim ? a.query((t * a.n_head + h0) * HeadDim + i) : 0.0f;
    __syncthreads();
    if constexpr (kernels::rounds_queries(Kv, HeadDim)) {
        // The CPU kernels' rounding, so both give the same results: a thread per block.
        for (int b = tid; b < nh * HeadDim / 32; b += threads) kernels::round_to_q8_0(qs + 32 * b);
        __syncthreads();
    }

    chunk8<Kv> kc[passes], vc[passes];
    auto fetch = [&](chunk8<Kv>(&c)[passes], const std::uint8_t* cache, std::uint64_t first) {
#pragma unroll
        for (int j = 0; j < passes; ++j) {
            const std::uint64_t key = first + j * keys_per_pass + slot;
            if (reads && key < to) {
                const std::uint64_t row = lo_row + key < a.context ? lo_row + key : lo_row + key - a.context;
                c[j].fetch(cache + row * row_bytes, column);
            }
        }
    };

    float acc[max_heads][8] = {};
    float m = -INFINITY, l = 0.0f;  // head `warp`'s softmax state, the same in every lane of that warp
    fetch(kc, k_cache, from);
    fetch(vc, v_cache, from);
    for (std::uint64_t first = from; first < to; first += TK) {
        const int valid = static_cast<int>(to - first < TK ? to - first : TK);
        float score[passes][max_heads];
#pragma unroll
        for (int j = 0; j < passes; ++j) {
            float kv[8] = {};
            if (reads && j * keys_per_pass + slot < valid) kc[j].decode(kv);
#pragma unroll
            for (int h = 0; h < max_heads; ++h) {
                // This thread's 8 dimensions of query head h (shared memory, not registers: the
                // registers hold a tile of loads in flight instead).
                const float4* q4 = reinterpret_cast<const float4*>(qs + h * HeadDim + (reads ? sub * 8 : 0));
                const float4 lo = q4[0], hi = q4[1];
                const float even = fmaf(lo.x, kv[0], fmaf(lo.z, kv[2], fmaf(hi.x, kv[4], hi.z * kv[6])));
                const float odd = fmaf(lo.y, kv[1], fmaf(lo.w, kv[3], fmaf(hi.y, kv[5], hi.w * kv[7])));
                score[j][h] = even + odd;
            }
        }
        if (first + TK < to) fetch(kc, k_cache, first + TK);
#pragma unroll
        for (int j = 0; j < passes; ++j)
#pragma unroll
            for (int h = 0; h < max_heads; ++h)
#pragma unroll
                for (int o = L / 2; o > 0; o /= 2) score[j][h] += __shfl_xor_sync(0xffffffffu, score[j][h], o);
        __syncthreads();  // every thread is done with the previous tile's weights
        if (sub == 0)
#pragma unroll
            for (int j = 0; j < passes; ++j)
#pragma unroll
                for (int h = 0; h < max_heads; ++h)
                    if (h < nh) {
                        const float s = score[j][h] * a.scale;
                        ps[h * TK + j * keys_per_pass + slot] = a.softcap != 0.0f ? kernels::softcap(s, a.softcap) : s;
                    }
        __syncthreads();
        if (warp < nh) {
            float* row = ps + warp * TK;
            float tile_max = -INFINITY;
            for (int k = lane; k < valid; k += 32) tile_max = fmaxf(tile_max, row[k]);
            tile_max = __shfl_sync(0xffffffffu, reduce(tmp[warp]).Reduce(tile_max, ::cuda::maximum<float>{}), 0);
            __syncwarp();
            const float m_new = fmaxf(m, tile_max);  // finite: a tile holds at least one key
            float sum = 0.0f;
            for (int k = lane; k < valid; k += 32) {
                const float p = expf(row[k] - m_new);
                row[k] = p;
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
#pragma unroll
        for (int h = 0; h < max_heads; ++h)
            if (h < nh)
#pragma unroll
                for (int k = 0; k < 8; ++k) acc[h][k] *= rescale[h];
#pragma unroll
        for (int j = 0; j < passes; ++j) {
            const int key = j * keys_per_pass + slot;
            if (!reads || key >= valid) continue;
            float vv[8];
            vc[j].decode(vv);
#pragma unroll
            for (int h = 0; h < max_heads; ++h) {
                if (h >= nh) break;
                const float p = ps[h * TK + key];
#pragma unroll
                for (int k = 0; k < 8; ++k) acc[h][k] = fmaf(p, vv[k], acc[h][k]);
            }
        }
        if (first + TK < to) fetch(vc, v_cache, first + TK);
    }
    // Each thread holds its keys' share of its 8 dimensions: sum the key slots, first those of a
    // warp (L lanes apart), then the warps' through shared memory.
#pragma unroll
    for (int h = 0; h < max_heads; ++h)
#pragma unroll
        for (int k = 0; k < 8; ++k)
#pragma unroll
            for (int o = L; o < 32; o *= 2) acc[h][k] += __shfl_xor_sync(0xffffffffu, acc[h][k], o);
    if (lane < L && reads)
#pragma unroll
        for (int h = 0; h < max_heads; ++h)
            if (h < nh)
#pragma unroll
                for (int k = 0; k < 8; ++k) partial_out[warp][h * HeadDim + sub * 8 + k] = acc[h][k];
    __syncthreads();
    const kernels::attention_state_layout states{a.n_head, HeadDim, splits};
    auto state = [&](int h) { return a.workspace + states.offset(t, h0 + h, s); };
    if (warp < nh && lane == 0) {
        state(warp)[0] = m;
        state(warp)[1] = l;
    }
    for (int i = tid; i < nh * HeadDim; i += threads) {
        float sum = 0.0f;
        for (int w = 0; w < warps; ++w) sum += partial_out[w][i];
        state(i / HeadDim)[2 + i % HeadDim] = sum;
    }
}

// Merges the splits' states: the largest running max first, then every split's sum and
// accumulator scaled to it. Two passes whose loads do not wait on one another (a running merge
// would put one cache round trip per split on the critical path).
template <int HeadDim>
__global__ void attention_merge(kernels::attention_args a, std::uint64_t splits) {
    const std::uint64_t t = blockIdx.y, h = blockIdx.x;
    const int d = threadIdx.x;
    if (d >= HeadDim) return;
    const kernels::attention_state_layout layout{a.n_head, HeadDim, splits};
    const std::uint64_t stride = layout.state_floats();
    const float* states = a.workspace + layout.offset(t, h, 0);
    float m = -INFINITY;
#pragma unroll 8
    for (std::uint64_t s = 0; s < splits; ++s) m = fmaxf(m, states[s * stride]);
    float l = 0.0f, acc = 0.0f;
#pragma unroll 8
    for (std::uint64_t s = 0; s < splits; ++s) {
        const float* p = states + s * stride;
        const float w = p[0] == -INFINITY ? 0.0f : expf(p[0] - m);  // an empty split weighs nothing
        l = fmaf(w, p[1], l);
        acc = fmaf(w, p[2 + d], acc);
    }
    a.out[(t * a.n_head + h) * HeadDim + d] = l > 0 ? acc / l : 0.0f;
}

template <kernels::kernel_format Kv, int HeadDim>
void attention(const kernels::attention_args& a, cudaStream_t stream) {
    kernels::check_query_format(a);
    const std::uint64_t splits = a.splits();
    const std::uint64_t parts =
        (a.n_head / a.n_head_kv + attention_tiling::max_heads - 1) / attention_tiling::max_heads;
    const dim3 grid(static_cast<unsigned>(a.n_head_kv * parts), static_cast<unsigned>(splits),
                    static_cast<unsigned>(a.tokens));
    attention_partial<Kv, HeadDim><<<grid, attention_tiling::threads, 0, stream>>>(a, splits);
    check_launch("attention_partial");
    constexpr unsigned merge_threads = HeadDim < 32 ? 32 : HeadDim;  // a thread per dimension, at least a warp
    const dim3 merge_grid(static_cast<unsigned>(a.n_head), static_cast<unsigned>(a.tokens));
    attention_merge<HeadDim><<<merge_grid, merge_threads, 0, stream>>>(a, splits);
    check_launch("attention_merge");
}

// Quantizes new K and V rows into the cache: one thread per block (or element for dense formats).
template <kernels::kernel_format Kv>
__global__ void kv_append_kernel(const float* k_new, const float* v_new, const std::int32_t* pos,
                                 const std::int32_t* seq, std::uint64_t kv_dim, std::uint64_t context, void* k_cache,
                                 void* v_cache) {
    const std::uint64_t t = blockIdx.y;
    const std::uint64_t unit = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    const int bs = kernels::block_size(Kv);
    if (unit * bs >= kv_dim) return;
    const std::uint64_t row = kernels::kv_cache_row(seq, t, context, static_cast<std::uint64_t>(pos[t]));
    const std::uint64_t row_bytes = kernels::kernel_row_bytes(Kv, kv_dim);
    const std::uint64_t offset = unit * kernels::block_bytes(Kv);
    kernels::store_row<Kv>(k_new + t * kv_dim + unit * bs,
                           static_cast<std::uint8_t*>(k_cache) + row * row_bytes + offset, bs);
    kernels::store_row<Kv>(v_new + t * kv_dim + unit * bs,
                           static_cast<std::uint8_t*>(v_cache) + row * row_bytes + offset, bs);
}

template <kernels::kernel_format Kv>
void kv_append(const float* k_new, const float* v_new, const std::int32_t* pos, const std::int32_t* seq,
               std::uint64_t tokens, std::uint64_t kv_dim, std::uint64_t context, void* k_cache, void* v_cache,
               cudaStream_t stream) {
    const std::uint64_t units = kv_dim / kernels::block_size(Kv);
    kv_append_kernel<Kv>
        <<<dim3(static_cast<unsigned>((units + 127) / 128), static_cast<unsigned>(tokens)), 128, 0, stream>>>(
            k_new, v_new, pos, seq, kv_dim, context, k_cache, v_cache);
    check_launch("kv_append_kernel");
}

}  // namespace vramplan::gpu
