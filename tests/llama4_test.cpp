// Llama 4 (text): chunked attention in three of every four layers, experts with a shared expert,
// and the config.json that nests the language model in text_config. Expected values are derived
// here from the published config.json numbers and model cards, not from vramplan's footprint code.
#include <doctest/doctest.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "fixtures.hpp"
#include "vramplan/io/gguf_model.hpp"
#include "vramplan/io/hf_config.hpp"
#include "vramplan/model/presets.hpp"
#include "vramplan/plan/buffers.hpp"
#include "vramplan/plan/plan.hpp"
#include "vramplan/runtime/arena.hpp"
#include "vramplan/runtime/cpu_backend.hpp"
#include "vramplan/runtime/forward_pass.hpp"

using namespace vramplan;

namespace {
using u64 = std::uint64_t;

// Llama 4's text config.json numbers: 5120 wide, 40 query heads and 8 KV heads of 128, experts of
// 8192 with a shared expert of 8192, dense layers of 16384, a 202048-token vocabulary, untied.
constexpr u64 embd = 5120, vocab = 202048, expert_ff = 8192, dense_ff = 16384;
constexpr u64 attention = embd * 40 * 128 * 2 + embd * 8 * 128 * 2;  // q and o, k and v
constexpr u64 norms = 2 * embd;
constexpr u64 swiglu(u64 ff) { return 3 * embd * ff; }
constexpr u64 moe_layer(u64 experts, u64 used) {
    return attention + norms + experts * embd /* router */ + used * swiglu(expert_ff) + swiglu(expert_ff) /* shared */;
}
constexpr u64 globals = vocab * embd * 2 + embd;  // embedding, head, output norm

// Model cards write billions with the rest cut off: 17.17B active is "17B", 400.7B total "400B".
constexpr u64 billions(u64 n) { return n / 1'000'000'000; }

const char* scout_config = R"({
    "model_type": "llama4", "tie_word_embeddings": false, "vision_config": {"hidden_size": 1408},
    "text_config": {"model_type": "llama4_text", "vocab_size": 202048, "hidden_size": 5120,
    "num_hidden_layers": 48, "num_attention_heads": 40, "num_key_value_heads": 8, "head_dim": 128,
    "intermediate_size": 8192, "intermediate_size_mlp": 16384, "num_local_experts": 16,
    "num_experts_per_tok": 1, "interleave_moe_layer_step": 1, "attention_chunk_size": 8192,
    "use_qk_norm": true, "rope_theta": 500000.0, "rms_norm_eps": 1e-05,
    "max_position_embeddings": 10485760,
    "rope_scaling": {"factor": 16.0, "high_freq_factor": 1.0, "low_freq_factor": 1.0,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3"}}})";
}  // namespace

TEST_CASE("Llama 4 Scout and Maverick parameter counts, by hand from config.json and the model cards") {
    // Scout: every layer has 16 experts, one used per token. The card's "17B active, 109B total"
    // counts the vision encoder in the total; the text model alone is 107.77B.
    const u64 scout = 48 * moe_layer(16, 16) + globals;
    CHECK(scout == 107'769'861'120);
    CHECK(billions(48 * moe_layer(16, 1) + globals) == 17);
    CHECK(param_count(presets::llama4_scout_entry.shape) == scout);
    CHECK(active_param_count(presets::llama4_scout_entry.shape) == 48 * moe_layer(16, 1) + globals);
    // Maverick: experts in every second layer (128 of them), dense layers of 16384 between them:
    // "17B active, 400B total".
    const u64 dense = attention + norms + swiglu(dense_ff);
    const std::string path = write_temp_text("vramplan_llama4_maverick.json", R"({
        "model_type": "llama4", "tie_word_embeddings": false,
        "text_config": {"vocab_size": 202048, "hidden_size": 5120, "num_hidden_layers": 48,
        "num_attention_heads": 40, "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 8192,
        "intermediate_size_mlp": 16384, "num_local_experts": 128, "num_experts_per_tok": 1,
        "interleave_moe_layer_step": 2, "attention_chunk_size": 8192, "rope_scaling": null,
        "rope_theta": 500000.0, "max_position_embeddings": 1048576}})");
    const decoder_shape maverick = io::shape_from_config(path);
    std::filesystem::remove(path);
    CHECK(billions(24 * dense + 24 * moe_layer(128, 128) + globals) == 400);
    CHECK(billions(24 * dense + 24 * moe_layer(128, 1) + globals) == 17);
    CHECK(param_count(maverick) == 24 * dense + 24 * moe_layer(128, 128) + globals);
    CHECK(active_param_count(maverick) == 24 * dense + 24 * moe_layer(128, 1) + globals);
    CHECK(layer_ffn(maverick, 0) == ffn_kind::dense);
    CHECK(layer_ffn(maverick, 1) == ffn_kind::moe);
}

TEST_CASE("chunked attention: a ring of chunk + micro-batch - 1 positions in three of every four layers") {
    const model_desc m = presets::describe(presets::llama4_scout_entry, uniform_policy(format{format_id::q4_k}));
    const target_desc big{"big", 1ull << 40, 0};
    // Layers 3, 7, ..., 47 (12 of them) attend to the whole context; the 36 others to their chunk
    // of 8192, which at a 512-token micro-batch needs 8192 + 511 cached positions. A row is 8 KV
    // heads x 128 x 2 bytes (f16), K and V.
    const plan p = plan_inference(m, big, {.context = 131072, .ubatch = 512});
    CHECK(p.model.n_kinds == 2);
    CHECK(p.model.layer(0).attention == attention_kind::chunked);
    CHECK(p.model.layer(3).attention == attention_kind::full);
    CHECK(p.kv_positions_of(0) == 8703);
    CHECK(p.kv_positions_of(47) == 131072);
    CHECK(p.gpu.kv.bytes == (12ull * 131072 + 36ull * 8703) * 8 * 128 * 2 * 2);
    CHECK(kv_bytes_per_token(m) == 12ull * 8 * 128 * 2 * 2);
    // A context shorter than the ring: every layer holds the context.
    CHECK(plan_inference(m, big, {.context = 4096, .ubatch = 512}).gpu.kv.bytes == 48ull * 4096 * 8 * 128 * 2 * 2);
    // The buffers list sizes each layer's plane by its own kind.
    const auto all = buffers(p);
    REQUIRE(find_buffer(all, "cache_k.0"));
    CHECK(find_buffer(all, "cache_k.0")->bytes == 8703ull * 8 * 128 * 2);
    // The runtime names what it does not run yet.
    const model_desc tiny_chunks = [] {
        decoder_shape s = presets::stories260k_entry.shape;
        s.attention_chunk = 16;
        s.window_period = 2;
        return make_model("chunked", s, uniform_policy(format{format_id::f32}));
    }();
    const plan tp = plan_inference(tiny_chunks, big, {.context = 64, .ubatch = 8});
    CHECK(tp.kv_positions_of(0) == 23);
    runtime::cpu_backend backend;
    runtime::arena<runtime::cpu_backend> a(tp, backend);
    CHECK_THROWS_WITH_AS(runtime::forward_pass<runtime::cpu_backend>{a},
                         doctest::Contains("chunked layers (chunks of 16 tokens) are planned but not run yet"), error);
    // Llama 4's own block (sigmoid routing of the experts' inputs, layers without RoPE) is refused by
    // name even where the context fits in one chunk, since the graph would run it as a Llama block.
    CHECK(presets::llama4_scout_entry.shape.llama4_block);
    model_desc llama4_like = tiny_chunks;
    llama4_like.shape.llama4_block = true;
    const plan lp = plan_inference(llama4_like, big, {.context = 16, .ubatch = 8});
    runtime::arena<runtime::cpu_backend> la(lp, backend);
    CHECK_THROWS_WITH_AS(runtime::forward_pass<runtime::cpu_backend>{la}, doctest::Contains("Llama 4's block"), error);
}

TEST_CASE("config.json of Llama 4 Scout (text_config) reads as the preset; patterns it cannot plan are named") {
    const std::string path = write_temp_text("vramplan_llama4_scout.json", scout_config);
    const io::config_description d = io::describe_config(path);
    std::filesystem::remove(path);
    CHECK(d.shape == presets::llama4_scout_entry.shape);
    REQUIRE(d.notes.size() == 1);
    CHECK(d.notes[0].find("vision tower") != std::string::npos);

    auto refused = [](const std::string& text) {
        const std::string bad = write_temp_text("vramplan_llama4_bad.json", text);
        std::string what;
        try {
            (void)io::shape_from_config(bad);
        } catch (const error& e) {
            what = e.what();
        }
        std::filesystem::remove(bad);
        return what;
    };
    const std::string base = R"({"model_type": "llama4_text", "vocab_size": 100, "hidden_size": 64,
        "num_hidden_layers": 4, "num_attention_heads": 4, "intermediate_size": 32, "num_local_experts": 4,
        "num_experts_per_tok": 1, )";
    const std::string head = base + R"("attention_chunk_size": 16, )";
    CHECK(refused(head + R"("no_rope_layers": [1, 0, 1, 0]})").find("'no_rope_layers' does not follow") !=
          std::string::npos);
    CHECK(refused(head + R"("layer_types": ["chunked_attention", "chunked_attention", "chunked_attention",
        "chunked_attention"]})")
              .find("'layer_types' does not follow one global layer in every 4 (layer 3") != std::string::npos);
    CHECK(refused(head + R"("interleave_moe_layer_step": 2, "moe_layers": [0, 2]})").find("'moe_layers'") !=
          std::string::npos);
    // The same patterns, stated as the period says, are accepted.
    CHECK(refused(head + R"("no_rope_layers": [1, 1, 1, 0], "interleave_moe_layer_step": 2, "moe_layers": [1, 3]})")
              .empty());
    // Without a chunk size every layer attends to the whole context.
    const std::string full = write_temp_text("vramplan_llama4_full.json", base + R"("attention_chunk_size": null})");
    CHECK(layer_attention(io::shape_from_config(full), 0) == attention_kind::full);
    std::filesystem::remove(full);
}

