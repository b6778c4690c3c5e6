// Each CUDA kernel against its CPU twin, and the CUDA runtime against the plan. Without a GPU every
// case says so and passes: the binary must run (and skip) on CI machines that have nvcc only.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
#include <thrust/device_vector.h>
#include <thrust/host_vector.h>

#include <cmath>
#include <filesystem>
#include <random>
#include <type_traits>
#include <vector>

#include "../random_values.hpp"

#include "../test_model.hpp"
#include "vramplan/io/gguf_model.hpp"
#include "vramplan/kernels/cpu/dispatch.hpp"
#include "vramplan/kernels/cpu/elementwise.hpp"
#include "vramplan/kernels/cuda/dispatch.cuh"
#include "vramplan/model/presets.hpp"
#include "vramplan/runtime/cpu_backend.hpp"
#include "vramplan/runtime/cuda_backend.cuh"
#include "vramplan/runtime/forward_pass.hpp"
#include "vramplan/runtime/model_loader.hpp"

using namespace vramplan;
using kernels::kernel_format;

namespace {

bool have_gpu() {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
        cudaGetLastError();
        MESSAGE("no CUDA device: skipped");
        return false;
    }
    return true;
}

using test_data::random_values;

template <kernel_format F>
std::vector<std::uint8_t> store_rows(const std::vector<float>& x, std::uint64_t rows, std::uint64_t cols) {
    std::vector<std::uint8_t> out(kernels::kernel_row_bytes(F, cols) * rows);
    for (std::uint64_t r = 0; r < rows; ++r)
        kernels::store_row<F>(x.data() + r * cols, out.data() + r * kernels::kernel_row_bytes(F, cols), cols);
    return out;
}

template <class T>
thrust::device_vector<T> to_device(const std::vector<T>& v) {
    return thrust::device_vector<T>(v.begin(), v.end());
}
template <class T>
std::vector<T> to_host(const thrust::device_vector<T>& v) {
    thrust::host_vector<T> h = v;
    return std::vector<T>(h.begin(), h.end());
}

double max_diff(const std::vector<float>& a, const std::vector<float>& b) {
    double d = 0;
    for (std::size_t i = 0; i < a.size(); ++i) d = std::max(d, std::fabs(double(a[i]) - b[i]));
    return d;
}

// Against a double-precision product of the stored (dequantized) weights with x: the GPU keeps x
// in f32 (W8A16/W4A16), unlike the CPU's Q4_0 path, which rounds x to Q8_0 blocks as llama.cpp does.
// A: the activations' type, float or __half (then x is rounded to f16 for the reference too).
// Rows of a format that is only read (the K-quants and the 32-value fallbacks have no quantizer
// here): random bytes, with each block's f16 scales set to small finite values so that every
// value is a number; the reference decodes the same bytes.
template <kernel_format F>
std::vector<std::uint8_t> random_blocks(std::uint64_t rows, std::uint64_t cols, std::uint64_t seed) {
    using B = typename kernels::block_of<F>::type;
    std::vector<std::uint8_t> bytes(kernels::kernel_row_bytes(F, cols) * rows);
    std::uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;
    for (auto& byte : bytes) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        byte = static_cast<std::uint8_t>(state >> 56);
    }
    auto* blocks = reinterpret_cast<B*>(bytes.data());
    for (std::uint64_t i = 0; i < bytes.size() / sizeof(B); ++i) {
        blocks[i].d = to_half(0.01f + 0.001f * static_cast<float>(i % 7));
        if constexpr (requires { blocks[i].dmin; }) blocks[i].dmin = to_half(0.004f);
        if constexpr (requires { blocks[i].m; }) blocks[i].m = to_half(-0.02f);
    }
    return bytes;
}

// Activations as the staged kernel rounds them, per token and 32 values, written out from GGUF's
// Q8_0 definition rather than taken from the shared quantizer: d = max |x| / 127 kept in f16,
// q = x * (1 / d) rounded half away from zero; the values are d * q.
std::vector<double> rounded_like_staged(const std::vector<float>& x, std::uint64_t cols) {
    REQUIRE(cols % 32 == 0);
    std::vector<double> out(x.size());
    for (std::uint64_t g = 0; g < x.size() / 32; ++g) {
        const float* v = x.data() + 32 * g;
        float amax = 0.0f;
        for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(v[i]));
        const float d = amax / 127.0f, inverse = d != 0.0f ? 1.0f / d : 0.0f;
        const double stored_d = to_float(to_half(d));
        for (int i = 0; i < 32; ++i) out[32 * g + i] = stored_d * std::round(v[i] * inverse);
    }
    return out;
}

