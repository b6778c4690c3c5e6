// CUDA kernel bandwidth next to a plain read of the same bytes, in the same run:
// matrix-vector products per weight format and decode attention per KV format. Skipped without a GPU.
#include <benchmark/benchmark.h>
#include <thrust/device_vector.h>
#include <thrust/tabulate.h>

#include <cmath>

#include <chrono>
#include <filesystem>

#include "../tests/test_model.hpp"
#include "decode_attention_shape.hpp"
#include "vramplan/io/gguf_model.hpp"
#include "vramplan/kernels/cuda/dispatch.cuh"
#include "vramplan/runtime/cuda_backend.cuh"
#include "vramplan/runtime/forward_pass.hpp"
#include "vramplan/runtime/model_loader.hpp"

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

// The device's read rate over the same bytes in the same run, the rate the kernels are held to: a
// grid-stride kernel that loads 16 bytes per thread per step and keeps only an XOR of them.
__global__ void read_kernel(const uint4* p, std::uint64_t n, unsigned* sink) {
    unsigned acc = 0;
    for (std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += static_cast<std::uint64_t>(gridDim.x) * blockDim.x) {
        const uint4 v = p[i];
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x9e3779b9u) *sink = acc;  // almost never true, but the compiler cannot know
}

double read_seconds(const thrust::device_vector<std::uint8_t>& bytes, thrust::device_vector<unsigned>& sink) {
    int sms = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    const auto* p = reinterpret_cast<const uint4*>(thrust::raw_pointer_cast(bytes.data()));
    return time_it([&] { read_kernel<<<sms * 8, 256>>>(p, bytes.size() / 16, thrust::raw_pointer_cast(sink.data())); },
                   20);
}

// Random bytes (a hash of the index): kernels are timed on data, never on zeros or constants.
struct random_byte {
    __device__ std::uint8_t operator()(std::uint64_t i) const {
        return static_cast<std::uint8_t>((i * 0x9E3779B97F4A7C15ull) >> 56);
    }
};

// Which matrix kernel: the one matmul() picks, a named older one for a side-by-side ratio, the
// plane kernel on weights held in planes (kernels/weight_planes.hpp) as matmul_planes runs it, or
// with another shape of work (rows per warp x warps per block, values per stretch; one token).
// The staged kernel's other shapes (3-4 stages, 2 or 8 rows per warp) were measured and not kept
// (bench/REPORT-cuda.md).
enum class matvec_path {
    chosen,
    chunked,
    elementwise,
    planes,
    planes_2x4x4096,
    planes_8x4x4096,
    planes_4x8x4096,
    planes_4x4x2048
};

// Arguments: rows, columns, tokens (1 to 4: decode, or a few tokens sharing each weight read).
template <kernel_format F, matvec_path P = matvec_path::chosen>
void BM_cuda_matvec(benchmark::State& state) {
    if (!gpu_present()) return state.SkipWithError("no CUDA device");
    const std::uint64_t rows = state.range(0), cols = state.range(1), tokens = state.range(2);
    const std::uint64_t bytes = kernels::kernel_row_bytes(F, cols) * rows;
    thrust::device_vector<std::uint8_t> w(bytes);
    thrust::tabulate(w.begin(), w.end(), random_byte{});
    thrust::device_vector<unsigned> sink(1);
    thrust::device_vector<float> x(tokens * cols, 0.5f), y(rows * tokens);
    const auto* wp = thrust::raw_pointer_cast(w.data());
    const float* xp = thrust::raw_pointer_cast(x.data());
    float* yp = thrust::raw_pointer_cast(y.data());
    const auto run = [&] {
        if constexpr (P == matvec_path::chosen)
            gpu::matmul<F, float>(wp, xp, yp, rows, cols, tokens, nullptr);
        else if constexpr (P == matvec_path::chunked)
            gpu::launch_chunked<F, float>(wp, xp, yp, rows, cols, tokens, nullptr);
        else if constexpr (P == matvec_path::elementwise)
            gpu::launch_elementwise<F, float>(wp, xp, yp, rows, cols, tokens, nullptr);
        else if constexpr (P == matvec_path::planes)
            gpu::matmul_planes<F, float>(wp, xp, yp, rows, cols, tokens, nullptr);
        else if constexpr (P == matvec_path::planes_2x4x4096)
            gpu::launch_planes_as<F, float, 1, 2, 4096, 4>(wp, xp, yp, rows, cols, tokens, nullptr);
        else if constexpr (P == matvec_path::planes_8x4x4096)
            gpu::launch_planes_as<F, float, 1, 8, 4096, 4>(wp, xp, yp, rows, cols, tokens, nullptr);
        else if constexpr (P == matvec_path::planes_4x8x4096)
            gpu::launch_planes_as<F, float, 1, 4, 4096, 8>(wp, xp, yp, rows, cols, tokens, nullptr);
        else
            gpu::launch_planes_as<F, float, 1, 4, 2048, 4>(wp, xp, yp, rows, cols, tokens, nullptr);
    };
    double mv = 0, rd = 0;
    for (auto _ : state) {
        mv = time_it(run, 20);
        rd = read_seconds(w, sink);
        state.SetIterationTime(mv);
    }
    state.counters["matvec_GBps"] = bytes / mv / 1e9;
    state.counters["read_GBps"] = bytes / rd / 1e9;
    state.counters["ratio"] = rd / mv;
    constexpr const char* names[] = {"chosen",
                                     "chunked",
                                     "elementwise",
                                     "planes",
                                     "planes 2 rows x 4 warps x 4096",
                                     "planes 8 rows x 4 warps x 4096",
                                     "planes 4 rows x 8 warps x 4096",
                                     "planes 4 rows x 4 warps x 2048"};
    state.SetLabel(names[static_cast<int>(P)]);
}

