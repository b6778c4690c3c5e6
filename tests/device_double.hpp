// The CPU backend standing in for a device whose memory the CPU cannot address, as CUDA's is: the
// forward pass must then hand what the plan puts on the host to a CPU backend of its own
// (runtime/forward_pass.hpp), which a machine without a GPU can test. Like the CUDA backend it
// holds the file's layout (no panels), and it counts the products it is asked to compute on
// weights in the host tier, which beside a device must be none.
#pragma once

#include <cstdint>

#include "vramplan/runtime/cpu_backend.hpp"

struct device_double : vramplan::runtime::cpu_backend {
    static constexpr const char* name = "device double";
    static constexpr bool device_is_host_memory = false;
    static constexpr bool holds_panels = false;
    using cpu_backend::cpu_backend;

    const std::byte* host_begin = nullptr;
    const std::byte* host_end = nullptr;
    int host_weight_products = 0;  // products on host-tier weights this backend computed itself
    int expert_products = 0;       // expert products it computed (on device-tier weights)
    int downloads = 0;

    void* allocate(vramplan::tier t, std::uint64_t bytes) {
        void* p = cpu_backend::allocate(t, bytes);
        if (t == vramplan::tier::host) {
            host_begin = static_cast<const std::byte*>(p);
            host_end = host_begin + bytes;
        }
        return p;
    }
    bool in_host_tier(const std::byte* w) const { return w >= host_begin && w < host_end; }

    void matmul(const matmul_kernel& k, const std::byte* w, const float* x, float* y, std::uint64_t n,
                std::uint64_t k_in, std::uint64_t rows) {
        host_weight_products += in_host_tier(w);
        cpu_backend::matmul(k, w, x, y, n, k_in, rows);
    }
    void expert_matmul(const expert_matmul_kernel& k, const std::byte* w, std::uint64_t n_expert, const float* x,
                       bool x_per_route, const std::int32_t* ids, float* y, std::uint64_t n, std::uint64_t k_in,
                       std::uint64_t rows, std::uint64_t used) {
        host_weight_products += in_host_tier(w);
        ++expert_products;
        cpu_backend::expert_matmul(k, w, n_expert, x, x_per_route, ids, y, n, k_in, rows, used);
    }
    void download(void* dst, const void* src, std::uint64_t bytes) {
        ++downloads;
        cpu_backend::download(dst, src, bytes);
    }
};
