// The CPU backend: both tiers are host memory, copies are memcpy, and the ops run on the CPU
// kernels with the backend's thread pool. The "device" tier has its own budget, so a plan that
// streams layers runs, and is tested, exactly as on a GPU.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>

#include "vramplan/error.hpp"
#include "vramplan/kernels/cpu/convert.hpp"
#include "vramplan/kernels/cpu/dispatch.hpp"
#include "vramplan/kernels/cpu/elementwise.hpp"
#include "vramplan/kernels/cpu/experts.hpp"
#include "vramplan/kernels/cpu/thread_pool.hpp"
#include "vramplan/plan/plan.hpp"
#include "vramplan/runtime/memory_info.hpp"

namespace vramplan::runtime {

class cpu_backend {
public:
    static constexpr const char* name = "cpu";
    static constexpr std::uint64_t alignment = 4096;
    static constexpr bool device_is_host_memory = true;
    static constexpr bool holds_panels = true;  // runtime/weight_layout.hpp

    // device_budget: bytes the device tier may use (0: as much host memory as is available);
    // threads: the kernels' worker threads, the caller's included.
    explicit cpu_backend(std::uint64_t device_budget = 0, unsigned threads = 1)
        : budget_(device_budget), pool_(threads) {}

    void* allocate(tier, std::uint64_t bytes) {
        if (bytes == 0) return nullptr;
        void* p = std::aligned_alloc(alignment, align_up(bytes, alignment));
        if (!p) throw error("cpu backend: cannot allocate " + std::to_string(bytes) + " bytes");
        return p;
    }
    void release(tier, void* p) noexcept { std::free(p); }

    memory_info device_memory() const {
        const std::uint64_t host = host_memory_available();
        const std::uint64_t free = budget_ ? budget_ : host;
        return {free, free};
    }
    memory_info host_memory() const {
        const std::uint64_t host = host_memory_available();
        return {host, host};
    }

    // Host tier -> device tier. Synchronous here; the slot says which staging buffer it feeds.
    void copy_to_device(void* dst, const void* src, std::uint64_t bytes, int /*slot*/) { std::memcpy(dst, src, bytes); }
    void wait_for_copy(int /*slot*/) {}
    void release_slot(int /*slot*/) {}
    void upload(void* dst, const void* src, std::uint64_t bytes) { std::memcpy(dst, src, bytes); }
    void download(void* dst, const void* src, std::uint64_t bytes) { std::memcpy(dst, src, bytes); }

    kernels::cpu::thread_pool& pool() { return pool_; }

    // The ops of the forward graph (runtime/backend.hpp documents each).
    struct matmul_kernel {
        kernels::kernel_format fmt{};
        kernels::cpu::matmul_fn fn = nullptr;
        bool panels = false;  // the weight is held as panels (runtime/weight_layout.hpp)
    };
    using embed_kernel = kernels::kernel_format;
    using kv_append_kernel = kernels::cpu::kv_append_fn;
    using attention_kernel = kernels::cpu::attention_fn;

    struct expert_matmul_kernel {
        kernels::kernel_format fmt{};
        kernels::cpu::matmul_rows_fn fn = nullptr;
        bool panels = false;  // each expert's plane is held as panels (runtime/weight_layout.hpp)
    };

    matmul_kernel find_matmul(kernels::kernel_format f) const { return {f, kernels::cpu::find_matmul(f)}; }
    expert_matmul_kernel find_expert_matmul(kernels::kernel_format f) const {
        return {f, kernels::cpu::find_matmul_rows(f)};
    }
    embed_kernel find_embed(kernels::kernel_format f) const { return f; }
    kv_append_kernel find_kv_append(kernels::kernel_format f) const { return kernels::cpu::find_kv_append(f); }
    attention_kernel find_attention(kernels::kernel_format f, std::uint64_t head_dim) const {
        return kernels::cpu::find_attention(f, head_dim);
    }

