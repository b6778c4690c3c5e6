// CUDA errors become vramplan::error exceptions carrying the call, file, line and CUDA's message.
#pragma once

#include <cuda_runtime.h>

#include <source_location>
#include <string>

#include "vramplan/error.hpp"

namespace vramplan::gpu {

inline void check(cudaError_t status, const char* call, std::source_location where = std::source_location::current()) {
    if (status == cudaSuccess) return;
    throw error(std::string("CUDA error in ") + call + " at " + where.file_name() + ":" + std::to_string(where.line()) +
                ": " + cudaGetErrorName(status) + ": " + cudaGetErrorString(status));
}

// Errors of the last kernel launch.
inline void check_launch(const char* kernel, std::source_location where = std::source_location::current()) {
    check(cudaGetLastError(), kernel, where);
}

}  // namespace vramplan::gpu
