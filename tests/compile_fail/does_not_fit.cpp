// Must NOT compile: Llama-3.1-70B in Q4_0 at 8192 tokens needs 43,063,216,384 bytes on a 24 GiB
// (25,769,803,776-byte) RTX 4090, a shortfall of 17,293,412,608. The test checks that the
// compiler's error carries those three numbers.
#include "vramplan/vramplan.hpp"

static_assert(vramplan::fits<vramplan::presets::llama31_70b<vramplan::q4_0, vramplan::f16>, vramplan::targets::rtx_4090,
                             vramplan::limits{.context = 8192}>);

int main() {}