namespace {
// A small llama4 GGUF: 4 layers, experts (4 of 32, one used, each with a shared expert of 32) in
// every second layer as interleave_moe_layer_step says, dense layers of 48 between them.
void write_llama4(const std::string& path, long long window_key) {
    io::gguf_writer w;
    w.set_string("general.architecture", "llama4")
        .set_u32("llama4.block_count", 4)
        .set_u32("llama4.embedding_length", 64)
        .set_u32("llama4.feed_forward_length", 48)
        .set_u32("llama4.expert_feed_forward_length", 32)
        .set_u32("llama4.expert_count", 4)
        .set_u32("llama4.expert_used_count", 1)
        .set_u32("llama4.interleave_moe_layer_step", 2)
        .set_u32("llama4.attention.head_count", 4)
        .set_u32("llama4.attention.head_count_kv", 2);
    if (window_key >= 0) w.set_u32("llama4.attention.sliding_window", static_cast<std::uint32_t>(window_key));
    add_zero_tensor(w, "token_embd.weight", {64, 32});
    add_zero_tensor(w, "output_norm.weight", {64});
    add_zero_tensor(w, "output.weight", {64, 32});
    for (int l = 0; l < 4; ++l) {
        const std::string p = "blk." + std::to_string(l) + ".";
        for (const char* norm : {"attn_norm.weight", "ffn_norm.weight"}) add_zero_tensor(w, p + norm, {64});
        add_zero_tensor(w, p + "attn_q.weight", {64, 64});
        add_zero_tensor(w, p + "attn_k.weight", {64, 32});
        add_zero_tensor(w, p + "attn_v.weight", {64, 32});
        add_zero_tensor(w, p + "attn_output.weight", {64, 64});
        if (l % 2 == 0) {
            add_zero_tensor(w, p + "ffn_gate.weight", {64, 48});
            add_zero_tensor(w, p + "ffn_up.weight", {64, 48});
            add_zero_tensor(w, p + "ffn_down.weight", {48, 64});
            continue;
        }
        add_zero_tensor(w, p + "ffn_gate_inp.weight", {64, 4});
        add_zero_tensor(w, p + "ffn_gate_exps.weight", {64, 32, 4});
        add_zero_tensor(w, p + "ffn_up_exps.weight", {64, 32, 4});
        add_zero_tensor(w, p + "ffn_down_exps.weight", {32, 64, 4});
        add_zero_tensor(w, p + "ffn_gate_shexp.weight", {64, 32});
        add_zero_tensor(w, p + "ffn_up_shexp.weight", {64, 32});
        add_zero_tensor(w, p + "ffn_down_shexp.weight", {32, 64});
    }
    w.write(path);
}
}  // namespace