template <class A>
using matmul_launcher = void (*)(const void*, const A*, float*, std::uint64_t, std::uint64_t, std::uint64_t,
                                 cudaStream_t);

// w_offset: bytes before the weights in their buffer (2 leaves them unaligned for 16-byte loads,
// which sends the K-quants to the element-by-element kernel instead of the staged one).
// launch: a kernel to run instead of the one gpu::find_matmul picks. planes: the weights are
// handed over in planes (kernels/weight_planes.hpp), as a backend that holds planes loads them, to
// the plane kernel (or `launch`); the reference reads the file's order.
template <kernel_format F, class A = float>
void check_matmul(std::uint64_t rows, std::uint64_t cols, std::uint64_t tokens, std::uint64_t w_offset = 0,
                  std::type_identity_t<matmul_launcher<A>> launch = nullptr, bool planes = false) {
    CAPTURE(std::string(kernels::kernel_format_name(F)));
    const bool half_activations = std::is_same_v<A, __half>;
    CAPTURE(half_activations);
    CAPTURE(rows);
    CAPTURE(cols);
    CAPTURE(tokens);
    CAPTURE(w_offset);
    CAPTURE(planes);
    std::vector<std::uint8_t> w;
    if constexpr (kernels::stores_rows(F))
        w = store_rows<F>(random_values(rows * cols, rows), rows, cols);
    else
        w = random_blocks<F>(rows, cols, rows);
    auto x = random_values(tokens * cols, cols);
    std::vector<A> xa(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
        if constexpr (std::is_same_v<A, __half>) {
            const half_bits h = to_half(x[i]);
            x[i] = to_float(h);
            xa[i] = __half(__half_raw{h.bits});
        } else {
            xa[i] = x[i];
        }
    }
    const std::uint64_t rb = kernels::kernel_row_bytes(F, cols);
    std::vector<std::uint8_t> held = w;
    if (planes) kernels::split_into_planes(F, w.data(), held.data(), w.size() / kernels::block_bytes(F));
    std::vector<std::uint8_t> shifted(w_offset, 0);
    shifted.insert(shifted.end(), held.begin(), held.end());
    auto dw = to_device(shifted);
    auto dx = to_device(xa);
    const void* w_at = thrust::raw_pointer_cast(dw.data()) + w_offset;
    // The staged kernel multiplies activations rounded to Q8_0 blocks; the reference then takes
    // the same values.
    const bool rounded = launch != nullptr || planes ||
                         gpu::staged_is_chosen<F>(w_at, thrust::raw_pointer_cast(dx.data()), cols, tokens);
    if (planes && !launch) launch = gpu::find_matmul_planes<A>(F);
    CAPTURE(rounded);
    const std::vector<double> xr = rounded ? rounded_like_staged(x, cols) : std::vector<double>(x.begin(), x.end());
    std::vector<double> ref(rows * tokens);
    for (std::uint64_t t = 0; t < tokens; ++t)
        for (std::uint64_t r = 0; r < rows; ++r) {
            double acc = 0;
            for (std::uint64_t c = 0; c < cols; ++c)
                acc += double(kernels::load<F>(w.data() + r * rb, c)) * xr[t * cols + c];
            ref[t * rows + r] = acc;
        }
    thrust::device_vector<float> dy(rows * tokens, std::nanf(""));  // every output must be written
    (launch ? launch : gpu::find_matmul<A>(F))(w_at, thrust::raw_pointer_cast(dx.data()),
                                               thrust::raw_pointer_cast(dy.data()), rows, cols, tokens, nullptr);
    gpu::check(cudaDeviceSynchronize(), "matmul");
    const auto y = to_host(dy);
    // f32 products summed in f32: each of the cols terms (|w x| ~ 1 for normal data, about 16 for
    // Q4_0's scaled nibbles) rounds once, and the error grows like sqrt(cols) for random signs.
    // A NaN (an output never written) fails the comparison too.
    const double tolerance = 1e-5 * std::sqrt(double(cols)) * 16;
    std::size_t outside = 0;
    for (std::size_t i = 0; i < y.size(); ++i) outside += !(std::fabs(y[i] - ref[i]) <= tolerance);
    CHECK(outside == 0);
}

}  // namespace