    void inputs(std::int32_t* tokens, std::int32_t* positions, std::span<const std::int32_t> host_tokens,
                std::span<const std::int32_t> host_positions) {
        std::memcpy(tokens, host_tokens.data(), host_tokens.size_bytes());
        std::memcpy(positions, host_positions.data(), host_positions.size_bytes());
    }
    void embed(embed_kernel f, const std::byte* table, const std::int32_t* tokens, float* out, std::uint64_t rows,
               std::uint64_t n, float scale) {
        const std::uint64_t row_bytes = kernels::kernel_row_bytes(f, n);
        for (std::uint64_t t = 0; t < rows; ++t)
            kernels::cpu::dequantize_row(f, table + static_cast<std::uint64_t>(tokens[t]) * row_bytes, out + t * n, n);
        if (scale != 0.0f) kernels::cpu::scale(out, rows * n, scale);
    }
    void softcap(float* x, std::uint64_t n, float cap) {
        over_values(n, transcendental,
                    [&](std::uint64_t b, std::uint64_t e) { kernels::cpu::softcap(x + b, e - b, cap); });
    }
    void rms_norm(const float* x, const float* w, float* y, std::uint64_t rows, std::uint64_t n, float eps) {
        over_rows(rows, n, [&](std::uint64_t b, std::uint64_t e) {
            kernels::cpu::rms_norm(x + b * n, w, y + b * n, e - b, n, eps);
        });
    }
    void matmul(const matmul_kernel& k, const std::byte* w, const float* x, float* y, std::uint64_t n,
                std::uint64_t k_in, std::uint64_t rows) {
        k.fn(kernels::cpu::weight_view{k.fmt, w, n, k_in, k.panels}, x, y, rows, pool_);
    }
    void add_bias(float* y, const float* bias, std::uint64_t n, std::uint64_t rows) {
        over_rows(rows, n, [&](std::uint64_t b, std::uint64_t e) {
            for (std::uint64_t t = b; t < e; ++t) kernels::cpu::add(y + t * n, bias, n);
        });
    }
    void rope(float* x, std::uint64_t rows, std::uint64_t heads, std::uint64_t head_dim, const std::int32_t* positions,
              const kernels::rope_config& r) {
        const std::uint64_t width = heads * head_dim;
        over_rows(rows, width * transcendental / 2, [&](std::uint64_t b, std::uint64_t e) {
            kernels::cpu::rope(x + b * width, e - b, heads, static_cast<int>(head_dim), positions + b, r);
        });
    }
    void kv_append(kv_append_kernel k, const float* keys, const float* values, const std::int32_t* positions,
                   std::uint64_t rows, std::uint64_t width, std::uint64_t cache_rows, void* k_cache, void* v_cache) {
        k(keys, values, positions, nullptr, rows, width, cache_rows, k_cache, v_cache);
    }
    void attention(attention_kernel k, const kernels::attention_args& a) { k(a, pool_); }
    void add(float* x, const float* y, std::uint64_t n) {
        over_values(n, 1, [&](std::uint64_t b, std::uint64_t e) { kernels::cpu::add(x + b, y + b, e - b); });
    }
    void swiglu(float* gate, const float* up, std::uint64_t n) {
        over_values(n, transcendental,
                    [&](std::uint64_t b, std::uint64_t e) { kernels::cpu::swiglu(gate + b, up + b, e - b); });
    }
    void geglu(float* gate, const float* up, std::uint64_t n) {
        over_values(n, transcendental,
                    [&](std::uint64_t b, std::uint64_t e) { kernels::cpu::geglu(gate + b, up + b, e - b); });
    }
    void split(float* out, const float* in, std::uint64_t rows, std::uint64_t in_cols, std::uint64_t first,
               std::uint64_t n) {
        for (std::uint64_t t = 0; t < rows; ++t) std::memcpy(out + t * n, in + t * in_cols + first, n * sizeof(float));
    }
    void gate_scale(float* x, const float* s, std::uint64_t rows, std::uint64_t n) {
        kernels::cpu::gate_scale(x, s, rows, n);
    }
    void route(const float* logits, std::int32_t* ids, float* weights, std::uint64_t rows, std::uint64_t n,
               std::uint64_t k, bool renorm) {
        kernels::cpu::route(logits, ids, weights, rows, n, k, renorm);
    }
    void expert_matmul(const expert_matmul_kernel& k, const std::byte* w, std::uint64_t n_expert, const float* x,
                       bool x_per_route, const std::int32_t* ids, float* y, std::uint64_t n, std::uint64_t k_in,
                       std::uint64_t rows, std::uint64_t used) {
        kernels::cpu::expert_matmul(k.fn, {k.fmt, w, n, k_in, k.panels}, n_expert, x, x_per_route, ids, y, rows, used,
                                    pool_);
    }
    void expert_sum(float* y, const float* routed, const float* weights, std::uint64_t rows, std::uint64_t n,
                    std::uint64_t k) {
        kernels::cpu::expert_sum(y, routed, weights, rows, n, k);
    }
    void reserve_logits(std::uint64_t) {}
    const float* logits(const float* src, std::uint64_t) { return src; }  // already host memory

private:
    // The small ops go to the pool once they are large enough for a fork and join (about a
    // microsecond on two cores, BM_parallel_for_round_trip) to be small beside them: `cost` counts
    // additions and products, an exponential or a sine `transcendental` of them. Each row and each
    // value is computed as it would be alone, so the results do not depend on the threads. The
    // caller used to run them alone while the other threads waited: with the rest of what happens
    // between the pool's calls, 7-9% of a 512-token prefill on two cores of the AMD EPYC (Zen 3).
    static constexpr std::uint64_t parallel_cost = 1 << 14, transcendental = 16;
    template <class Fn>
    void over_rows(std::uint64_t rows, std::uint64_t row_cost, Fn&& fn) {
        if (rows < 2 || rows * row_cost < parallel_cost)
            fn(std::uint64_t{0}, rows);
        else
            pool_.parallel_for(rows, fn);
    }
    // Values in pieces of 1024 (4 KiB).
    template <class Fn>
    void over_values(std::uint64_t n, std::uint64_t value_cost, Fn&& fn) {
        constexpr std::uint64_t piece = 1024;
        over_rows((n + piece - 1) / piece, piece * value_cost,
                  [&](std::uint64_t b, std::uint64_t e) { fn(b * piece, std::min(n, e * piece)); });
    }

    std::uint64_t budget_;
    kernels::cpu::thread_pool pool_;
};

}  // namespace vramplan::runtime
