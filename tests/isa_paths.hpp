// The CPU kernel paths this machine can run, portable first: a test repeats its checks on each
// (under a cpu_isa_scope) and names the path in its failure message. Paths the processor lacks are
// not run, and the test says which were skipped.
#pragma once

#include <doctest/doctest.h>

#include <vector>

#include "vramplan/kernels/cpu/isa.hpp"

namespace test_data {

inline std::vector<vramplan::kernels::cpu::cpu_isa> cpu_paths() {
    using vramplan::kernels::cpu::cpu_isa;
    std::vector<cpu_isa> out;
    for (int i = 0; i < static_cast<int>(cpu_isa::COUNT); ++i) {
        const auto isa = static_cast<cpu_isa>(i);
        if (vramplan::kernels::cpu::runs_cpu_isa(isa))
            out.push_back(isa);
        else
            MESSAGE("skipped: this processor lacks the " << vramplan::kernels::cpu::cpu_isa_name(isa) << " path");
    }
    return out;
}

}  // namespace test_data
