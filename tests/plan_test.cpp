#include <doctest/doctest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <vector>

#include "vramplan/model/presets.hpp"
#include "vramplan/plan/advice.hpp"
#include "vramplan/plan/best_fit.hpp"
#include "vramplan/plan/buffers.hpp"
#include "vramplan/plan/fits.hpp"
#include "vramplan/target/catalog.hpp"

using namespace vramplan;

namespace {

// The invariants every plan must keep, checked on its expanded buffer list.
void check_invariants(const plan& p) {
    const auto all = buffers(p);
    std::uint64_t sum[2][4] = {};
    for (const auto& b : all) {
        REQUIRE(b.offset % p.options.alignment == 0);
        REQUIRE(b.bytes <= b.reserved);
        sum[static_cast<int>(b.where)][static_cast<int>(b.kind)] += b.reserved;
        const tier_layout& tl = b.where == tier::gpu ? p.gpu : p.host;
        const region& r = b.kind == buffer_kind::weights       ? tl.weights
                          : b.kind == buffer_kind::kv          ? tl.kv
                          : b.kind == buffer_kind::activations ? tl.activations
                                                               : tl.staging;
        REQUIRE(b.offset >= r.offset);
        REQUIRE(b.offset + b.reserved <= r.end());
    }
    // Totals are the sums of their parts (activations share memory, so their sum is an upper bound).
    CHECK(sum[0][0] == p.gpu.weights.bytes);
    CHECK(sum[0][1] == p.gpu.kv.bytes);
    CHECK(sum[0][3] == p.gpu.staging.bytes);
    CHECK(sum[1][0] == p.host.weights.bytes);
    CHECK(sum[1][1] == p.host.kv.bytes);
    CHECK(sum[1][2] >= p.host.activations.bytes);
    CHECK(p.host.total() == p.host.weights.bytes + p.host.kv.bytes + p.host.activations.bytes);
    CHECK(sum[0][2] >= p.gpu.activations.bytes);
    CHECK(p.gpu.total() == p.gpu.weights.bytes + p.gpu.kv.bytes + p.gpu.activations.bytes + p.gpu.staging.bytes);
    // No two buffers alive at the same step overlap (persistent ones are alive at every step).
    for (std::size_t i = 0; i < all.size(); ++i)
        for (std::size_t j = i + 1; j < all.size(); ++j) {
            const auto &a = all[i], &b = all[j];
            if (a.where != b.where) continue;
            const bool together = a.persistent || b.persistent || (a.first <= b.last && b.first <= a.last);
            if (!together) continue;
            const bool apart = a.offset + a.reserved <= b.offset || b.offset + b.reserved <= a.offset;
            if (!apart) FAIL_CHECK(a.name << " overlaps " << b.name);
        }
    // The transformer schedule packs to its lower bound.
    CHECK(p.gpu.activations.bytes == p.act_lower_bound);
}

}  // namespace

TEST_CASE("every preset in several formats and limits keeps the plan invariants") {
    const limits lims[] = {{.context = 4096},
                           {.context = 8192, .batch = 4, .ubatch = 256, .attention = attention_kernel::naive},
                           {.context = 100, .batch = 1, .ubatch = 1, .all_logits = true}};
    for (const auto& e : presets::catalog)
        for (format w : {f16::value, q8_0::value, q4_0::value})
            for (const limits& lim : lims) {
                CAPTURE(e.name);
                format_policy pol = uniform_policy(w);
                if (!row_fits_format(w, e.shape.n_ff)) pol.with({tensor_role::ffn_down, f16::value});
                const model_desc m = presets::describe(e, pol);
                check_invariants(plan_inference(m, targets::by_name("h100 sxm"), lim));
                check_invariants(plan_auto_offload(m, targets::by_name("4060"), lim));
            }
}

