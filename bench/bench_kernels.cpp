// CPU kernel speed, measured side by side in one run:
//  - matrix-vector products per weight format as GB/s of weights read, next to a read loop
//    over the same bytes with the same threads (ratio = matvec / read);
//  - the thread pool's round trip per kernel call (two threads, after the caller worked alone);
//  - rounding activations to Q8_K blocks, the shared scalar quantizer and the CPU's in turn;
//  - decode attention (one query token; Llama-3-8B's heads, 4 query heads per KV head, and
//    Llama-2-7B's, one) with f16, Q8_0 and Q4_0 KV caches, with the speed-up of each quantized
//    cache over f16 in the same run;
//  - the panel kernels' arithmetic, one thread on weights in L2 (the one benchmark that is not
//    bound by memory).
// The other working sets exceed the last-level cache, as in real decoding.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "../tests/random_values.hpp"
#include "decode_attention_shape.hpp"

#include "vramplan/kernels/cpu/dispatch.hpp"
#include "vramplan/kernels/cpu/experts.hpp"
#include "vramplan/runtime/weight_layout.hpp"

using namespace vramplan;
using kernels::kernel_format;
using clock_type = std::chrono::steady_clock;

namespace {

kernels::cpu::thread_pool& pool() {
    static kernels::cpu::thread_pool p(2);
    return p;
}

using test_data::random_values;

// Rows of random values; formats the kernels only read (the K-quants and 32-value fallbacks) get
// random blocks with finite, small scales instead.
template <kernel_format F>
std::vector<std::uint8_t> stored(std::uint64_t rows, std::uint64_t cols) {
    std::vector<std::uint8_t> out(kernels::kernel_row_bytes(F, cols) * rows);
    if constexpr (kernels::stores_rows(F)) {
        const auto x = random_values(cols, 1);
        for (std::uint64_t r = 0; r < rows; ++r)
            kernels::store_row<F>(x.data(), out.data() + r * kernels::kernel_row_bytes(F, cols), cols);
    } else {
        using B = typename kernels::block_of<F>::type;
        std::mt19937 gen(1);
        for (auto& b : out) b = static_cast<std::uint8_t>(gen());
        auto* blocks = reinterpret_cast<B*>(out.data());
        for (std::uint64_t i = 0; i < out.size() / sizeof(B); ++i) {
            blocks[i].d = to_half(0.01f);
            if constexpr (requires { blocks[i].dmin; }) blocks[i].dmin = to_half(0.001f);
            if constexpr (requires { blocks[i].m; }) blocks[i].m = to_half(0.001f);
        }
    }
    return out;
}

// What reading the bytes costs: each thread's share of the buffer read as eight streams side by
// side, 64 bytes of each in turn, in 256-bit loads summed as 64-bit words. A single stream of
// scalar loads is no ceiling: on a 2-core Xeon (Sapphire Rapids) it read 12-13 GB/s where eight
// streams of AVX2 loads read 27-30 (one stream of AVX2 loads 16-20, four streams 20-27, sixteen
// 20-28), and kernels that read four rows at once then came out at 1.7 "of the read loop".
constexpr std::uint64_t read_streams = 8;

#if VRAMPLAN_X86_SIMD
VRAMPLAN_TARGET_AVX2 std::uint64_t read_share_avx2(const std::uint8_t* p, std::uint64_t lines) {
    const std::uint64_t each = lines / read_streams;
    __m256i s = _mm256_setzero_si256();
    for (std::uint64_t i = 0; i < each; ++i)
        for (std::uint64_t k = 0; k < read_streams; ++k) {
            const auto* q = reinterpret_cast<const __m256i*>(p + 64 * (k * each + i));
            s = _mm256_add_epi64(s, _mm256_add_epi64(_mm256_loadu_si256(q), _mm256_loadu_si256(q + 1)));
        }
    std::uint64_t w[4];
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(w), s);
    return w[0] + w[1] + w[2] + w[3];
}
#endif