TEST_CASE("a CUDA backend on a device that is not there is a clear error") {
    int n = 0;
    const bool any = cudaGetDeviceCount(&n) == cudaSuccess;
    cudaGetLastError();
    // Without a driver (CI) device 0 is missing; with one, device n is.
    const int missing = any ? n : 0;
    const std::string expected = "CUDA device " + std::to_string(missing) + " is not usable";
    CHECK_THROWS_WITH_AS(runtime::cuda_backend{missing}, doctest::Contains(expected.c_str()), error);
    CHECK_THROWS_WITH_AS(runtime::cuda_backend{-1}, doctest::Contains("or run on the CPU backend"), error);
}

TEST_CASE("CUDA matmul equals the CPU kernel for every weight format") {
    if (!have_gpu()) return;
    check_matmul<kernel_format::f32>(37, 172, 3);
    check_matmul<kernel_format::f32>(9, 1024, 2);
    check_matmul<kernel_format::f16>(64, 172, 1);
    check_matmul<kernel_format::f16>(33, 4096, 3);
    check_matmul<kernel_format::bf16>(5, 33, 2);
    check_matmul<kernel_format::q8_0>(4096, 4096, 1);
    check_matmul<kernel_format::q8_0>(7, 96, 5);
    check_matmul<kernel_format::q8_0>(5, 11008, 6);
    check_matmul<kernel_format::q4_0>(130, 256, 4);
    check_matmul<kernel_format::q4_0>(3, 11008, 1);
    check_matmul<kernel_format::q4_0>(2, 96, 3);
    check_matmul<kernel_format::bf16>(6, 512, 2);
    // The formats read element by element through the shared block math.
    check_matmul<kernel_format::q4_1>(7, 96, 2);
    check_matmul<kernel_format::q5_0>(5, 64, 3);
    check_matmul<kernel_format::q5_1>(6, 128, 1);
    check_matmul<kernel_format::iq4_nl>(4, 96, 2);
    check_matmul<kernel_format::q2_k>(5, 512, 2);
    check_matmul<kernel_format::q3_k>(3, 256, 1);
    check_matmul<kernel_format::q4_k>(9, 512, 3);
    check_matmul<kernel_format::q5_k>(4, 256, 2);
    check_matmul<kernel_format::q6_k>(6, 768, 1);
    // The staged kernel over several stretches (2048 or 1024 values), the last one partial, with rows that
    // start at every offset modulo 16 (Q6_K's 210-byte blocks), an odd row count and 1 to 5 tokens;
    // the buffers end where the tensor ends, so its last granule is read cut short.
    check_matmul<kernel_format::q4_k>(33, 4352, 1);
    check_matmul<kernel_format::q5_k>(17, 2560, 2);
    check_matmul<kernel_format::q6_k>(11, 4864, 5);
    check_matmul<kernel_format::q6_k>(64, 2048, 4);
    // K-quant weights 2 bytes off 16-byte alignment take the element-by-element kernel.
    check_matmul<kernel_format::q4_k>(5, 512, 2, 2);
    check_matmul<kernel_format::q6_k>(3, 768, 1, 2);
    // The staged kernel on Q8_0 and Q4_0 (the chunked one is chosen for them; the benchmark
    // compares the two), and its other shapes of work.
    check_matmul<kernel_format::q8_0>(13, 4160, 3, 0, &gpu::launch_staged_as<kernel_format::q8_0, float, 4, 4, 1024>);
    check_matmul<kernel_format::q4_0>(31, 6208, 1, 0, &gpu::launch_staged_as<kernel_format::q4_0, float, 1, 4, 1024>);
    check_matmul<kernel_format::q8_0, __half>(7, 2048, 2, 0,
                                              &gpu::launch_staged_as<kernel_format::q8_0, __half, 1, 2, 2048>);
    check_matmul<kernel_format::q4_k>(21, 4608, 1, 0, &gpu::launch_staged_as<kernel_format::q4_k, float, 1, 1, 512>);
    // Deeper pipelines: five stretches through four stages, one stretch through four (the prologue
    // commits empty groups), three stages.
    check_matmul<kernel_format::q4_k>(21, 4608, 1, 0,
                                      &gpu::launch_staged_as<kernel_format::q4_k, float, 1, 4, 1024, 4>);
    check_matmul<kernel_format::q5_k>(9, 512, 2, 0, &gpu::launch_staged_as<kernel_format::q5_k, float, 4, 4, 1024, 4>);
    check_matmul<kernel_format::q6_k>(10, 6144, 3, 0,
                                      &gpu::launch_staged_as<kernel_format::q6_k, float, 4, 2, 2048, 3>);
    check_matmul<kernel_format::q4_0>(19, 8192, 1, 0,
                                      &gpu::launch_staged_as<kernel_format::q4_0, float, 1, 4, 2048, 3>);
    // f16 activations (W8A16, W4A16) on every path: staged, chunked, element by element.
    check_matmul<kernel_format::q8_0, __half>(64, 4096, 1);
    check_matmul<kernel_format::q4_0, __half>(9, 2048, 5);
    check_matmul<kernel_format::q8_0, __half>(3, 96, 2);
    check_matmul<kernel_format::f16, __half>(17, 1024, 1);
    check_matmul<kernel_format::f32, __half>(4, 172, 2);
    check_matmul<kernel_format::q6_k, __half>(7, 2304, 3);
    check_matmul<kernel_format::q4_k, __half>(5, 512, 1);
    check_matmul<kernel_format::q4_0, __half>(12, 4096, 1);  // staged, like every one-token Q4_0 product
    // Weights in planes: every format with planes, one stretch (4096 values) and several, the last
    // partial, odd row counts (warps past the last row), one to five tokens, f16 activations, and
    // the other shapes of work the benchmark compares.
    check_matmul<kernel_format::q4_0>(37, 4096, 1, 0, nullptr, true);
    check_matmul<kernel_format::q4_0>(130, 9216, 4, 0, nullptr, true);
    check_matmul<kernel_format::q8_0>(9, 96, 5, 0, nullptr, true);
    check_matmul<kernel_format::q8_0>(64, 8448, 1, 0, nullptr, true);
    check_matmul<kernel_format::q4_k>(33, 4352, 1, 0, nullptr, true);
    check_matmul<kernel_format::q4_k>(5, 512, 3, 0, nullptr, true);
    check_matmul<kernel_format::q5_k>(17, 8960, 2, 0, nullptr, true);
    check_matmul<kernel_format::q6_k>(11, 4864, 5, 0, nullptr, true);
    check_matmul<kernel_format::q6_k>(64, 256, 1, 0, nullptr, true);
    check_matmul<kernel_format::q4_0, __half>(12, 4096, 2, 0, nullptr, true);
    check_matmul<kernel_format::q6_k, __half>(7, 2304, 1, 0, nullptr, true);
    check_matmul<kernel_format::q4_0>(45, 8192, 1, 0, &gpu::launch_planes_as<kernel_format::q4_0, float, 1, 2, 4096, 8>,
                                      true);
    check_matmul<kernel_format::q5_k>(29, 2560, 3, 0, &gpu::launch_planes_as<kernel_format::q5_k, float, 4, 8, 2048>,
                                      true);
}