TEST_CASE("compile-time and run-time plans agree") {
    constexpr limits lim{.context = 8192};
    constexpr plan ct = compile_time_plan<presets::llama31_70b<q4_0, f16>, targets::rtx_4090, lim>;
    const plan rt = plan_inference(presets::describe(presets::llama31_70b_entry, uniform_policy(q4_0::value)),
                                   targets::by_name("RTX 4090"), lim);
    CHECK(ct.needed() == rt.needed());
    CHECK(ct.gpu.activations.bytes == rt.gpu.activations.bytes);
    CHECK(ct.layer_offset == rt.layer_offset);
}

TEST_CASE("Llama-3.1-70B Q4_0 on one RTX 4090 does not fit but does with 37 layers offloaded") {
    const model_desc m = presets::describe(presets::llama31_70b_entry, uniform_policy(q4_0::value));
    const limits lim{.context = 8192};
    const plan p = plan_inference(m, targets::by_name("4090"), lim);
    CHECK_FALSE(p.fits());
    // Hand-derived: per layer 481,361,920 B (every Q4_0 tensor a multiple of 256 B); output head
    // 591,003,648; output norm 32,768; rope_freqs 256 (64 f32); KV 2,684,354,560; activations
    // 150,996,992; staging 2 x one layer.
    const std::uint64_t fixed = 591'003'648ull + 32'768 + 256 + 2'684'354'560ull + 150'996'992ull;
    CHECK(p.needed() == fixed + 80 * 481'361'920ull + 591'003'648ull + 536'870'912ull);
    const std::uint64_t budget = 24ull * (1 << 30) - 536'870'912ull;
    const std::uint64_t g = (budget - fixed - 2 * 481'361'920ull) / 481'361'920ull;
    CHECK(g == 43);
    CHECK(auto_gpu_layers(p) == g);
    const plan off = plan_auto_offload(m, targets::by_name("4090"), lim);
    CHECK(off.fits());
    CHECK(off.gpu_layers == 43);
    CHECK(off.host.weights.bytes == 37 * 481'361'920ull + 591'003'648ull);  // streamed layers + token_embd
    CHECK(off.staging_slot == 481'361'920ull);
    check_invariants(off);
    const auto adv = advise(m, targets::by_name("4090"), lim);
    const auto offload = std::find_if(
        adv.begin(), adv.end(), [](const advice_item& a) { return a.remedy.find("offload 37 of 80 layers") == 0; });
    REQUIRE(offload != adv.end());
    CHECK(offload->fits);
    CHECK(std::is_sorted(adv.begin(), adv.end(),
                         [](const auto& a, const auto& b) { return a.saved_bytes > b.saved_bytes; }));
    // Streaming costs: 37 layers cross a 32 GB/s link per token.
    const auto est = estimate_decode(off);
    CHECK(est.link_bytes == 37 * 481'361'920ull);
    CHECK(est.seconds() == doctest::Approx(37 * 481'361'920.0 / 32e9));
}