TEST_CASE("a llama4 GGUF written here: chunked layers, interleaved experts with shared experts, exact bytes") {
    const std::string path = test_temp_path("vramplan_llama4.gguf");
    write_llama4(path, -1);
    const model_desc m = io::describe(io::gguf_file::open(path));
    // llama.cpp fixes the chunk (8192) and the pattern (layer 3 global) when the file gives no window.
    CHECK(m.shape.attention_chunk == 8192);
    CHECK(m.layer(0).attention == attention_kind::chunked);
    CHECK(m.layer(3).attention == attention_kind::full);
    CHECK(m.layer(0).ffn == ffn_kind::dense);
    CHECK(m.layer(1).ffn == ffn_kind::moe);
    CHECK(m.shape.n_ff_shared == 32);  // the shared expert is as wide as the routed ones
    CHECK(m.n_kinds == 3);             // chunked dense (0, 2), chunked MoE (1), global MoE (3)
    // f32 bytes, tensor by tensor: attention 64 x 64 x 2 + 64 x 32 x 2 and two norms of 64 in every
    // layer; dense layers 3 x 64 x 48; MoE layers a router 4 x 64, experts 3 x 4 x 32 x 64 and the
    // shared expert 3 x 32 x 64; globals 2 x 32 x 64 + 64.
    const u64 common = 64 * 64 * 2 + 64 * 32 * 2 + 2 * 64;
    const u64 dense = common + 3 * 64 * 48, moe = common + 4 * 64 + 3 * 4 * 32 * 64 + 3 * 32 * 64;
    CHECK(weight_bytes(m) == (2 * dense + 2 * moe + 2 * 32 * 64 + 64) * 4);
    CHECK(active_param_count(m.shape) == 2 * dense + 2 * (moe - 3 * 3 * 32 * 64) + 2 * 32 * 64 + 64);
    // At a 4096-token context and 512-token micro-batches, layers 0-2 hold 8192 + 511 > 4096 positions:
    // the context. A window key of 16 gives 16 + 511 = 527.
    CHECK(plan_inference(m, target_desc{"cpu", 1ull << 30, 0}, {.context = 4096, .ubatch = 512}).kv_positions_of(0) ==
          4096);
    write_llama4(path, 16);
    const model_desc small = io::describe(io::gguf_file::open(path));
    CHECK(
        plan_inference(small, target_desc{"cpu", 1ull << 30, 0}, {.context = 4096, .ubatch = 512}).kv_positions_of(0) ==
        527);
    // A window key of 0 (MobileLLM's llama4 files): no chunking, every layer attends fully.
    write_llama4(path, 0);
    const model_desc none = io::describe(io::gguf_file::open(path));
    CHECK(none.layer(0).attention == attention_kind::full);
    CHECK(none.n_kinds == 2);
    std::filesystem::remove(path);
}