TEST_CASE("CUDA fused attention (f32 and f16 queries) and KV append equal the CPU kernels") {
    if (!have_gpu()) return;
    kernels::cpu::thread_pool pool(2);
    for (kernel_format kv : {kernel_format::f32, kernel_format::f16, kernel_format::q8_0, kernel_format::q4_0}) {
        // Decode and prefill; GQA groups of 1, 2, 4, 8 and 32 (more than one block per KV head);
        // partial tiles; a context of one key.
        for (auto [hd, heads, kv_heads, context, tokens] :
             {std::tuple{128ull, 32ull, 8ull, 4097ull, 1ull}, std::tuple{8ull, 8ull, 4ull, 64ull, 5ull},
              std::tuple{64ull, 4ull, 1ull, 300ull, 16ull}, std::tuple{128ull, 64ull, 8ull, 1000ull, 3ull},
              std::tuple{64ull, 32ull, 1ull, 517ull, 2ull}, std::tuple{80ull, 4ull, 4ull, 129ull, 1ull},
              std::tuple{96ull, 6ull, 2ull, 1ull, 1ull}, std::tuple{32ull, 16ull, 2ull, 4097ull, 1ull}}) {
            CAPTURE(std::string(kernels::kernel_format_name(kv)));
            CAPTURE(hd);
            CAPTURE(heads);
            CAPTURE(kv_heads);
            CAPTURE(context);
            CAPTURE(tokens);
            const std::uint64_t kv_dim = kv_heads * hd, rb = kernels::kernel_row_bytes(kv, kv_dim);
            const auto kf = random_values(context * kv_dim, 1), vf = random_values(context * kv_dim, 2);
            std::vector<std::int32_t> pos(context);
            for (std::uint64_t p = 0; p < context; ++p) pos[p] = static_cast<std::int32_t>(p);
            std::vector<std::uint8_t> kc(rb * context), vc(rb * context);
            kernels::cpu::find_kv_append(kv)(kf.data(), vf.data(), pos.data(), nullptr, context, kv_dim, context,
                                             kc.data(), vc.data());
            auto dkf = to_device(kf), dvf = to_device(vf);
            auto dpos = to_device(pos);
            thrust::device_vector<std::uint8_t> dkc(kc.size()), dvc(vc.size());
            gpu::find_kv_append(kv)(thrust::raw_pointer_cast(dkf.data()), thrust::raw_pointer_cast(dvf.data()),
                                    thrust::raw_pointer_cast(dpos.data()), nullptr, context, kv_dim, context,
                                    thrust::raw_pointer_cast(dkc.data()), thrust::raw_pointer_cast(dvc.data()),
                                    nullptr);
            gpu::check(cudaDeviceSynchronize(), "kv_append");
            CHECK(to_host(dkc) == kc);  // the same quantizer, bit for bit
            CHECK(to_host(dvc) == vc);
            const auto q = random_values(tokens * heads * hd, 3);
            kernels::attention_args a;
            a.tokens = tokens;
            a.n_head = heads;
            a.n_head_kv = kv_heads;
            a.head_dim = hd;
            a.context = context;
            a.scale = 1.0f / std::sqrt(float(hd));
            a.max_splits = 32;
            a.workspace_rows = tokens * 32;
            std::vector<float> out(tokens * heads * hd), ws(a.workspace_rows * heads * (hd + 2));
            a.q = q.data();
            a.pos = pos.data() + context - tokens;
            a.k = kc.data();
            a.v = vc.data();
            a.out = out.data();
            a.workspace = ws.data();
            kernels::cpu::find_attention(kv, hd)(a, pool);
            auto dq = to_device(q);
            thrust::device_vector<float> dout(out.size()), dws(ws.size());
            kernels::attention_args g = a;
            g.q = thrust::raw_pointer_cast(dq.data());
            g.pos = thrust::raw_pointer_cast(dpos.data()) + context - tokens;
            g.k = thrust::raw_pointer_cast(dkc.data());
            g.v = thrust::raw_pointer_cast(dvc.data());
            g.out = thrust::raw_pointer_cast(dout.data());
            g.workspace = thrust::raw_pointer_cast(dws.data());
            gpu::find_attention(kv, hd)(g, nullptr);
            gpu::check(cudaDeviceSynchronize(), "attention");
            CHECK(max_diff(to_host(dout), out) <= 2e-5);
            // The same queries in f16: both kernels widen them to the same floats.
            std::vector<half_bits> q16(q.size());
            for (std::size_t i = 0; i < q.size(); ++i) q16[i] = to_half(q[i]);
            a.q = q16.data();
            a.q_format = kernels::kernel_format::f16;
            kernels::cpu::find_attention(kv, hd)(a, pool);
            auto dq16 = to_device(q16);
            g.q = thrust::raw_pointer_cast(dq16.data());
            g.q_format = kernels::kernel_format::f16;
            gpu::find_attention(kv, hd)(g, nullptr);
            gpu::check(cudaDeviceSynchronize(), "attention with f16 queries");
            CHECK(max_diff(to_host(dout), out) <= 2e-5);
        }
    }
}

