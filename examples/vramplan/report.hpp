// How the vramplan command shows a plan: a memory map per tier, a one-line composition bar, a
// JSON document with stable field names (documented in README.md) and an SVG picture.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "../common/inputs.hpp"
#include "vramplan/format/bytes.hpp"
#include "vramplan/plan/advice.hpp"
#include "vramplan/plan/best_fit.hpp"
#include "vramplan/plan/buffers.hpp"
#include "vramplan/plan/plan.hpp"

namespace vramplan::cli {

inline const char* kind_name(buffer_kind k) {
    switch (k) {
        case buffer_kind::weights: return "weights";
        case buffer_kind::kv: return "kv";
        case buffer_kind::activations: return "activations";
        case buffer_kind::staging: return "staging";
    }
    return "?";
}
inline const char* tier_name(tier t) { return t == tier::gpu ? "gpu" : "host"; }

inline std::string human(std::uint64_t b) { return to_string(bytes{b}); }

// A range of schedule steps (ops of the plan's forward graph) as the memory map prints it.
inline std::string step_range(std::uint16_t first, std::uint16_t last) {
    return first == last ? fmt::format("{}", first) : fmt::format("{}-{}", first, last);
}

struct plan_summary {
    plan p;
    std::optional<targets::local_gpu> local;  // the GPU is this machine's: as the driver reports it now
    std::uint64_t max_ctx = 0;
    std::uint64_t auto_layers = 0;        // no_layers_fit when even full offload does not fit
    std::uint64_t auto_host_experts = 0;  // MoE layers whose experts the automatic fit keeps in the host tier
    decode_estimate decode{};
    std::vector<advice_item> advice;
    std::optional<fit_combination> best;  // the fastest combination of changes that fits (when it does not)
};

// "weights q4_k + 10 of 80 layers computed by the CPU (--weights q4_k --gpu-layers 70 --offload
// compute): predicted decode 3.2 tokens/s, the fastest of 12 combinations that fit".
inline std::string best_fit_line(const fit_combination& b) {
    return fmt::format("{} ({}): {}", b.changes, b.flags,
                       b.speed_known ? fmt::format("predicted decode {:.1f} tokens/s, the fastest of {} combinations "
                                                   "that fit",
                                                   b.decode.tokens_per_second(), b.tried)
                                     : fmt::format("the fewest bytes read outside the GPU per token of {} combinations "
                                                   "that fit (decode speed not predicted: this GPU's bandwidths are "
                                                   "not known)",
                                                   b.tried));
}

// A local GPU as the driver reports it now: what is in use and by whom.
inline void print_local_gpu(const targets::local_gpu& g, const plan& p) {
    fmt::print("local   GPU {}: {} total, {} free now; the reserve is the {} in use plus {} for this run's runtime\n",
               g.index, human(g.total_bytes), human(g.free_bytes), human(g.used_bytes()),
               human(p.target.reserve - g.used_bytes()));
    std::uint64_t held = 0;
    for (const auto& q : g.processes) {
        fmt::print("        held by pid {} {}: {}\n", q.pid, q.name.empty() ? "(name unknown)" : q.name,
                   human(q.bytes));
        held += q.bytes;
    }
    if (g.used_bytes() > held)
        fmt::print("        the driver and processes NVML does not list: {}\n", human(g.used_bytes() - held));
}

// When a plan is short on a local GPU: whether the memory in use is what stands in the way.
inline void print_local_shortfall(const targets::local_gpu& g, const plan& p) {
    const std::uint64_t alone = p.needed() - g.used_bytes();  // with nothing else on the GPU
    if (alone <= p.target.capacity)
        fmt::print(
            "        with the memory in use now freed it would fit: it needs {} of the GPU's {}, and {} are free now; "
            "end the processes holding it (memory left behind by an earlier run is a common cause)\n",
            human(alone), human(g.total_bytes), human(g.free_bytes));
    else
        fmt::print("        even with nothing else on the GPU it needs {} of its {}\n", human(alone),
                   human(g.total_bytes));
}

// "24 sliding-window layers (1024 positions, ...) and 10 full-attention layers", or empty when
// every layer attends fully. Chunked layers (Llama 4) are described the same way.
inline std::string attention_layers(const plan& p) {
    const auto& sh = p.model.shape;
    const attention_kind local = sh.attention_chunk ? attention_kind::chunked : attention_kind::sliding;
    std::uint64_t n_local = 0;
    for (std::uint64_t l = 0; l < sh.n_layer; ++l) n_local += p.model.layer(l).attention == local;
    if (n_local == 0) return {};
    const std::uint64_t full = sh.n_layer - n_local;
    return fmt::format("{} {} layers ({} positions, a cache ring of {} at this micro-batch){}", n_local,
                       local == attention_kind::chunked ? "chunked-attention" : "sliding-window",
                       local == attention_kind::chunked ? sh.attention_chunk : sh.sliding_window,
                       kv_positions(sh, local, p.lim.context, p.lim.ubatch),
                       full ? fmt::format(" and {} full-attention layers", full) : std::string());
}

inline plan_summary summarize(const model_desc& m, const target_desc& t, const limits& lim, plan_options o,
                              bool auto_layers) {
    plan_summary s;
    s.p = auto_layers ? plan_auto_offload(m, t, lim, o) : plan_inference(m, t, lim, o);
    s.max_ctx = max_context(m, t, lim, s.p.options);
    // What the automatic fit chooses: experts to the host first, then layers.
    const plan fit = plan_auto_offload(m, t, lim, o);
    s.auto_layers = t.unified ? m.shape.n_layer : fit.fits() ? fit.gpu_layers : no_layers_fit;
    s.auto_host_experts = fit.fits() ? fit.host_expert_layer_count() : 0;
    s.decode = estimate_decode(s.p);
    s.advice = advise(m, t, lim, o);
    s.best = best_fit(m, t, lim, o);
    return s;
}

// [#########=====....  ] weights / KV / activations+staging / free, 40 cells wide.
inline std::string composition_bar(const plan& p) {
    const double cap = static_cast<double>(p.target.capacity);
    const int width = 40;
    auto cells = [&](std::uint64_t b) { return static_cast<int>(static_cast<double>(b) / cap * width + 0.5); };
    std::string bar;
    auto put = [&](char c, int n) {
        for (int i = 0; i < n && static_cast<int>(bar.size()) < width; ++i) bar += c;
    };
    put('W', cells(p.gpu.weights.bytes));
    put('K', cells(p.gpu.kv.bytes));
    put('A', cells(p.gpu.activations.bytes));
    put('S', cells(p.gpu.staging.bytes));
    put('R', cells(p.target.reserve));
    while (static_cast<int>(bar.size()) < width) bar += '.';
    return fmt::format("[{}] W weights, K KV cache, A activations, S staging, R reserve, . free{}", bar,
                       p.needed() > p.target.capacity ? " (over capacity)" : "");
}

// What a verdict leaves out for an architecture without a graph, said next to it.
inline std::string unplanned_activations_suffix(const plan& p) {
    return p.model.shape.activations_planned ? std::string() : " (weights, KV and reserve; activations not included)";
}

inline void print_plan(const plan_summary& s) {
    const plan& p = s.p;
    const auto& sh = p.model.shape;
    fmt::print(
        "model   {}: {} parameters{}, {} layers, {} heads ({} KV), head_dim {}\n", p.model.name,
        with_separators(param_count(p.model)),
        sh.n_expert ? fmt::format(" ({} active per token)", with_separators(active_param_count(sh))) : std::string(),
        sh.n_layer, sh.n_head, sh.n_head_kv, sh.head_dim);
    if (sh.n_expert)
        fmt::print(
            "experts {} per layer of width {}, {} used per token{}; {} of {} layers keep theirs in the host tier{}\n",
            sh.n_expert, sh.n_ff_expert, sh.n_expert_used,
            sh.n_ff_shared ? fmt::format(", and a shared expert of width {}", sh.n_ff_shared) : std::string(),
            p.host_expert_layer_count(), sh.n_layer, p.host_expert_layer_count() ? " (computed by the CPU)" : "");
    if (sh.latent_attention())
        fmt::print(
            "latent  multi-head latent attention: each token caches a latent of {} and a rotated key of {} per layer "
            "({} values, one plane), not {} heads' keys and values\n",
            sh.kv_lora_rank, sh.rope_dim, sh.kv_dim(), sh.n_head);
    if (const std::string a = attention_layers(p); !a.empty()) fmt::print("layers  {}\n", a);
    if (sh.hybrid()) {
        std::uint64_t n_recurrent = 0;
        for (std::uint64_t l = 0; l < sh.n_layer; ++l) n_recurrent += sh.is_recurrent(l);
        auto count = [](std::uint64_t n, std::string_view what) {
            return fmt::format("{} {}{}", n, what, n == 1 ? "" : "s");
        };
        fmt::print(
            "mamba2  {} ({} heads of {}, a state of {}, {}, a {}-tap convolution) keep {} of f32 state per sequence "
            "whatever the context ({} for {}); only the {}' KV grows with it\n",
            count(n_recurrent, "Mamba-2 layer"), sh.ssm_heads, sh.ssm_inner / sh.ssm_heads, sh.ssm_state,
            count(sh.ssm_groups, "group"), sh.ssm_conv_kernel,
            human(checked_mul(recurrent_state_bytes(sh), n_recurrent)), human(p.state_bytes()),
            p.lim.batch == 1 ? std::string("the one sequence") : fmt::format("{} sequences", p.lim.batch),
            count(sh.n_layer - n_recurrent, "attention layer"));
    }
    fmt::print("gpu     {}: {} capacity, {} reserve, budget {}\n", p.target.name, human(p.target.capacity),
               human(p.target.reserve), human(p.target.budget()));
    if (s.local) print_local_gpu(*s.local, p);
    const std::uint64_t per_pass = p.lim.tokens_per_pass();
    fmt::print(
        "limits  context {}, batch {}, micro-batch {}{}, {} attention, KV {}\n", p.lim.context, p.lim.batch, per_pass,
        per_pass < p.lim.ubatch ? fmt::format(" (--ubatch {} capped at context x batch)", p.lim.ubatch) : std::string(),
        p.lim.attention == attention_kernel::fused ? "fused" : "naive", name(p.model.kv));
    if (const std::string w = trained_context_warning(p.model, p.lim.context); !w.empty()) fmt::print("{}\n", w);
    fmt::print("\n");
    auto all = buffers(p);
    const forward_graph& g = p.graph;
    const std::string block_steps =
        g.n_ops ? step_range(g.block_begin, static_cast<std::uint16_t>(g.block_end - 1)) : std::string("-");
    const std::string kv_steps = step_range(g.first_op(op_kind::kv_append), g.first_op(op_kind::attention));
    std::stable_sort(all.begin(), all.end(),
                     [](const buffer_info& a, const buffer_info& b) { return a.offset < b.offset; });
    for (tier t : {tier::gpu, tier::host}) {
        const tier_layout& tl = t == tier::gpu ? p.gpu : p.host;
        if (tl.total() == 0) continue;
        const bool experts_here = t == tier::host && p.host_expert_layer_count() != 0;
        const std::string layers_here = p.streamed_layers() == 0   ? std::string()
                                        : p.host_computed_layers() ? "layers computed by the CPU, with their KV cache"
                                                                   : "layers streamed to the GPU through staging";
        const std::string what = experts_here && !layers_here.empty() ? "experts computed by the CPU; " + layers_here
                                 : experts_here                       ? std::string("experts computed by the CPU")
                                                                      : layers_here;
        fmt::print("{} tier{}\n", t == tier::gpu ? "GPU" : "Pinned host",
                   t == tier::gpu || what.empty() ? std::string() : " (" + what + ")");
        fmt::print("  {:<34} {:>16} {:>12} {:>8}\n", "buffer", "offset", "size", "steps");
        // Weight layers are summarized as ranges: one line per run of consecutive layers.
        std::int64_t run_first = -1, run_last = -1;
        std::uint64_t run_bytes = 0, run_offset = 0;
        bool run_experts_only = true;
        auto flush = [&] {
            if (run_first < 0) return;
            fmt::print("  {:<34} {:>16} {:>12} {:>8}\n",
                       fmt::format("blk.{}..{} {} ({} layers)", run_first, run_last,
                                   run_experts_only ? "experts" : "weights", run_last - run_first + 1),
                       with_separators(run_offset), human(run_bytes), block_steps);
            run_first = -1;
            run_bytes = 0;
            run_experts_only = true;
        };
        std::int64_t kv_first = -1, kv_last = -1;
        std::uint64_t kv_bytes = 0;
        const char* kv_name = p.model.shape.latent_attention() ? "cache_latent"
                              : p.model.shape.hybrid()         ? "cache_k/v+state"
                                                               : "cache_k/v";
        for (const auto& b : all) {
            if (b.where != t) continue;
            if (b.kind == buffer_kind::weights && b.layer >= 0) {
                if (run_first < 0) {
                    run_first = b.layer;
                    run_offset = b.offset;
                }
                run_last = b.layer;
                run_bytes += b.reserved;
                run_experts_only = run_experts_only && b.name.find("_exps.") != std::string::npos;
                continue;
            }
            flush();
            if (b.kind == buffer_kind::kv) {
                if (kv_first < 0) kv_first = b.layer;
                kv_last = b.layer;
                kv_bytes += b.reserved;
                continue;
            }
            if (kv_first >= 0) {
                fmt::print("  {:<34} {:>16} {:>12} {:>8}\n",
                           fmt::format("{}.{}..{} (KV cache)", kv_name, kv_first, kv_last),
                           with_separators(tl.kv.offset), human(kv_bytes), kv_steps);
                kv_first = -1;
            }
            const std::string steps = step_range(b.first, b.last);
            fmt::print("  {:<34} {:>16} {:>12} {:>8}\n", b.name, with_separators(b.offset), human(b.reserved), steps);
        }
        flush();
        if (kv_first >= 0)
            fmt::print("  {:<34} {:>16} {:>12} {:>8}\n",
                       fmt::format("{}.{}..{} (KV cache)", kv_name, kv_first, kv_last), with_separators(tl.kv.offset),
                       human(kv_bytes), kv_steps);
        fmt::print("  {:<34} {:>16} {:>12}\n", "total", "", human(tl.total()));
        fmt::print("    weights {}  KV {}  activations {} (lower bound {})  staging {}\n\n", human(tl.weights.bytes),
                   human(tl.kv.bytes), human(tl.activations.bytes), human(t == tier::gpu ? p.act_lower_bound : 0),
                   human(tl.staging.bytes));
    }
    // What the step numbers above are: the ops of the forward graph, the block's once for every layer.
    std::string line = "steps  ";
    std::size_t n_variants = 0;
    for (std::size_t k = 0; k < n_block_variants; ++k) n_variants += g.variant_begin[k] != g.variant_end[k];
    const bool two_variants = n_variants > 1;
    for (std::size_t i = 0; i < g.n_ops; ++i) {
        std::string item = fmt::format("{} {}", i, step_name(g, i));
        if (two_variants) {
            for (std::size_t k = 0; k < n_block_variants; ++k) {
                if (g.variant_begin[k] == g.variant_end[k]) continue;
                if (i == g.variant_begin[k]) item = fmt::format("[{} layers: ", block_variant_names[k]) + item;
                if (i + 1 == g.variant_end[k]) item += "]";
            }
        } else {
            if (i == g.block_begin) item = "[per layer: " + item;
            if (i + 1 == g.block_end) item += "]";
        }
        if (i + 1 < g.n_ops) item += ",";
        if (line.size() + item.size() + 1 > 110) {
            fmt::print("{}\n", line);
            line = "       ";
        }
        line += item + " ";
    }
    fmt::print("{}\n\n", line);
    fmt::print("{}\n", composition_bar(p));
    fmt::print("needed  {} ({} B, reserve included) of {}\n", human(p.needed()), with_separators(p.needed()),
               human(p.target.capacity));
    if (p.fits())
        fmt::print("verdict FITS, {} to spare{}\n", human(p.target.capacity - p.needed()),
                   unplanned_activations_suffix(p));
    else
        fmt::print("verdict DOES NOT FIT: short by {} ({} B){}\n", human(p.shortfall()), with_separators(p.shortfall()),
                   unplanned_activations_suffix(p));
    if (!p.fits() && s.local) print_local_shortfall(*s.local, p);
    fmt::print("largest context that fits with every layer on the GPU: {}{}\n",
               s.max_ctx ? fmt::format("{} tokens", s.max_ctx) : std::string("none"),
               sh.beyond_trained_context(s.max_ctx) ? fmt::format(" (the model was trained for {})", sh.n_ctx_train)
                                                    : std::string());
    if (s.auto_layers == no_layers_fit)
        fmt::print("automatic GPU layers: none (the head, KV cache and activations alone do not fit)\n");
    else
        fmt::print("automatic GPU layers: {} of {}{}\n", s.auto_layers, sh.n_layer,
                   s.auto_host_experts ? fmt::format(", with the experts of {} in the host tier", s.auto_host_experts)
                                       : std::string());
    if (s.decode.seconds() > 0)
        fmt::print("predicted decode: {:.1f} tokens/s ({} read from GPU memory{}{} per token)\n",
                   s.decode.tokens_per_second(), human(s.decode.device_bytes),
                   s.decode.link_bytes ? ", " + human(s.decode.link_bytes) + " over the host link" : std::string(),
                   s.decode.host_bytes
                       ? fmt::format(", {} read by the CPU from host memory ({}) at {}/s", human(s.decode.host_bytes),
                                     p.host_computed_layers() && p.host_expert_layer_count() ? "experts and layers"
                                     : p.host_computed_layers() ? "layers and their KV cache"
                                                                : "experts",
                                     human(p.target.host_memory_bandwidth()))
                       : std::string());
    if (!p.fits() && !s.advice.empty()) {
        fmt::print("\nadvice (largest saving first):\n");
        for (const auto& a : s.advice)
            fmt::print("  - {}: saves {}{}\n", a.remedy, human(a.saved_bytes), a.fits ? ", then FITS" : "");
    }
    if (s.best) fmt::print("\nbest fit: {}\n", best_fit_line(*s.best));
}

inline nlohmann::json local_gpu_json(const targets::local_gpu& g) {
    auto procs = nlohmann::json::array();
    for (const auto& q : g.processes) procs.push_back({{"pid", q.pid}, {"name", q.name}, {"bytes", q.bytes}});
    return {{"index", g.index},
            {"name", g.name},
            {"total_bytes", g.total_bytes},
            {"free_bytes", g.free_bytes},
            {"compute_capability", fmt::format("{}.{}", g.cc_major, g.cc_minor)},
            {"processes", procs}};
}

inline void print_advice_table(const plan_summary& s) {
    fmt::print("{:<72} {:>12} {:>12} {:>5}  {}\n", "remedy", "saves", "then needs", "fits", "trade-off");
    for (const auto& a : s.advice)
        fmt::print("{:<72} {:>12} {:>12} {:>5}  {}\n", a.remedy, human(a.saved_bytes), human(a.needed_bytes),
                   a.fits ? "yes" : "no", a.tradeoff);
    if (s.advice.empty()) fmt::print("(no remedy saves memory for this model and device)\n");
    if (s.best) fmt::print("\nbest fit: {}\n", best_fit_line(*s.best));
}

inline nlohmann::json plan_json(const plan_summary& s) {
    const plan& p = s.p;
    nlohmann::json j;
    j["model"] = std::string(p.model.name);
    j["gpu"] = std::string(p.target.name);
    j["fits"] = p.fits();
    j["params"] = param_count(p.model);
    j["activations_planned"] = p.model.shape.activations_planned;
    j["active_params"] = active_param_count(p.model.shape);
    const auto& sh = p.model.shape;
    j["experts"] = sh.n_expert ? nlohmann::json{{"count", sh.n_expert},
                                                {"used_per_token", sh.n_expert_used},
                                                {"width", sh.n_ff_expert},
                                                {"shared_width", sh.n_ff_shared}}
                               : nlohmann::json(nullptr);
    j["host_expert_layers"] = p.host_expert_layer_count();
    j["sliding_window"] = sh.sliding_window ? nlohmann::json(sh.sliding_window) : nlohmann::json(nullptr);
    j["attention_chunk"] = sh.attention_chunk ? nlohmann::json(sh.attention_chunk) : nlohmann::json(nullptr);
    auto& kinds = j["layer_kinds"] = nlohmann::json::array();
    for (std::uint64_t l = 0; l < sh.n_layer; ++l)
        kinds.push_back({{"attention", attention_kind_name(p.model.layer(l).attention)},
                         {"ffn", ffn_kind_name(p.model.layer(l).ffn)},
                         {"kv_positions", p.kv_positions_of(l)}});
    j["weights_bytes"] = p.gpu.weights.bytes + p.host.weights.bytes;
    j["kv_bytes"] = p.kv_bytes();
    j["recurrent_state_bytes"] = p.state_bytes();  // within kv_bytes: the Mamba-2 layers' share
    j["host_kv_bytes"] = p.host.kv.bytes;
    j["offload_mode"] = std::string(offload_mode_name(p.options.offload));
    j["activations_bytes"] = p.gpu.activations.bytes;
    j["activations_lower_bound_bytes"] = p.act_lower_bound;
    j["staging_bytes"] = p.gpu.staging.bytes;
    j["reserve_bytes"] = p.target.reserve;
    j["needed_bytes"] = p.needed();
    j["budget_bytes"] = p.target.capacity;
    j["shortfall_bytes"] = p.shortfall();
    j["tiers"] = {{"gpu", {{"capacity_bytes", p.target.capacity}, {"used_bytes", p.gpu.total()}}},
                  {"host", {{"capacity_bytes", p.options.host_capacity}, {"used_bytes", p.host.total()}}}};
    j["n_layers"] = p.model.shape.n_layer;
    j["gpu_layers"] = p.gpu_layers;
    j["auto_gpu_layers"] = s.auto_layers == no_layers_fit ? nlohmann::json(nullptr) : nlohmann::json(s.auto_layers);
    j["auto_host_expert_layers"] = s.auto_host_experts;
    j["max_context"] = s.max_ctx;
    j["trained_context"] =
        p.model.shape.n_ctx_train ? nlohmann::json(p.model.shape.n_ctx_train) : nlohmann::json(nullptr);
    j["beyond_trained_context"] = p.model.shape.beyond_trained_context(p.lim.context);
    j["limits"] = {{"context", p.lim.context},
                   {"batch", p.lim.batch},
                   {"ubatch", p.lim.ubatch},
                   {"attention", p.lim.attention == attention_kernel::fused ? "fused" : "naive"}};
    j["decode"] = {{"tokens_per_second",
                    s.decode.seconds() > 0 ? nlohmann::json(s.decode.tokens_per_second()) : nlohmann::json(nullptr)},
                   {"device_bytes_per_token", s.decode.device_bytes},
                   {"link_bytes_per_token", s.decode.link_bytes},
                   {"host_bytes_per_token", s.decode.host_bytes},
                   {"host_bandwidth", p.target.host_memory_bandwidth()}};
    auto& steps = j["steps"] = nlohmann::json::array();
    for (std::size_t i = 0; i < p.graph.n_ops; ++i) {
        nlohmann::json step{{"name", step_name(p.graph, i)}, {"per_layer", p.graph.in_block(i)}};
        // With dense and expert layers, which of them run the op.
        for (std::size_t k = 0; k < n_block_variants; ++k)
            if (p.graph.variant_end[k] - p.graph.variant_begin[k] != p.graph.block_end - p.graph.block_begin &&
                i >= p.graph.variant_begin[k] && i < p.graph.variant_end[k]) {
                step["ffn"] = ffn_kind_name(static_cast<ffn_kind>(k % 2));
                if (k >= block_variant(true, false)) step["recurrent"] = true;  // a Mamba-2 layer's
            }
        steps.push_back(step);
    }
    auto& arr = j["buffers"] = nlohmann::json::array();
    for (const auto& b : buffers(p))
        arr.push_back({{"name", b.name},
                       {"kind", kind_name(b.kind)},
                       {"tier", tier_name(b.where)},
                       {"offset", b.offset},
                       {"bytes", b.bytes},
                       {"reserved", b.reserved},
                       {"first", b.first},
                       {"last", b.last},
                       {"persistent", b.persistent},
                       {"layer", b.layer},
                       {"format", name(b.fmt)}});
    auto& adv = j["advice"] = nlohmann::json::array();
    for (const auto& a : s.advice)
        adv.push_back({{"remedy", a.remedy},
                       {"tradeoff", a.tradeoff},
                       {"saved_bytes", a.saved_bytes},
                       {"needed_bytes", a.needed_bytes},
                       {"fits", a.fits}});
    if (s.best) {
        const auto& b = *s.best;
        j["best_fit"] = {{"changes", b.changes},
                         {"flags", b.flags},
                         {"needed_bytes", b.p.needed()},
                         {"offload_mode", std::string(offload_mode_name(b.p.options.offload))},
                         {"gpu_layers", b.p.gpu_layers},
                         {"host_expert_layers", b.p.host_expert_layer_count()},
                         {"predicted_tokens_per_second",
                          b.speed_known ? nlohmann::json(b.decode.tokens_per_second()) : nlohmann::json(nullptr)},
                         {"combinations_that_fit", b.tried}};
    } else {
        j["best_fit"] = nullptr;
    }
    return j;
}

// Per tier: schedule steps left to right, arena offset bottom to top; persistent buffers span
// every step. The GPU panel draws its budget line; a zoomed panel shows the activation arena,
// where buffers with disjoint lifetimes share memory.
inline std::string plan_svg(const plan& p) {
    const int panel_w = 460, panel_h = 560, margin = 70, top = 60;
    const char* colors[] = {"#4e79a7", "#f28e2b", "#59a14f", "#b07aa1"};
    const auto all = buffers(p);
    struct panel_spec {
        std::string title;
        tier where;
        std::uint64_t base, size;
        bool activations_only;
    };
    std::vector<panel_spec> panels{{"GPU tier", tier::gpu, 0, std::max(p.target.capacity, p.gpu.total()), false}};
    if (p.gpu.activations.bytes)
        panels.push_back(
            {"GPU activation arena (zoomed)", tier::gpu, p.gpu.activations.offset, p.gpu.activations.bytes, true});
    if (p.host.total()) panels.push_back({"pinned host tier", tier::host, 0, p.host.total(), false});
    const int width = margin + static_cast<int>(panels.size()) * (panel_w + margin), height = top + panel_h + 130;
    std::string out = fmt::format(
        R"svg(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" font-family="sans-serif" font-size="12">)svg"
        "\n",
        width, height);
    out += fmt::format(R"svg(<rect width="{}" height="{}" fill="white"/>)svg"
                       "\n",
                       width, height);
    out += fmt::format(R"svg(<text x="{}" y="24" font-size="16">{} on {}: {} needed of {} ({})</text>)svg"
                       "\n",
                       margin, p.model.name, p.target.name, human(p.needed()), human(p.target.capacity),
                       p.fits() ? "fits" : "does not fit");
    for (std::size_t k = 0; k < panels.size(); ++k) {
        const auto& pn = panels[k];
        const int x0 = margin + static_cast<int>(k) * (panel_w + margin), y0 = top;
        auto y = [&](std::uint64_t off) {
            return y0 + panel_h - static_cast<double>(off - pn.base) / static_cast<double>(pn.size) * panel_h;
        };
        const int n_steps = p.graph.n_ops;
        const double step_w = static_cast<double>(panel_w) / n_steps;
        out += fmt::format(R"svg(<rect x="{}" y="{}" width="{}" height="{}" fill="#f4f4f4" stroke="#333"/>)svg"
                           "\n",
                           x0, y0, panel_w, panel_h);
        out += fmt::format(R"svg(<text x="{}" y="{}">{} ({})</text>)svg"
                           "\n",
                           x0, y0 - 8, pn.title, human(pn.size));
        for (const auto& b : all) {
            if (b.where != pn.where || b.reserved == 0 || (pn.activations_only && b.kind != buffer_kind::activations))
                continue;
            const double bx = b.persistent ? 0 : b.first * step_w,
                         bw = b.persistent ? panel_w : (b.last - b.first + 1) * step_w;
            const double y_top = y(b.offset + b.reserved), h = std::max(0.5, y(b.offset) - y_top);
            out += fmt::format(
                R"svg(<rect x="{:.1f}" y="{:.2f}" width="{:.1f}" height="{:.2f}" fill="{}" stroke="{}" stroke-width="{}"><title>{}: {} at offset {}</title></rect>)svg"
                "\n",
                x0 + bx, y_top, bw, h, colors[static_cast<int>(b.kind)], pn.activations_only ? "white" : "none",
                pn.activations_only ? 1 : 0, b.name, human(b.reserved), with_separators(b.offset));
            if (pn.activations_only && h > 14)
                out += fmt::format(R"svg(<text x="{:.1f}" y="{:.1f}" font-size="10" fill="white">{}</text>)svg"
                                   "\n",
                                   x0 + bx + 3, y_top + 12, b.name.substr(4));
        }
        if (!pn.activations_only && pn.where == tier::gpu) {
            const double cap = y(p.target.budget());
            out += fmt::format(
                R"svg(<line x1="{}" x2="{}" y1="{:.1f}" y2="{:.1f}" stroke="red" stroke-width="2" stroke-dasharray="6 3"/><text x="{}" y="{:.1f}" fill="red">budget: capacity - reserve</text>)svg"
                "\n",
                x0, x0 + panel_w, cap, cap, x0 + 4, cap - 5);
        }
        for (int st = 0; st < n_steps; ++st) {
            const double tx = x0 + st * step_w + step_w / 2;
            out += fmt::format(
                R"svg(<text x="{:.1f}" y="{}" font-size="9" transform="rotate(60 {:.1f} {})">{}</text>)svg"
                "\n",
                tx, y0 + panel_h + 10, tx, y0 + panel_h + 10, step_name(p.graph, static_cast<std::size_t>(st)));
        }
    }
    const char* labels[] = {"weights", "KV cache", "activations", "staging"};
    for (int k = 0; k < 4; ++k)
        out +=
            fmt::format(R"svg(<rect x="{}" y="{}" width="12" height="12" fill="{}"/><text x="{}" y="{}">{}</text>)svg"
                        "\n",
                        margin + k * 130, height - 22, colors[k], margin + k * 130 + 16, height - 12, labels[k]);
    out += fmt::format(
        R"svg(<text x="{}" y="{}" fill="#555">x: schedule step (persistent buffers span all); y: arena offset</text>)svg"
        "\n",
        margin + 560, height - 12);
    out += "</svg>\n";
    return out;
}

}  // namespace vramplan::cli
