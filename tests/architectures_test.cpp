// Models whose layers differ: mixture of experts, sliding-window and local/global attention, q/k
// norms and head_dim != n_embd / n_head. Expected values are derived here by hand from the
// published config.json numbers and model cards, never from vramplan's own footprint code.
#include <doctest/doctest.h>

#include "fixtures.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "vramplan/io/gguf_model.hpp"
#include "vramplan/io/gguf_writer.hpp"
#include "vramplan/io/hf_config.hpp"
#include "vramplan/model/presets.hpp"
#include "vramplan/plan/buffers.hpp"
#include "vramplan/plan/plan.hpp"
#include "vramplan/runtime/arena.hpp"
#include "vramplan/runtime/cpu_backend.hpp"
#include "vramplan/runtime/forward_pass.hpp"
#include "vramplan/runtime/model_loader.hpp"

using namespace vramplan;

namespace {

using u64 = std::uint64_t;

// One layer's parameters written out as a model card's config.json gives them: q, k, v, o; the
// two pre-norms (plus q/k norms of head_dim and Gemma's two post-norms); then either a dense
// SwiGLU of ff or a router over `experts` and the experts themselves (`used` of them active).
struct layer_numbers {
    u64 embd, heads, kv_heads, head_dim, ff;
    bool qk_norm = false, post_norms = false;
    u64 experts = 0, used = 0, expert_ff = 0;
};
u64 layer_params(const layer_numbers& n, bool active) {
    const u64 attention = n.embd * n.heads * n.head_dim * 2 + n.embd * n.kv_heads * n.head_dim * 2;
    u64 norms = 2 * n.embd + (n.qk_norm ? 2 * n.head_dim : 0) + (n.post_norms ? 2 * n.embd : 0);
    if (n.experts == 0) return attention + norms + 3 * n.embd * n.ff;
    const u64 router = n.experts * n.embd;
    return attention + norms + router + (active ? n.used : n.experts) * 3 * n.embd * n.expert_ff;
}
u64 model_params(const layer_numbers& n, u64 layers, u64 vocab, bool tied, bool active = false) {
    return layers * layer_params(n, active) + vocab * n.embd * (tied ? 1 : 2) + n.embd;
}
// The model card's figure: billions to the given decimals.
double billions(u64 n, int decimals) {
    const double scale = std::pow(10.0, decimals);
    return std::round(static_cast<double>(n) / 1e9 * scale) / scale;
}

}  // namespace

