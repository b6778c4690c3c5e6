// The out-of-memory playbook, computed: for a plan that does not fit, each remedy re-plans the
// model with one change and reports the bytes it saves and whether that alone makes it fit.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "vramplan/format/bytes.hpp"
#include "vramplan/plan/plan.hpp"

namespace vramplan {

struct advice_item {
    std::string remedy;
    std::string tradeoff;
    std::uint64_t saved_bytes = 0;   // GPU-tier bytes saved against the current plan
    std::uint64_t needed_bytes = 0;  // GPU-tier bytes with this remedy (reserve included)
    bool fits = false;               // this remedy alone makes the model fit
};

// Every matrix whose rows allow it goes to `f`; norms, the router (llama.cpp keeps it f32) and rows
// that are not whole blocks stay.
constexpr model_desc requantize_weights(model_desc m, format f) {
    auto conv = [&](format old, std::uint64_t cols) { return row_fits_format(f, cols) ? f : old; };
    // A checkpoint's quantized layers (bitsandbytes, GPTQ, AWQ, fp8 blocks) are its Linear layers:
    // the embedding and the output head stay as they are (transformers keeps lm_head unconverted).
    if (!is_tensor_format(f)) {
        m.token_embd = conv(m.token_embd, m.shape.n_embd);
        m.output = conv(m.output, m.shape.n_embd);
    }
    return map_layers(m, [&](std::uint64_t, block_kind& b) {
        for (std::size_t r = 0; r < n_tensor_roles; ++r) {
            const auto role = static_cast<tensor_role>(r);
            if (is_matrix(role) && !is_router(role))
                b.formats.of[r] = conv(b.formats.of[r], role_extent(m.shape, role).cols);
        }
    });
}

// The cache formats smaller than m's that every layer's KV row can hold: Q8_0, then Q4_0.
inline std::vector<format> smaller_kv_formats(const model_desc& m) {
    std::vector<format> out;
    for (format_id id : {format_id::q8_0, format_id::q4_0}) {
        model_desc q = m;
        q.kv = format{id};
        bool rows_fit = row_fits_format(q.kv, m.shape.kv_dim());
        for (std::uint32_t k = 0; k < m.n_kinds; ++k)
            rows_fit = rows_fit && row_fits_format(q.kv, kv_dim_of(m, m.kinds[k]));
        if (rows_fit && kv_row_bytes(q) < kv_row_bytes(m)) out.push_back(q.kv);
    }
    return out;
}

inline std::string weight_tradeoff(format f) {
    switch (f.id) {
        case format_id::q8_0: return "near-lossless (8.5 bits/weight)";
        case format_id::q6_k: return "very small quality loss (6.6 bits/weight)";
        case format_id::q5_k:
        case format_id::q5_0: return "small quality loss (5.5 bits/weight)";
        case format_id::q4_k:
        case format_id::q4_0: return "noticeable but usually acceptable quality loss (4.5 bits/weight)";
        default: return "large quality loss below 4 bits/weight";
    }
}

inline std::string format_ratio(double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1fx", x);
    return buf;
}
inline std::string format_tokens_per_second(const decode_estimate& e) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.1f tokens/s", e.tokens_per_second());
    return buf;
}

// The plan with as many layers resident as fit, for each offload mode (experts first, as
// plan_auto_offload does); a mode that fits no layer count keeps every layer resident.
struct offload_plans {
    plan stream, compute;
};
constexpr offload_plans offload_both_ways(const model_desc& m, const target_desc& t, const limits& lim,
                                          plan_options o) {
    o.offload = offload_mode::stream;
    const plan s = plan_auto_offload(m, t, lim, o);
    o.offload = offload_mode::compute;
    return {s, plan_auto_offload(m, t, lim, o)};
}

