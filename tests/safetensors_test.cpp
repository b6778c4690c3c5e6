// safetensors headers written here byte by byte (the 8-byte length, the JSON, zero data), good and
// malformed, and checkpoints beside a config.json: the plan's weights are the headers' bytes, the
// routed experts can move to the host tier, and what is not the language model is said and left out.
#include <doctest/doctest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "temp_path.hpp"
#include "vramplan/io/checkpoint.hpp"
#include "vramplan/model/format_policy.hpp"
#include "vramplan/plan/buffers.hpp"
#include "vramplan/plan/plan.hpp"
#include "vramplan/runtime/forward_pass.hpp"

using namespace vramplan;

namespace {
using u64 = std::uint64_t;

struct tensor {
    std::string name, dtype;
    std::vector<u64> shape;
};
u64 dtype_bytes(const std::string& d) {
    return d == "F32" || d == "I32" ? 4 : d == "F16" || d == "BF16" ? 2 : d == "F64" || d == "I64" ? 8 : 1;
}
u64 bytes_of(const tensor& t) {
    u64 n = dtype_bytes(t.dtype);
    for (u64 d : t.shape) n *= d;
    return n;
}
// The JSON of a header that lays the tensors out one after another, and the data's size.
std::string header_of(const std::vector<tensor>& ts, u64& data) {
    std::string h = "{\"__metadata__\": {\"format\": \"pt\"}";
    data = 0;
    for (const auto& t : ts) {
        std::string shape;
        for (u64 d : t.shape) shape += (shape.empty() ? "" : ", ") + std::to_string(d);
        h += ", \"" + t.name + "\": {\"dtype\": \"" + t.dtype + "\", \"shape\": [" + shape + "], \"data_offsets\": [" +
             std::to_string(data) + ", " + std::to_string(data + bytes_of(t)) + "]}";
        data += bytes_of(t);
    }
    return h + "}";
}
// 8-byte little-endian length, the header, `data` zero bytes (or `length` in place of the true one).
void write_raw(const std::string& path, const std::string& header, u64 data, u64 length = ~u64{0}) {
    std::ofstream f(path, std::ios::binary);
    const u64 n = length == ~u64{0} ? header.size() : length;
    for (int b = 0; b < 8; ++b) f.put(static_cast<char>(n >> (8 * b) & 0xff));
    f << header;
    const std::vector<char> zeros(static_cast<std::size_t>(data));
    f.write(zeros.data(), static_cast<std::streamsize>(zeros.size()));
}
void write_file(const std::string& path, const std::vector<tensor>& ts) {
    u64 data = 0;
    const std::string h = header_of(ts, data);
    write_raw(path, h, data);
}
std::string refused_file(const std::string& header, u64 data, u64 length = ~u64{0}) {
    const std::string path = test_temp_path("vramplan_bad.safetensors");
    write_raw(path, header, data, length);
    try {
        (void)io::read_safetensors(path);
    } catch (const error& e) {
        std::filesystem::remove(path);
        return e.what();
    }
    std::filesystem::remove(path);
    return "accepted";
}

// A folder for a checkpoint, removed when the test ends.
struct folder {
    std::filesystem::path dir;
    folder() : dir(test_temp_path("vramplan_checkpoint")) { std::filesystem::create_directories(dir); }
    ~folder() { std::filesystem::remove_all(dir); }
    std::string file(const std::string& name) const { return (dir / name).string(); }
};

// A tiny Mixtral: 2 layers of 64, 4 heads (2 KV), experts 4 of 96, 2 used, vocab 32, bf16.
const char* tiny_mixtral = R"({"model_type": "mixtral", "vocab_size": 32, "hidden_size": 64, "intermediate_size": 96,
  "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "num_local_experts": 4,
  "num_experts_per_tok": 2, "torch_dtype": "bfloat16"})";
