// The CUDA backend: the GPU tier is one cudaMalloc, the host tier one cudaHostAlloc (pinned, and
// mapped into the device's address space). Streamed layers are copied with cudaMemcpyAsync on a
// copy stream into two staging slots; events order each copy after the compute that last read its
// slot and the compute after the copy, so copying layer i+1 overlaps computing layer i. The ops of
// the forward graph are issued, in order, on the compute stream.
#pragma once

#include <cuda_runtime.h>

#include <span>

#include "vramplan/kernels/cuda/check.cuh"
#include "vramplan/kernels/cuda/dispatch.cuh"
#include "vramplan/plan/plan.hpp"
#include "vramplan/runtime/memory_info.hpp"

namespace vramplan::runtime {

class cuda_backend {
public:
    static constexpr const char* name = "cuda";
    static constexpr bool device_is_host_memory = false;

    // planes: hold the quantized tensors that only matrix products read in planes
    // (kernels/weight_planes.hpp), read by the plane kernel; otherwise in the file's layout.
    explicit cuda_backend(int device = 0, bool planes = false) : device_(device), planes_(planes) {
        // Without a driver or a visible GPU, cudaSetDevice's own error names neither the device nor
        // the way out.
        int count = 0;
        const cudaError_t found = cudaGetDeviceCount(&count);
        if (found != cudaSuccess || device < 0 || device >= count) {
            cudaGetLastError();
            throw error("CUDA device " + std::to_string(device) + " is not usable: " +
                        (found != cudaSuccess ? std::string(cudaGetErrorString(found))
                                              : std::to_string(count) + " CUDA device(s) visible") +
                        "; check the NVIDIA driver and CUDA_VISIBLE_DEVICES, or run on the CPU backend");
        }
        gpu::check(cudaSetDevice(device), "cudaSetDevice");
        gpu::check(cudaStreamCreateWithFlags(&compute_, cudaStreamNonBlocking), "cudaStreamCreate(compute)");
        gpu::check(cudaStreamCreateWithFlags(&copy_, cudaStreamNonBlocking), "cudaStreamCreate(copy)");
        for (int s = 0; s < 2; ++s) {
            gpu::check(cudaEventCreateWithFlags(&copied_[s], cudaEventDisableTiming), "cudaEventCreate");
            gpu::check(cudaEventCreateWithFlags(&consumed_[s], cudaEventDisableTiming), "cudaEventCreate");
        }
    }
    ~cuda_backend() {
        if (readback_) cudaFreeHost(readback_);
        for (int s = 0; s < 2; ++s) {
            cudaEventDestroy(copied_[s]);
            cudaEventDestroy(consumed_[s]);
        }
        cudaStreamDestroy(copy_);
        cudaStreamDestroy(compute_);
    }
    cuda_backend(const cuda_backend&) = delete;
    cuda_backend& operator=(const cuda_backend&) = delete;

    cudaStream_t compute_stream() const { return compute_; }
    cudaStream_t copy_stream() const { return copy_; }

    void* allocate(tier t, std::uint64_t bytes) {
        if (bytes == 0) return nullptr;
        void* p = nullptr;
        if (t == tier::gpu)
            gpu::check(cudaMalloc(&p, bytes), "cudaMalloc");
        else
            gpu::check(cudaHostAlloc(&p, bytes, cudaHostAllocMapped), "cudaHostAlloc");
        return p;
    }
    void release(tier t, void* p) noexcept {
        if (!p) return;
        if (t == tier::gpu)
            cudaFree(p);
        else
            cudaFreeHost(p);
    }

    memory_info device_memory() const {
        std::size_t free = 0, total = 0;
        gpu::check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
        return {free, total};
    }
    memory_info host_memory() const {
        const std::uint64_t host = host_memory_available();
        return {host, host};
    }