inline std::vector<advice_item> advise(const model_desc& m, const target_desc& t, const limits& lim,
                                       const plan_options& opt = {}) {
    const plan base = plan_inference(m, t, lim, opt);
    std::vector<advice_item> out;
    auto add = [&](std::string remedy, std::string tradeoff, const plan& p) {
        if (p.needed() >= base.needed()) return;
        out.push_back({std::move(remedy), std::move(tradeoff), base.needed() - p.needed(), p.needed(), p.fits()});
    };
    const std::uint64_t current = weight_bytes(m);
    for (format_id id : {format_id::q8_0, format_id::q6_k, format_id::q5_k, format_id::q4_k, format_id::q4_0,
                         format_id::q3_k, format_id::q2_k}) {
        const model_desc q = requantize_weights(m, format{id});
        if (weight_bytes(q) >= current) continue;
        add("quantize weights to " + name(format{id}), weight_tradeoff(format{id}), plan_inference(q, t, lim, opt));
    }
    for (format kv : smaller_kv_formats(m)) {
        model_desc q = m;
        q.kv = kv;
        add("quantize the KV cache to " + name(q.kv),
            kv.id == format_id::q8_0 ? "negligible quality loss; attention reads half the bytes"
                                     : "some quality loss on long contexts",
            plan_inference(q, t, lim, opt));
    }
    if (lim.attention == attention_kernel::naive) {
        limits l = lim;
        l.attention = attention_kernel::fused;
        add("use the fused (flash-style) attention kernel", "none: same result, no tokens x context score buffer",
            plan_inference(m, t, l, opt));
    }
    // Shrinking the workload only helps a plan that does not fit yet.
    if (base.fits()) {
        std::stable_sort(out.begin(), out.end(),
                         [](const advice_item& a, const advice_item& b) { return a.saved_bytes > b.saved_bytes; });
        return out;
    }
    if (const std::uint64_t c = max_context(m, t, lim, opt, lim.context); c > 0 && c < lim.context) {
        limits l = lim;
        l.context = c;
        add("shorten the context to " + std::to_string(c) + " tokens", "the model sees less text at once",
            plan_inference(m, t, l, opt));
    }
    if (lim.ubatch > 1) {
        limits l = lim;
        std::uint64_t lo = 1, hi = lim.ubatch - 1;  // largest micro-batch that fits, else 1
        while (lo < hi) {
            const std::uint64_t mid = lo + (hi - lo + 1) / 2;
            l.ubatch = mid;
            if (plan_inference(m, t, l, opt).fits())
                lo = mid;
            else
                hi = mid - 1;
        }
        l.ubatch = lo;
        add("lower the micro-batch (ubatch) to " + std::to_string(lo) + " tokens", "slower prompt processing",
            plan_inference(m, t, l, opt));
    }
    if (lim.batch > 1) {
        limits l = lim;
        l.batch = 1;
        add("decode 1 sequence at a time instead of " + std::to_string(lim.batch), "lower total throughput",
            plan_inference(m, t, l, opt));
    }
    // Experts before layers: a token reads only the experts its router picks, so experts in host
    // memory cost less speed than streaming whole layers.
    if (const std::uint64_t n_moe = moe_layer_count(m); !t.unified && n_moe > opt.host_expert_layers) {
        plan_options o = opt;
        o.gpu_layers = all_gpu_layers;
        o.host_expert_layers = n_moe;
        const plan all_host = plan_inference(m, t, lim, o);
        if (all_host.fits()) {  // the fewest layers whose experts must move
            std::uint64_t lo = opt.host_expert_layers + 1, hi = n_moe;
            while (lo < hi) {
                o.host_expert_layers = lo + (hi - lo) / 2;
                if (plan_inference(m, t, lim, o).fits())
                    hi = o.host_expert_layers;
                else
                    lo = o.host_expert_layers + 1;
            }
            o.host_expert_layers = lo;
        }
        const plan p = plan_inference(m, t, lim, o);
        std::string cost = "the CPU computes those experts from host memory";
        if (t.memory_bandwidth)
            cost = "predicted decode " + format_ratio(estimate_decode(p).seconds() / estimate_decode(base).seconds()) +
                   " slower: " + cost;
        add("keep the experts of " + std::to_string(o.host_expert_layers) + " of " + std::to_string(n_moe) +
                " MoE layers in host memory (--host-experts " + std::to_string(o.host_expert_layers) + ")",
            cost, p);
    }
    // Whole layers in host memory, both ways: streamed to the GPU each pass, or computed by the CPU
    // with their KV cache (llama.cpp's way); each item says its predicted decode speed.
    if (!t.unified) {
        const offload_plans both = offload_both_ways(m, t, lim, opt);
        for (const auto& [mode, p] :
             {std::pair{offload_mode::stream, &both.stream}, std::pair{offload_mode::compute, &both.compute}}) {
            if (p->gpu_layers >= m.shape.n_layer) continue;  // no layer count fits, or experts alone do
            const bool compute = mode == offload_mode::compute;
            // A model with experts offloads layers only after every MoE layer's experts have moved:
            // the option that says so (the offloaded layers' experts are in host memory anyway).
            const std::uint64_t experts = p->options.host_expert_layers;
            const std::string experts_flag =
                experts != opt.host_expert_layers ? " --host-experts " + std::to_string(experts) : std::string();
            std::string cost = compute ? "the CPU reads those layers and their KV cache from host memory every token"
                                       : "streamed weights cross the host link every token";
            // Speed is predicted only from known bandwidths (a laptop part's are its maker's).
            if (t.memory_bandwidth && (compute || t.link_bandwidth)) {
                cost = "predicted decode " + format_tokens_per_second(estimate_decode(*p)) + ", " +
                       format_ratio(estimate_decode(*p).seconds() / estimate_decode(base).seconds()) +
                       " slower: " + cost;
            } else {
                cost += " (decode speed not predicted: this GPU's bandwidths are not known)";
            }
            add("offload " + std::to_string(m.shape.n_layer - p->gpu_layers) + " of " +
                    std::to_string(m.shape.n_layer) + " layers, " +
                    (compute ? "computed by the CPU" : "streamed to the GPU") + " (--gpu-layers " +
                    std::to_string(p->gpu_layers) + (compute ? " --offload compute" : "") + experts_flag + ")",
                cost, *p);
        }
    }
    std::stable_sort(out.begin(), out.end(),
                     [](const advice_item& a, const advice_item& b) { return a.saved_bytes > b.saved_bytes; });
    return out;
}

}  // namespace vramplan