std::vector<tensor> mixtral_tensors(u64 layers) {
    std::vector<tensor> ts{{"model.embed_tokens.weight", "BF16", {32, 64}},
                           {"model.norm.weight", "BF16", {64}},
                           {"lm_head.weight", "BF16", {32, 64}}};
    for (u64 l = 0; l < layers; ++l) {
        const std::string p = "model.layers." + std::to_string(l) + ".";
        for (const char* n : {"input_layernorm.weight", "post_attention_layernorm.weight"})
            ts.push_back({p + n, "BF16", {64}});
        ts.push_back({p + "self_attn.q_proj.weight", "BF16", {64, 64}});
        ts.push_back({p + "self_attn.k_proj.weight", "BF16", {32, 64}});
        ts.push_back({p + "self_attn.v_proj.weight", "BF16", {32, 64}});
        ts.push_back({p + "self_attn.o_proj.weight", "BF16", {64, 64}});
        ts.push_back({p + "block_sparse_moe.gate.weight", "BF16", {4, 64}});
        for (int e = 0; e < 4; ++e) {
            const std::string x = p + "block_sparse_moe.experts." + std::to_string(e) + ".";
            ts.push_back({x + "w1.weight", "BF16", {96, 64}});
            ts.push_back({x + "w3.weight", "BF16", {96, 64}});
            ts.push_back({x + "w2.weight", "BF16", {64, 96}});
        }
    }
    return ts;
}
model_desc checkpoint_model(const folder& f, std::vector<std::string>& notes) {
    const io::config_description d = io::describe_config(f.file("config.json"));
    const model_desc m = make_model("tiny", d.shape, uniform_policy(format{format_id::f16}));
    return io::with_checkpoint_weights(m, io::read_checkpoint_headers(f.dir), notes);
}
}  // namespace

TEST_CASE("a safetensors header gives every tensor's dtype, shape and exact bytes") {
    const std::string path = test_temp_path("vramplan_good.safetensors");
    write_file(path, {{"a", "BF16", {3, 5}}, {"b", "F8_E4M3", {7}}, {"c", "I32", {2, 2, 2}}, {"empty", "F32", {0}}});
    const auto ts = io::read_safetensors(path);
    std::filesystem::remove(path);
    REQUIRE(ts.size() == 4);  // __metadata__ is not a tensor
    CHECK(ts[0].name == "a");
    CHECK(ts[0].bytes == 30);
    CHECK(ts[1].bytes == 7);
    CHECK(ts[2].bytes == 32);
    CHECK(ts[2].shape == std::vector<u64>{2, 2, 2});
    CHECK(ts[3].bytes == 0);
    // F4 packs two values a byte.
    CHECK(refused_file(R"({"x": {"dtype": "F4", "shape": [6], "data_offsets": [0, 3]}})", 3) == "accepted");
}

TEST_CASE("malformed safetensors headers: each is one error naming the file and what is wrong") {
    CHECK(refused_file("", 0, 0).find("not valid JSON") != std::string::npos);
    CHECK(refused_file(R"({"x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})", 0, 1000)
              .find("the file ends") != std::string::npos);  // header length past the end
    CHECK(refused_file(R"({"x": 1})", 0, 1ull << 40).find("more than the 100 MB") != std::string::npos);
    CHECK(refused_file(R"({"x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})", 4)
              .find("outside the file's 4 bytes of data") != std::string::npos);  // truncated data
    CHECK(refused_file(R"({"x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                           "y": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})",
                       12)
              .find("overlap") != std::string::npos);
    CHECK(refused_file(R"({"x": {"dtype": "Q4", "shape": [2], "data_offsets": [0, 1]}})", 1)
              .find("dtype 'Q4', which safetensors does not define") != std::string::npos);
    CHECK(refused_file(R"({"x": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})", 8)
              .find("spans 8 bytes, but its shape [3] of F32 is 12 bytes") != std::string::npos);
    CHECK(refused_file(R"({"x": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}})", 8)
              .find("not a list of sizes") != std::string::npos);
    CHECK(refused_file(R"({"x": {"dtype": "F32", "shape": [2]}})", 8).find("needs a dtype, a shape and data_offsets") !=
          std::string::npos);
    CHECK(refused_file(R"([1, 2])", 0).find("not a JSON object") != std::string::npos);
    const std::string tiny = test_temp_path("vramplan_tiny.safetensors");
    std::ofstream(tiny) << "abc";
    CHECK_THROWS_WITH_AS(io::read_safetensors(tiny), doctest::Contains("shorter than a safetensors header"), error);
    std::filesystem::remove(tiny);
}

