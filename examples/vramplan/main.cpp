// vramplan: will this model fit this GPU, and if not, what to change. Exit codes: 0 fits,
// 1 does not fit, 2 usage or input error.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <fstream>
#include <iostream>

#include "../common/count_option.hpp"
#include "../common/errors.hpp"
#include "../common/inputs.hpp"
#include "emit_engine.hpp"
#include "emit_header.hpp"
#include "report.hpp"
#include "vramplan/model/training.hpp"
#include "vramplan/plan/multi_gpu.hpp"
#include "vramplan/plan/training_fit.hpp"

using namespace vramplan;

namespace {

struct plan_args {
    std::string model, gpu, weights, expert_weights, kv, attention = "fused", gpu_layers = "all", host_ram, reserve,
                                                         svg, emit, split, host_experts, host_bandwidth,
                                                         offload = "stream";
    std::uint64_t ctx = 4096, batch = 1, ubatch = 512, gpus = 1, tp = 1, nodes = 1;
    bool json = false;
};

void add_plan_options(CLI::App* c, plan_args& a) {
    c->add_option("-m,--model", a.model, "preset name, .gguf file (header only) or Hugging Face config.json")
        ->required();
    c->add_option("-g,--gpu", a.gpu,
                  "GPU name (see `vramplan gpus`), a size such as 12GiB, local[:N] for this machine's GPU N, or a list "
                  "A,B,... of mixed GPUs for pipeline parallelism")
        ->required();
    c->add_option("--ctx", a.ctx, "context length per sequence")->check(cli::count)->capture_default_str();
    c->add_option("--batch", a.batch, "sequences decoded together")->check(cli::count)->capture_default_str();
    c->add_option("--ubatch", a.ubatch, "tokens per forward pass (prefill micro-batch)")
        ->check(cli::count)
        ->capture_default_str();
    c->add_option("--weights", a.weights, "weight format for every matrix (f16, q8_0, q4_0, q4_k, ...)");
    c->add_option("--expert-weights", a.expert_weights,
                  "format of the routed experts' matrices, after --weights (gpt-oss's release: mxfp4)");
    c->add_option("--kv", a.kv, "KV cache format (f16, bf16, q8_0, q4_0, fp8, f32)");
    c->add_option("--attention", a.attention, "fused or naive attention kernel")
        ->check(CLI::IsMember({"fused", "naive"}))
        ->capture_default_str();
    c->add_option("--gpu-layers", a.gpu_layers, "layers kept on the GPU: a number, all, or auto")
        ->capture_default_str();
    c->add_option("--offload", a.offload,
                  "what happens to layers left in host memory: stream (copied to the GPU each pass) or compute "
                  "(computed by the CPU, with their KV cache, as llama.cpp's -ngl does)")
        ->check(CLI::IsMember({"stream", "compute"}))
        ->capture_default_str();
    c->add_option("--host-ram", a.host_ram, "pinned host memory available for offloaded layers");
    c->add_option("--host-experts", a.host_experts,
                  "keep the routed experts of the first N MoE layers (or all) in host memory, computed by the CPU");
    c->add_option("--host-bandwidth", a.host_bandwidth,
                  "host memory bandwidth for experts in host memory, e.g. 60GB (per second; default 60GB)");
    c->add_option("--reserve", a.reserve, "override the GPU's runtime reserve (CUDA context, workspaces)");
    c->add_option("--split", a.split,
                  "with --gpu A,B,...: each GPU's share of the layers, e.g. 3,1 (default: their budgets)");
    c->add_option("--nodes", a.nodes,
                  "machines in a pipeline, each running --tp K tensor-parallel GPUs (as vLLM on a Ray cluster)")
        ->check(CLI::Range(1, 64))
        ->capture_default_str();
    c->add_option("--gpus", a.gpus, "identical GPUs for pipeline parallelism")
        ->check(CLI::Range(1, 64))
        ->capture_default_str();
    c->add_option("--tp", a.tp,
                  "tensor-parallel factor: each GPU holds 1/K of every layer (the plan shown is one GPU's)")
        ->check(CLI::Range(1, 64))
        ->capture_default_str();
    c->add_flag("--json", a.json, "print the plan as JSON");
    c->add_option("--svg", a.svg, "draw the plan as an SVG picture into this file");
    c->add_option("--emit", a.emit, "print only the command or configuration that realizes the plan in this engine")
        ->check(CLI::IsMember({"llama.cpp", "vllm", "ollama"}));
}

struct inputs {
    cli::model_choice model;
    target_desc gpu;                    // the only GPU, or the first of a pipeline
    std::vector<target_desc> devices;   // every GPU of a pipeline (one entry when there is none)
    std::vector<std::uint64_t> layers;  // layers per pipeline device
    std::optional<targets::local_gpu> local;
    limits lim;
    plan_options opt;
    bool auto_layers = false;
};

inputs resolve(const plan_args& a) {
    inputs in;
    in.model = cli::load_model(a.model, a.weights, a.kv, a.expert_weights);
    if (a.tp > 1) {
        in.model.desc = tensor_parallel_shard(in.model.desc, a.tp);
        in.model.name += " (1/" + std::to_string(a.tp) + " tensor-parallel shard)";
        in.model.desc.name = cli::intern(in.model.name);
    }
    if (a.nodes > 1 && a.gpus > 1) throw error("--nodes N makes an N-stage pipeline of machines; leave out --gpus");
    const auto names = cli::split_list(a.gpu, "--gpu");
    if (a.nodes > 1 && names.size() > 1) throw error("--nodes N plans machines of one GPU type; give one --gpu");
    if (names.size() > 1 && a.gpus > 1) throw error("--gpu A,B,... names every GPU of the pipeline; leave out --gpus");
    if (names.size() == 1 && !a.split.empty())
        throw error("--split shares layers between the GPUs of --gpu A,B,...; name two or more");
    for (const auto& n : names) {
        auto g = cli::load_gpu_input(n, a.reserve);
        in.devices.push_back(g.desc);
        if (names.size() == 1) in.local = std::move(g.local);
    }
    in.gpu = in.devices.front();
    if (names.size() == 1 && a.gpus > 1) in.devices.assign(a.gpus, in.gpu);
    if (a.nodes > 1) in.devices.assign(a.nodes, in.gpu);  // one pipeline stage per machine
    in.lim = limits{a.ctx, a.batch, a.ubatch,
                    a.attention == "naive" ? attention_kernel::naive : attention_kernel::fused, false};
    validate(in.lim);
    if (a.gpu_layers == "auto")
        in.auto_layers = true;
    else if (a.gpu_layers != "all") {
        if (a.gpu_layers.empty() || a.gpu_layers.size() > 6 ||
            a.gpu_layers.find_first_not_of("0123456789") != std::string::npos)
            throw error("--gpu-layers takes a number of layers, 'all' or 'auto', not '" + a.gpu_layers + "'");
        in.opt.gpu_layers = std::stoull(a.gpu_layers);  // at most 6 digits: cannot overflow
        if (in.opt.gpu_layers > in.model.desc.shape.n_layer)
            throw error("--gpu-layers " + a.gpu_layers + " exceeds the model's " +
                        std::to_string(in.model.desc.shape.n_layer) + " layers");
    }
    if (!a.host_ram.empty()) in.opt.host_capacity = cli::parse_size(a.host_ram);
    in.opt.offload = a.offload == "compute" ? offload_mode::compute : offload_mode::stream;
    if (!a.host_experts.empty()) in.opt.host_expert_layers = cli::host_expert_layers(a.host_experts, in.model.desc);
    if (!a.host_bandwidth.empty()) {
        std::string b = a.host_bandwidth;
        if (b.size() > 2 && b.ends_with("/s")) b.resize(b.size() - 2);
        const std::uint64_t bw = cli::parse_size(b);
        if (bw == 0) throw error("--host-bandwidth must be more than 0 bytes per second");
        for (auto& d : in.devices) d.host_bandwidth = bw;
        in.gpu.host_bandwidth = bw;
    }
    return in;
}

int run_plan(const plan_args& a, bool one_line, bool advise_only) {
    const inputs in = resolve(a);
    auto s = cli::summarize(in.model.desc, in.gpu, in.lim, in.opt, in.auto_layers);
    s.local = in.local;
    if (!a.svg.empty()) {
        std::ofstream f(a.svg);
        f << cli::plan_svg(s.p);
        if (!f) throw error("cannot write '" + a.svg + "'");
    }
    bool fits = s.p.fits();
    std::vector<device_share> pipeline;
    const bool piped = in.devices.size() > 1;
    std::string devices_name(in.gpu.name);
    if (piped) {
        const std::uint64_t L = in.model.desc.shape.n_layer;
        std::vector<std::uint64_t> layers;
        if (!a.split.empty()) {
            std::vector<std::uint64_t> shares;
            for (const auto& x : cli::split_list(a.split, "--split")) {
                if (x.empty() || x.size() > 6 || x.find_first_not_of("0123456789") != std::string::npos)
                    throw error("--split takes whole-number shares such as 3,1, not '" + x + "'");
                shares.push_back(std::stoull(x));
            }
            layers = pipeline_layers(L, in.devices, shares);
        } else if (a.gpus > 1 || a.nodes > 1) {
            const std::uint64_t n = in.devices.size();
            for (std::uint64_t d = 0; d < n; ++d) layers.push_back((d + 1) * L / n - d * L / n);
        } else {
            layers = pipeline_layers(L, in.devices);
        }
        pipeline = plan_pipeline(in.model.desc, in.devices, in.lim, layers, in.opt);
        fits = true;
        for (const auto& d : pipeline) fits = fits && d.fits();
        const bool mixed = a.gpus == 1 && a.nodes == 1;
        devices_name = a.nodes > 1
                           ? fmt::format("{} nodes of {} x {} (tensor parallel in each)", a.nodes, a.tp, in.gpu.name)
                       : a.gpus > 1 ? fmt::format("{} x {}", a.gpus, in.gpu.name)
                                    : std::string();
        for (std::size_t d = 0; mixed && d < in.devices.size(); ++d)
            devices_name += (d ? " + " : "") + std::string(in.devices[d].name);
    }
    if (!a.emit.empty()) {
        std::vector<std::uint64_t> layers;
        std::uint64_t largest = 0;
        for (const auto& d : pipeline) {
            layers.push_back(d.n_layers);
            largest = std::max(largest, d.needed());
        }
        fmt::print("{}", cli::emit_engine({a.emit, a.model, in.devices.size(), a.tp, layers,
                                           piped && a.gpus == 1 && a.nodes == 1, a.nodes, largest},
                                          s.p));
        return fits ? 0 : 1;
    }
    if (a.json) {
        auto j = cli::plan_json(s);
        j["notes"] = in.model.notes;
        j["tensor_parallel"] = a.tp;
        if (in.local) j["local_device"] = cli::local_gpu_json(*in.local);
        if (piped) {
            j["fits"] = fits;
            auto& devs = j["devices"] = nlohmann::json::array();
            for (std::size_t k = 0; k < pipeline.size(); ++k) {
                const auto& d = pipeline[k];
                devs.push_back({{"gpu", std::string(in.devices[k].name)},
                                {"capacity_bytes", d.capacity},
                                {"first_layer", d.first_layer},
                                {"n_layers", d.n_layers},
                                {"weights_bytes", d.weights},
                                {"kv_bytes", d.kv},
                                {"activations_bytes", d.activations},
                                {"reserve_bytes", d.reserve},
                                {"needed_bytes", d.needed()},
                                {"fits", d.fits()}});
            }
        }
        std::cout << j.dump(2) << "\n";
    } else if (one_line) {
        // stdout stays one line for scripts; the warning goes to stderr.
        if (const std::string w = cli::trained_context_warning(in.model.desc, in.lim.context); !w.empty())
            fmt::print(stderr, "{}\n", w);
        if (piped) {
            // The tightest device: the least to spare, or the most short.
            std::size_t worst = 0;
            auto spare = [&](std::size_t k) {
                return static_cast<double>(pipeline[k].capacity) - static_cast<double>(pipeline[k].needed());
            };
            for (std::size_t k = 1; k < pipeline.size(); ++k)
                if (spare(k) < spare(worst)) worst = k;
            fmt::print("{}: {} on {} (pipeline), tightest device {} ({}) needs {} of {}\n",
                       fits ? "fits" : "does not fit", in.model.name, devices_name, worst, in.devices[worst].name,
                       cli::human(pipeline[worst].needed()), cli::human(pipeline[worst].capacity));
        } else if (fits) {
            fmt::print("fits: {} on {} needs {} of {} ({} free){}\n", in.model.name, in.gpu.name,
                       cli::human(s.p.needed()), cli::human(in.gpu.capacity),
                       cli::human(in.gpu.capacity - s.p.needed()), cli::unplanned_activations_suffix(s.p));
        } else {
            fmt::print("does not fit: {} on {} needs {}, budget {}, short by {}{}\n", in.model.name, in.gpu.name,
                       cli::human(s.p.needed()), cli::human(in.gpu.capacity), cli::human(s.p.shortfall()),
                       cli::unplanned_activations_suffix(s.p));
        }
    } else if (advise_only) {
        fmt::print("{} on {}: needs {} of {} ({})\n\n", in.model.name, in.gpu.name, cli::human(s.p.needed()),
                   cli::human(in.gpu.capacity),
                   fits ? "fits" : fmt::format("short by {}", cli::human(s.p.shortfall())));
        if (const std::string w = cli::trained_context_warning(in.model.desc, in.lim.context); !w.empty())
            fmt::print("{}\n\n", w);
        cli::print_advice_table(s);
    } else {
        for (const auto& n : in.model.notes) fmt::print("note    {}\n", n);
        cli::print_plan(s);
        if (piped) {
            fmt::print("\npipeline over {}:\n  {:<8} {:<16} {:>10} {:>12} {:>12} {:>12} {:>12} {:>12}  fits\n",
                       devices_name, "device", "gpu", "layers", "weights", "KV", "activations", "needed", "capacity");
            for (std::size_t d = 0; d < pipeline.size(); ++d) {
                const auto& x = pipeline[d];
                fmt::print("  {:<8} {:<16} {:>10} {:>12} {:>12} {:>12} {:>12} {:>12}  {}\n", d, in.devices[d].name,
                           fmt::format("{}-{}", x.first_layer, x.first_layer + x.n_layers - 1), cli::human(x.weights),
                           cli::human(x.kv), cli::human(x.activations), cli::human(x.needed()), cli::human(x.capacity),
                           x.fits() ? "yes" : "no");
            }
        }
    }
    return fits ? 0 : 1;
}

struct train_args {
    std::string model, gpu, optimizer = "adamw", reserve, weights, qlora_format;
    std::uint64_t seq = 2048, global_batch = 1, lora = 0, qlora = 0;
    bool checkpointing = false, fp32 = false, json = false;
};

int run_train(const train_args& a) {
    const auto model = cli::load_model(a.model, a.weights, "");
    const auto gpu = cli::load_gpu(a.gpu, a.reserve);
    training_config c;
    c.opt = a.optimizer == "sgd"            ? optimizer::sgd
            : a.optimizer == "sgd-momentum" ? optimizer::sgd_momentum
            : a.optimizer == "adamw8bit"    ? optimizer::adamw_8bit
                                            : optimizer::adamw;
    c.prec = a.fp32 ? precision::fp32 : precision::mixed;
    c.seq = a.seq;
    c.checkpointing = a.checkpointing;
    if (a.lora && a.qlora) throw error("give --lora or --qlora, not both");
    c.lora_rank = a.lora ? a.lora : a.qlora;
    c.qlora = a.qlora != 0;
    if (!a.qlora_format.empty()) {
        if (!c.qlora) throw error("--qlora-format chooses the frozen base's format under --qlora R; give --qlora too");
        c.qlora_base = format_by_name(a.qlora_format);
    }
    c.micro_batch = 1;
    const auto one = training_memory(model.desc, c);
    const auto fit = fit_micro_batch(model.desc, c, gpu, a.global_batch);
    c.micro_batch = fit.micro_batch ? fit.micro_batch : 1;
    const auto f = training_memory(model.desc, c);
    const bool fits = fit.micro_batch > 0;
    if (a.json) {
        nlohmann::json j{{"model", model.name},
                         {"gpu", std::string(gpu.name)},
                         {"fits", fits},
                         {"trainable_params", f.trainable_params},
                         {"weights_bytes", f.weights},
                         {"gradients_bytes", f.gradients},
                         {"optimizer_bytes", f.optimizer_state},
                         {"master_weights_bytes", f.master_weights},
                         {"activations_bytes", f.activations},
                         {"activations_per_sequence_bytes", one.activations},
                         {"reserve_bytes", gpu.reserve},
                         {"needed_bytes", f.total() + gpu.reserve},
                         {"capacity_bytes", gpu.capacity},
                         {"micro_batch", fit.micro_batch},
                         {"accumulation_steps", fit.accumulation_steps}};
        if (c.qlora) j["qlora_format"] = name(c.qlora_base);
        std::cout << j.dump(2) << "\n";
        return fits ? 0 : 1;
    }
    fmt::print("training {} on {} ({} {}, sequence {}{})\n", model.name, gpu.name,
               a.lora    ? "LoRA r=" + std::to_string(a.lora)
               : a.qlora ? "QLoRA r=" + std::to_string(a.qlora) + " over a " + name(c.qlora_base) + " base"
                         : "full fine-tuning",
               a.fp32 ? "fp32" : "mixed precision", a.seq, a.checkpointing ? ", activation checkpointing" : "");
    fmt::print("  trainable parameters  {:>20}\n", with_separators(f.trainable_params));
    fmt::print(
        "  weights               {:>20}\n  gradients             {:>20}\n  optimizer state       {:>20}\n  fp32 master "
        "weights   {:>20}\n",
        cli::human(f.weights), cli::human(f.gradients), cli::human(f.optimizer_state), cli::human(f.master_weights));
    fmt::print("  activations / sequence{:>20}\n  reserve               {:>20}\n", cli::human(one.activations),
               cli::human(gpu.reserve));
    if (fits) {
        fmt::print("  largest micro-batch that fits: {} sequences ({} with it, of {})\n", fit.micro_batch,
                   cli::human(f.total() + gpu.reserve), cli::human(gpu.capacity));
        fmt::print("  gradient accumulation: {} steps for a global batch of {}\n", fit.accumulation_steps,
                   a.global_batch);
    } else {
        fmt::print("  does not fit: one sequence needs {} of {}\n", cli::human(one.total() + gpu.reserve),
                   cli::human(gpu.capacity));
        fmt::print("  try: {}{}{}a shorter --seq, or a larger GPU\n", a.checkpointing ? "" : "--checkpointing, ",
                   c.lora_rank ? "" : "--lora 16 or --qlora 16, ",
                   c.opt == optimizer::adamw ? "--optimizer adamw8bit, " : "");
    }
    return fits ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"vramplan: plan GPU memory for LLM inference and training before you download or buy"};
    app.require_subcommand(1);
    plan_args pa;
    auto* plan_cmd =
        app.add_subcommand("plan", "memory map per tier, verdict, largest context, GPU layers, decode speed, advice");
    add_plan_options(plan_cmd, pa);
    plan_args ca;
    auto* check_cmd = app.add_subcommand("check", "one-line verdict for scripts (exit 0 fits, 1 does not)");
    add_plan_options(check_cmd, ca);
    plan_args aa;
    auto* advise_cmd = app.add_subcommand("advise", "every out-of-memory remedy with the bytes it saves");
    add_plan_options(advise_cmd, aa);
    train_args ta;
    auto* train_cmd = app.add_subcommand("train", "training footprint, largest micro-batch and gradient accumulation");
    train_cmd->add_option("-m,--model", ta.model, "preset, .gguf or config.json")->required();
    train_cmd->add_option("-g,--gpu", ta.gpu, "GPU name or size")->required();
    train_cmd->add_option("--seq", ta.seq, "tokens per sequence")->check(cli::count)->capture_default_str();
    train_cmd->add_option("--global-batch", ta.global_batch, "sequences per optimizer step")
        ->check(cli::count)
        ->capture_default_str();
    train_cmd->add_option("--optimizer", ta.optimizer, "adamw, adamw8bit, sgd or sgd-momentum")
        ->check(CLI::IsMember({"adamw", "adamw8bit", "sgd", "sgd-momentum"}))
        ->capture_default_str();
    train_cmd->add_option("--lora", ta.lora, "LoRA rank (frozen 16-bit base)")->check(cli::count);
    train_cmd->add_option("--qlora", ta.qlora, "QLoRA rank (frozen 4-bit base: NF4 with double quantization)")
        ->check(cli::count);
    train_cmd->add_option(
        "--qlora-format", ta.qlora_format,
        "the frozen base's Linear layers under --qlora: nf4-dq (default), nf4, fp4, fp4-dq, int4_g64, ...");
    train_cmd->add_flag("--checkpointing", ta.checkpointing, "activation checkpointing");
    train_cmd->add_flag("--fp32", ta.fp32, "fp32 training instead of mixed precision");
    train_cmd->add_option("--reserve", ta.reserve, "override the GPU's runtime reserve");
    train_cmd->add_flag("--json", ta.json, "print JSON");
    auto* models_cmd = app.add_subcommand("models", "built-in model presets");
    auto* gpus_cmd = app.add_subcommand("gpus", "built-in GPUs, or with --local this machine's");
    bool gpus_local = false, gpus_json = false;
    gpus_cmd->add_flag("--local", gpus_local, "the NVIDIA GPUs of this machine, from the driver (NVML)");
    gpus_cmd->add_flag("--json", gpus_json, "with --local: print JSON");
    std::string gguf_path, out_path, type_name;
    auto* emit_cmd = app.add_subcommand("emit-header", "write a C++ header declaring a GGUF model as a vramplan type");
    emit_cmd->add_option("-m,--model", gguf_path, "GGUF file")->required();
    emit_cmd->add_option("-o,--output", out_path, "header to write")->required();
    emit_cmd->add_option("--name", type_name, "C++ type name (default: from the file name)");

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        const int rc = app.exit(e);
        return rc == 0 ? 0 : 2;
    }
    try {
        if (*plan_cmd) return run_plan(pa, false, false);
        if (*check_cmd) return run_plan(ca, true, false);
        if (*advise_cmd) return run_plan(aa, false, true);
        if (*train_cmd) return run_train(ta);
        if (*models_cmd) {
            fmt::print("{:<18} {:>16} {:>7} {:>6} {:>5} {:>8} {:>7} {:>8}  aliases\n", "model", "parameters", "layers",
                       "heads", "kv", "head_dim", "vocab", "context");
            for (const auto& e : presets::catalog)
                fmt::print("{:<18} {:>16} {:>7} {:>6} {:>5} {:>8} {:>7} {:>8}  {}\n", e.name,
                           with_separators(e.published_params), e.shape.n_layer, e.shape.n_head, e.shape.n_head_kv,
                           e.shape.head_dim, e.shape.n_vocab, e.shape.n_ctx_train, e.aliases);
            return 0;
        }
        if (*gpus_cmd && gpus_local) {
            const auto all = targets::local_gpus();
            if (all.empty()) throw error("the NVIDIA driver reports no GPU in this machine");
            if (gpus_json) {
                nlohmann::json j;
                auto& devs = j["devices"] = nlohmann::json::array();
                for (const auto& g : all) devs.push_back(cli::local_gpu_json(g));
                std::cout << j.dump(2) << "\n";
                return 0;
            }
            fmt::print("{:<6} {:<28} {:>12} {:>12} {:>4}  processes holding memory\n", "index", "gpu", "total", "free",
                       "cc");
            for (const auto& g : all) {
                std::string procs;
                for (const auto& q : g.processes)
                    procs += fmt::format("{}pid {} {} {}", procs.empty() ? "" : ", ", q.pid,
                                         q.name.empty() ? "?" : q.name, cli::human(q.bytes));
                fmt::print("{:<6} {:<28} {:>12} {:>12} {:>4}  {}\n", g.index, g.name, cli::human(g.total_bytes),
                           cli::human(g.free_bytes), fmt::format("{}.{}", g.cc_major, g.cc_minor),
                           procs.empty() ? "none" : procs);
            }
            return 0;
        }
        if (*gpus_cmd) {
            fmt::print("{:<22} {:>12} {:>10} {:>12} {:>10} {:>4}  aliases\n", "gpu", "memory", "reserve", "bandwidth",
                       "host link", "cc");
            for (const auto& t : targets::catalog)
                fmt::print(
                    "{:<22} {:>12} {:>10} {:>12} {:>10} {:>4}  {}{}\n", t.name, cli::human(t.capacity),
                    cli::human(t.reserve),
                    t.memory_bandwidth ? fmt::format("{} GB/s", t.memory_bandwidth / 1'000'000'000)
                                       : std::string("varies"),
                    t.link_bandwidth ? fmt::format("{} GB/s", t.link_bandwidth / 1'000'000'000) : std::string("varies"),
                    fmt::format("{}.{}", t.cc_major, t.cc_minor), t.aliases, t.unified ? " (unified memory)" : "");
            return 0;
        }
        if (*emit_cmd) {
            if (!cli::ends_with(gguf_path, ".gguf")) throw error("emit-header reads a .gguf file");
            const auto model = cli::load_model(gguf_path, "", "");
            std::string name = type_name;
            if (name.empty()) {
                name = gguf_path.substr(gguf_path.find_last_of('/') + 1);
                name = cli::identifier(name.substr(0, name.size() - 5));
            }
            std::ofstream f(out_path);
            f << cli::emit_header(model.desc, name, gguf_path.substr(gguf_path.find_last_of('/') + 1));
            if (!f) throw error("cannot write '" + out_path + "'");
            fmt::print("wrote {} declaring `{}`\n", out_path, name);
            return 0;
        }
    } catch (const std::exception& e) {
        return cli::report_failure("vramplan", e);
    }
    return 2;
}
