// edge: the program vramplan exists for. Its model is a type, generated at build time by
// `vramplan emit-header` from the GGUF file it ships with; the compiler proves that the model fits
// the board, the arena is a static buffer of exactly the compile-time plan's size, and after
// start-up (loading the weights, building the forward pass) generation touches no heap: this
// program counts every allocation and fails if one happens.
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

#include "../common/count_allocations.hpp"
#include "edge_model.hpp"  // generated: struct edge_model { static constexpr vramplan::model_desc describe(); }
#include "vramplan/io/gguf_model.hpp"
#include "vramplan/io/tokenizer.hpp"
#include "vramplan/plan/fits.hpp"
#include "vramplan/runtime/arena.hpp"
#include "vramplan/runtime/cpu_backend.hpp"
#include "vramplan/runtime/forward_pass.hpp"
#include "vramplan/runtime/model_loader.hpp"
#include "vramplan/target/catalog.hpp"

namespace {
using namespace vramplan;
using vramplan_alloc::allocations;
using vramplan_alloc::counting;

// A small board: 2 MiB of memory for the model, 256 KiB of it kept for the runtime.
struct board {
    static constexpr target_desc value{"edge board (2 MiB)", 2 * targets::MiB, 256 * 1024, 0, 0};
};
constexpr limits edge_limits{.context = 256, .ubatch = 16};
constexpr std::size_t max_new_tokens = edge_limits.context - 16;

// Fails to compile, with the numbers, if the shipped model does not fit the board.
static_assert(fits<edge_model, board, edge_limits>);
constexpr plan edge_plan = compile_time_plan<edge_model, board, edge_limits>;
static_assert(edge_plan.host.total() == 0, "every layer resident: the board has one memory");
alignas(4096) std::byte arena_memory[edge_plan.gpu.total()];  // exactly the plan: no heap, no slack
std::int32_t generated[max_new_tokens];
}  // namespace

int main(int argc, char** argv) {
    const std::string path = argc > 1 ? argv[1] : VRAMPLAN_EDGE_MODEL;
    const int n_new = argc > 2 ? std::atoi(argv[2]) : 32;
    const std::string prompt = argc > 3 ? argv[3] : "Once upon a time";
    try {
        if (n_new < 1 || static_cast<std::size_t>(n_new) > max_new_tokens)
            throw error("tokens to generate: 1 to " + std::to_string(max_new_tokens) + " (the context is " +
                        std::to_string(edge_limits.context) + ")");
        // Start-up: read the file, check it is the model this program was compiled for, load it.
        const auto file = io::gguf_file::open(path);
        model_desc shipped = io::describe(file);
        shipped.name = edge_plan.model.name;
        if (!(shipped == edge_plan.model))
            throw error("'" + path +
                        "' is not the model this program was built for; rebuild it with emit-header from that file");
        const auto tok = io::tokenizer::from_gguf(file);
        const std::vector<std::int32_t> ids = tok.encode(prompt);
        if (ids.size() + static_cast<std::size_t>(n_new) > edge_limits.context)
            throw error("the prompt is " + std::to_string(ids.size()) +
                        " tokens; with the tokens to generate it must fit " + std::to_string(edge_limits.context));
        if (ids.size() > edge_limits.ubatch)
            throw error("the prompt is " + std::to_string(ids.size()) + " tokens; at most 16 fit one pass");
        runtime::cpu_backend backend(sizeof arena_memory);
        runtime::arena<runtime::cpu_backend> a(edge_plan, backend, arena_memory);
        runtime::load_weights(file, a);
        runtime::forward_pass<runtime::cpu_backend> llm(a);
        std::vector<std::int32_t> positions(ids.size());
        for (std::size_t i = 0; i < positions.size(); ++i) positions[i] = static_cast<std::int32_t>(i);

        // Generation: greedy, inside the arena; every allocation from here on is counted.
        counting = true;
        const float* logits = llm.forward(ids, positions);
        std::int32_t at = static_cast<std::int32_t>(ids.size());
        int produced = 0;
        for (; produced < n_new; ++produced, ++at) {
            std::int32_t next = 0;
            for (std::uint64_t v = 1; v < edge_plan.model.shape.n_vocab; ++v)
                if (logits[v] > logits[next]) next = static_cast<std::int32_t>(v);
            if (next == tok.eos()) break;
            generated[produced] = next;
            if (produced + 1 < n_new) logits = llm.forward(std::span(&next, 1), std::span(&at, 1));
        }
        counting = false;

        std::printf("%s%s\n", prompt.c_str(),
                    tok.decode(std::vector<std::int32_t>(generated, generated + produced)).c_str());
        std::printf(
            "arena: %zu bytes, static (the compile-time plan of %s on %s); heap allocations during generation: %ld\n",
            sizeof arena_memory, std::string(edge_plan.model.name).c_str(), std::string(edge_plan.target.name).c_str(),
            allocations.load());
        return allocations == 0 ? 0 : 1;
    } catch (const std::exception& e) {
        counting = false;
        std::fprintf(stderr, "edge: error: %s\n", e.what());
        return 2;
    }
}
