// A stand-in for the NVIDIA driver's libnvidia-ml.so.1: the few NVML entry points vramplan calls,
// answering with canned devices and processes, so the local-GPU code is tested on machines with no
// GPU (VRAMPLAN_NVML_LIBRARY points vramplan at this library). VRAMPLAN_FAKE_NVML picks the machine:
//   busy (default): GPU 0 an RTX 4090, 24 GiB, 10 GiB in use (python3 9 GiB, Xorg 512 MiB, the
//                   driver the other 512 MiB), compute capability 8.9; GPU 1 an RTX 3060, 12 GiB,
//                   256 MiB in use by the driver, 8.6
//   none:           a driver with no GPU
//   nodriver:       nvmlInit fails as it does when the kernel module is not loaded
//   crowded:        one 80 GiB GPU with 100 processes of 64 MiB each (more than one query's room)
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {
constexpr unsigned long long GiB = 1ull << 30, MiB = 1ull << 20;
struct memory {
    unsigned long long total, free, used;
};
struct process {
    unsigned int pid;
    unsigned long long used;
    unsigned int gpu_instance, compute_instance;
};
std::string scenario() {
    const char* s = std::getenv("VRAMPLAN_FAKE_NVML");
    return s ? s : "busy";
}
int device_index(void* d) { return static_cast<int>(reinterpret_cast<std::uintptr_t>(d)) - 1; }
int fill(unsigned* count, process* out, unsigned n, const process* from) {
    if (*count < n) {
        *count = n;
        return 7;  // NVML_ERROR_INSUFFICIENT_SIZE
    }
    for (unsigned i = 0; i < n; ++i) out[i] = from[i];
    *count = n;
    return 0;
}
}  // namespace

extern "C" {
int nvmlInit_v2() { return scenario() == "nodriver" ? 9 : 0; }  // 9: NVML_ERROR_DRIVER_NOT_LOADED
int nvmlShutdown() { return 0; }
const char* nvmlErrorString(int r) {
    return r == 9 ? "Driver Not Loaded" : r == 7 ? "Insufficient Size" : "Unknown Error";
}
int nvmlDeviceGetCount_v2(unsigned* n) {
    const std::string s = scenario();
    *n = s == "none" ? 0 : s == "crowded" ? 1 : 2;
    return 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned i, void** d) {
    *d = reinterpret_cast<void*>(static_cast<std::uintptr_t>(i + 1));
    return 0;
}
int nvmlDeviceGetName(void* d, char* name, unsigned length) {
    const char* n = scenario() == "crowded" ? "NVIDIA H100 80GB HBM3"
                    : device_index(d) == 0  ? "NVIDIA GeForce RTX 4090"
                                            : "NVIDIA GeForce RTX 3060";
    std::snprintf(name, length, "%s", n);
    return 0;
}
int nvmlDeviceGetMemoryInfo(void* d, memory* m) {
    if (scenario() == "crowded")
        *m = {80 * GiB, 80 * GiB - 100 * 64 * MiB, 100 * 64 * MiB};
    else if (device_index(d) == 0)
        *m = {24 * GiB, 14 * GiB, 10 * GiB};
    else
        *m = {12 * GiB, 12 * GiB - 256 * MiB, 256 * MiB};
    return 0;
}
int nvmlDeviceGetCudaComputeCapability(void* d, int* major, int* minor) {
    *major = scenario() == "crowded" ? 9 : 8;
    *minor = scenario() == "crowded" ? 0 : device_index(d) == 0 ? 9 : 6;
    return 0;
}
int nvmlDeviceGetComputeRunningProcesses_v3(void* d, unsigned* count, process* out) {
    if (scenario() == "crowded") {
        process many[100];
        for (unsigned i = 0; i < 100; ++i) many[i] = {1000 + i, 64 * MiB, 0, 0};
        return fill(count, out, 100, many);
    }
    const process busy[] = {{4242, 9 * GiB, 0, 0}};
    return fill(count, out, device_index(d) == 0 ? 1 : 0, busy);
}
int nvmlDeviceGetGraphicsRunningProcesses_v3(void* d, unsigned* count, process* out) {
    const process xorg[] = {{777, 512 * MiB, 0, 0}};
    return fill(count, out, scenario() != "crowded" && device_index(d) == 0 ? 1 : 0, xorg);
}
int nvmlSystemGetProcessName(unsigned pid, char* name, unsigned length) {
    std::snprintf(name, length, "%s",
                  pid == 4242  ? "/usr/bin/python3"
                  : pid == 777 ? "/usr/lib/xorg/Xorg"
                               : ("worker-" + std::to_string(pid)).c_str());
    return 0;
}
}
