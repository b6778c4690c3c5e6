// The one place where vramplan uses the preprocessor for portability: code shared by host and
// device (block math, conversions) is marked VRAMPLAN_HOST_DEVICE so it compiles as plain C++ with
// g++/clang++ and as __host__ __device__ code inside .cu files with nvcc.
#pragma once

#if defined(__CUDACC__)
#define VRAMPLAN_HOST_DEVICE __host__ __device__
#define VRAMPLAN_DEVICE __device__
#else
#define VRAMPLAN_HOST_DEVICE
#define VRAMPLAN_DEVICE
#endif

#if defined(__CUDA_ARCH__)
#define VRAMPLAN_DEVICE_PASS 1
#else
#define VRAMPLAN_DEVICE_PASS 0
#endif

// x86-64 SIMD paths of the CPU kernels (chosen at run time by CPU features) are compiled for host
// code only.
#if defined(__x86_64__) && !defined(__CUDA_ARCH__)
#define VRAMPLAN_X86_SIMD 1
#else
#define VRAMPLAN_X86_SIMD 0
#endif

// The instruction set the x86-64 SIMD paths are compiled for; the kernels that use it are called
// only after a run-time check that the CPU has it (AVX2, FMA and F16C).
#if VRAMPLAN_X86_SIMD
#define VRAMPLAN_TARGET_AVX2 __attribute__((target("avx2,fma,f16c")))
#else
#define VRAMPLAN_TARGET_AVX2
#endif