TEST_CASE("a checkpoint beside config.json: the plan's weights are its headers' bytes, experts apart") {
    folder f;
    std::ofstream(f.file("config.json")) << tiny_mixtral;
    auto ts = mixtral_tensors(2);
    ts.push_back({"vision_tower.patch_embed.weight", "BF16", {8, 8}});  // not the language model
    write_file(f.file("model.safetensors"), ts);
    std::vector<std::string> notes;
    const model_desc m = checkpoint_model(f, notes);
    u64 language = 0;
    for (const auto& t : ts)
        if (t.name.find("vision") == std::string::npos) language += bytes_of(t);
    CHECK(weight_bytes(m) == language);
    CHECK(m.token_embd == format{format_id::bf16});
    // Each layer: its experts' 4 x 3 x 96 x 64 bf16 values end its slot.
    CHECK(m.layer(0).opaque_expert_bytes == 4ull * 3 * 96 * 64 * 2);
    CHECK(m.layer(0).opaque_bytes == (2 * 64 + 64 * 64 * 2 + 32 * 64 * 2 + 4 * 64) * 2ull);
    CHECK(m.n_kinds == 1);
    REQUIRE(notes.size() == 2);
    CHECK(notes[0].find(std::to_string(ts.size() - 1) + " tensors, ") != std::string::npos);
    CHECK(notes[1].find("vision or audio tower") != std::string::npos);
    // The experts of the first layer in the host tier: exactly their bytes move.
    const target_desc big{"big", 1ull << 30, 0};
    const limits lim{.context = 64, .ubatch = 8};
    const plan all = plan_inference(m, big, lim, {.alignment = 64});
    const plan moved = plan_inference(m, big, lim, {.alignment = 64, .host_expert_layers = 1});
    CHECK(moved.host.weights.bytes == 4ull * 3 * 96 * 64 * 2);
    CHECK(all.gpu.weights.bytes - moved.gpu.weights.bytes == 4ull * 3 * 96 * 64 * 2);
    const auto listed = buffers(moved);
    const buffer_info* e0 = find_buffer(listed, "blk.0 experts");
    REQUIRE(e0);
    CHECK(e0->where == tier::host);
    CHECK(find_buffer(listed, "blk.1 experts")->where == tier::gpu);
    // The KV cache and activations still come from the shape; nothing runs from a checkpoint.
    CHECK(all.kv_bytes() == 2ull * 64 * 32 * 2 * 2);
    CHECK(all.gpu.activations.bytes > 0);
    CHECK_THROWS_WITH_AS(runtime::check_runnable(m), doctest::Contains("safetensors headers"), error);
}

TEST_CASE("a sharded checkpoint: the index's shards, each tensor where the index says") {
    folder f;
    std::ofstream(f.file("config.json")) << tiny_mixtral;
    auto ts = mixtral_tensors(3);  // a third layer past num_hidden_layers: multi-token prediction
    const std::vector<tensor> first(ts.begin(), ts.begin() + 20), second(ts.begin() + 20, ts.end());
    write_file(f.file("model-00001-of-00002.safetensors"), first);
    write_file(f.file("model-00002-of-00002.safetensors"), second);
    auto index = [&](const std::string& moved_tensor, const std::string& to) {
        std::string map;
        for (std::size_t i = 0; i < ts.size(); ++i) {
            std::string shard = i < 20 ? "model-00001-of-00002.safetensors" : "model-00002-of-00002.safetensors";
            if (ts[i].name == moved_tensor) shard = to;
            map += (map.empty() ? "" : ", ") + ("\"" + ts[i].name + "\": \"" + shard + "\"");
        }
        std::ofstream(f.file("model.safetensors.index.json")) << "{\"metadata\": {}, \"weight_map\": {" + map + "}}";
    };
    index("", "");
    std::vector<std::string> notes;
    const model_desc m = checkpoint_model(f, notes);
    u64 two_layers = 0;
    for (const auto& t : mixtral_tensors(2)) two_layers += bytes_of(t);
    CHECK(weight_bytes(m) == two_layers);
    REQUIRE(notes.size() == 2);
    CHECK(notes[1].find("multi-token prediction") != std::string::npos);
    // An index that places a tensor in the wrong shard, or a shard that is not beside it.
    index(ts[0].name, "model-00002-of-00002.safetensors");
    CHECK_THROWS_WITH_AS(io::read_checkpoint_headers(f.dir), doctest::Contains("does not place in that shard"), error);
    index(ts[0].name, "../elsewhere.safetensors");
    CHECK_THROWS_WITH_AS(io::read_checkpoint_headers(f.dir), doctest::Contains("not a file beside the index"), error);
    // A checkpoint of another model: no embedding of config.json's shape.
    std::filesystem::remove(f.file("model.safetensors.index.json"));
    std::filesystem::remove(f.file("model-00002-of-00002.safetensors"));
    write_file(f.file("model.safetensors"), {{"model.embed_tokens.weight", "BF16", {33, 64}}});
    CHECK_THROWS_WITH_AS(checkpoint_model(f, notes), doctest::Contains("config.json implies"), error);
}
