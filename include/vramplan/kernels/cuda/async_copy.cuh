// Copies from global to shared memory that run while the threads compute (cp.async, sm_80 and
// later): no registers hold the bytes on the way, so a kernel can fill one stage of shared memory
// while it works on the other. A thread's copies form groups; wait_async_copies<N>() returns once
// at most N of this thread's newest groups are still in flight, and a barrier then makes every
// thread's landed copies visible to the block.
#pragma once

#include <cstdint>

namespace vramplan::gpu {

// 16 bytes to shared memory, of which the first src_bytes (1 to 16) are read from global memory
// and the rest are zeros: a copy can stop exactly at the end of a buffer.
__device__ inline void copy16_async(void* shared, const void* global, unsigned src_bytes = 16) {
    const auto s = static_cast<unsigned>(__cvta_generic_to_shared(shared));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(__cvta_generic_to_global(global)),
                 "r"(src_bytes)
                 : "memory");
}

__device__ inline void commit_async_copies() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

template <int InFlight>
__device__ inline void wait_async_copies() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(InFlight) : "memory");
}

}  // namespace vramplan::gpu
