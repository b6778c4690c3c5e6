// Must NOT compile: stories260K's ffn_down rows hold 172 values, not a whole number of Q4_0's
// 32-value blocks.
#include "vramplan/vramplan.hpp"

constexpr auto m = vramplan::presets::stories260k<vramplan::q4_0>::describe();
constexpr auto bytes = vramplan::weight_bytes(m);

int main() {}