    void copy_to_device(void* dst, const void* src, std::uint64_t bytes, int slot) {
        gpu::check(cudaStreamWaitEvent(copy_, consumed_[slot], 0), "cudaStreamWaitEvent(copy after compute)");
        gpu::check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, copy_), "cudaMemcpyAsync");
        gpu::check(cudaEventRecord(copied_[slot], copy_), "cudaEventRecord(copied)");
    }
    void wait_for_copy(int slot) {
        gpu::check(cudaStreamWaitEvent(compute_, copied_[slot], 0), "cudaStreamWaitEvent(compute after copy)");
    }
    void release_slot(int slot) { gpu::check(cudaEventRecord(consumed_[slot], compute_), "cudaEventRecord(consumed)"); }
    void upload(void* dst, const void* src, std::uint64_t bytes) {
        gpu::check(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy(upload)");
    }
    void download(void* dst, const void* src, std::uint64_t bytes) {
        gpu::check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, compute_), "cudaMemcpyAsync(download)");
        gpu::check(cudaStreamSynchronize(compute_), "cudaStreamSynchronize");
    }

    // The ops of the forward graph (runtime/backend.hpp documents each).
    using matmul_kernel = gpu::matmul_fn;
    using expert_matmul_kernel = gpu::expert_matmul_fn;
    using embed_kernel = gpu::embed_fn;
    using kv_append_kernel = gpu::kv_append_fn;
    using attention_kernel = gpu::attention_fn;

    matmul_kernel find_matmul(kernels::kernel_format f) const { return gpu::find_matmul<float>(f); }
    bool holds_planes() const { return planes_; }  // runtime/weight_layout.hpp
    matmul_kernel find_matmul_planes(kernels::kernel_format f) const { return gpu::find_matmul_planes<float>(f); }
    expert_matmul_kernel find_expert_matmul(kernels::kernel_format f) const { return gpu::find_expert_matmul(f); }
    embed_kernel find_embed(kernels::kernel_format f) const { return gpu::find_embed(f); }
    kv_append_kernel find_kv_append(kernels::kernel_format f) const { return gpu::find_kv_append(f); }
    attention_kernel find_attention(kernels::kernel_format f, std::uint64_t head_dim) const {
        return gpu::find_attention(f, head_dim);
    }

    void inputs(std::int32_t* tokens, std::int32_t* positions, std::span<const std::int32_t> host_tokens,
                std::span<const std::int32_t> host_positions) {
        gpu::check(
            cudaMemcpyAsync(tokens, host_tokens.data(), host_tokens.size_bytes(), cudaMemcpyHostToDevice, compute_),
            "cudaMemcpyAsync(tokens)");
        gpu::check(cudaMemcpyAsync(positions, host_positions.data(), host_positions.size_bytes(),
                                   cudaMemcpyHostToDevice, compute_),
                   "cudaMemcpyAsync(positions)");
    }
    void embed(embed_kernel k, const std::byte* table, const std::int32_t* tokens, float* out, std::uint64_t rows,
               std::uint64_t n, float scale) {
        k(table, tokens, out, rows, n, scale, compute_);
    }
    void softcap(float* x, std::uint64_t n, float cap) { gpu::softcap(x, n, cap, compute_); }
    void rms_norm(const float* x, const float* w, float* y, std::uint64_t rows, std::uint64_t n, float eps) {
        gpu::rms_norm(x, w, y, rows, n, eps, compute_);
    }
    void matmul(matmul_kernel k, const std::byte* w, const float* x, float* y, std::uint64_t n, std::uint64_t k_in,
                std::uint64_t rows) {
        k(w, x, y, n, k_in, rows, compute_);
    }
    void add_bias(float* y, const float* bias, std::uint64_t n, std::uint64_t rows) {
        gpu::add_rows(y, bias, n, rows, compute_);
    }
    void rope(float* x, std::uint64_t rows, std::uint64_t heads, std::uint64_t head_dim, const std::int32_t* positions,
              const kernels::rope_config& r) {
        gpu::rope(x, rows, heads, static_cast<int>(head_dim), positions, r, compute_);
    }
    void kv_append(kv_append_kernel k, const float* keys, const float* values, const std::int32_t* positions,
                   std::uint64_t rows, std::uint64_t width, std::uint64_t cache_rows, void* k_cache, void* v_cache) {
        k(keys, values, positions, nullptr, rows, width, cache_rows, k_cache, v_cache, compute_);
    }
    void attention(attention_kernel k, const kernels::attention_args& a) { k(a, compute_); }
    void add(float* x, const float* y, std::uint64_t n) { gpu::add(x, y, n, compute_); }
    void swiglu(float* gate, const float* up, std::uint64_t n) { gpu::swiglu(gate, up, n, compute_); }
    void geglu(float* gate, const float* up, std::uint64_t n) { gpu::geglu(gate, up, n, compute_); }
    void split(float* out, const float* in, std::uint64_t rows, std::uint64_t in_cols, std::uint64_t first,
               std::uint64_t n) {
        gpu::check(cudaMemcpy2DAsync(out, n * sizeof(float), in + first, in_cols * sizeof(float), n * sizeof(float),
                                     rows, cudaMemcpyDeviceToDevice, compute_),
                   "cudaMemcpy2DAsync(split)");
    }
    void gate_scale(float* x, const float* s, std::uint64_t rows, std::uint64_t n) {
        gpu::gate_scale(x, s, rows, n, compute_);
    }
    void route(const float* logits, std::int32_t* ids, float* weights, std::uint64_t rows, std::uint64_t n,
               std::uint64_t k, bool renorm) {
        gpu::route(logits, ids, weights, rows, n, k, renorm, compute_);
    }
    // Only experts in device memory: the forward pass has the CPU compute those the plan keeps in
    // the host tier (runtime/forward_pass.hpp).
    void expert_matmul(expert_matmul_kernel k, const std::byte* w, std::uint64_t /*n_expert*/, const float* x,
                       bool x_per_route, const std::int32_t* ids, float* y, std::uint64_t n, std::uint64_t k_in,
                       std::uint64_t rows, std::uint64_t used) {
        k(w, x, x_per_route, ids, y, n, k_in, rows, used, compute_);
    }
    void expert_sum(float* y, const float* routed, const float* weights, std::uint64_t rows, std::uint64_t n,
                    std::uint64_t k) {
        gpu::expert_sum(y, routed, weights, rows, n, k, compute_);
    }
    // Logits come back through one pinned buffer, allocated at start-up for the most a pass returns.
    void reserve_logits(std::uint64_t count) {
        if (count <= readback_count_) return;
        if (readback_) cudaFreeHost(readback_);
        readback_ = nullptr;
        readback_count_ = 0;
        gpu::check(cudaMallocHost(&readback_, count * sizeof(float)), "cudaMallocHost(logits)");
        readback_count_ = count;
    }
    const float* logits(const float* src, std::uint64_t count) {
        if (count > readback_count_) throw error("internal: more logits than the CUDA backend reserved room for");
        download(readback_, src, count * sizeof(float));
        return readback_;
    }

private:
    int device_;
    bool planes_;
    cudaStream_t compute_ = nullptr, copy_ = nullptr;
    cudaEvent_t copied_[2]{}, consumed_[2]{};
    float* readback_ = nullptr;
    std::uint64_t readback_count_ = 0;
};

}  // namespace vramplan::runtime
