// The best combination of remedies for a plan that does not fit: every combination of a weight
// format, a KV format and a placement (experts, then layers, in host memory, streamed or computed
// there) is planned, and the one with the fastest predicted decode among those that fit wins.
// Weights of 4 bits or more are tried first, 3- and 2-bit weights only when nothing else fits; a
// Q4_0 KV cache likewise only when no 8-bit or wider cache fits with those weights.
// advise() lists single changes; this says which changes to make together.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "vramplan/plan/advice.hpp"

namespace vramplan {

struct fit_combination {
    std::string changes;  // "weights q4_k + KV q8_0 + 10 of 80 layers computed by the CPU"
    std::string flags;    // the vramplan / engine-style options that make this plan
    plan p;
    decode_estimate decode;
    bool speed_known = false;  // the target's bandwidths let the decode time be predicted
    std::size_t tried = 0;     // combinations that fit, of which this one is the best
};

namespace detail {
// A candidate's rank: the predicted decode time when the bandwidths are known, else the bytes a
// token reads outside the GPU (host memory and link), which is what makes offloading slow; ties
// go to the larger weights (less quantization loss).
struct fit_rank {
    double seconds = 0;
    std::uint64_t off_gpu_bytes = 0;
    std::uint64_t weight_bytes = 0;
    bool better_than(const fit_rank& o, bool speed_known) const {
        if (speed_known && seconds != o.seconds) return seconds < o.seconds;
        if (!speed_known && off_gpu_bytes != o.off_gpu_bytes) return off_gpu_bytes < o.off_gpu_bytes;
        return weight_bytes > o.weight_bytes;
    }
};
}  // namespace detail

inline std::optional<fit_combination> best_fit(const model_desc& m, const target_desc& t, const limits& lim,
                                               const plan_options& opt = {}) {
    if (plan_inference(m, t, lim, opt).fits()) return std::nullopt;
    struct weights_choice {
        model_desc model;
        std::string label;  // empty: as given
    };
    std::vector<weights_choice> good{{m, ""}}, low;
    for (format_id id :
         {format_id::q8_0, format_id::q6_k, format_id::q5_k, format_id::q4_k, format_id::q3_k, format_id::q2_k}) {
        const model_desc q = requantize_weights(m, format{id});
        if (weight_bytes(q) >= weight_bytes(m)) continue;
        const bool four_bits_or_more = id != format_id::q3_k && id != format_id::q2_k;
        (four_bits_or_more ? good : low).push_back({q, name(format{id})});
    }
    std::vector<format> caches{m.kv}, small_caches;
    for (format kv : smaller_kv_formats(m)) (kv.id == format_id::q8_0 ? caches : small_caches).push_back(kv);
    // The link is slow only when layers stream; an unknown link bandwidth leaves those unpredicted.
    auto speed_known = [&](const plan& p) {
        return t.memory_bandwidth != 0 && (p.streamed_layers() == p.host_computed_layers() || t.link_bandwidth != 0);
    };
    const bool all_known = t.memory_bandwidth != 0 && t.link_bandwidth != 0;
    std::optional<fit_combination> best;
    detail::fit_rank best_rank;
    std::size_t tried = 0;
    for (const auto* set : {&good, &low})
        for (const auto* cache_set : {&caches, &small_caches}) {
            if (best) break;  // lower quality only when nothing better fits
            for (const auto& w : *set)
                for (format kv : *cache_set) {
                    model_desc mq = w.model;
                    mq.kv = kv;
                    for (offload_mode mode : {offload_mode::compute, offload_mode::stream}) {
                        if (t.unified && mode == offload_mode::stream) continue;  // one memory: nothing moves
                        plan_options o = opt;
                        o.offload = mode;
                        const plan p = plan_auto_offload(mq, t, lim, o);
                        if (!p.fits()) continue;
                        if (mode == offload_mode::stream && p.streamed_layers() == 0)
                            continue;  // as computed: same plan
                        ++tried;
                        const decode_estimate e = estimate_decode(p);
                        const bool known = all_known || speed_known(p);
                        const detail::fit_rank r{e.seconds(), checked_add(e.host_bytes, e.link_bytes),
                                                 weight_bytes(mq)};
                        if (best && !r.better_than(best_rank, known && best->speed_known)) continue;
                        fit_combination c{
                            .changes = {}, .flags = {}, .p = p, .decode = e, .speed_known = known, .tried = 0};
                        auto change = [&](const std::string& words, const std::string& flag) {
                            c.changes += (c.changes.empty() ? "" : " + ") + words;
                            c.flags += (c.flags.empty() ? "" : " ") + flag;
                        };
                        if (!w.label.empty()) change("weights " + w.label, "--weights " + w.label);
                        if (kv != m.kv) change("KV " + name(kv), "--kv " + name(kv));
                        // The option, not the count of resident layers it moves: the flags must remake this plan.
                        if (const std::uint64_t h = p.options.host_expert_layers; h != opt.host_expert_layers)
                            change("experts of " + std::to_string(h) + " MoE layers in host memory",
                                   "--host-experts " + std::to_string(h));
                        if (p.streamed_layers() != 0)
                            change(std::to_string(p.streamed_layers()) + " of " + std::to_string(m.shape.n_layer) +
                                       " layers " +
                                       (mode == offload_mode::compute ? "computed by the CPU" : "streamed"),
                                   "--gpu-layers " + std::to_string(p.gpu_layers) +
                                       (mode == offload_mode::compute ? " --offload compute" : ""));
                        best = std::move(c);
                        best_rank = r;
                    }
                }
        }
    if (best) best->tried = tried;
    return best;
}

}  // namespace vramplan