TEST_CASE("CUDA RMSNorm and RoPE and SwiGLU and softmax and argmax equal the CPU kernels") {
    if (!have_gpu()) return;
    const std::uint64_t n = 4096, rows = 3;
    const auto x = random_values(rows * n, 1), w = random_values(n, 2);
    std::vector<float> cpu(rows * n);
    kernels::cpu::rms_norm(x.data(), w.data(), cpu.data(), rows, n, 1e-5f);
    auto dx = to_device(x), dw = to_device(w);
    thrust::device_vector<float> dy(rows * n);
    gpu::rms_norm(thrust::raw_pointer_cast(dx.data()), thrust::raw_pointer_cast(dw.data()),
                  thrust::raw_pointer_cast(dy.data()), rows, n, 1e-5f, nullptr);
    CHECK(max_diff(to_host(dy), cpu) <= 1e-4);
    std::vector<std::int32_t> pos{0, 7, 4000};
    auto r = x;
    kernels::cpu::rope(r.data(), rows, n / 128, 128, pos.data(), kernels::rope_config{500000.0f});
    auto dpos = to_device(pos);
    gpu::rope(thrust::raw_pointer_cast(dx.data()), rows, n / 128, 128, thrust::raw_pointer_cast(dpos.data()),
              kernels::rope_config{500000.0f}, nullptr);
    CHECK(max_diff(to_host(dx), r) <= 1e-4);
    // With per-pair frequency divisors (Llama 3.1's rope_freqs.weight), from 1 to 8, linear scaling and
    // NeoX-style pairs: every option of the shared rope_head at once.
    std::vector<float> divisors(64);
    for (int i = 0; i < 64; ++i) divisors[i] = 1.0f + 7.0f * static_cast<float>(i) / 63.0f;
    auto rd = x;
    kernels::cpu::rope(rd.data(), rows, n / 128, 128, pos.data(),
                       kernels::rope_config{500000.0f, 0.5f, divisors.data(), true});
    auto dx2 = to_device(x), ddiv = to_device(divisors);
    gpu::rope(thrust::raw_pointer_cast(dx2.data()), rows, n / 128, 128, thrust::raw_pointer_cast(dpos.data()),
              kernels::rope_config{500000.0f, 0.5f, thrust::raw_pointer_cast(ddiv.data()), true}, nullptr);
    CHECK(max_diff(to_host(dx2), rd) <= 1e-4);
    auto sm = x;
    kernels::cpu::softmax(sm.data(), n);
    kernels::cpu::softmax(sm.data() + n, n);
    kernels::cpu::softmax(sm.data() + 2 * n, n);
    thrust::device_vector<float> ds(x.begin(), x.end());
    gpu::softmax(thrust::raw_pointer_cast(ds.data()), rows, n, nullptr);
    CHECK(max_diff(to_host(ds), sm) <= 1e-6);
    thrust::device_vector<float> da(x.begin(), x.end());
    thrust::device_vector<std::int32_t> best(rows);
    gpu::argmax(thrust::raw_pointer_cast(da.data()), rows, n, thrust::raw_pointer_cast(best.data()), nullptr);
    const auto b = to_host(best);
    for (std::uint64_t i = 0; i < rows; ++i)
        CHECK(b[i] == static_cast<std::int32_t>(kernels::cpu::argmax(x.data() + i * n, n)));
}