std::uint64_t read_share(const std::uint8_t* p, std::uint64_t lines) {
#if VRAMPLAN_X86_SIMD
    if (kernels::cpu::has_avx2()) return read_share_avx2(p, lines);
#endif
    std::uint64_t s = 0;
    const auto* w = reinterpret_cast<const std::uint64_t*>(p);
    for (std::uint64_t i = 0; i < lines / read_streams * read_streams * 8; ++i) s += w[i];
    return s;
}

std::uint64_t read_all(const std::uint8_t* p, std::uint64_t bytes) {
    std::uint64_t sums[64]{};
    pool().parallel_for(bytes / 64, [&](std::uint64_t b, std::uint64_t e) {
        sums[b * 64 / (bytes / 64 + 1)] += read_share(p + 64 * b, e - b);
    });
    std::uint64_t s = 0;
    for (auto v : sums) s += v;
    return s;
}

// The matrix is stored in as many copies as make 512 MiB, and the product and the read loop each
// walk all of them in turn, so neither finds the other's bytes in the last-level cache (a single
// 33 MB Q4_0 matrix fits most of a 32 MiB L3, which flattered the read loop).
// Panels: the weights as the CPU backend holds Q4_0, Q8_0, Q4_K, Q5_K and Q6_K tensors
// (runtime/weight_layout.hpp), labelled so.
template <kernel_format F, bool Panels = false>
void BM_matvec(benchmark::State& state) {
    const std::uint64_t rows = static_cast<std::uint64_t>(state.range(0)),
                        cols = static_cast<std::uint64_t>(state.range(1));
    if (Panels && kernels::is_k_quant(F) && !kernels::cpu::k_panels_pay()) {
        state.SkipWithError("K-quant panels are held only on processors with AVX2");
        return;
    }
    auto one = stored<F>(rows, cols);
    if constexpr (Panels) {
        std::vector<std::uint8_t> scratch;
        const format f{kernels::kernel_format_ids[static_cast<std::size_t>(F)]};
        runtime::convert_to_panels(f, reinterpret_cast<std::byte*>(one.data()), rows, cols, scratch);
    }
    const std::uint64_t copies = std::max<std::uint64_t>(2, ((512ull << 20) + one.size() - 1) / one.size());
    std::vector<std::uint8_t> w(one.size() * copies);
    for (std::uint64_t c = 0; c < copies; ++c) std::copy(one.begin(), one.end(), w.begin() + c * one.size());
    const auto x = random_values(cols, 2);
    std::vector<float> y(rows);
    const auto fn = kernels::cpu::find_matmul(F);
    double mv_seconds = 0, read_seconds = 0;
    for (auto _ : state) {
        auto t0 = clock_type::now();
        for (std::uint64_t c = 0; c < copies; ++c) {
            fn({F, w.data() + c * one.size(), rows, cols, Panels}, x.data(), y.data(), 1, pool());
            benchmark::DoNotOptimize(y.data());
        }
        auto t1 = clock_type::now();
        benchmark::DoNotOptimize(read_all(w.data(), w.size()));
        auto t2 = clock_type::now();
        mv_seconds += std::chrono::duration<double>(t1 - t0).count();
        read_seconds += std::chrono::duration<double>(t2 - t1).count();
        state.SetIterationTime(std::chrono::duration<double>(t1 - t0).count() / static_cast<double>(copies));
    }
    const double bytes = static_cast<double>(w.size()) * static_cast<double>(state.iterations());
    state.counters["matvec_GBps"] = bytes / mv_seconds / 1e9;
    state.counters["read_GBps"] = bytes / read_seconds / 1e9;
    state.counters["ratio"] = read_seconds / mv_seconds;
    state.SetLabel(std::string(kernels::kernel_format_name(F)) + (Panels ? " panels " : " ") +
                   std::string(kernels::cpu::cpu_isa_name(kernels::cpu::active_cpu_isa())));
}