TEST_CASE("Llama-3.1-70B Q4_0 on one RTX 4090 with the offloaded layers computed by the CPU: 33 of them") {
    const model_desc m = presets::describe(presets::llama31_70b_entry, uniform_policy(q4_0::value));
    const limits lim{.context = 8192};
    const target_desc gpu = targets::by_name("4090");
    // Computed on the CPU, a layer takes its KV planes along (2 x 8192 x 1024 x 2 bytes) and needs
    // no staging: each resident layer costs 481,361,920 + 33,554,432 bytes beside the head, the
    // output norm, rope_freqs and the activations.
    const std::uint64_t layer = 481'361'920ull, kv = 33'554'432ull;
    const std::uint64_t fixed = 591'003'648ull + 32'768 + 256 + 150'996'992ull;
    const std::uint64_t budget = 24ull * (1 << 30) - 536'870'912ull;
    CHECK((budget - fixed) / (layer + kv) == 47);
    const plan off = plan_auto_offload(m, gpu, lim, {.offload = offload_mode::compute});
    REQUIRE(off.fits());
    CHECK(off.gpu_layers == 47);
    CHECK(off.host_computed_layers() == 33);
    CHECK(off.staging_slot == 0);
    CHECK(off.needed() == fixed + 47 * (layer + kv) + 536'870'912ull);
    // The host tier holds the 33 layers, the embedding, their KV planes and the CPU's activations.
    CHECK(off.host.weights.bytes == 33 * layer + 591'003'648ull);
    CHECK(off.host.kv.bytes == 33 * kv);
    CHECK(off.host.activations.bytes == 150'996'992ull);
    CHECK(off.kv_bytes() == 80 * kv);
    CHECK(off.kv_tier(32) == tier::host);
    CHECK(off.kv_tier(33) == tier::gpu);
    check_invariants(off);
    // Decode: the CPU reads its layers and their cache at host bandwidth, the GPU the rest at its
    // own; one residual row of 8192 f32 crosses the link.
    const auto est = estimate_decode(off);
    CHECK(est.host_bytes == 33 * (layer + kv));
    CHECK(est.link_bytes == 8192 * 4);
    const double device = static_cast<double>(est.device_bytes) / static_cast<double>(gpu.memory_bandwidth);
    CHECK(est.seconds() == doctest::Approx(device + 33.0 * (layer + kv) / 60e9));
    CHECK(est.device_bytes == 47 * (layer + kv) + 591'003'648ull + 32'768 + 256);
    // advise lists both ways with their predicted speed; computing them is faster here.
    const auto adv = advise(m, gpu, lim);
    const auto compute = std::find_if(adv.begin(), adv.end(), [](const advice_item& a) {
        return a.remedy == "offload 33 of 80 layers, computed by the CPU (--gpu-layers 47 --offload compute)";
    });
    REQUIRE(compute != adv.end());
    CHECK(compute->fits);
    CHECK(compute->tradeoff.find("predicted decode") == 0);
}

TEST_CASE("Llama-3-8B Q4_0 on an RTX 4060 8GB fits at 8192 with a largest context of 26394") {
    const model_desc m = presets::describe(presets::llama3_8b_entry, uniform_policy(q4_0::value));
    const plan p = plan_inference(m, targets::by_name("rtx 4060 8gb"), {.context = 8192});
    CHECK(p.fits());
    CHECK(advise(m, targets::by_name("4060"), {.context = 8192}).size() > 0);  // remedies still listed
    // (8 GiB - 512 MiB - weights 4,517,937,152 - activations 75,499,520) / 131,072 B per token.
    CHECK(max_context(m, targets::by_name("4060"), {.context = 8192}) == 26394);
    // The KV advice: Q8_0 halves (and a bit) the cache.
    const model_desc f16m = presets::describe(presets::llama3_8b_entry, uniform_policy(f16::value));
    const auto adv = advise(f16m, targets::by_name("4060"), {.context = 8192});
    const auto kv = std::find_if(adv.begin(), adv.end(),
                                 [](const advice_item& a) { return a.remedy == "quantize the KV cache to q8_0"; });
    REQUIRE(kv != adv.end());
    CHECK(kv->saved_bytes == 1'073'741'824ull - 570'425'344ull);
    const auto q4 = std::find_if(adv.begin(), adv.end(),
                                 [](const advice_item& a) { return a.remedy == "quantize weights to q4_0"; });
    REQUIRE(q4 != adv.end());
    CHECK(q4->fits);
}

TEST_CASE("naive attention materializes n_head x tokens x context scores and fused does not") {
    const model_desc m = presets::describe(presets::llama3_8b_entry, uniform_policy(q4_0::value));
    const plan fused = plan_inference(m, targets::by_name("h100 sxm"), {.context = 8192});
    const plan naive =
        plan_inference(m, targets::by_name("h100 sxm"), {.context = 8192, .attention = attention_kernel::naive});
    // 512 tokens x 32 heads x 8192 positions x 4 B = 536,870,912 B of scores, alive with the residual,
    // positions, q and attn_out (8,388,608 x 3 + 2,048) at the attention step.
    CHECK(naive.gpu.activations.bytes == 536'870'912ull + 3 * 8'388'608ull + 2048);
    CHECK(fused.gpu.activations.bytes == 75'499'520ull);
}

TEST_CASE("unified-memory targets have a single tier") {
    const model_desc m = presets::describe(presets::llama31_70b_entry, uniform_policy(q4_0::value));
    plan_options o;
    o.gpu_layers = 10;  // ignored: nothing to stream on a Jetson
    const plan p = plan_inference(m, targets::by_name("jetson agx orin"), {.context = 4096}, o);
    CHECK(p.gpu_layers == 80);
    CHECK(p.host.total() == 0);
    CHECK(p.fits());
}

TEST_CASE("bad limits and unknown targets are clear errors") {
    const model_desc m = presets::describe(presets::stories260k_entry, uniform_policy(f32::value));
    CHECK_THROWS_WITH_AS(plan_inference(m, targets::by_name("4090"), {.context = 0}), doctest::Contains("context"),
                         error);
    CHECK_THROWS_WITH_AS(plan_inference(m, targets::by_name("4090"), {.ubatch = 0}), doctest::Contains("micro-batch"),
                         error);
    CHECK_THROWS_WITH_AS(targets::by_name("rtx 9999"),
                         doctest::Contains("known GPUs: GTX 1060 6GB, GTX 1070, GTX 1080"), error);
    CHECK_THROWS_WITH_AS(plan_inference(m, targets::by_name("4090"), {.context = 1ull << 62, .batch = 1ull << 10}),
                         doctest::Contains("overflow"), error);
}

TEST_CASE("the catalog has at least 15 devices with capacity and bandwidths and compute capability") {
    CHECK(targets::catalog.size() >= 15);
    for (const auto& t : targets::catalog) {
        CAPTURE(t.name);
        CHECK(t.capacity > t.reserve);
        // Laptop makers set the memory clocks and PCIe lanes: those rates are unknown (0).
        const bool laptop = std::string_view(t.name).find("Laptop") != std::string_view::npos;
        CHECK((t.memory_bandwidth > 0) != laptop);
        CHECK((t.link_bandwidth > 0) != laptop);
        CHECK(t.cc_major >= 6);
    }
    // Every entry answers to its own name alone; shared aliases are the deliberate ambiguities.
    for (const auto& t : targets::catalog) CHECK(targets::find(t.name) == &t);
    CHECK_THROWS_WITH_AS(targets::find("h100"), doctest::Contains("names several GPUs"), error);
    CHECK(targets::by_name("H100 SXM").memory_bandwidth == 3350ull * 1000 * 1000 * 1000);
    CHECK(targets::by_name("h100-pcie").memory_bandwidth == 2000ull * 1000 * 1000 * 1000);
    CHECK(targets::by_name("4060 Ti 16GB").capacity == 16ull << 30);
    // Blackwell and the older parts people still plan for, as their vendor's pages give them.
    CHECK(targets::by_name("RTX 5060 Ti 16GB").capacity == 16ull << 30);
    CHECK(targets::by_name("RTX 5060 Ti 16GB").memory_bandwidth == 448ull * 1000 * 1000 * 1000);
    CHECK_THROWS_WITH_AS(targets::find("5060ti"), doctest::Contains("names several GPUs"), error);
    CHECK(targets::by_name("rtx-pro-6000").capacity == 96ull << 30);
    CHECK(targets::by_name("rtx-pro-6000").cc_major == 12);
    CHECK(targets::by_name("thor").unified);
    CHECK(targets::by_name("thor").capacity == 128ull << 30);
    CHECK(targets::by_name("gtx1660ti").memory_bandwidth == 288ull * 1000 * 1000 * 1000);
    CHECK(targets::by_name("1060").capacity == 6ull << 30);
    CHECK(targets::by_name("4060 laptop").capacity == 8ull << 30);  // the laptop part is its own entry
    CHECK(targets::by_name("RTX 3060 Laptop").capacity == 6ull << 30);
    CHECK_THROWS_WITH_AS(targets::find("3050 laptop"), doctest::Contains("RTX 3050 Laptop 4GB, RTX 3050 Laptop 6GB"),
                         error);
    CHECK(detail::edit_distance("rtx4009", "rtx4090") == 1);  // a swap of neighbours is one edit
    CHECK(detail::edit_distance("l4", "l40s") == 2);
    CHECK(targets::by_name("4060").capacity == 8ull << 30);
    CHECK(targets::by_name("H200").capacity == 141ull << 30);       // binary, as the driver counts it
    CHECK(targets::by_name("H200").capacity > 149'551'185'920ull);  // what one H200 had free
    CHECK(with_reserve(targets::by_name("4090"), 0).budget() == 24ull << 30);
    // Blackwell data-center parts: a DGX B200's 1,440 GB over eight GPUs; an NVL72's 13.4 TB over 72,
    // behind a Grace whose 900 GB/s NVLink-C2C (both directions) two GPUs share.
    CHECK(targets::by_name("b200").capacity == 180ull << 30);
    CHECK(targets::by_name("HGX B200").memory_bandwidth == 8000ull * 1000 * 1000 * 1000);
    CHECK(targets::by_name("gb200").capacity == 186ull << 30);
    CHECK(targets::by_name("gb200").link_bandwidth == 900ull * 1000 * 1000 * 1000 / 4);
    CHECK(targets::by_name("gb200").cc_major == 10);
}

TEST_CASE("the lifetime packer stays within 3% of the lower bound on random lifetimes") {
    std::mt19937_64 rng(20261129);
    double ratio_sum = 0;
    const int sets = 300;
    int at_bound = 0;
    for (int s = 0; s < sets; ++s) {
        const int n = 8 + static_cast<int>(rng() % 40);
        const std::uint32_t steps = 4 + static_cast<std::uint32_t>(rng() % 60);
        std::vector<lifetime_request> req(n);
        for (auto& r : req) {
            r.first = static_cast<std::uint32_t>(rng() % steps);
            r.last = r.first + static_cast<std::uint32_t>(rng() % (steps - r.first));
            r.bytes = 256 * (1 + rng() % 4096);
        }
        std::vector<std::uint64_t> off(n), scratch(n);
        std::vector<std::uint32_t> order(n);
        std::unique_ptr<bool[]> flags(new bool[n]);
        const std::uint64_t total = pack_lifetimes(req, off, scratch, order, std::span<bool>(flags.get(), n));
        const std::uint64_t bound = lifetime_lower_bound(req);
        REQUIRE(total >= bound);
        for (int i = 0; i < n; ++i)
            for (int j = i + 1; j < n; ++j)
                if (lifetimes_overlap(req[i], req[j]))
                    REQUIRE((off[i] + req[i].bytes <= off[j] || off[j] + req[j].bytes <= off[i]));
        ratio_sum += static_cast<double>(total) / static_cast<double>(bound);
        at_bound += total == bound;
    }
    const double mean = ratio_sum / sets;
    MESSAGE("mean arena / lower bound = " << mean << ", at the bound in " << at_bound << " of " << sets);
    CHECK(mean <= 1.03);
}

TEST_CASE("buffers are found by name") {
    const model_desc m = presets::describe(presets::stories260k_entry, uniform_policy(f32::value));
    const auto all = buffers(plan_inference(m, targets::by_name("4090"), {.context = 512}));
    const buffer_info* q = find_buffer(all, "blk.3.attn_q.weight");
    REQUIRE(q != nullptr);
    CHECK(q->bytes == 64 * 64 * 4);
    CHECK(q->layer == 3);
    // 640 bytes of f16 KV per token (5 layers x 4 heads x 8 dims x 2 x 2 B): 64 B per plane-token.
    const buffer_info* k = find_buffer(all, "cache_k.4");
    REQUIRE(k != nullptr);
    CHECK(k->bytes == 512 * 32 * 2);
    CHECK(find_buffer(all, "act.logits")->bytes == 512 * 4);
    CHECK(find_buffer(all, "nonexistent") == nullptr);
}

TEST_CASE("best_fit: the fastest fitting combination, 4-bit weights or more, and which changes make it") {
    const target_desc small = targets::by_name("rtx 4060 8gb");
    const limits lim{.context = 8192};
    // A model that fits needs no combination; one that fits nowhere has none.
    CHECK_FALSE(best_fit(presets::describe(presets::llama3_8b_entry, uniform_policy(q4_0::value)), small, lim));
    const target_desc board{.name = "board", .capacity = 64ull << 20, .reserve = 0};
    CHECK_FALSE(best_fit(presets::describe(presets::llama31_70b_entry, uniform_policy(f16::value)), board, lim));
    // Llama-3-8B in f16 (16 GB) on 8 GB: Q4_K weights with a Q8_0 cache fit whole. They read fewer
    // bytes per token than any combination that keeps larger weights or offloads layers, and 3-bit
    // weights are not considered while they fit.
    const model_desc f16m = presets::describe(presets::llama3_8b_entry, uniform_policy(f16::value));
    const auto dense = best_fit(f16m, small, lim);
    REQUIRE(dense);
    CHECK(dense->changes == "weights q4_k + KV q8_0");
    CHECK(dense->flags == "--weights q4_k --kv q8_0");
    CHECK(dense->p.fits());
    CHECK(dense->p.streamed_layers() == 0);
    CHECK(dense->speed_known);
    // Q4_K weights alone fit too, but read the f16 cache: slower. Q8_0 weights do not fit whole.
    const plan q4k_alone = plan_inference(requantize_weights(f16m, q4_k::value), small, lim);
    CHECK(q4k_alone.fits());
    CHECK(estimate_decode(q4k_alone).seconds() > dense->decode.seconds());
    CHECK_FALSE(plan_inference(requantize_weights(f16m, q8_0::value), small, lim).fits());
    // Qwen3-30B-A3B in f16 (61 GB) on 8 GB: Q4_K weights, a Q8_0 cache and the experts of the fewest
    // MoE layers in host memory: one layer fewer does not fit.
    const model_desc moe = presets::describe(presets::qwen3_30b_a3b_entry, uniform_policy(f16::value));
    const auto best = best_fit(moe, small, lim);
    REQUIRE(best);
    const std::uint64_t h = best->p.options.host_expert_layers;
    CHECK(best->p.host_expert_layer_count() == h);  // every layer resident: each MoE layer it names moves
    CHECK(best->changes == "weights q4_k + KV q8_0 + experts of " + std::to_string(h) + " MoE layers in host memory");
    CHECK(best->flags == "--weights q4_k --kv q8_0 --host-experts " + std::to_string(h));
    model_desc q = requantize_weights(moe, q4_k::value);
    q.kv = q8_0::value;
    CHECK(plan_inference(q, small, lim, {.host_expert_layers = h}).fits());
    CHECK_FALSE(plan_inference(q, small, lim, {.host_expert_layers = h - 1}).fits());
    // Keeping the f16 cache instead would need more experts moved and be slower.
    q.kv = f16::value;
    const plan wide_cache = plan_auto_offload(q, small, lim);
    REQUIRE(wide_cache.fits());
    CHECK(wide_cache.host_expert_layer_count() > h);
    CHECK(estimate_decode(wide_cache).seconds() > best->decode.seconds());
    // A unified-memory device never streams.
    target_desc unified = small;
    unified.unified = true;
    const auto one_memory = best_fit(moe, unified, lim);
    REQUIRE(one_memory);
    CHECK(one_memory->p.streamed_layers() == 0);
}