TEST_CASE("the CUDA forward pass equals the CPU one and resident and streamed") {
    if (!have_gpu()) return;
    // A Llama with Llama 3.1's RoPE divisors (read from the GPU tier by every layer, streamed or not),
    // a qwen2 model (q/k/v biases, NeoX-style RoPE pairs), Qwen2-MoE (routing, experts, the gated
    // shared expert; its experts also in the host tier, computed by the CPU), Phi-3 (fused projections split),
    // Gemma 2 (embedding scale, soft-capping, GELU, post-norms, a 3-token sliding window).
    // Qwen3 (q/k norms), Qwen3-MoE (a dense first layer, q wider than the model) and Gemma 3 (five
    // sliding layers with their own RoPE base, then a global one).
    test_model::spec llama31, qwen2, qwen3, qwen3moe = test_model::qwen2moe_spec(), gemma3;
    llama31.rope_freqs = true;
    qwen2.arch = "qwen2";
    qwen3.arch = "qwen3";
    qwen3moe.arch = "qwen3moe";
    qwen3moe.shared_ff = 0;
    qwen3moe.head_dim = 64;
    qwen3moe.dense_lead = 1;
    gemma3.arch = "gemma3";
    gemma3.layers = 6;
    gemma3.sliding_window = 5;
    gemma3.rope_base = 1e6f;
    for (test_model::spec s : {llama31, qwen2, test_model::qwen2moe_spec(), test_model::phi3_spec(),
                               test_model::gemma2_spec(3), qwen3, qwen3moe, gemma3}) {
        CAPTURE(s.arch);
        // f16 weights: both backends multiply them with the activations as they are. Quantized
        // weights are multiplied differently by design (the CPU rounds the activations of Q4_0
        // and Q8_0 products to Q8_0, CUDA keeps them in f16), and each kernel is checked against a
        // double reference of its own definition above.
        s.weights = format{format_id::f16};
        s.layers = std::max<std::uint64_t>(s.layers, 4);
        const std::string path = (std::filesystem::temp_directory_path() / "vramplan_cuda_forward.gguf").string();
        test_model::write(path, s, 5);
        const auto file = io::gguf_file::open(path);
        const model_desc m = io::describe(file, "test");
        // Every token's logits: the one forward pass gives CUDA all_logits, which cuda_llama lacked.
        const limits lim{.context = 64, .ubatch = 8, .all_logits = true};
        const std::vector<std::int32_t> tokens{1, 5, 9, 13, 17, 21};
        std::vector<std::int32_t> pos(tokens.size());
        for (std::size_t i = 0; i < pos.size(); ++i) pos[i] = static_cast<std::int32_t>(i);
        // CPU reference.
        const plan cp = plan_inference(m, target_desc{"cpu", 1ull << 30, 0}, lim);
        runtime::cpu_backend cb(0, 2);
        runtime::arena<runtime::cpu_backend> ca(cp, cb);
        runtime::load_weights(file, ca);
        runtime::forward_pass<runtime::cpu_backend> cl(ca);
        const float* cl_logits = cl.forward(tokens, pos, true);
        const std::vector<float> ref(cl_logits, cl_logits + tokens.size() * s.vocab);
        // Resident; one layer resident, the rest streamed; every layer resident with its experts in
        // the host tier (the CPU computes them); one layer resident, the CPU computing the rest.
        std::vector<plan_options> runs{{}, {.gpu_layers = 1}, {.gpu_layers = 1, .offload = offload_mode::compute}};
        if (s.experts != 0) runs.push_back({.host_expert_layers = s.layers});
        for (const plan_options& o : runs) {
            CAPTURE(o.gpu_layers);
            CAPTURE(o.host_expert_layers);
            const plan gp = plan_inference(m, target_desc{"cuda", 1ull << 30, 0}, lim, o);
            runtime::cuda_backend gb;
            runtime::arena<runtime::cuda_backend> ga(gp, gb);
            runtime::load_weights(file, ga);
            runtime::forward_pass<runtime::cuda_backend> gl(ga, 2);
            const float* g = gl.forward(tokens, pos, true);
            CHECK(max_diff(std::vector<float>(g, g + tokens.size() * s.vocab), ref) <= 1e-3);
            // The input checks are the CPU's: the same messages, before any kernel runs.
            CHECK_THROWS_WITH_AS(
                gl.forward(std::vector<std::int32_t>{static_cast<std::int32_t>(s.vocab)}, std::vector<std::int32_t>{0}),
                doctest::Contains("outside the vocabulary"), error);
            CHECK_THROWS_WITH_AS(gl.forward(std::vector<std::int32_t>{1}, std::vector<std::int32_t>{64}),
                                 doctest::Contains("outside the planned context"), error);
        }
        std::filesystem::remove(path);
    }
}