template <kernel_format Kv>
void BM_cuda_decode_attention(benchmark::State& state) {
    if (!gpu_present()) return state.SkipWithError("no CUDA device");
    const std::uint64_t context = state.range(0), hd = bench_shape::head_dim;
    const std::uint64_t bytes = kernels::kernel_row_bytes(Kv, bench_shape::kv_dim) * context;
    thrust::device_vector<std::uint8_t> k(bytes, 0), v(bytes, 0);
    thrust::device_vector<unsigned> sink(1);
    thrust::device_vector<float> q(bench_shape::heads * hd, 0.1f), out(bench_shape::heads * hd),
        ws(bench_shape::workspace_floats);
    thrust::device_vector<std::int32_t> pos(1, static_cast<std::int32_t>(context - 1));
    kernels::attention_args a = bench_shape::llama3_8b_decode(context);
    a.q = thrust::raw_pointer_cast(q.data());
    a.pos = thrust::raw_pointer_cast(pos.data());
    a.k = thrust::raw_pointer_cast(k.data());
    a.v = thrust::raw_pointer_cast(v.data());
    a.out = thrust::raw_pointer_cast(out.data());
    a.workspace = thrust::raw_pointer_cast(ws.data());
    const auto fn = gpu::find_attention(Kv, hd);
    double at = 0, rd = 0;
    for (auto _ : state) {
        at = time_it([&] { fn(a, nullptr); }, 20);
        rd = read_seconds(k, sink) + read_seconds(v, sink);
        state.SetIterationTime(at);
    }
    state.counters["attention_GBps"] = 2.0 * bytes / at / 1e9;  // K and V read once
    state.counters["read_GBps"] = 2.0 * bytes / rd / 1e9;
    state.counters["ratio"] = rd / at;
    state.SetLabel(kernels::kernel_format_name(Kv));
}

// Streamed decode against its parts: compute alone (every layer resident), transfer alone (the
// streamed layers' bytes over the host link) and both together (every layer streamed through the
// two staging slots). overlap = max(transfer, compute) / streamed: 1 means perfect overlap.
void BM_cuda_streamed_overlap(benchmark::State& state) {
    if (!gpu_present()) return state.SkipWithError("no CUDA device");
    const test_model::spec s{.vocab = 4096,
                             .embd = 2048,
                             .layers = 8,
                             .heads = 16,
                             .kv_heads = 4,
                             .head_dim = 128,
                             .ff = 5632,
                             .weights = format{format_id::q8_0}};
    const std::string path = (std::filesystem::temp_directory_path() / "vramplan_bench_stream.gguf").string();
    test_model::write(path, s);
    const auto file = io::gguf_file::open(path);
    const model_desc m = io::describe(file, "bench");
    auto decode_seconds = [&](std::uint64_t gpu_layers, std::uint64_t& streamed_bytes) {
        plan_options o;
        o.gpu_layers = gpu_layers;
        const plan p = plan_inference(m, target_desc{"gpu", 8ull << 30, 0}, {.context = 512, .ubatch = 16}, o);
        runtime::cuda_backend backend;
        runtime::arena<runtime::cuda_backend> a(p, backend);
        runtime::load_weights(file, a);
        runtime::forward_pass<runtime::cuda_backend> llm(a);
        std::int32_t tok = 1, pos = 0;
        llm.forward(std::span(&tok, 1), std::span(&pos, 1));
        const auto t0 = std::chrono::steady_clock::now();
        for (pos = 1; pos < 33; ++pos) llm.forward(std::span(&tok, 1), std::span(&pos, 1));
        streamed_bytes = p.host.weights.bytes;
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 32;
    };
    double compute = 0, streamed = 0, transfer = 0;
    for (auto _ : state) {
        std::uint64_t bytes = 0, host_bytes = 0;
        compute = decode_seconds(all_gpu_layers, bytes);
        streamed = decode_seconds(0, host_bytes);
        thrust::device_vector<std::uint8_t> dst(host_bytes);
        std::uint8_t* src = nullptr;
        gpu::check(cudaMallocHost(&src, host_bytes), "cudaMallocHost");
        transfer = time_it(
            [&] { cudaMemcpyAsync(thrust::raw_pointer_cast(dst.data()), src, host_bytes, cudaMemcpyHostToDevice); },
            10);
        cudaFreeHost(src);
        state.SetIterationTime(streamed);
    }
    std::filesystem::remove(path);
    state.counters["compute_ms"] = compute * 1e3;
    state.counters["transfer_ms"] = transfer * 1e3;
    state.counters["streamed_ms"] = streamed * 1e3;
    state.counters["overlap"] = std::max(compute, transfer) / streamed;
}

}  // namespace

