// generate: runs a GGUF Llama model inside a vramplan arena, on the CPU or a CUDA GPU, with the
// layers that do not fit the device budget streamed from pinned host memory.
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <thread>

#include "../common/count_option.hpp"
#include "../common/errors.hpp"
#include "../common/inputs.hpp"
#include "engine.hpp"
#include "vramplan/io/tokenizer.hpp"
#include "vramplan/runtime/cpu_backend.hpp"
#include "vramplan/runtime/forward_pass.hpp"
#include "vramplan/runtime/sampler.hpp"

using namespace vramplan;

namespace {
void progress_bar(std::size_t done, std::size_t total) {
    const int width = 30, filled = static_cast<int>(done * width / (total ? total : 1));
    fmt::print(stderr, "\rloading [{}{}] {}/{} tensors", std::string(filled, '#'), std::string(width - filled, ' '),
               done, total);
    if (done == total) fmt::print(stderr, "\n");
}
}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"generate: run a GGUF Llama model inside a vramplan arena"};
    std::string model_path, prompt = "Once upon a time", kv = "f16", device = "cpu", budget, temp_s, host_experts,
                            weight_layout = "file", offload = "stream";
    std::uint64_t n_predict = 32, ctx = 0, ubatch = 512, seed = 1;
    float temperature = 0.0f, top_p = 0.95f;
    std::uint32_t top_k = 40;
    unsigned threads = std::max(1u, std::thread::hardware_concurrency());
    app.add_option(
           "-m,--model", model_path,
           "GGUF model (llama and Mixtral-layout llama, qwen2, qwen2moe, qwen3, qwen3moe, phi3, gemma2 and gemma3 "
           "run; sliding-window models within their window; others are refused naming what is missing)")
        ->required();
    app.add_option("-p,--prompt", prompt, "prompt")->capture_default_str();
    app.add_option("-n,--n-predict", n_predict, "tokens to generate")->check(cli::count)->capture_default_str();
    app.add_option("--ctx", ctx, "context length (default: prompt + tokens to generate)")->check(cli::count);
    app.add_option("--ubatch", ubatch, "prompt tokens per forward pass")->check(cli::count)->capture_default_str();
    app.add_option("--kv", kv, "KV cache format")
        ->check(CLI::IsMember({"f32", "f16", "q8_0", "q4_0"}))
        ->capture_default_str();
    app.add_option("--device", device, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}))->capture_default_str();
    app.add_option("--weight-layout", weight_layout,
                   "CUDA: how quantized matrices are held on the device: file (the file's blocks) or planes (values "
                   "and scales in separate aligned arrays, read 16 bytes per load)")
        ->check(CLI::IsMember({"file", "planes"}))
        ->capture_default_str();
    app.add_option("--device-budget", budget,
                   "device memory the plan may use (e.g. 2GiB); layers beyond it are streamed (default: CUDA: the "
                   "device's free memory less 64 MiB; "
                   "CPU: the available host memory)");
    app.add_option("--host-experts", host_experts,
                   "keep the routed experts of the first N MoE layers (or all) in host memory, as the planner's "
                   "option, where the CPU computes them (default: as few as the device budget needs)");
    app.add_option("--offload", offload,
                   "layers beyond the device budget: stream (copied to the device each pass) or compute (computed "
                   "by the CPU in host memory, with their KV cache, as llama.cpp's -ngl does)")
        ->check(CLI::IsMember({"stream", "compute"}))
        ->capture_default_str();
    app.add_option("--temp", temperature, "sampling temperature (0: greedy)")
        ->check(CLI::Range(0.0f, 10.0f))
        ->capture_default_str();
    app.add_option("--top-k", top_k, "sample among the k most likely tokens")->check(cli::count)->capture_default_str();
    app.add_option("--top-p", top_p, "sample within this probability mass")
        ->check(CLI::Range(0.0f, 1.0f))
        ->capture_default_str();
    app.add_option("--seed", seed, "random seed for sampling")->check(cli::count)->capture_default_str();
    app.add_option("-t,--threads", threads, "CPU threads (with --device cuda: for the experts in host memory)")
        ->check(cli::count)
        ->check(CLI::Range(1u, 1024u))
        ->capture_default_str();
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e) == 0 ? 0 : 2;
    }
    try {
        const auto file = io::gguf_file::open(model_path);
        model_desc m = io::describe(file, model_path);
        // What this model needs that the runtime lacks is said now, before anything is allocated or
        // loaded, naming the file's architecture.
        try {
            runtime::check_runnable(m);
        } catch (const error& e) {
            throw error(model_path + " (architecture " + file.get_string("general.architecture") + "): " + e.what());
        }
        const auto tok = io::tokenizer::from_gguf(file);
        m.kv = format_by_name(kv);
        const std::vector<std::int32_t> ids = tok.encode(prompt);
        if (ctx == 0) ctx = ids.size() + n_predict;
        if (ids.size() + n_predict > ctx)
            throw error("the prompt (" + std::to_string(ids.size()) + " tokens) and " + std::to_string(n_predict) +
                        " new tokens exceed --ctx " + std::to_string(ctx));
        if (const std::string w = cli::trained_context_warning(m, ctx); !w.empty()) fmt::print(stderr, "{}\n", w);
        const bool cuda = device == "cuda";
        if (weight_layout != "file" && !cuda)
            throw error("--weight-layout " + weight_layout +
                        " chooses the layout of the CUDA backend; the CPU backend chooses its own (drop the option or "
                        "use --device cuda)");
#if !VRAMPLAN_WITH_CUDA
        if (cuda)
            throw error("this build has no CUDA support (nvcc was not found at configure time); use --device cpu");
#endif
        m.activations = format{format_id::f32};
        // Plan for the memory of the device the run uses. On CUDA, 64 MiB of what is free stays
        // unplanned: cudaMalloc rounds the arena up to 2 MiB pages and the driver may take more.
        [[maybe_unused]] constexpr std::uint64_t cuda_headroom = 64ull << 20;
        target_desc target{cuda ? "cuda" : "cpu", 0, 0};
        if (!budget.empty())
            target.capacity = cli::parse_size(budget);
        else if (cuda) {
#if VRAMPLAN_WITH_CUDA
            const std::uint64_t free = generate::cuda_free_bytes();
            target.capacity = free > cuda_headroom ? free - cuda_headroom : 0;
#endif
        } else
            target.capacity = runtime::host_memory_available();
        const limits lim{.context = ctx, .batch = 1, .ubatch = ubatch};
        plan_options opt;
        if (!host_experts.empty()) opt.host_expert_layers = cli::host_expert_layers(host_experts, m);
        opt.offload = offload == "compute" ? offload_mode::compute : offload_mode::stream;
        const plan p = plan_auto_offload(m, target, lim, opt);
        if (!p.fits())
            throw error("the model does not fit a device budget of " + to_string(bytes{target.capacity}) +
                        " even with every layer streamed (needs " + to_string(bytes{p.needed()}) +
                        "); raise --device-budget or shorten --ctx");

        std::unique_ptr<generate::engine> eng;
        const generate::progress_fn progress = isatty(STDERR_FILENO) ? &progress_bar : nullptr;
        if (cuda) {
#if VRAMPLAN_WITH_CUDA
            eng = generate::make_cuda_engine(file, p, threads, progress, weight_layout == "planes");
#endif
        } else {
            eng = generate::make_cpu_engine(file, p, threads, progress);
        }
        runtime::sampler sampler(m.shape.n_vocab,
                                 {.temperature = temperature, .top_k = top_k, .top_p = top_p, .seed = seed});

        using clock = std::chrono::steady_clock;
        fmt::print("{}", prompt);
        std::fflush(stdout);
        const auto t0 = clock::now();
        const float* logits = nullptr;
        for (std::size_t at = 0; at < ids.size(); at += p.lim.tokens_per_pass()) {
            const std::size_t n = std::min<std::size_t>(p.lim.tokens_per_pass(), ids.size() - at);
            std::vector<std::int32_t> pos(n);
            for (std::size_t i = 0; i < n; ++i) pos[i] = static_cast<std::int32_t>(at + i);
            logits = eng->forward(std::span(ids.data() + at, n), pos);
        }
        const auto t1 = clock::now();
        std::vector<std::int32_t> out;
        std::int32_t position = static_cast<std::int32_t>(ids.size());
        for (std::uint64_t i = 0; i < n_predict; ++i) {
            const std::int32_t next = sampler.pick(logits);
            if (next == tok.eos()) break;
            out.push_back(next);
            const std::string piece = tok.piece(next);
            fmt::print("{}", piece);
            std::fflush(stdout);
            if (i + 1 < n_predict) logits = eng->forward(std::span(&next, 1), std::span(&position, 1));
            ++position;
        }
        const auto t2 = clock::now();
        const double prefill_s = std::chrono::duration<double>(t1 - t0).count(),
                     decode_s = std::chrono::duration<double>(t2 - t1).count();
        fmt::print("\n\n");
        fmt::print(
            "plan: {} of {} device budget: weights {}, KV {} ({}), activations {}, staging {}; {} of {} layers "
            "resident{}{}{}\n",
            to_string(bytes{p.gpu.total()}), to_string(bytes{target.capacity}), to_string(bytes{p.gpu.weights.bytes}),
            to_string(bytes{p.gpu.kv.bytes}), name(p.model.kv), to_string(bytes{p.gpu.activations.bytes}),
            to_string(bytes{p.gpu.staging.bytes}), p.gpu_layers, m.shape.n_layer,
            p.host_computed_layers() ? fmt::format(", {} computed by the CPU", p.host_computed_layers())
                                     : std::string(),
            p.host_expert_layer_count()
                ? fmt::format(", the experts of {} layers in host memory", p.host_expert_layer_count())
                : std::string(),
            p.host.total() ? ", " + to_string(bytes{p.host.total()}) + " in the host tier" : std::string());
        fmt::print("prefill: {} tokens in {:.3f} s ({:.1f} tokens/s)\n", ids.size(), prefill_s,
                   ids.size() / std::max(prefill_s, 1e-9));
        fmt::print("decode: {} tokens in {:.3f} s ({:.1f} tokens/s) on {}\n", out.size(), decode_s,
                   out.size() / std::max(decode_s, 1e-9), device);
        return 0;
    } catch (const std::exception& e) {
        return cli::report_failure("generate", e);
    }
}