TEST_CASE("a CUDA backend that holds planes runs the forward pass as the CPU does, resident and streamed") {
    if (!have_gpu()) return;
    // Q4_0 and Q8_0 weights: here both backends round the activations of every matrix product to
    // Q8_0 blocks with the shared quantizer and multiply in integers, so only float sums differ.
    // The embedding table (read by embed) stays in the file's layout.
    for (format_id w : {format_id::q4_0, format_id::q8_0}) {
        CAPTURE(name(format{w}));
        test_model::spec s;
        s.weights = format{w};
        s.layers = 4;
        const std::string path = (std::filesystem::temp_directory_path() / "vramplan_cuda_planes.gguf").string();
        test_model::write(path, s, 7);
        const auto file = io::gguf_file::open(path);
        const model_desc m = io::describe(file, "test");
        const limits lim{.context = 64, .ubatch = 8, .all_logits = true};
        const std::vector<std::int32_t> tokens{1, 5, 9, 13, 17, 21};
        std::vector<std::int32_t> pos(tokens.size());
        for (std::size_t i = 0; i < pos.size(); ++i) pos[i] = static_cast<std::int32_t>(i);
        const plan cp = plan_inference(m, target_desc{"cpu", 1ull << 30, 0}, lim);
        runtime::cpu_backend cb(0, 2);
        runtime::arena<runtime::cpu_backend> ca(cp, cb);
        runtime::load_weights(file, ca);
        runtime::forward_pass<runtime::cpu_backend> cl(ca);
        const float* c = cl.forward(tokens, pos, true);
        const std::vector<float> ref(c, c + tokens.size() * s.vocab);
        std::vector<std::vector<float>> got;
        for (std::uint64_t gpu_layers : {all_gpu_layers, std::uint64_t{1}}) {
            plan_options o;
            o.gpu_layers = gpu_layers;
            const plan gp = plan_inference(m, target_desc{"cuda", 1ull << 30, 0}, lim, o);
            runtime::cuda_backend gb(0, true);
            runtime::arena<runtime::cuda_backend> ga(gp, gb);
            runtime::load_weights(file, ga);
            runtime::forward_pass<runtime::cuda_backend> gl(ga);
            const float* g = gl.forward(tokens, pos, true);
            got.emplace_back(g, g + tokens.size() * s.vocab);
            CHECK(max_diff(got.back(), ref) <= 1e-2);
        }
        CHECK(got[0] == got[1]);  // streamed layers are copied as they are held: bit for bit
        std::filesystem::remove(path);
    }
}

