// The NVIDIA GPUs installed in this machine, as the driver reports them through NVML: name, total
// and free memory, compute capability, and the processes holding memory right now. NVML is loaded
// at run time (dlopen of libnvidia-ml.so.1, or the library VRAMPLAN_NVML_LIBRARY names), so
// vramplan has no build-time dependency on the driver. Memory left behind by another process is one
// of the commonest causes of "CUDA out of memory", so a local target counts what is in use now.
#pragma once

#include <dlfcn.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "vramplan/error.hpp"
#include "vramplan/target/target_desc.hpp"

namespace vramplan::targets {

struct gpu_process {
    std::uint32_t pid = 0;
    std::string name;         // as NVML reports it (the executable's path), "" when it cannot tell
    std::uint64_t bytes = 0;  // device memory it holds
};

struct local_gpu {
    unsigned index = 0;
    std::string name;
    std::uint64_t total_bytes = 0;
    std::uint64_t free_bytes = 0;
    int cc_major = 0, cc_minor = 0;
    std::vector<gpu_process> processes;  // compute and graphics, largest first

    std::uint64_t used_bytes() const { return total_bytes > free_bytes ? total_bytes - free_bytes : 0; }
};

// The runtime reserve of a local device beyond what is in use: the CUDA context and workspaces of
// the process about to run (the catalog's usual figure).
inline constexpr std::uint64_t local_runtime_reserve = 512ull << 20;

// A plan target for this device as it is now: its whole memory as capacity, and as reserve what
// other processes (and the driver) hold plus the new process's runtime reserve, so a plan fits it
// exactly when it fits what is free now. The name views `g.name`: keep `g` alive while it is used.
inline target_desc target_of(const local_gpu& g) {
    target_desc t;
    t.name = g.name;
    t.capacity = g.total_bytes;
    t.reserve = g.used_bytes() + local_runtime_reserve;
    t.cc_major = static_cast<std::uint8_t>(g.cc_major);
    t.cc_minor = static_cast<std::uint8_t>(g.cc_minor);
    return t;
}

namespace detail {

// The few NVML entry points used, with the C types of nvml.h (NVML API 12).
struct nvml_memory {
    unsigned long long total, free, used;
};
struct nvml_process {  // nvmlProcessInfo_t, the layout the _v3 process queries fill
    unsigned int pid;
    unsigned long long used_gpu_memory;
    unsigned int gpu_instance_id, compute_instance_id;
};
using nvml_device = void*;
inline constexpr int nvml_success = 0, nvml_insufficient_size = 7;

class nvml {
public:
    nvml() {
        const char* chosen = std::getenv("VRAMPLAN_NVML_LIBRARY");
        const std::string path = chosen && *chosen ? chosen : "libnvidia-ml.so.1";
        lib_.reset(dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL));
        if (!lib_) {
            const char* why = dlerror();
            throw error("no NVIDIA driver: cannot load " + path + " (" + (why ? why : "unknown reason") +
                        "); install the NVIDIA driver, or name a GPU from `vramplan gpus` instead of 'local'");
        }
        bind(init_, "nvmlInit_v2");
        bind(shutdown_, "nvmlShutdown");
        bind(error_string_, "nvmlErrorString");
        bind(count_, "nvmlDeviceGetCount_v2");
        bind(handle_, "nvmlDeviceGetHandleByIndex_v2");
        bind(name_, "nvmlDeviceGetName");
        bind(memory_, "nvmlDeviceGetMemoryInfo");
        bind(capability_, "nvmlDeviceGetCudaComputeCapability");
        bind(compute_procs_, "nvmlDeviceGetComputeRunningProcesses_v3");
        bind(graphics_procs_, "nvmlDeviceGetGraphicsRunningProcesses_v3");
        bind(process_name_, "nvmlSystemGetProcessName");
        check(init_(), "nvmlInit");
        initialized_ = true;
    }
    ~nvml() {
        if (initialized_) shutdown_();
    }
    nvml(const nvml&) = delete;
    nvml& operator=(const nvml&) = delete;

