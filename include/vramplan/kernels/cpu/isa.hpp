// Which instruction set the CPU kernels use: the one place that asks the processor. Kernels are
// compiled for every path (function target attributes, no -march), and each call takes the best
// path the processor has, capped by VRAMPLAN_CPU_ISA (portable, avx2, avx2-vnni, avx512,
// avx512-vnni) or by limit_cpu_isa, so that tests run every path the machine has against the
// portable one and benchmarks measure them side by side.
//
// The paths form a chain, each a superset of the one before: every processor with AVX-512 (F, BW,
// VL, DQ) has AVX2 and FMA, and AVX512_VNNI comes only with AVX-512. AVX_VNNI (the VEX-encoded
// 256-bit byte dot products of Alder Lake and later, and of Sapphire Rapids and Zen 5 beside their
// AVX-512) is the one branch: avx2-vnni sits between avx2 and avx512, and on an AVX-512 processor
// without it (Ice Lake, Zen 4) a cap of avx2-vnni runs avx2.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "vramplan/config.hpp"
#include "vramplan/error.hpp"

#if VRAMPLAN_X86_SIMD
#include <cpuid.h>
#endif

namespace vramplan::kernels::cpu {

enum class cpu_isa : std::uint8_t { portable, avx2, avx2_vnni, avx512, avx512_vnni, COUNT };

inline constexpr std::array<std::string_view, static_cast<std::size_t>(cpu_isa::COUNT)> cpu_isa_names{
    "portable", "avx2", "avx2-vnni", "avx512", "avx512-vnni"};

constexpr std::string_view cpu_isa_name(cpu_isa i) { return cpu_isa_names[static_cast<std::size_t>(i)]; }

inline cpu_isa parse_cpu_isa(std::string_view name) {
    for (std::size_t i = 0; i < cpu_isa_names.size(); ++i)
        if (cpu_isa_names[i] == name) return static_cast<cpu_isa>(i);
    throw error("unknown CPU instruction set '" + std::string(name) +
                "' (VRAMPLAN_CPU_ISA): use portable, avx2, avx2-vnni, avx512 or avx512-vnni");
}

// AVX_VNNI: CPUID leaf 7, sub-leaf 1, EAX bit 4 (GCC 12 and Clang 14 differ on the name
// __builtin_cpu_supports knows it by). The OS saves the YMM registers it uses wherever AVX2 runs.
inline bool cpu_has_avx_vnni() {
#if VRAMPLAN_X86_SIMD
    static const bool found = [] {
        unsigned a = 0, b = 0, c = 0, d = 0;
        return __get_cpuid_count(7, 1, &a, &b, &c, &d) != 0 && (a & (1u << 4)) != 0;
    }();
    return found;
#else
    return false;
#endif
}

// The best path this processor runs.
inline cpu_isa detected_cpu_isa() {
#if VRAMPLAN_X86_SIMD
    static const cpu_isa found = [] {
        // Every processor with AVX2 and FMA also has F16C (Haswell, Zen); clang cannot query F16C.
        if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return cpu_isa::portable;
        if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw") ||
            !__builtin_cpu_supports("avx512vl") || !__builtin_cpu_supports("avx512dq"))
            return cpu_has_avx_vnni() ? cpu_isa::avx2_vnni : cpu_isa::avx2;
        return __builtin_cpu_supports("avx512vnni") ? cpu_isa::avx512_vnni : cpu_isa::avx512;
    }();
    return found;
#else
    return cpu_isa::portable;
#endif
}

namespace detail {
inline std::atomic<cpu_isa>& isa_ceiling() {
    static std::atomic<cpu_isa> ceiling = [] {
        const char* env = std::getenv("VRAMPLAN_CPU_ISA");
        return env && *env ? parse_cpu_isa(env) : cpu_isa::avx512_vnni;
    }();
    return ceiling;
}
}  // namespace detail

// Whether this processor runs a path: those up to its best, less avx2-vnni where it lacks AVX_VNNI.
inline bool runs_cpu_isa(cpu_isa isa) {
    return isa <= detected_cpu_isa() && (isa != cpu_isa::avx2_vnni || cpu_has_avx_vnni());
}

// The path the kernels take now: the processor's best, no higher than the ceiling.
inline cpu_isa active_cpu_isa() {
    const cpu_isa cap = detail::isa_ceiling().load(std::memory_order_relaxed);
    const cpu_isa have = detected_cpu_isa();
    const cpu_isa path = cap < have ? cap : have;
    return runs_cpu_isa(path) ? path : cpu_isa::avx2;
}

// Caps the path for every thread and returns the previous ceiling (tests and benchmarks).
inline cpu_isa limit_cpu_isa(cpu_isa ceiling) { return detail::isa_ceiling().exchange(ceiling); }

// A scope that runs the kernels no higher than one path, restoring the ceiling on exit.
class cpu_isa_scope {
public:
    explicit cpu_isa_scope(cpu_isa ceiling) : previous_(limit_cpu_isa(ceiling)) {}
    ~cpu_isa_scope() { limit_cpu_isa(previous_); }
    cpu_isa_scope(const cpu_isa_scope&) = delete;
    cpu_isa_scope& operator=(const cpu_isa_scope&) = delete;

private:
    cpu_isa previous_;
};

inline bool has_avx2() { return active_cpu_isa() >= cpu_isa::avx2; }
// The 256-bit byte dot products of AVX_VNNI: on the avx2-vnni path only, as AVX-512 paths use their own.
inline bool has_avx_vnni() { return active_cpu_isa() == cpu_isa::avx2_vnni; }
inline bool has_avx512() { return active_cpu_isa() >= cpu_isa::avx512; }
inline bool has_avx512_vnni() { return active_cpu_isa() >= cpu_isa::avx512_vnni; }

}  // namespace vramplan::kernels::cpu
