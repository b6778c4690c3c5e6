#include <cstdio>

#include <vramplan/vramplan.hpp>

using model = vramplan::presets::llama3_8b<vramplan::q4_0, vramplan::f16>;
static_assert(vramplan::fits<model, vramplan::targets::rtx_4060_8gb, vramplan::limits{.context = 8192}>);

int main() {
    const auto p =
        vramplan::compile_time_plan<model, vramplan::targets::rtx_4060_8gb, vramplan::limits{.context = 8192}>;
    std::printf("Llama-3-8B fits: %s of %s\n", vramplan::to_string(vramplan::bytes{p.needed()}).c_str(),
                vramplan::to_string(vramplan::bytes{p.budget()}).c_str());
}
