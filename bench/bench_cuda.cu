// CUDA kernel bandwidth next to a device-to-device copy of the same bytes, in the same run:
// matrix-vector products per weight format and decode attention per KV format. Skipped without a GPU.
#include <benchmark/benchmark.h>
#include <thrust/device_vector.h>

#include <cmath>

#include "vramplan/kernels/cuda/dispatch.cuh"

using namespace vramplan;
using kernels::kernel_format;

namespace {

bool gpu_present() {
    int n = 0;
    return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

// Seconds per call of fn, timed with events over `reps` calls.
template <class Fn>
double time_it(Fn&& fn, int reps) {
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    fn();
    cudaEventRecord(a);
    for (int i = 0; i < reps; ++i) fn();
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return ms / 1e3 / reps;
}

template <kernel_format F>
void BM_cuda_matvec(benchmark::State& state) {
    if (!gpu_present()) return state.SkipWithError("no CUDA device");
    const std::uint64_t rows = state.range(0), cols = state.range(1);
    const std::uint64_t bytes = kernels::kernel_row_bytes(F, cols) * rows;
    thrust::device_vector<std::uint8_t> w(bytes, 1), copy(bytes);
    thrust::device_vector<float> x(cols, 1.0f), y(rows);
    const auto fn = gpu::find_matmul<float>(F);
    double mv = 0, cp = 0;
    for (auto _ : state) {
        mv = time_it([&] { fn(thrust::raw_pointer_cast(w.data()), thrust::raw_pointer_cast(x.data()), thrust::raw_pointer_cast(y.data()), rows, cols, 1, nullptr); }, 20);
        cp = time_it([&] { cudaMemcpyAsync(thrust::raw_pointer_cast(copy.data()), thrust::raw_pointer_cast(w.data()), bytes, cudaMemcpyDeviceToDevice); }, 20);
        state.SetIterationTime(mv);
    }
    state.counters["matvec_GBps"] = bytes / mv / 1e9;
    state.counters["copy_read_GBps"] = bytes / cp / 1e9;  // a copy reads and writes: its read rate
    state.counters["ratio"] = (bytes / mv) / (bytes / cp);
}

template <kernel_format Kv>
void BM_cuda_decode_attention(benchmark::State& state) {
    if (!gpu_present()) return state.SkipWithError("no CUDA device");
    const std::uint64_t context = state.range(0), heads = 32, kv_heads = 8, hd = 128, kv_dim = kv_heads * hd;
    const std::uint64_t bytes = kernels::kernel_row_bytes(Kv, kv_dim) * context;
    thrust::device_vector<std::uint8_t> k(bytes, 0), v(bytes, 0), copy(2 * bytes);
    thrust::device_vector<float> q(heads * hd, 0.1f), out(heads * hd), ws(32 * heads * (hd + 2));
    thrust::device_vector<std::int32_t> pos(1, static_cast<std::int32_t>(context - 1));
    kernels::attention_args a;
    a.tokens = 1;
    a.n_head = heads;
    a.n_head_kv = kv_heads;
    a.head_dim = hd;
    a.context = context;
    a.scale = 1.0f / std::sqrt(128.0f);
    a.q = thrust::raw_pointer_cast(q.data());
    a.pos = thrust::raw_pointer_cast(pos.data());
    a.k = thrust::raw_pointer_cast(k.data());
    a.v = thrust::raw_pointer_cast(v.data());
    a.out = thrust::raw_pointer_cast(out.data());
    a.workspace = thrust::raw_pointer_cast(ws.data());
    a.workspace_rows = 32;
    a.max_splits = 32;
    const auto fn = gpu::find_attention(Kv, hd);
    double at = 0;
    for (auto _ : state) {
        at = time_it([&] { fn(a, nullptr); }, 20);
        state.SetIterationTime(at);
    }
    state.counters["GBps"] = 2.0 * bytes / at / 1e9;
    state.SetLabel(kernels::kernel_format_name(Kv));
}

}  // namespace

BENCHMARK(BM_cuda_matvec<kernel_format::f16>)->Args({8192, 28672})->UseManualTime();
BENCHMARK(BM_cuda_matvec<kernel_format::q8_0>)->Args({8192, 28672})->UseManualTime();
BENCHMARK(BM_cuda_matvec<kernel_format::q4_0>)->Args({8192, 28672})->UseManualTime();
BENCHMARK(BM_cuda_decode_attention<kernel_format::f16>)->Arg(4096)->Arg(16384)->Arg(65536)->UseManualTime();
BENCHMARK(BM_cuda_decode_attention<kernel_format::q8_0>)->Arg(4096)->Arg(16384)->Arg(65536)->UseManualTime();
BENCHMARK(BM_cuda_decode_attention<kernel_format::q4_0>)->Arg(4096)->Arg(16384)->Arg(65536)->UseManualTime();

BENCHMARK_MAIN();