TEST_CASE("parameter counts of MoE, local/global and q/k-norm models, by hand from config.json and model cards") {
    using namespace presets;
    // Qwen3-0.6B: "0.6B, 0.44B non-embedding"; tied embeddings.
    const u64 qwen3_06b = model_params({1024, 16, 8, 128, 3072, true}, 28, 151936, true);
    CHECK(qwen3_06b == 596'049'920);
    CHECK(billions(qwen3_06b - 151936ull * 1024, 2) == 0.44);
    CHECK(param_count(qwen3_06b_entry.shape) == qwen3_06b);
    // Qwen3-8B: "8.2B, 6.95B non-embedding".
    const u64 qwen3_8b = model_params({4096, 32, 8, 128, 12288, true}, 36, 151936, false);
    CHECK(billions(qwen3_8b, 1) == 8.2);
    CHECK(billions(qwen3_8b - 2 * 151936ull * 4096 - 4096, 2) == 6.95);
    CHECK(param_count(qwen3_8b_entry.shape) == qwen3_8b);
    // Qwen3-30B-A3B: "30.5B total, 3.3B activated, 29.9B non-embedding": 128 experts of 768, 8 used.
    const layer_numbers a3b{2048, 32, 4, 128, 6144, true, false, 128, 8, 768};
    const u64 qwen3_moe = model_params(a3b, 48, 151936, false);
    CHECK(billions(qwen3_moe, 1) == 30.5);
    CHECK(billions(qwen3_moe - 2 * 151936ull * 2048 - 2048, 1) == 29.9);
    // 3,353,032,704 active: the card writes 3.3B, cutting the second decimal rather than rounding it.
    CHECK(model_params(a3b, 48, 151936, false, true) == 3'353'032'704);
    CHECK(param_count(qwen3_30b_a3b_entry.shape) == qwen3_moe);
    CHECK(active_param_count(qwen3_30b_a3b_entry.shape) == model_params(a3b, 48, 151936, false, true));
    // Mixtral-8x7B: "46.7B total, 12.9B active per token": 8 experts of 14336, 2 used.
    const layer_numbers mix{4096, 32, 8, 128, 14336, false, false, 8, 2, 14336};
    CHECK(billions(model_params(mix, 32, 32000, false), 1) == 46.7);
    CHECK(billions(model_params(mix, 32, 32000, false, true), 1) == 12.9);
    CHECK(param_count(mixtral_8x7b_entry.shape) == model_params(mix, 32, 32000, false));
    CHECK(active_param_count(mixtral_8x7b_entry.shape) == model_params(mix, 32, 32000, false, true));
    // Gemma-2-9B: 9,241,705,984 (the checkpoint's count); head_dim 256 with 16 heads of a 3584 width.
    const u64 gemma2 = model_params({3584, 16, 8, 256, 14336, false, true}, 42, 256000, true);
    CHECK(gemma2 == 9'241'705'984);
    CHECK(param_count(gemma2_9b_entry.shape) == gemma2);
    // Gemma-3-4B's language model: the technical report's 3,209M non-embedding parameters.
    const u64 gemma3 = model_params({2560, 8, 4, 256, 10240, true, true}, 34, 262208, true);
    CHECK(std::round(static_cast<double>(gemma3 - 262208ull * 2560 - 2560) / 1e6) == 3209);
    CHECK(param_count(gemma3_4b_entry.shape) == gemma3);
    // Llama 3.2 1B and 3B (tied; 1.24B and 3.21B on their cards), Llama 3.3 70B (Llama 3.1's shape).
    const u64 l32_1b = model_params({2048, 32, 8, 64, 8192}, 16, 128256, true);
    CHECK(l32_1b == 1'235'814'400);
    CHECK(billions(model_params({3072, 24, 8, 128, 8192}, 28, 128256, true), 2) == 3.21);
    CHECK(param_count(llama32_1b_entry.shape) == l32_1b);
    CHECK(param_count(llama32_3b_entry.shape) == model_params({3072, 24, 8, 128, 8192}, 28, 128256, true));
    CHECK(param_count(llama33_70b_entry.shape) == model_params({8192, 64, 8, 128, 28672}, 80, 128256, false));
    CHECK(model_params({8192, 64, 8, 128, 28672}, 80, 128256, false) == 70'553'706'496);
    // Qwen3-32B: "32.8B, 31.2B non-embedding".
    const u64 q32 = model_params({5120, 64, 8, 128, 25600, true}, 64, 151936, false);
    CHECK(billions(q32, 1) == 32.8);
    CHECK(billions(q32 - 2 * 151936ull * 5120 - 5120, 1) == 31.2);
    CHECK(param_count(qwen3_32b_entry.shape) == q32);
    // Qwen3-235B-A22B: "235B total, 22B activated, 234B non-embedding": 128 experts of 1536, 8 used.
    const layer_numbers a22b{4096, 64, 4, 128, 12288, true, false, 128, 8, 1536};
    const u64 q235 = model_params(a22b, 94, 151936, false);
    CHECK(billions(q235, 0) == 235);
    CHECK(billions(q235 - 2 * 151936ull * 4096 - 4096, 0) == 234);
    CHECK(billions(model_params(a22b, 94, 151936, false, true), 0) == 22);
    CHECK(param_count(qwen3_235b_a22b_entry.shape) == q235);
    CHECK(active_param_count(qwen3_235b_a22b_entry.shape) == model_params(a22b, 94, 151936, false, true));
    // Gemma 3 12B and 27B language models: the technical report's 10,759M and 25,600M non-embedding.
    const u64 g12 = model_params({3840, 16, 8, 256, 15360, true, true}, 48, 262208, true);
    const u64 g27 = model_params({5376, 32, 16, 128, 21504, true, true}, 62, 262208, true);
    CHECK(std::round(static_cast<double>(g12 - 262208ull * 3840 - 3840) / 1e6) == 10759);
    CHECK(std::round(static_cast<double>(g27 - 262208ull * 5376 - 5376) / 1e6) == 25600);
    CHECK(param_count(gemma3_12b_entry.shape) == g12);
    CHECK(param_count(gemma3_27b_entry.shape) == g27);
    // Dense models: the active count is the count.
    CHECK(active_param_count(llama3_8b_entry.shape) == param_count(llama3_8b_entry.shape));
    for (const auto& e : catalog) {
        CAPTURE(e.name);
        CHECK(param_count(e.shape) == e.published_params);
    }
}

TEST_CASE("KV cache of sliding-window layers: a ring of window + micro-batch - 1 positions, by hand") {
    using namespace presets;
    const limits lim{.context = 8192, .ubatch = 512};
    const target_desc big{"big", 1ull << 40, 0};
    // Gemma-2-9B: 21 global layers hold 8192 positions, 21 local ones 4096 + 512 - 1 = 4607; a row
    // is 8 KV heads x 256 x 2 bytes (f16).
    const plan g2 = plan_inference(describe(gemma2_9b_entry, uniform_policy(format{format_id::q8_0})), big, lim);
    CHECK(g2.gpu.kv.bytes == (21ull * 8192 + 21ull * 4607) * 8 * 256 * 2 * 2);
    CHECK(g2.model.n_kinds == 2);  // local and global layers: two kinds for 42 layers
    CHECK(g2.kv_positions_of(0) == 4607);
    CHECK(g2.kv_positions_of(1) == 8192);
    // Gemma-3-4B: layers 5, 11, 17, 23, 29 are global (every sixth), 29 local of 1024 + 511.
    const plan g3 = plan_inference(describe(gemma3_4b_entry, uniform_policy(format{format_id::q8_0})), big, lim);
    CHECK(g3.gpu.kv.bytes == (5ull * 8192 + 29ull * 1535) * 4 * 256 * 2 * 2);
    for (u64 l : {5, 11, 17, 23, 29}) CHECK(g3.kv_positions_of(l) == 8192);
    CHECK(g3.kv_positions_of(4) == 1535);
    CHECK(g3.kv_positions_of(33) == 1535);
    // The buffers list names each layer's planes at its own size, without overlaps.
    const auto all = buffers(g3);
    const buffer_info* k5 = find_buffer(all, "cache_k.5");
    const buffer_info* k6 = find_buffer(all, "cache_k.6");
    REQUIRE(k5);
    REQUIRE(k6);
    CHECK(k5->bytes == 8192ull * 4 * 256 * 2);
    CHECK(k6->bytes == 1535ull * 4 * 256 * 2);
    CHECK(k6->offset == k5->offset + 2 * k5->reserved);
    // Phi-3-mini: every layer slides over 2047 positions: 2047 + 511 at a 512-token micro-batch, the
    // context itself when it is shorter than the ring.
    const model_desc phi3 = describe(phi3_mini_entry, uniform_policy(format{format_id::f16}));
    CHECK(plan_inference(phi3, big, {.context = 4096, .ubatch = 512}).gpu.kv.bytes == 32ull * 2558 * 3072 * 2 * 2);
    CHECK(plan_inference(phi3, big, {.context = 2000, .ubatch = 512}).gpu.kv.bytes == 32ull * 2000 * 3072 * 2 * 2);
    CHECK(plan_inference(phi3, big, {.context = 4096, .ubatch = 1}).gpu.kv.bytes == 32ull * 2047 * 3072 * 2 * 2);
    // A longer context costs only the global layers more.
    CHECK(kv_bytes_per_token(g3.model) == 5ull * 4 * 256 * 2 * 2);
    CHECK(kv_cache_bytes(g3.model, 8192, 1, 512) == g3.gpu.kv.bytes);
}

TEST_CASE("MoE activations: router logits and the routed rows are planned buffers of the graph") {
    using namespace presets;
    const limits lim{.context = 4096, .ubatch = 512};
    const plan p = plan_inference(describe(qwen3_30b_a3b_entry, uniform_policy(format{format_id::q4_k})),
                                  target_desc{"big", 1ull << 40, 0}, lim);
    auto act = [&](std::string_view name) -> u64 {
        for (std::size_t i = 0; i < p.graph.n_buffers; ++i)
            if (p.act[i].name == name) return p.act[i].bytes;
        FAIL("no activation buffer " << name);
        return 0;
    };
    CHECK(act("router_logits") == 512ull * 128 * 4);    // tokens x experts, f32
    CHECK(act("expert_ids") == 512ull * 8 * 4);         // the 8 chosen per token, i32
    CHECK(act("expert_weights") == 512ull * 8 * 4);     // and their weights
    CHECK(act("expert_gate") == 512ull * 8 * 768 * 4);  // routed rows: tokens x 8 x expert width
    CHECK(act("expert_out") == 512ull * 8 * 2048 * 4);  // back to the model width
    // Qwen3's q/k norms run per head on q and k in place, before RoPE.
    const forward_graph& g = p.graph;
    const auto qn = g.weight_step(layer_weight(tensor_role::attn_q_norm));
    CHECK(g.ops[qn].heads == 32);
    CHECK(g.ops[qn].n == 128);
    CHECK(qn < g.first_op(op_kind::rope));
    // Weights: each layer's experts are one 3-D tensor per projection.
    const auto all = buffers(p);
    const buffer_info* gate = find_buffer(all, "blk.7.ffn_gate_exps.weight");
    REQUIRE(gate);
    CHECK(gate->bytes == 128ull * 768 * 2048 / 256 * 144);  // Q4_K: 144 bytes per 256 values
    const buffer_info* router = find_buffer(all, "blk.7.ffn_gate_inp.weight");
    REQUIRE(router);
    CHECK(router->fmt == format{format_id::f32});  // llama.cpp's quantizer keeps the router f32
    CHECK(find_buffer(all, "blk.7.ffn_gate.weight") == nullptr);
}

TEST_CASE("the real stories260K MoE file: every tensor planned, its bytes exactly the file's") {
    VRAMPLAN_SHARED_MODEL_OR_SKIP(path, "stories260K-moe-f32.gguf");
    const auto file = io::gguf_file::open(path);
    const model_desc m = io::describe(file, "stories260K-moe");
    CHECK(m.shape.n_expert == 4);
    CHECK(m.shape.n_expert_used == 2);
    CHECK(m.shape.n_ff_expert == 192);
    CHECK(m.n_kinds == 1);
    // The models README: 3,464,960 bytes of tensor data, 2,949,120 of them experts.
    CHECK(weight_bytes(m) == 3'464'960);
    u64 file_bytes = 0, expert_bytes = 0;
    for (const auto& t : file.tensors()) file_bytes += t.bytes;
    CHECK(file_bytes == 3'464'960);
    const plan p =
        plan_inference(m, target_desc{"cpu", 1ull << 30, 0}, {.context = 256, .ubatch = 8}, {.alignment = 32});
    for (const auto& b : buffers(p))
        if (b.name.find("_exps.") != std::string::npos) expert_bytes += b.bytes;
    CHECK(expert_bytes == 2'949'120);
    // 32-byte alignment (GGUF's) pads nothing here: the plan's weights are the file's tensor data.
    CHECK(p.gpu.weights.bytes == 3'464'960);
}

namespace {

// A small MoE GGUF in Mixtral's layout (llama with experts), tensors zero-filled: the planner reads
// shapes and formats only. `tweak` edits the metadata or the shapes to make it malformed.
struct moe_file {
    u64 layers = 2, embd = 64, heads = 4, kv_heads = 2, ff = 96, experts = 4, used = 2, vocab = 32;
    u64 gate_exps_planes = 0;  // 0: experts
    bool per_layer_heads = false;
    u64 per_layer_heads_count = 2;
    std::string arch = "llama";
    u64 window = ~0ull;  // written as {arch}.attention.sliding_window unless ~0
    u64 dense_lead = 0;  // {arch}.leading_dense_block_count: the first layers are dense
    bool sinks = false;  // blk.N.attn_sinks.weight, one value per query head (gpt-oss)
    void write(const std::string& path) const {
        io::gguf_writer w;
        const std::string a = arch + ".";
        w.set_string("general.architecture", arch)
            .set_u32(a + "block_count", static_cast<std::uint32_t>(layers))
            .set_u32(a + "embedding_length", static_cast<std::uint32_t>(embd))
            .set_u32(a + "feed_forward_length", static_cast<std::uint32_t>(ff))
            .set_u32(a + "attention.head_count", static_cast<std::uint32_t>(heads));
        if (experts)
            w.set_u32(a + "expert_count", static_cast<std::uint32_t>(experts))
                .set_u32(a + "expert_used_count", static_cast<std::uint32_t>(used));
        if (per_layer_heads)
            w.set_i32s(a + "attention.head_count_kv",
                       std::vector<std::int32_t>(per_layer_heads_count, static_cast<std::int32_t>(kv_heads)));
        else
            w.set_u32(a + "attention.head_count_kv", static_cast<std::uint32_t>(kv_heads));
        if (window != ~0ull) w.set_u32(a + "attention.sliding_window", static_cast<std::uint32_t>(window));
        if (dense_lead) w.set_u32(a + "leading_dense_block_count", static_cast<std::uint32_t>(dense_lead));
        auto tensor = [&](const std::string& name, std::vector<u64> dims) { add_zero_tensor(w, name, dims); };
        tensor("token_embd.weight", {embd, vocab});
        tensor("output_norm.weight", {embd});
        tensor("output.weight", {embd, vocab});
        const u64 hd = embd / heads;
        for (u64 l = 0; l < layers; ++l) {
            const std::string p = "blk." + std::to_string(l) + ".";
            tensor(p + "attn_norm.weight", {embd});
            tensor(p + "attn_q.weight", {embd, heads * hd});
            tensor(p + "attn_k.weight", {embd, kv_heads * hd});
            tensor(p + "attn_v.weight", {embd, kv_heads * hd});
            tensor(p + "attn_output.weight", {heads * hd, embd});
            if (sinks) tensor(p + "attn_sinks.weight", {heads});
            tensor(p + "ffn_norm.weight", {embd});
            if (experts == 0 || l < dense_lead) {
                tensor(p + "ffn_gate.weight", {embd, ff});
                tensor(p + "ffn_up.weight", {embd, ff});
                tensor(p + "ffn_down.weight", {ff, embd});
                continue;
            }
            tensor(p + "ffn_gate_inp.weight", {embd, experts});
            tensor(p + "ffn_gate_exps.weight", {embd, ff, gate_exps_planes ? gate_exps_planes : experts});
            tensor(p + "ffn_up_exps.weight", {embd, ff, experts});
            tensor(p + "ffn_down_exps.weight", {ff, embd, experts});
        }
        w.write(path);
    }
};

std::string temp_path(const std::string& name) { return test_temp_path(name); }

}  // namespace

TEST_CASE("a Mixtral-layout GGUF written here plans its exact tensor bytes") {
    const std::string path = temp_path("vramplan_moe_layout.gguf");
    moe_file{}.write(path);
    const model_desc m = io::describe(io::gguf_file::open(path));
    std::filesystem::remove(path);
    // Per layer, f32: norms 2 x 64, q 64 x 64, k and v 64 x 32, o 64 x 64, router 4 x 64, experts
    // 3 x 4 x 96 x 64; globals: embedding and head 32 x 64, output norm 64.
    const u64 layer = (2 * 64 + 64 * 64 * 2 + 64 * 32 * 2 + 4 * 64 + 3 * 4 * 96 * 64) * 4;
    CHECK(weight_bytes(m) == 2 * layer + (2 * 32 * 64 + 64) * 4);
    CHECK(param_count(m.shape) == 2 * layer / 4 + 2 * 32 * 64 + 64);
    CHECK(active_param_count(m.shape) == 2 * (layer / 4 - 2 * 3 * 96 * 64) + 2 * 32 * 64 + 64);
    CHECK(m.shape.n_ff_expert == 96);  // Mixtral's experts are feed_forward_length wide
    // Attention sinks: 4 f32 values per layer (one per query head), parameters like any other, and
    // refused by the runtime by name.
    moe_file with_sinks;
    with_sinks.sinks = true;
    with_sinks.write(path);
    const model_desc s = io::describe(io::gguf_file::open(path));
    std::filesystem::remove(path);
    CHECK(s.shape.attn_sinks);
    CHECK(weight_bytes(s) == weight_bytes(m) + 2 * 4 * 4);
    CHECK(param_count(s.shape) == param_count(m.shape) + 2 * 4);
    const plan p = plan_inference(s, target_desc{"cpu", 1ull << 30, 0}, {.context = 64, .ubatch = 8});
    REQUIRE(find_buffer(buffers(p), "blk.1.attn_sinks.weight"));
    CHECK(find_buffer(buffers(p), "blk.1.attn_sinks.weight")->bytes == 16);
    runtime::cpu_backend backend;
    runtime::arena<runtime::cpu_backend> a(p, backend);
    CHECK_THROWS_WITH_AS(runtime::forward_pass<runtime::cpu_backend>{a}, doctest::Contains("attention sinks"), error);
}

TEST_CASE("malformed MoE and window metadata is an error naming the key") {
    const std::string path = temp_path("vramplan_moe_bad.gguf");
    auto refused = [&](const moe_file& f) -> std::string {
        f.write(path);
        try {
            (void)io::describe(io::gguf_file::open(path));
        } catch (const error& e) {
            std::filesystem::remove(path);
            return e.what();
        }
        std::filesystem::remove(path);
        return "accepted";
    };
    moe_file too_many;
    too_many.used = 5;
    CHECK(refused(too_many).find("'llama.expert_used_count' is 5; it must be between 1 and expert_count (4)") !=
          std::string::npos);
    moe_file bad_array;
    bad_array.per_layer_heads = true;
    bad_array.per_layer_heads_count = 3;
    CHECK(refused(bad_array).find("'llama.attention.head_count_kv' has 3 values, but the model has 2 layers") !=
          std::string::npos);
    moe_file good_array;
    good_array.per_layer_heads = true;
    CHECK(refused(good_array) == "accepted");  // one value per layer, all equal
    moe_file wrong_planes;
    wrong_planes.gate_exps_planes = 3;
    CHECK(refused(wrong_planes)
              .find("tensor 'blk.0.ffn_gate_exps.weight' has shape [64, 96, 3], but the metadata "
                    "implies [64, 96, 4]") != std::string::npos);
    moe_file zero_window;
    zero_window.arch = "gemma2";
    zero_window.experts = 0;
    zero_window.window = 0;
    CHECK(refused(zero_window).find("'gemma2.attention.sliding_window' is 0") != std::string::npos);
    moe_file no_experts_arch;
    no_experts_arch.arch = "qwen3";
    CHECK(refused(no_experts_arch).find("qwen3 models have no experts") != std::string::npos);
    // A layer count past what vramplan plans is refused before it sizes anything (the fuzzer once
    // found a per-layer table sized by block_count = 2^40), for known and unknown architectures.
    for (const char* arch : {"llama", "starcoder2"}) {
        const std::string path = temp_path("vramplan_huge_block_count.gguf");
        io::gguf_writer w;
        w.set_string("general.architecture", arch)
            .set_u32(std::string(arch) + ".block_count", 0x7fffffff)
            .set_u32(std::string(arch) + ".embedding_length", 64)
            .set_u32(std::string(arch) + ".attention.head_count", 4);
        add_zero_tensor(w, "token_embd.weight", {64, 4});
        w.write(path);
        CHECK_THROWS_WITH_AS(io::describe(io::gguf_file::open(path)),
                             doctest::Contains("block_count is 2147483647; vramplan plans at most 256 layers"), error);
        std::filesystem::remove(path);
    }
}

namespace {
std::string write_config(const std::string& name, const std::string& json) { return write_temp_text(name, json); }
}  // namespace

TEST_CASE("config.json of qwen3_moe, mixtral, gemma2 and gemma3 (text_config) read as the presets") {
    using namespace presets;
    // Qwen3-30B-A3B's config.json, the fields that shape it.
    const std::string qwen = write_config("vramplan_qwen3_moe.json", R"({
        "model_type": "qwen3_moe", "vocab_size": 151936, "hidden_size": 2048, "num_hidden_layers": 48,
        "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128, "intermediate_size": 6144,
        "moe_intermediate_size": 768, "num_experts": 128, "num_experts_per_tok": 8, "norm_topk_prob": true,
        "decoder_sparse_step": 1, "mlp_only_layers": [], "tie_word_embeddings": false,
        "rope_theta": 1000000.0, "rms_norm_eps": 1e-06, "max_position_embeddings": 40960})");
    CHECK(io::shape_from_config(qwen) == qwen3_30b_a3b_entry.shape);
    const std::string mixtral = write_config("vramplan_mixtral.json", R"({
        "model_type": "mixtral", "vocab_size": 32000, "hidden_size": 4096, "num_hidden_layers": 32,
        "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
        "num_local_experts": 8, "num_experts_per_tok": 2, "sliding_window": null,
        "rope_theta": 1000000.0, "rms_norm_eps": 1e-05, "max_position_embeddings": 32768})");
    CHECK(io::shape_from_config(mixtral) == mixtral_8x7b_entry.shape);
    const std::string gemma2 = write_config("vramplan_gemma2.json", R"({
        "model_type": "gemma2", "vocab_size": 256000, "hidden_size": 3584, "num_hidden_layers": 42,
        "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 256, "intermediate_size": 14336,
        "sliding_window": 4096, "query_pre_attn_scalar": 256, "rope_theta": 10000.0, "rms_norm_eps": 1e-06,
        "attn_logit_softcapping": 50.0, "final_logit_softcapping": 30.0, "max_position_embeddings": 8192})");
    CHECK(io::shape_from_config(gemma2) == gemma2_9b_entry.shape);
    // Gemma 3's multimodal config nests the language model; the vision tower is named as left out.
    const std::string gemma3 = write_config("vramplan_gemma3.json", R"({
        "model_type": "gemma3", "vision_config": {"hidden_size": 1152},
        "text_config": {"model_type": "gemma3_text", "vocab_size": 262208, "hidden_size": 2560,
        "num_hidden_layers": 34, "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256,
        "intermediate_size": 10240, "sliding_window": 1024, "sliding_window_pattern": 6,
        "query_pre_attn_scalar": 256, "rope_local_base_freq": 10000.0, "attn_logit_softcapping": null,
        "final_logit_softcapping": null,
        "rope_theta": 1000000.0, "rms_norm_eps": 1e-06, "max_position_embeddings": 131072}})");
    const io::config_description d = io::describe_config(gemma3);
    CHECK(d.shape == gemma3_4b_entry.shape);
    REQUIRE(d.notes.size() == 1);
    CHECK(d.notes[0].find("vision tower") != std::string::npos);
    // Errors name the key, with its place in the file.
    const std::string bad = write_config("vramplan_gemma3_bad.json", R"({
        "model_type": "gemma3", "text_config": {"vocab_size": 262208, "hidden_size": 2560,
        "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256,
        "intermediate_size": 10240, "sliding_window": 1024, "sliding_window_pattern": 2,
        "layer_types": ["sliding_attention", "sliding_attention", "sliding_attention", "full_attention"]}})");
    CHECK_THROWS_WITH_AS(io::shape_from_config(bad), doctest::Contains("'text_config.layer_types' does not follow"),
                         error);
    const std::string too_many = write_config("vramplan_qwen3_moe_bad.json", R"({
        "model_type": "qwen3_moe", "vocab_size": 100, "hidden_size": 64, "num_hidden_layers": 2,
        "num_attention_heads": 4, "intermediate_size": 96, "moe_intermediate_size": 32, "num_experts": 4,
        "num_experts_per_tok": 6})");
    CHECK_THROWS_WITH_AS(io::shape_from_config(too_many), doctest::Contains("expert_used_count 6, expert_count 4"),
                         error);
    for (const auto& p : {qwen, mixtral, gemma2, gemma3, bad, too_many}) std::filesystem::remove(p);
}

