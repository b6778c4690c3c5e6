// Runs a test model (test_model.hpp) through the CPU forward pass (or a backend that stands in for
// a device, device_double.hpp) and measures how far its logits are from the naive double-precision
// reference: the harness of every reference test.
#pragma once

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "temp_path.hpp"
#include "test_model.hpp"
#include "vramplan/io/gguf_model.hpp"
#include "vramplan/plan/plan.hpp"
#include "vramplan/runtime/arena.hpp"
#include "vramplan/runtime/cpu_backend.hpp"
#include "vramplan/runtime/forward_pass.hpp"
#include "vramplan/runtime/model_loader.hpp"

namespace reference_run {

using namespace vramplan;

// A test model written to a temporary GGUF file, opened and described; the file goes with it.
struct written_model {
    std::string path;
    test_model::weights weights;
    io::gguf_file file;
    model_desc m;
    written_model(const std::string& name, const test_model::spec& s, std::uint64_t seed)
        : path(test_temp_path(name)),
          weights(test_model::write(path, s, seed)),
          file(io::gguf_file::open(path)),
          m(io::describe(file, "test")) {}
    written_model(const written_model&) = delete;
    written_model& operator=(const written_model&) = delete;
    ~written_model() { std::filesystem::remove(path); }
};

// A tensor's bytes as the file stores them.
inline std::vector<std::uint8_t> file_bytes(const io::gguf_file& file, const std::string& tensor) {
    const io::gguf_tensor_info* info = file.find_tensor(tensor);
    std::vector<std::uint8_t> out(info->bytes);
    file.read_tensor(*info, reinterpret_cast<std::byte*>(out.data()));
    return out;
}

struct run_result {
    std::vector<std::vector<float>> logits;  // one row per position
    std::uint64_t streamed_copies = 0;
    std::uint64_t gpu_layers = 0;
    std::uint64_t host_expert_layers = 0;
    int host_weight_products = 0, device_expert_products = 0;  // a device_double's counts
};

// Prefill `prefill` tokens in one pass (all logits), then decode the rest one at a time, within a
// device budget.
template <class Backend = runtime::cpu_backend>
run_result run(const std::string& path, const std::vector<std::int32_t>& tokens, std::size_t prefill,
               std::uint64_t device_budget, format kv, plan_options options = {}) {
    const auto file = io::gguf_file::open(path);
    model_desc m = io::describe(file, "test");
    m.kv = kv;
    const limits lim{.context = 64, .batch = 1, .ubatch = 8, .all_logits = true};
    const target_desc t{"cpu", device_budget, 0};
    // Resident layers as many as fit, unless the options name them.
    const plan p = options.gpu_layers == all_gpu_layers ? plan_auto_offload(m, t, lim, options)
                                                        : plan_inference(m, t, lim, options);
    Backend backend(device_budget, 2);
    runtime::arena<Backend> a(p, backend);
    runtime::load_weights(file, a);
    runtime::forward_pass<Backend> llm(a, 2);
    run_result r;
    r.gpu_layers = p.gpu_layers;
    r.host_expert_layers = p.host_expert_layer_count();
    std::vector<std::int32_t> pos(tokens.size());
    for (std::size_t i = 0; i < pos.size(); ++i) pos[i] = static_cast<std::int32_t>(i);
    const float* lg = llm.forward(std::span(tokens.data(), prefill), std::span(pos.data(), prefill), true);
    for (std::size_t t = 0; t < prefill; ++t)
        r.logits.emplace_back(lg + t * m.shape.n_vocab, lg + (t + 1) * m.shape.n_vocab);
    for (std::size_t t = prefill; t < tokens.size(); ++t) {
        lg = llm.forward(std::span(tokens.data() + t, 1), std::span(pos.data() + t, 1));
        r.logits.emplace_back(lg, lg + m.shape.n_vocab);
    }
    r.streamed_copies = llm.streamer().copies();
    if constexpr (requires { backend.host_weight_products; }) {
        r.host_weight_products = backend.host_weight_products;
        r.device_expert_products = backend.expert_products;
    }
    return r;
}

// How far one set of logits (rows per position) is from the double-precision reference, and the
// reference's largest magnitude: a forward pass in f32 may differ by rounding relative to that.
struct logit_gap {
    double worst = 0, scale = 0;
    bool within_rounding() const { return worst <= 1e-4 * (1 + scale); }
    bool far_beyond_rounding() const { return worst > 100 * 1e-4 * (1 + scale); }
};
template <class Rows>
logit_gap gap(const Rows& got, const std::vector<std::vector<double>>& ref) {
    logit_gap g;
    for (std::size_t t = 0; t < ref.size(); ++t)
        for (std::size_t v = 0; v < ref[t].size(); ++v) {
            g.worst = std::max(g.worst, std::fabs(static_cast<double>(got[t][v]) - ref[t][v]));
            g.scale = std::max(g.scale, std::fabs(ref[t][v]));
        }
    return g;
}

}  // namespace reference_run
