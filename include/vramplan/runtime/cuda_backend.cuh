// The CUDA backend: the GPU tier is one cudaMalloc, the host tier one cudaHostAlloc (pinned, and
// mapped into the device's address space). Streamed layers are copied with cudaMemcpyAsync on a
// copy stream into two staging slots; events order each copy after the compute that last read its
// slot and the compute after the copy, so copying layer i+1 overlaps computing layer i.
#pragma once

#include <cuda_runtime.h>

#include "vramplan/kernels/cuda/check.cuh"
#include "vramplan/plan/plan.hpp"
#include "vramplan/runtime/cpu_backend.hpp"  // memory_info, host_memory_available

namespace vramplan::runtime {

class cuda_backend {
public:
    static constexpr const char* name = "cuda";
    static constexpr bool device_is_host_memory = false;

    explicit cuda_backend(int device = 0) : device_(device) {
        // Without a driver or a visible GPU, cudaSetDevice's own error names neither the device nor
        // the way out.
        int count = 0;
        const cudaError_t found = cudaGetDeviceCount(&count);
        if (found != cudaSuccess || device < 0 || device >= count) {
            cudaGetLastError();
            throw error("CUDA device " + std::to_string(device) + " is not usable: " +
                        (found != cudaSuccess ? std::string(cudaGetErrorString(found)) : std::to_string(count) + " CUDA device(s) visible") +
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
        if (t == tier::gpu) gpu::check(cudaMalloc(&p, bytes), "cudaMalloc");
        else gpu::check(cudaHostAlloc(&p, bytes, cudaHostAllocMapped), "cudaHostAlloc");
        return p;
    }
    void release(tier t, void* p) noexcept {
        if (!p) return;
        if (t == tier::gpu) cudaFree(p);
        else cudaFreeHost(p);
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
    void wait_for_copy(int slot) { gpu::check(cudaStreamWaitEvent(compute_, copied_[slot], 0), "cudaStreamWaitEvent(compute after copy)"); }
    void release_slot(int slot) { gpu::check(cudaEventRecord(consumed_[slot], compute_), "cudaEventRecord(consumed)"); }
    void upload(void* dst, const void* src, std::uint64_t bytes) { gpu::check(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy(upload)"); }
    void download(void* dst, const void* src, std::uint64_t bytes) {
        gpu::check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, compute_), "cudaMemcpyAsync(download)");
        gpu::check(cudaStreamSynchronize(compute_), "cudaStreamSynchronize");
    }

private:
    int device_;
    cudaStream_t compute_ = nullptr, copy_ = nullptr;
    cudaEvent_t copied_[2]{}, consumed_[2]{};
};

}  // namespace vramplan::runtime