TEST_CASE("a plan for 95% of free device memory is exactly what the device then uses") {
    if (!have_gpu()) return;
    runtime::cuda_backend backend;  // the CUDA context exists before the first reading
    const auto before = backend.device_memory();
    // A model whose arena is 95% of what is free: Llama-3.1-70B's shape with as many layers as fit.
    decoder_shape shape = presets::llama31_70b_entry.shape;
    const model_desc one = presets::describe(presets::llama31_70b_entry, uniform_policy(format{format_id::q8_0}));
    const limits lim{.context = 4096, .ubatch = 512};
    const plan base = plan_inference(one, target_desc{"gpu", before.free, 0}, lim);
    const std::uint64_t per_layer = base.block_stride[0] + 2 * base.kv_plane[0];
    const std::uint64_t fixed = base.gpu.total() - shape.n_layer * per_layer;
    shape.n_layer = (before.free * 95 / 100 - fixed) / per_layer;
    REQUIRE(shape.n_layer < max_layers);
    const model_desc m = make_model("big", shape, uniform_policy(format{format_id::q8_0}));
    const plan p = plan_inference(m, target_desc{"gpu", before.free, 0}, lim);
    MESSAGE("plan: " << p.gpu.total() << " bytes (" << shape.n_layer << " layers) of " << before.free << " free");
    CHECK(p.gpu.total() * 100 >= before.free * 94);
    CHECK(p.gpu.total() <= before.free * 95 / 100);
    {
        runtime::arena<runtime::cuda_backend> a(p, backend);
        const auto during = backend.device_memory();
        // cudaMalloc rounds to 2 MiB pages; nothing else is allocated.
        const std::uint64_t used = before.free - during.free;
        CHECK(used >= p.gpu.total());
        CHECK(used - p.gpu.total() < (2ull << 20));
        // A workload over every byte of it: zero weights (loading 130 GB would take minutes), a
        // prefill of 8 tokens and a decode step through all the layers.
        gpu::check(cudaMemset(a.base(tier::gpu), 0, p.gpu.total()), "cudaMemset");
        runtime::forward_pass<runtime::cuda_backend> llm(a);
        std::vector<std::int32_t> tokens(8, 1), pos(8);
        for (std::size_t i = 0; i < pos.size(); ++i) pos[i] = static_cast<std::int32_t>(i);
        llm.forward(tokens, pos);
        const std::int32_t next = 1, at = 8;
        const float* out = llm.forward(std::span(&next, 1), std::span(&at, 1));
        bool finite = true;
        for (std::uint64_t i = 0; i < shape.n_vocab; ++i) finite = finite && std::isfinite(out[i]);
        CHECK(finite);
        CHECK(backend.device_memory().free == during.free);  // the forward pass allocated nothing
    }
    CHECK(backend.device_memory().free == before.free);  // released on destruction
}

TEST_CASE("more device memory than exists is refused before any allocation, and a failed cudaMalloc is an error") {
    if (!have_gpu()) return;
    runtime::cuda_backend backend;
    const auto mem = backend.device_memory();
    // A plan for a device twice the size of this one (--device-budget above the device).
    // Llama-3.1-70B's layers, 200 of them in f16: about 330 GiB, more than any one GPU holds.
    decoder_shape shape = presets::llama31_70b_entry.shape;
    shape.n_layer = 200;
    const model_desc m = make_model("too big", shape, uniform_policy(format{format_id::f16}));
    const plan p = plan_inference(m, target_desc{"too big", 4 * mem.total, 0}, {.context = 4096});
    REQUIRE(p.gpu.total() > mem.free);
    CHECK_THROWS_WITH_AS(runtime::arena<runtime::cuda_backend>(p, backend), doctest::Contains("refusing to allocate"),
                         error);
    CHECK(backend.device_memory().free >= mem.free - (64ull << 20));  // nothing was taken
    // cudaMalloc itself failing (asked directly for 1 PiB) names the call and CUDA's reason.
    CHECK_THROWS_WITH_AS(backend.allocate(tier::gpu, 1ull << 50), doctest::Contains("CUDA error in cudaMalloc"), error);
    cudaGetLastError();
    CHECK(backend.device_memory().free >= mem.free - (64ull << 20));
}