TEST_CASE("experts in the host tier: the first N MoE layers' experts move, the rest of each layer stays, by hand") {
    VRAMPLAN_SHARED_MODEL_OR_SKIP(path, "stories260K-moe-f32.gguf");
    const auto file = io::gguf_file::open(path);
    const model_desc m = io::describe(file, "stories260K-moe");
    // A layer's slot (f32, 32-byte aligned): norms 2 x 256, q and o 16,384 each, k and v 8,192 each,
    // router 1,024, then its experts: 3 x 4 x 192 x 64 x 4 = 589,824 bytes.
    constexpr u64 experts = 589'824, rest = 256 * 2 + 16'384 * 2 + 8'192 * 2 + 1'024;
    const limits lim{.context = 256, .ubatch = 8};
    target_desc t{"cpu", 1ull << 30, 0};
    t.memory_bandwidth = 1'000'000'000;
    t.host_bandwidth = 500'000'000;
    const plan p0 = plan_inference(m, t, lim, {.alignment = 32});
    const plan p2 = plan_inference(m, t, lim, {.alignment = 32, .host_expert_layers = 2});
    CHECK(p2.host_expert_layer_count() == 2);
    CHECK(p2.gpu.weights.bytes == 3'464'960 - 2 * experts);
    CHECK(p2.host.weights.bytes == 2 * experts);
    CHECK(p2.needed() == p0.needed() - 2 * experts);
    const auto all = buffers(p2);
    const buffer_info* up1 = find_buffer(all, "blk.1.ffn_up_exps.weight");
    REQUIRE(up1);
    CHECK(up1->where == tier::host);
    CHECK(up1->offset == experts + 4 * 192 * 64 * 4);  // after layer 0's experts and layer 1's gate
    CHECK(find_buffer(all, "blk.2.ffn_up_exps.weight")->where == tier::gpu);
    CHECK(find_buffer(all, "blk.1.ffn_gate_inp.weight")->where == tier::gpu);  // the router stays
    // Decode reads 2 of 4 experts per layer: 294,912 bytes, from host memory for layers 0 and 1.
    const decode_estimate e = estimate_decode(p2);
    const u64 kv = 5 * 2 * 256 * 4 * 8 * 2;  // 5 layers, K and V, 256 positions of 4 heads x 8, f16
    CHECK(e.host_bytes == 2 * experts / 2);
    CHECK(e.device_bytes == (131'072 + 256) + 5 * rest + 3 * experts / 2 + kv);  // head and output norm first
    CHECK(e.seconds() == doctest::Approx(static_cast<double>(e.device_bytes) / 1e9 + 589'824.0 / 5e8));
    // Auto-fit moves the fewest layers' experts that make the plan fit, before offloading layers.
    const target_desc tight{"tight", p0.needed() - 2 * experts, 0};
    const plan fit = plan_auto_offload(m, tight, lim, {.alignment = 32});
    CHECK(fit.fits());
    CHECK(fit.gpu_layers == 5);
    CHECK(fit.host_expert_layer_count() == 2);
    const target_desc tighter{"tighter", p0.needed() - 2 * experts - 1, 0};
    CHECK(plan_auto_offload(m, tighter, lim, {.alignment = 32}).host_expert_layer_count() == 3);
    // The loader puts each expert tensor in its tier: the host copy holds the file's bytes.
    runtime::cpu_backend backend;
    runtime::arena<runtime::cpu_backend> a(p2, backend);
    runtime::load_weights(file, a);
    const io::gguf_tensor_info* info = file.find_tensor("blk.1.ffn_up_exps.weight");
    std::vector<std::byte> want(info->bytes);
    file.read_tensor(*info, want.data());
    const auto view = a.view("blk.1.ffn_up_exps.weight");
    CHECK(view.where == tier::host);
    CHECK(view.data == a.base(tier::host) + up1->offset);
    CHECK(std::memcmp(view.data, want.data(), want.size()) == 0);
}

namespace {
// A GGUF of an architecture vramplan has no graph for (StarCoder2's tensor names), zero-filled.
void write_unknown(const std::string& path, std::uint32_t block_count, bool kv_keys = true) {
    io::gguf_writer w;
    w.set_string("general.architecture", "starcoder2").set_u32("starcoder2.block_count", block_count);
    if (kv_keys)
        w.set_u32("starcoder2.embedding_length", 64)
            .set_u32("starcoder2.attention.head_count", 4)
            .set_u32("starcoder2.attention.head_count_kv", 2);
    auto tensor = [&](const std::string& name, std::vector<u64> dims, format f) {
        u64 rows = 1;
        for (std::size_t d = 1; d < dims.size(); ++d) rows *= dims[d];
        const std::vector<std::uint8_t> zeros(tensor_bytes(f, rows, dims[0]));
        w.add_tensor(name, dims, f, zeros.data(), zeros.size());
    };
    const format f32{format_id::f32}, q8{format_id::q8_0};
    tensor("token_embd.weight", {64, 100}, q8);
    tensor("output_norm.weight", {64}, f32);
    tensor("output_norm.bias", {64}, f32);
    for (int l = 0; l < 2; ++l) {
        const std::string p = "blk." + std::to_string(l) + ".";
        tensor(p + "attn_norm.weight", {64}, f32);
        tensor(p + "attn_norm.bias", {64}, f32);
        tensor(p + "attn_qkv.weight", {64, 128}, q8);  // q 64 + k 32 + v 32
        tensor(p + "ffn_up.weight", {64, 256}, q8);
        tensor(p + "ffn_down.weight", {256, 64}, q8);
    }
    w.write(path);
}
}  // namespace

TEST_CASE("any GGUF file: an architecture without a graph plans every tensor's bytes and its KV, no activations") {
    const std::string path = temp_path("vramplan_unknown_arch.gguf");
    write_unknown(path, 2);
    const auto file = io::gguf_file::open(path);
    const model_desc m = io::describe(file);
    CHECK_FALSE(m.shape.activations_planned);
    // Q8_0 stores 32 values in 34 bytes: embedding 100 x 64, per layer qkv 128 x 64, up 256 x 64,
    // down 64 x 256; f32 norms and biases 64 values each (2 global, 2 per layer).
    const u64 layer = (128 + 256 + 64 * 4) * 2 * 34 + 2 * 64 * 4;
    const u64 global = 100 * 2 * 34 + 2 * 64 * 4;
    CHECK(weight_bytes(m) == 2 * layer + global);
    u64 file_bytes = 0;
    for (const auto& t : file.tensors()) file_bytes += t.bytes;
    CHECK(weight_bytes(m) == file_bytes);
    CHECK(param_count(m) == 100 * 64 + 2 * 64 + 2 * (128 * 64 + 256 * 64 + 64 * 256 + 2 * 64));
    // KV from the generic keys: 2 KV heads of 64 / 4 = 16 values, f16, K and V, 2 layers.
    const plan p =
        plan_inference(m, target_desc{"gpu", 1ull << 30, 0}, {.context = 1024, .ubatch = 64}, {.alignment = 32});
    CHECK(p.gpu.kv.bytes == 2ull * 1024 * 2 * 16 * 2 * 2);
    CHECK(p.gpu.activations.bytes == 0);
    CHECK(p.graph.n_ops == 0);
    // The plan's weights are the file's tensor data plus each block's padding to the alignment.
    CHECK(p.gpu.weights.bytes == align_up(global, 32) + 2 * align_up(layer, 32));
    const auto all = buffers(p);
    REQUIRE(find_buffer(all, "blk.1 tensors"));
    CHECK(find_buffer(all, "blk.1 tensors")->bytes == layer);
    CHECK(find_buffer(all, "global tensors")->bytes == global);
    // Offloading works on the opaque layers as on any others.
    const plan half = plan_inference(m, target_desc{"gpu", 1ull << 30, 0}, {.context = 1024, .ubatch = 64},
                                     {.alignment = 32, .gpu_layers = 1});
    CHECK(half.host.weights.bytes == align_up(layer, 32));
    // It cannot run, and says so when a forward pass is built.
    runtime::cpu_backend backend;
    runtime::arena<runtime::cpu_backend> a(p, backend);
    CHECK_THROWS_WITH_AS(runtime::forward_pass<runtime::cpu_backend>{a},
                         doctest::Contains("no forward graph for this architecture"), error);
    // Without head counts there is no KV to plan; a tensor past block_count is an error.
    write_unknown(path, 2, false);
    CHECK(plan_inference(io::describe(io::gguf_file::open(path)), target_desc{"gpu", 1ull << 30, 0}, {}).gpu.kv.bytes ==
          0);
    write_unknown(path, 1);
    CHECK_THROWS_WITH_AS(io::describe(io::gguf_file::open(path)),
                         doctest::Contains("tensor 'blk.1.attn_norm.weight' belongs to layer 1, but block_count is 1"),
                         error);
    std::filesystem::remove(path);
}

TEST_CASE("layers with their own KV heads (a deci file's head_count_kv array): each layer's cache by hand") {
    // Nemotron-NAS style: 4 layers of 4 query heads of 16, KV heads 2, 0 (no attention), 1, 2.
    const std::string path = temp_path("vramplan_deci.gguf");
    io::gguf_writer w;
    w.set_string("general.architecture", "deci")
        .set_u32("deci.block_count", 4)
        .set_u32("deci.embedding_length", 64)
        .set_u32("deci.attention.head_count", 4)
        .set_i32s("deci.attention.head_count_kv", {2, 0, 1, 2})
        .set_u32("deci.attention.key_length", 16);
    add_zero_tensor(w, "token_embd.weight", {64, 32});
    add_zero_tensor(w, "output_norm.weight", {64});
    const u64 kv_heads[] = {2, 0, 1, 2};
    for (int l = 0; l < 4; ++l) {
        const std::string p = "blk." + std::to_string(l) + ".";
        if (kv_heads[l]) {
            add_zero_tensor(w, p + "attn_q.weight", {64, 64});
            add_zero_tensor(w, p + "attn_k.weight", {64, kv_heads[l] * 16});
        }
        add_zero_tensor(w, p + "ffn_up.weight", {64, 96});
    }
    w.write(path);
    const model_desc m = io::describe(io::gguf_file::open(path));
    std::filesystem::remove(path);
    CHECK(m.layer(1).attention == attention_kind::none);
    CHECK(m.layer(2).kv_heads == 1);
    // f16 K and V rows of heads x 16 values, 1024 positions: 2 x 1024 x 16 x 2 bytes per head.
    const plan p = plan_inference(m, target_desc{"gpu", 1ull << 30, 0}, {.context = 1024, .ubatch = 64});
    CHECK(p.gpu.kv.bytes == (2 + 0 + 1 + 2) * 2ull * 1024 * 16 * 2);
    CHECK(p.kv_rows_of(1) == 0);
    CHECK(kv_bytes_per_token(m) == (2 + 1 + 2) * 2ull * 16 * 2);
    const auto all = buffers(p);
    CHECK(find_buffer(all, "cache_k.1") == nullptr);
    REQUIRE(find_buffer(all, "cache_v.2"));
    CHECK(find_buffer(all, "cache_v.2")->bytes == 1024ull * 16 * 2);
    // Weights exact as ever: q 64 x 64 and k heads x 16 x 64 where there is attention, up 96 x 64.
    CHECK(weight_bytes(m) == (32 * 64 + 64 + 3 * 64 * 64 + (2 + 1 + 2) * 16 * 64 + 4 * 96 * 64) * 4);
}

TEST_CASE("dense layers before and between expert layers: two block variants, each layer running its own") {
    // A GGUF of 2 layers, the first dense (leading_dense_block_count 1), the second with 4 experts.
    const std::string path = temp_path("vramplan_dense_lead.gguf");
    moe_file f;
    f.dense_lead = 1;
    f.heads = 2;  // head_dim 32, which the CPU attention kernels are built for
    f.kv_heads = 1;
    f.write(path);
    const model_desc m = io::describe(io::gguf_file::open(path));
    std::filesystem::remove(path);
    CHECK(m.n_kinds == 2);
    CHECK(m.layer(0).ffn == ffn_kind::dense);
    CHECK(m.layer(1).ffn == ffn_kind::moe);
    // f32: the dense layer's SwiGLU is 3 x 96 x 64, the expert layer's router 4 x 64 and experts
    // 3 x 4 x 96 x 64; attention and norms as before.
    const u64 attention = 2 * 64 + 64 * 64 * 2 + 64 * 32 * 2;
    CHECK(weight_bytes(m) ==
          ((attention + 3 * 96 * 64) + (attention + 4 * 64 + 3 * 4 * 96 * 64) + 2 * 32 * 64 + 64) * 4);
    // The graph: the block once per feed-forward kind, dense first; both attend the same way.
    const forward_graph g = decoder_graph(m.shape);
    const auto dense = static_cast<std::size_t>(ffn_kind::dense), moe = static_cast<std::size_t>(ffn_kind::moe);
    CHECK(g.variant_begin[dense] == g.block_begin);
    CHECK(g.variant_end[dense] == g.variant_begin[moe]);
    CHECK(g.variant_end[moe] == g.block_end);
    CHECK(step_name(g, g.variant_begin[moe]) == "rms_norm attn_norm.weight");
    CHECK(g.weight_step(layer_weight(tensor_role::ffn_gate)) < g.variant_end[dense]);
    CHECK(g.weight_step(layer_weight(tensor_role::ffn_gate_exps)) >= g.variant_begin[moe]);
    // Both variants' buffers are planned: the dense gate and the routed rows.
    const plan p = plan_inference(m, target_desc{"cpu", 1ull << 30, 0}, {.context = 64, .ubatch = 8});
    bool gate = false, routed = false;
    for (std::size_t i = 0; i < p.graph.n_buffers; ++i) {
        gate = gate || p.act[i].name == "gate";
        routed = routed || (p.act[i].name == "expert_gate" && p.act[i].bytes == 8ull * 2 * 96 * 4);
    }
    CHECK(gate);
    CHECK(routed);
    // Each layer runs its own variant: moe_test.cpp runs such a model against the reference.

    // A variant may not read what only the other variant wrote.
    forward_graph bad;
    const auto x = bad.add_buffer({"x", buffer_rows::tokens, 4, buffer_elem::f32, 0});
    const auto y = bad.add_buffer({"y", buffer_rows::tokens, 4, buffer_elem::f32, 0});
    bad.add_op({.kind = op_kind::inputs, .out = x});
    bad.begin_block();
    bad.begin_variant(dense);
    bad.add_op({.kind = op_kind::add, .in = {x, no_buffer, no_buffer}, .out = y, .n = 4});
    bad.end_variant(dense);
    bad.begin_variant(moe);
    bad.add_op({.kind = op_kind::add, .in = {y, no_buffer, no_buffer}, .out = x, .in_place = true, .n = 4});
    bad.end_variant(moe);
    bad.end_block();
    CHECK_THROWS_WITH_AS(validate(bad), "forward graph: buffer y is read by add before any op writes it", error);
}

TEST_CASE("config.json: Qwen-MoE's mlp_only_layers and decoder_sparse_step make dense layers, by hand") {
    // 4 layers: layer 0 dense (mlp_only_layers), then experts every second layer: layers 1 and 3.
    const std::string path = write_config("vramplan_qwen_sparse.json", R"({
        "model_type": "qwen3_moe", "vocab_size": 100, "hidden_size": 64, "num_hidden_layers": 4,
        "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "intermediate_size": 96,
        "moe_intermediate_size": 32, "num_experts": 8, "num_experts_per_tok": 2, "decoder_sparse_step": 2,
        "mlp_only_layers": [0]})");
    const decoder_shape s = io::shape_from_config(path);
    CHECK(layer_ffn(s, 0) == ffn_kind::dense);
    CHECK(layer_ffn(s, 1) == ffn_kind::moe);
    CHECK(layer_ffn(s, 2) == ffn_kind::dense);
    CHECK(layer_ffn(s, 3) == ffn_kind::moe);
    // Attention (q 64x64, k and v 64x32, o 64x64, norms 2x64 and q/k norms 2x16) in every layer;
    // dense layers 3 x 64 x 96; expert layers a router 8 x 64 and 8 experts of 3 x 64 x 32.
    const u64 attention = 64 * 64 * 2 + 64 * 32 * 2 + 2 * 64 + 2 * 16;
    CHECK(param_count(s) == 4 * attention + 2 * 3 * 64 * 96 + 2 * (8 * 64 + 8 * 3 * 64 * 32) + 2 * 100 * 64 + 64);
    CHECK(active_param_count(s) ==
          4 * attention + 2 * 3 * 64 * 96 + 2 * (8 * 64 + 2 * 3 * 64 * 32) + 2 * 100 * 64 + 64);
    const std::string gap = write_config("vramplan_qwen_gap.json", R"({
        "model_type": "qwen2_moe", "vocab_size": 100, "hidden_size": 64, "num_hidden_layers": 4,
        "num_attention_heads": 4, "intermediate_size": 96, "moe_intermediate_size": 32, "num_experts": 8,
        "num_experts_per_tok": 2, "mlp_only_layers": [1, 2]})");
    CHECK_THROWS_WITH_AS(io::shape_from_config(gap), doctest::Contains("'mlp_only_layers' lists dense layers other"),
                         error);
    std::filesystem::remove(path);
    std::filesystem::remove(gap);
}

TEST_CASE("Phi-3 GGUF: fused q/k/v and gate/up tensors, every layer sliding over the file's window") {
    const std::string path = temp_path("vramplan_phi3.gguf");
    auto write = [&](bool window, bool long_rope = false) {
        io::gguf_writer w;
        w.set_string("general.architecture", "phi3")
            .set_u32("phi3.block_count", 2)
            .set_u32("phi3.embedding_length", 64)
            .set_u32("phi3.feed_forward_length", 96)
            .set_u32("phi3.attention.head_count", 2)
            .set_u32("phi3.attention.head_count_kv", 2)
            .set_u32("phi3.context_length", 4096);
        if (window) w.set_u32("phi3.attention.sliding_window", 2047);
        auto tensor = [&](const std::string& name, std::vector<u64> dims) { add_zero_tensor(w, name, dims); };
        tensor("token_embd.weight", {64, 32});
        tensor("output_norm.weight", {64});
        tensor("output.weight", {64, 32});
        if (long_rope) {  // Phi-3 128k and Phi-3.5: LongRoPE's factors, head_dim / 2 each
            tensor("rope_factors_long.weight", {16});
            tensor("rope_factors_short.weight", {16});
        }
        for (int l = 0; l < 2; ++l) {
            const std::string p = "blk." + std::to_string(l) + ".";
            tensor(p + "attn_norm.weight", {64});
            tensor(p + "attn_qkv.weight", {64, 64 + 2 * 64});  // q, k, v: 2 heads of 32 each
            tensor(p + "attn_output.weight", {64, 64});
            tensor(p + "ffn_norm.weight", {64});
            tensor(p + "ffn_up.weight", {64, 2 * 96});  // gate and up, the gate first
            tensor(p + "ffn_down.weight", {96, 64});
        }
        w.write(path);
    };
    write(true);
    const model_desc m = io::describe(io::gguf_file::open(path));
    CHECK(m.shape.fused_qkv);
    CHECK(m.layer(0).attention == attention_kind::sliding);
    CHECK(m.shape.sliding_window == 2047);
    const u64 layer = (64 + 64 * 192 + 64 * 64 + 64 + 64 * 192 + 96 * 64) * 4;
    CHECK(weight_bytes(m) == 2 * layer + (2 * 32 * 64 + 64) * 4);
    // The same bytes and parameters as separate q, k, v, gate and up matrices.
    decoder_shape separate = m.shape;
    separate.fused_qkv = separate.fused_gate_up = false;
    CHECK(param_count(separate) == param_count(m.shape));
    // The graph splits the fused outputs into the buffers the rest of the block reads.
    const plan p = plan_inference(m, target_desc{"cpu", 1ull << 30, 0}, {.context = 4096, .ubatch = 16});
    CHECK(step_name(p.graph, p.graph.block_begin + 1) == "matmul attn_qkv.weight");
    CHECK(p.graph.ops[p.graph.block_begin + 2].kind == op_kind::split);
    CHECK(p.graph.ops[p.graph.block_begin + 4].k == 128);  // v starts after q (64) and k (64)
    // Every layer holds a ring of 2047 + 16 - 1 positions: 2 x 2062 x 64 x 2 bytes x 2 (K and V).
    CHECK(p.gpu.kv.bytes == 2ull * align_up(2062ull * 64 * 2, 256) * 2);
    // It runs (moe_test.cpp checks a Phi-3 file, its ring wrapping, against the reference).
    runtime::cpu_backend backend;
    runtime::arena<runtime::cpu_backend> a(p, backend);
    CHECK_NOTHROW(runtime::forward_pass<runtime::cpu_backend>{a});
    // An older file without the key: full attention in every layer.
    write(false);
    CHECK(io::describe(io::gguf_file::open(path)).layer(1).attention == attention_kind::full);
    // LongRoPE's two factor tensors are planned (2 x 16 f32 more), not counted as parameters, and
    // refused by the runtime by name.
    write(false, true);
    const model_desc lr = io::describe(io::gguf_file::open(path));
    CHECK(lr.shape.rope_factors);
    CHECK(weight_bytes(lr) == weight_bytes(m) + 2 * 16 * 4);
    CHECK(param_count(lr.shape) == param_count(m.shape));
    const plan lp = plan_inference(lr, target_desc{"cpu", 1ull << 30, 0}, {.context = 4096, .ubatch = 16});
    const auto lb = buffers(lp);
    REQUIRE(find_buffer(lb, "rope_factors_short.weight"));
    CHECK(find_buffer(lb, "rope_factors_short.weight")->bytes == 64);
    CHECK(lp.gpu.weights.bytes == p.gpu.weights.bytes + 2 * 256);  // each padded to the 256-byte alignment
    CHECK_THROWS_WITH_AS(runtime::check_rope_supported(lr.shape), doctest::Contains("LongRoPE"), error);
    std::filesystem::remove(path);
}