BENCHMARK(BM_cuda_streamed_overlap)->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);
// Each iteration already times 20 back-to-back calls; ten iterations keep the whole run short.
// 8192 x 28672 (470 MB in f32 down to 132 MB in Q4_0) is far beyond the 60 MB L2 of an H200;
// 4096 x 14336 partly fits it.
#define VRAMPLAN_MATVEC_SHAPES \
    Args({4096, 14336, 1})->Args({8192, 28672, 1})->Args({8192, 28672, 4})->UseManualTime()->Iterations(10)
BENCHMARK(BM_cuda_matvec<kernel_format::f32>)->VRAMPLAN_MATVEC_SHAPES;
BENCHMARK(BM_cuda_matvec<kernel_format::f16>)->VRAMPLAN_MATVEC_SHAPES;
BENCHMARK(BM_cuda_matvec<kernel_format::q8_0>)->VRAMPLAN_MATVEC_SHAPES;
BENCHMARK(BM_cuda_matvec<kernel_format::q4_0>)->VRAMPLAN_MATVEC_SHAPES;
BENCHMARK(BM_cuda_matvec<kernel_format::q4_k>)->VRAMPLAN_MATVEC_SHAPES;
BENCHMARK(BM_cuda_matvec<kernel_format::q5_k>)->VRAMPLAN_MATVEC_SHAPES;
BENCHMARK(BM_cuda_matvec<kernel_format::q6_k>)->VRAMPLAN_MATVEC_SHAPES;
// The kernels the staged one replaced, on the same shapes in the same run.
BENCHMARK(BM_cuda_matvec<kernel_format::q8_0, matvec_path::chunked>)->VRAMPLAN_MATVEC_SHAPES;
BENCHMARK(BM_cuda_matvec<kernel_format::q4_0, matvec_path::chunked>)->VRAMPLAN_MATVEC_SHAPES;
BENCHMARK(BM_cuda_matvec<kernel_format::q4_k, matvec_path::elementwise>)
    ->Args({8192, 28672, 1})
    ->UseManualTime()
    ->Iterations(2);
// The plane kernel beside the chosen one, on the same shapes in the same run (its bytes are the
// same; only their order differs, and the benchmark's random bytes serve either order).
BENCHMARK(BM_cuda_matvec<kernel_format::q8_0, matvec_path::planes>)->VRAMPLAN_MATVEC_SHAPES;
BENCHMARK(BM_cuda_matvec<kernel_format::q4_0, matvec_path::planes>)->VRAMPLAN_MATVEC_SHAPES;
BENCHMARK(BM_cuda_matvec<kernel_format::q4_k, matvec_path::planes>)->VRAMPLAN_MATVEC_SHAPES;
BENCHMARK(BM_cuda_matvec<kernel_format::q5_k, matvec_path::planes>)->VRAMPLAN_MATVEC_SHAPES;
BENCHMARK(BM_cuda_matvec<kernel_format::q6_k, matvec_path::planes>)->VRAMPLAN_MATVEC_SHAPES;
// Its other shapes of work, one token.
#define VRAMPLAN_PLANES_SHAPE(F, P) \
    BENCHMARK(BM_cuda_matvec<F, matvec_path::P>)->Args({8192, 28672, 1})->UseManualTime()->Iterations(10)
#define VRAMPLAN_PLANES_SHAPES(F)              \
    VRAMPLAN_PLANES_SHAPE(F, planes_2x4x4096); \
    VRAMPLAN_PLANES_SHAPE(F, planes_8x4x4096); \
    VRAMPLAN_PLANES_SHAPE(F, planes_4x8x4096); \
    VRAMPLAN_PLANES_SHAPE(F, planes_4x4x2048)
VRAMPLAN_PLANES_SHAPES(kernel_format::q8_0);
VRAMPLAN_PLANES_SHAPES(kernel_format::q4_0);
VRAMPLAN_PLANES_SHAPES(kernel_format::q4_k);
VRAMPLAN_PLANES_SHAPES(kernel_format::q6_k);

BENCHMARK(BM_cuda_decode_attention<kernel_format::f16>)
    ->Arg(4096)
    ->Arg(16384)
    ->Arg(65536)
    ->UseManualTime()
    ->Iterations(10);
BENCHMARK(BM_cuda_decode_attention<kernel_format::q8_0>)
    ->Arg(4096)
    ->Arg(16384)
    ->Arg(65536)
    ->UseManualTime()
    ->Iterations(10);
BENCHMARK(BM_cuda_decode_attention<kernel_format::q4_0>)
    ->Arg(4096)
    ->Arg(16384)
    ->Arg(65536)
    ->UseManualTime()
    ->Iterations(10);

BENCHMARK_MAIN();
