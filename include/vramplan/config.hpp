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

// The instruction sets the x86-64 SIMD paths are compiled for; a kernel compiled for one is called
// only after kernels/cpu/isa.hpp has found it on the processor: AVX2 with FMA and F16C; AVX-512
// (F, BW, VL, DQ, as Skylake-X and Zen 4 have it); and AVX-512 with VNNI's byte dot products.
#if VRAMPLAN_X86_SIMD
#define VRAMPLAN_TARGET_AVX2 __attribute__((target("avx2,fma,f16c")))
#define VRAMPLAN_TARGET_AVX512 __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq")))
#define VRAMPLAN_TARGET_AVX512_VNNI \
    __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")))
#else
#define VRAMPLAN_TARGET_AVX2
#define VRAMPLAN_TARGET_AVX512
#define VRAMPLAN_TARGET_AVX512_VNNI
#endif

// Before a loop over a kernel's register tile (a constant count of accumulators): unrolled, the
// tile's arrays live in registers; GCC at -O2 leaves such loops rolled and the arrays on the
// stack, which made the Q4_0 panel kernel's four-token tile 3.6x slower (int8_panel.hpp).
#if defined(__CUDACC__)
#define VRAMPLAN_UNROLL  // nvcc's front end passes host code on: the CPU twins of CUDA tests need no speed
#elif defined(__clang__)
#define VRAMPLAN_UNROLL _Pragma("unroll")
#elif defined(__GNUC__)
#define VRAMPLAN_UNROLL _Pragma("GCC unroll 16")
#else
#define VRAMPLAN_UNROLL
#endif

// A vector loaded once and used by several instructions: without it, compilers fold the load into
// each use and read the memory once per use. GCC 12 read each chunk of a Q4_0 panel twice (once for
// its low nibbles, once for its high), and half of those 64-byte loads cross a cache line: the
// decode tile computed 70 GB/s from L2 on one Zen 5 core instead of 100 (int8_panel.hpp). An empty
// asm that takes and gives back the register leaves no instruction.
//
// Its opposite, for bytes a kernel uses again later: a pointer the compiler can no longer see
// through, so each use loads again (from L1) instead of keeping what it loaded before. The 256-bit
// K-quant kernels work a super-block in two halves of eight rows against the same activations;
// GCC 12 kept the 64 activation broadcasts of the first half for the second, in 16 registers, by
// spilling them to the stack: the one-token Q4_K tile computed 19.0 GB/s from L2 on one Zen 3 core,
// 23.8 reading x again (bench/REPORT.md).
#if VRAMPLAN_X86_SIMD && (defined(__GNUC__) || defined(__clang__))
#define VRAMPLAN_KEEP_IN_REGISTER(v) asm("" : "+v"(v))
#define VRAMPLAN_READ_AGAIN(p) asm volatile("" : "+r"(p))
#else
#define VRAMPLAN_KEEP_IN_REGISTER(v) static_cast<void>(v)
#define VRAMPLAN_READ_AGAIN(p) static_cast<void>(p)
#endif

// One turn of a busy-wait: the processor's spin-loop hint (x86 pause, Arm yield), which waits a
// few dozen cycles without a system call and without flooding the memory order machinery.
#if defined(__x86_64__) && !defined(__CUDA_ARCH__) && (defined(__GNUC__) || defined(__clang__))
#define VRAMPLAN_SPIN_PAUSE() __builtin_ia32_pause()
#elif defined(__aarch64__) && !defined(__CUDA_ARCH__) && (defined(__GNUC__) || defined(__clang__))
#define VRAMPLAN_SPIN_PAUSE() asm volatile("yield")
#else
#define VRAMPLAN_SPIN_PAUSE() static_cast<void>(0)
#endif

// GCC 12's AVX-512 intrinsics start from deliberately undefined registers (`__Y = __Y`), and once
// inlined into a kernel -Wuninitialized reports them against the compiler's own header (GCC bug
// 105593, fixed in GCC 13). The AVX-512 kernels are wrapped in these two to keep builds clean.
#if defined(__GNUC__) && !defined(__clang__)
#define VRAMPLAN_AVX512_WARNINGS_OFF                                                     \
    _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wuninitialized\"") \
        _Pragma("GCC diagnostic ignored \"-Wmaybe-uninitialized\"")
#define VRAMPLAN_AVX512_WARNINGS_ON _Pragma("GCC diagnostic pop")
#else
#define VRAMPLAN_AVX512_WARNINGS_OFF
#define VRAMPLAN_AVX512_WARNINGS_ON
#endif