// The panel kernels' arithmetic alone: one thread multiplies 512 KiB of panels (a 4096-wide
// matrix, in L2 on current x86 cores) by `Tokens` tokens over and over, GB/s of weights. A kernel
// that is slow here cannot keep up with memory in decode; prefill is bound by it.
template <kernel_format F, int Tokens>
void BM_panel_tile_in_cache(benchmark::State& state) {
    using B = typename kernels::block_of<F>::type;
    using family = std::conditional_t<kernels::is_k_quant(F), kernels::cpu::detail::k_panels<B>,
                                      kernels::cpu::detail::int8_panels<B>>;
    using panel = typename family::panel;
    constexpr std::uint64_t cols = 4096, nblocks = cols / family::elements;
    constexpr std::uint64_t panels = (512ull << 10) / (nblocks * sizeof(panel));
    if (kernels::is_k_quant(F) && !kernels::cpu::k_panels_pay()) {
        state.SkipWithError("K-quant panels are held only on processors with AVX2");
        return;
    }
    auto w = stored<F>(panels * kernels::cpu::panel_rows, cols);
    std::vector<std::uint8_t> scratch;
    runtime::convert_to_panels(format{kernels::kernel_format_ids[static_cast<std::size_t>(F)]},
                               reinterpret_cast<std::byte*>(w.data()), panels * kernels::cpu::panel_rows, cols,
                               scratch);
    const auto x = random_values(cols * Tokens, 5);
    auto xq = std::make_unique<typename family::activations>();
    for (int t = 0; t < Tokens; ++t) xq->round(x.data() + t * cols, t * nblocks, nblocks);
    const auto tile = family::kernels().tile[Tokens - 1];
    float out[kernels::cpu::panel_tokens * kernels::cpu::panel_rows];
    for (auto _ : state) {
        for (std::uint64_t g = 0; g < panels; ++g)
            tile(reinterpret_cast<const panel*>(w.data()) + g * nblocks, 0, xq->at(0), nblocks, nblocks, out);
        benchmark::DoNotOptimize(out);
    }
    state.counters["tile_GBps"] = benchmark::Counter(
        static_cast<double>(w.size()) * static_cast<double>(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
    state.SetLabel(std::string(kernels::kernel_format_name(F)) + " panels, " + std::to_string(Tokens) + " token" +
                   (Tokens > 1 ? "s, " : ", ") +
                   std::string(kernels::cpu::cpu_isa_name(kernels::cpu::active_cpu_isa())));
}

// Decode with 32 query heads of 128 dims over kv_heads KV heads (8: Llama-3-8B, 32: Llama-2-7B);
// `layers` caches cycled so the working set (several hundred MiB at 16k) is not cache-resident.
struct decode_attention_case {
    static constexpr std::uint64_t heads = bench_shape::heads, hd = bench_shape::head_dim;
    kernel_format kv;
    std::uint64_t context, kv_heads, kv_dim, layers, row_bytes;
    std::vector<std::uint8_t> k, v;
    std::vector<float> q = random_values(heads * hd, 4), out = std::vector<float>(heads * hd),
                       ws = std::vector<float>(bench_shape::workspace_floats);
    kernels::cpu::attention_fn fn;

    decode_attention_case(kernel_format f, std::uint64_t ctx, std::uint64_t kvh)
        : kv(f),
          context(ctx),
          kv_heads(kvh),
          kv_dim(kvh * hd),
          layers(std::max<std::uint64_t>(2, (256ull << 20) / (ctx * kv_dim * 2 * 2))),
          row_bytes(kernels::kernel_row_bytes(f, kv_dim)),
          k(row_bytes * ctx * layers),
          v(row_bytes * ctx * layers),
          fn(kernels::cpu::find_attention(f, hd)) {
        const auto src = random_values(kv_dim * 64, 3);
        std::vector<std::int32_t> pos(64);
        for (std::uint64_t l = 0; l < layers; ++l)
            for (std::uint64_t p = 0; p < context; p += 64) {
                for (int i = 0; i < 64; ++i)
                    pos[i] = static_cast<std::int32_t>(std::min<std::uint64_t>(p + i, context - 1));
                kernels::cpu::find_kv_append(kv)(src.data(), src.data(), pos.data(), nullptr, 64, kv_dim, context,
                                                 k.data() + l * row_bytes * context,
                                                 v.data() + l * row_bytes * context);
            }
    }

    // Seconds per layer of one pass over every layer.
    double pass() {
        const std::int32_t last = static_cast<std::int32_t>(context - 1);
        const auto t0 = clock_type::now();
        for (std::uint64_t l = 0; l < layers; ++l) {
            kernels::attention_args a = bench_shape::decode(context, kv_heads);
            a.q = q.data();
            a.pos = &last;
            a.k = k.data() + l * row_bytes * context;
            a.v = v.data() + l * row_bytes * context;
            a.out = out.data();
            a.workspace = ws.data();
            fn(a, pool());
        }
        return std::chrono::duration<double>(clock_type::now() - t0).count() / static_cast<double>(layers);
    }
};

// The three caches take turns, pass by pass, and each keeps its fastest pass: this machine's
// neighbours add noise, never speed, and taking turns exposes all three to the same noise.
void BM_decode_attention(benchmark::State& state) {
    const std::uint64_t context = static_cast<std::uint64_t>(state.range(0)),
                        kv_heads = static_cast<std::uint64_t>(state.range(1));
    decode_attention_case f16(kernel_format::f16, context, kv_heads), q8(kernel_format::q8_0, context, kv_heads),
        q4(kernel_format::q4_0, context, kv_heads);
    double best_f16 = 1e30, best_q8 = 1e30, best_q4 = 1e30;
    for (auto _ : state) {
        for (int pass = 0; pass < 7; ++pass) {
            best_f16 = std::min(best_f16, f16.pass());
            best_q8 = std::min(best_q8, q8.pass());
            best_q4 = std::min(best_q4, q4.pass());
        }
        state.SetIterationTime(best_q8);
    }
    state.counters["f16_us_per_layer"] = best_f16 * 1e6;
    state.counters["q8_0_us_per_layer"] = best_q8 * 1e6;
    state.counters["q4_0_us_per_layer"] = best_q4 * 1e6;
    state.counters["q8_0_speedup"] = best_f16 / best_q8;
    state.counters["q4_0_speedup"] = best_f16 / best_q4;
    state.SetLabel(kv_heads == bench_shape::kv_heads ? "Llama-3-8B (4 query heads per KV head)"
                                                     : "Llama-2-7B (1 query head per KV head)");
}

// The new way and the former one, in turn in each iteration (so both meet the same neighbours'
// noise): milliseconds of each, the new way's time as the iteration's, their ratio as speedup.
template <class New, class Former>
void two_ways(benchmark::State& state, kernel_format f, const char* new_name, New&& new_way, const char* former_name,
              Former&& former_way) {
    double t_new = 0, t_former = 0;
    for (auto _ : state) {
        const auto t0 = clock_type::now();
        new_way();
        const auto t1 = clock_type::now();
        former_way();
        const auto t2 = clock_type::now();
        t_new += std::chrono::duration<double>(t1 - t0).count();
        t_former += std::chrono::duration<double>(t2 - t1).count();
        state.SetIterationTime(std::chrono::duration<double>(t1 - t0).count());
    }
    const double iters = static_cast<double>(state.iterations());
    state.counters[std::string(new_name) + "_ms"] = t_new / iters * 1e3;
    state.counters[std::string(former_name) + "_ms"] = t_former / iters * 1e3;
    state.counters["speedup"] = t_former / t_new;
    state.SetLabel(std::string(kernels::kernel_format_name(f)) + " " +
                   std::string(kernels::cpu::cpu_isa_name(kernels::cpu::active_cpu_isa())));
}

// A mixture-of-experts prefill: 128 tokens, each routed to 2 of 8 experts (seeded, uniform), the
// experts' planes of 5632 x 2048 (a feed-forward's gate: 6.5 MB each in Q4_0, 52 MB for the eight,
// beyond a 32 MiB last-level cache; one plane fits, which favours the per-row way). expert_matmul
// takes each expert's routed rows in one matrix product; beside it, the way it was computed
// before: one matrix-vector product per routed row.
template <kernel_format F>
void BM_expert_prefill(benchmark::State& state) {
    constexpr std::uint64_t experts = 8, n = 5632, k_in = 2048, tokens = 128, k = 2;
    const auto plane = stored<F>(n, k_in);
    std::vector<std::uint8_t> w(plane.size() * experts);
    for (std::uint64_t e = 0; e < experts; ++e) std::copy(plane.begin(), plane.end(), w.begin() + e * plane.size());
    std::vector<std::int32_t> ids(tokens * k);
    std::mt19937 gen(7);
    for (std::uint64_t t = 0; t < tokens; ++t) {
        ids[t * k] = static_cast<std::int32_t>(gen() % experts);
        ids[t * k + 1] = static_cast<std::int32_t>((ids[t * k] + 1 + gen() % (experts - 1)) % experts);
    }
    const auto x = random_values(tokens * k_in, 2);
    std::vector<float> y(tokens * k * n);
    const auto rows_fn = kernels::cpu::find_matmul_rows(F);
    const auto fn = kernels::cpu::find_matmul(F);
    two_ways(
        state, F, "grouped",
        [&] {
            kernels::cpu::expert_matmul(rows_fn, {F, w.data(), n, k_in}, experts, x.data(), false, ids.data(), y.data(),
                                        tokens, k, pool());
            benchmark::DoNotOptimize(y.data());
        },
        "per_row",
        [&] {
            for (std::uint64_t e = 0; e < experts; ++e)
                for (std::uint64_t r = 0; r < tokens * k; ++r)
                    if (static_cast<std::uint64_t>(ids[r]) == e)
                        fn({F, w.data() + e * plane.size(), n, k_in}, x.data() + r / k * k_in, y.data() + r * n, 1,
                           pool());
            benchmark::DoNotOptimize(y.data());
        });
}

// A mixture-of-experts decode: one token routed to 2 of 8 experts, planes of 5632 x 2048 as in
// BM_expert_prefill, a different pair each iteration (so a plane was last read four iterations, 52
// MB of planes in Q4_0, before: beyond a 32 MiB last-level cache). Each plane held as panels, as
// the CPU backend holds stacked experts, beside the file's rows (the row kernels), each its own copy.
template <kernel_format F>
void BM_expert_decode(benchmark::State& state) {
    constexpr std::uint64_t experts = 8, n = 5632, k_in = 2048, k = 2;
    const auto plane = stored<F>(n, k_in);
    std::vector<std::uint8_t> rows(plane.size() * experts);
    for (std::uint64_t e = 0; e < experts; ++e) std::copy(plane.begin(), plane.end(), rows.begin() + e * plane.size());
    std::vector<std::uint8_t> held(rows), scratch;
    for (std::uint64_t e = 0; e < experts; ++e)
        runtime::convert_to_panels(format{kernels::kernel_format_ids[static_cast<std::size_t>(F)]},
                                   reinterpret_cast<std::byte*>(held.data()) + e * plane.size(), n, k_in, scratch);
    const auto x = random_values(k_in, 2);
    std::vector<float> y(k * n);
    std::int32_t ids[k] = {0, 0};
    const auto rows_fn = kernels::cpu::find_matmul_rows(F);
    auto product = [&](const std::vector<std::uint8_t>& w, bool panels) {
        kernels::cpu::expert_matmul(rows_fn, {F, w.data(), n, k_in, panels}, experts, x.data(), false, ids, y.data(), 1,
                                    k, pool());
        benchmark::DoNotOptimize(y.data());
    };
    std::int32_t turn = 0;
    two_ways(
        state, F, "panels",
        [&] {
            ids[0] = turn % 8;
            ids[1] = (turn + 4) % 8;
            turn = (turn + 1) % 8;
            product(held, true);
        },
        "rows", [&] { product(rows, false); });
}

// A prefill's product with a 32-value fallback (2048 x 2048, 64 tokens): Q5_0 and IQ4_NL rows
// packed into Q8_0 panels on the way (matmul's choice from eight tokens on) beside the row kernels
// every number of tokens took before.
template <kernel_format F>
void BM_fallback_prefill(benchmark::State& state) {
    constexpr std::uint64_t rows = 2048, cols = 2048, tokens = 64;
    using B = typename kernels::block_of<F>::type;
    const auto w = stored<F>(rows, cols);
    const auto x = random_values(tokens * cols, 2);
    std::vector<float> y(tokens * rows);
    const kernels::cpu::weight_view wv{F, w.data(), rows, cols};
    two_ways(
        state, F, "panels",
        [&] {
            kernels::cpu::find_matmul(F)(wv, x.data(), y.data(), tokens, pool());
            benchmark::DoNotOptimize(y.data());
        },
        "rows",
        [&] {
            kernels::cpu::detail::int8_matmul<B>(wv, kernels::cpu::token_rows{x.data(), y.data(), tokens}, pool());
            benchmark::DoNotOptimize(y.data());
        });
}

// Rounding activations to Q8_K blocks, as each thread of a K-quant product does before its tiles:
// the shared scalar quantizer (block_math.hpp) and the CPU's (quantize.hpp, the vector steps where
// the processor has AVX2), one thread over 512 blocks of random values (512 KiB, in L2), in turn.
template <bool Cpu>
void BM_round_q8_k(benchmark::State& state) {
    constexpr std::uint64_t n = 512;
    const auto x = random_values(n * blocks::qk_k, 5);
    std::vector<blocks::q8_k> out(n);
    for (auto _ : state) {
        for (std::uint64_t b = 0; b < n; ++b) {
            if constexpr (Cpu)
                kernels::cpu::quantize_block_q8_k(x.data() + b * blocks::qk_k, out[b]);
            else
                kernels::quantize_block(x.data() + b * blocks::qk_k, out[b]);
        }
        benchmark::DoNotOptimize(out.data());
    }
    // Seconds per block (printed with an SI prefix: 72n is 72 ns).
    state.counters["per_block"] = benchmark::Counter(static_cast<double>(state.iterations() * n),
                                                     benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
    state.SetLabel(Cpu ? std::string("cpu ") + std::string(kernels::cpu::cpu_isa_name(kernels::cpu::active_cpu_isa()))
                       : std::string("shared scalar"));
}

// The thread pool's cost per kernel call in decode: a parallel_for over two threads with nothing
// to do, issued after the caller has worked alone for `idle` microseconds (as between two matrix
// products of a decode step, where norms, RoPE and the KV write run on the caller). The time is
// the call's, from issue to return.
void BM_parallel_for_round_trip(benchmark::State& state) {
    const auto idle = std::chrono::microseconds(state.range(0));
    for (auto _ : state) {
        for (const auto until = clock_type::now() + idle; clock_type::now() < until;) {
        }
        const auto start = clock_type::now();
        pool().parallel_for(2, [](std::uint64_t b, std::uint64_t e) { benchmark::DoNotOptimize(b + e); });
        state.SetIterationTime(std::chrono::duration<double>(clock_type::now() - start).count());
    }
}

}  // namespace

BENCHMARK(BM_matvec<kernel_format::f32>)->Args({4096, 14336})->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_matvec<kernel_format::f16>)->Args({4096, 14336})->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_matvec<kernel_format::bf16>)->Args({4096, 14336})->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_matvec<kernel_format::q8_0>)->Args({4096, 14336})->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_matvec<kernel_format::q4_0>)->Args({4096, 14336})->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_matvec<kernel_format::q8_0, true>)->Args({4096, 14336})->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_matvec<kernel_format::q4_0, true>)->Args({4096, 14336})->UseManualTime()->Unit(benchmark::kMillisecond);
// The K-quants: rows times activations rounded to Q8_K (kquant_dot.hpp), and as panels; then the
// 32-value fallbacks, rows times activations rounded to Q8_0 (int8_dot.hpp).
BENCHMARK(BM_matvec<kernel_format::q4_k>)->Args({4096, 14336})->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_matvec<kernel_format::q4_k, true>)->Args({4096, 14336})->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_matvec<kernel_format::q5_k, true>)->Args({4096, 14336})->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_matvec<kernel_format::q6_k, true>)->Args({4096, 14336})->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_matvec<kernel_format::q5_k>)->Args({4096, 14336})->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_matvec<kernel_format::q6_k>)->Args({4096, 14336})->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_matvec<kernel_format::q2_k>)->Args({4096, 14336})->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_matvec<kernel_format::q3_k>)->Args({4096, 14336})->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_matvec<kernel_format::q2_k, true>)->Args({4096, 14336})->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_matvec<kernel_format::q3_k, true>)->Args({4096, 14336})->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_matvec<kernel_format::q5_0>)->Args({4096, 14336})->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_matvec<kernel_format::q4_1>)->Args({4096, 14336})->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_matvec<kernel_format::q5_1>)->Args({4096, 14336})->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_matvec<kernel_format::iq4_nl>)->Args({4096, 14336})->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_panel_tile_in_cache<kernel_format::q4_0, 1>);
BENCHMARK(BM_panel_tile_in_cache<kernel_format::q4_0, 4>);
BENCHMARK(BM_panel_tile_in_cache<kernel_format::q8_0, 1>);
BENCHMARK(BM_panel_tile_in_cache<kernel_format::q8_0, 4>);
BENCHMARK(BM_panel_tile_in_cache<kernel_format::q4_k, 1>);
BENCHMARK(BM_panel_tile_in_cache<kernel_format::q4_k, 4>);
BENCHMARK(BM_panel_tile_in_cache<kernel_format::q5_k, 1>);
BENCHMARK(BM_panel_tile_in_cache<kernel_format::q6_k, 1>);
BENCHMARK(BM_panel_tile_in_cache<kernel_format::q6_k, 4>);
BENCHMARK(BM_panel_tile_in_cache<kernel_format::q2_k, 1>);
BENCHMARK(BM_panel_tile_in_cache<kernel_format::q2_k, 4>);
BENCHMARK(BM_panel_tile_in_cache<kernel_format::q3_k, 1>);
BENCHMARK(BM_panel_tile_in_cache<kernel_format::q3_k, 4>);
BENCHMARK(BM_expert_prefill<kernel_format::q4_0>)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_expert_prefill<kernel_format::q4_k>)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_expert_decode<kernel_format::q4_0>)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_expert_decode<kernel_format::q8_0>)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_expert_decode<kernel_format::q4_k>)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_expert_decode<kernel_format::q6_k>)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_expert_decode<kernel_format::q3_k>)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_fallback_prefill<kernel_format::q5_0>)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_fallback_prefill<kernel_format::iq4_nl>)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_round_q8_k<false>);
BENCHMARK(BM_round_q8_k<true>);
BENCHMARK(BM_parallel_for_round_trip)
    ->Arg(0)
    ->Arg(5)
    ->Arg(50)
    ->Iterations(20000)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_decode_attention)
    ->ArgNames({"context", "kv_heads"})
    ->ArgsProduct({{1024, 4096, 8192, 16384}, {8, 32}})
    ->UseManualTime()
    ->Iterations(1)
    ->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