    std::vector<local_gpu> devices() const {
        unsigned count = 0;
        check(count_(&count), "nvmlDeviceGetCount");
        std::vector<local_gpu> out;
        for (unsigned i = 0; i < count; ++i) out.push_back(device(i));
        return out;
    }

private:
    template <class Fn>
    void bind(Fn& fn, const char* symbol) {
        fn = reinterpret_cast<Fn>(dlsym(lib_.get(), symbol));
        if (!fn)
            throw error(std::string("the NVIDIA driver's NVML library lacks ") + symbol + "; update the NVIDIA driver");
    }
    void check(int status, const char* call) const {
        if (status == nvml_success) return;
        const char* why = error_string_ ? error_string_(status) : nullptr;
        throw error(std::string("NVML: ") + call + " failed: " + (why ? why : "error " + std::to_string(status)) +
                    "; check the NVIDIA driver (nvidia-smi), or name a GPU from `vramplan gpus` instead of 'local'");
    }

    local_gpu device(unsigned i) const {
        nvml_device d = nullptr;
        check(handle_(i, &d), "nvmlDeviceGetHandleByIndex");
        local_gpu g;
        g.index = i;
        char name[96] = {};
        check(name_(d, name, sizeof name), "nvmlDeviceGetName");
        g.name = name;
        nvml_memory m{};
        check(memory_(d, &m), "nvmlDeviceGetMemoryInfo");
        g.total_bytes = m.total;
        g.free_bytes = m.free;
        check(capability_(d, &g.cc_major, &g.cc_minor), "nvmlDeviceGetCudaComputeCapability");
        for (auto query : {compute_procs_, graphics_procs_}) append_processes(query, d, g.processes);
        std::sort(g.processes.begin(), g.processes.end(),
                  [](const gpu_process& a, const gpu_process& b) { return a.bytes > b.bytes; });
        return g;
    }

    using process_query = int (*)(nvml_device, unsigned*, nvml_process*);
    void append_processes(process_query query, nvml_device d, std::vector<gpu_process>& out) const {
        // Ask with room for 64; NVML says how many there are when that is too few.
        std::vector<nvml_process> infos(64);
        for (int attempt = 0; attempt < 4; ++attempt) {
            unsigned n = static_cast<unsigned>(infos.size());
            const int status = query(d, &n, infos.data());
            if (status == nvml_insufficient_size && n > infos.size() && n < (1u << 16)) {
                infos.resize(n + 16);  // processes may start meanwhile
                continue;
            }
            check(status, "nvmlDeviceGetComputeRunningProcesses");
            for (unsigned k = 0; k < n && k < infos.size(); ++k) {
                gpu_process p;
                p.pid = infos[k].pid;
                p.bytes = infos[k].used_gpu_memory;
                char pname[256] = {};
                if (process_name_(p.pid, pname, sizeof pname) == nvml_success) p.name = pname;
                // A process in both lists (compute and graphics) is one process.
                bool seen = false;
                for (auto& q : out)
                    if (q.pid == p.pid) {
                        q.bytes = std::max(q.bytes, p.bytes);
                        seen = true;
                    }
                if (!seen) out.push_back(std::move(p));
            }
            return;
        }
        throw error("NVML: the list of processes on a GPU kept growing while it was read; try again");
    }

    struct closer {
        void operator()(void* h) const noexcept {
            if (h) dlclose(h);
        }
    };
    std::unique_ptr<void, closer> lib_;
    bool initialized_ = false;
    int (*init_)() = nullptr;
    int (*shutdown_)() = nullptr;
    const char* (*error_string_)(int) = nullptr;
    int (*count_)(unsigned*) = nullptr;
    int (*handle_)(unsigned, nvml_device*) = nullptr;
    int (*name_)(nvml_device, char*, unsigned) = nullptr;
    int (*memory_)(nvml_device, nvml_memory*) = nullptr;
    int (*capability_)(nvml_device, int*, int*) = nullptr;
    process_query compute_procs_ = nullptr, graphics_procs_ = nullptr;
    int (*process_name_)(unsigned, char*, unsigned) = nullptr;
};

}  // namespace detail

// Every NVIDIA GPU of this machine; an error (no driver, an NVML failure) is one sentence.
inline std::vector<local_gpu> local_gpus() {
    detail::nvml n;
    return n.devices();
}

// GPU `index` of this machine; none there is an error naming what there is.
inline local_gpu local_gpu_at(unsigned index) {
    auto all = local_gpus();
    if (all.empty())
        throw error(
            "the NVIDIA driver reports no GPU in this machine; name a GPU from `vramplan gpus` instead of 'local'");
    if (index >= all.size())
        throw error("there is no local GPU " + std::to_string(index) + ": this machine has " +
                    std::to_string(all.size()) + " (0 to " + std::to_string(all.size() - 1) + ")");
    return all[index];
}

}  // namespace vramplan::targets
