// The end of every warp-per-row matrix kernel: each lane holds a partial sum per token; the warp
// adds them and lane 0 writes y[t][r].
#pragma once

#include <cub/warp/warp_reduce.cuh>

#include <cstdint>

namespace vramplan::gpu {

template <int Tokens>
__device__ inline void store_row_sums(const float (&acc)[Tokens], typename cub::WarpReduce<float>::TempStorage& tmp,
                                      float* y, std::uint64_t rows, std::uint64_t r, std::uint64_t t0, int n_tok,
                                      int lane) {
#pragma unroll
    for (int t = 0; t < Tokens; ++t) {
        const float sum = cub::WarpReduce<float>(tmp).Sum(acc[t]);
        if (lane == 0 && t < n_tok) y[(t0 + t) * rows + r] = sum;
        __syncwarp();  // tmp is reused by the next token
    }
}

}  // namespace vramplan::gpu
