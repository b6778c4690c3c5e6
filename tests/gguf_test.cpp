#include <doctest/doctest.h>

#include "temp_path.hpp"

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "test_model.hpp"
#include "vramplan/io/gguf_model.hpp"
#include "vramplan/io/gguf_reader.hpp"
#include "vramplan/io/gguf_writer.hpp"
#include "vramplan/io/tokenizer.hpp"
#include "vramplan/model/footprint.hpp"

using namespace vramplan;
using namespace vramplan::io;

namespace {

const std::string shared_models = std::string(VRAMPLAN_SHARED_DIR) + "/models/";
bool have_shared() { return std::filesystem::exists(shared_models + "stories260K.gguf"); }

// A hand-assembled GGUF header, so each test can break exactly one field.
struct raw {
    std::vector<std::uint8_t> b;
    template <class T>
    raw& put(T v) {
        const auto* p = reinterpret_cast<const std::uint8_t*>(&v);
        b.insert(b.end(), p, p + sizeof v);
        return *this;
    }
    raw& str(const std::string& s) {
        put<std::uint64_t>(s.size());
        b.insert(b.end(), s.begin(), s.end());
        return *this;
    }
    raw& pad(std::size_t to) {
        b.resize((b.size() + to - 1) / to * to, 0);
        return *this;
    }
};

gguf_file parse(const raw& r) { return gguf_file::parse("test.gguf", r.b.data(), r.b.size(), r.b.size()); }

// magic, version 3, one tensor, one metadata entry, then a 4x2 f32 tensor at offset 0.
raw valid(std::uint32_t type = 0, std::uint64_t dim0 = 4, std::uint64_t offset = 0) {
    raw r;
    r.put(gguf_magic).put<std::uint32_t>(3).put<std::uint64_t>(1).put<std::uint64_t>(1);
    r.str("general.architecture").put<std::uint32_t>(8).str("llama");
    r.str("t")
        .put<std::uint32_t>(2)
        .put<std::uint64_t>(dim0)
        .put<std::uint64_t>(2)
        .put<std::uint32_t>(type)
        .put<std::uint64_t>(offset);
    r.pad(32);
    r.b.resize(r.b.size() + 32, 0);
    return r;
}

}  // namespace

TEST_CASE("a valid hand-made header parses") {
    const gguf_file g = parse(valid());
    CHECK(g.version() == 3);
    CHECK(g.tensors().size() == 1);
    CHECK(g.tensors()[0].bytes == 32);
    CHECK(g.get_string("general.architecture") == "llama");
    CHECK(g.data_offset() % 32 == 0);
}

TEST_CASE("malformed GGUF headers give clear errors") {
    auto fails_with = [](const raw& r, const char* text) {
        CAPTURE(text);
        CHECK_THROWS_WITH_AS(parse(r), doctest::Contains(text), gguf_error);
    };
    raw r = valid();
    r.b[0] = 'X';
    fails_with(r, "bad magic");
    r = valid();
    r.b[4] = 4;
    fails_with(r, "unsupported GGUF version 4");
    r = valid();
    std::memset(r.b.data() + 8, 0xff, 8);
    fails_with(r, "tensor count");
    r = valid();
    std::memset(r.b.data() + 16, 0x7f, 8);
    fails_with(r, "metadata count");
    r = valid();
    std::memset(r.b.data() + 24, 0xff, 7);  // key length
    fails_with(r, "runs past the end");
    fails_with(valid(4), "unknown GGUF tensor type id 4");
    fails_with(valid(99), "unknown GGUF tensor type id 99");
    fails_with(valid(2, 4), "multiple of 32");  // Q4_0 rows of 4 values
    fails_with(valid(0, 0), "invalid dimension 0");
    fails_with(valid(0, 4, 16), "not aligned");
    fails_with(valid(0, 4, 64), "runs past the end of the file");
    fails_with(valid(0, 1ull << 62), "overflow");  // 2^62 x 2 rows x 4 bytes does not fit in 64 bits
    {
        raw d;
        d.put(gguf_magic).put<std::uint32_t>(3).put<std::uint64_t>(0).put<std::uint64_t>(2);
        d.str("k").put<std::uint32_t>(4).put<std::uint32_t>(1).str("k").put<std::uint32_t>(4).put<std::uint32_t>(2);
        fails_with(d, "duplicate metadata key");
    }
    {
        raw d;
        d.put(gguf_magic).put<std::uint32_t>(3).put<std::uint64_t>(0).put<std::uint64_t>(1);
        d.str("k").put<std::uint32_t>(77).put<std::uint32_t>(1);
        fails_with(d, "unknown metadata value type 77");
    }
    {
        raw d;
        d.put(gguf_magic).put<std::uint32_t>(3).put<std::uint64_t>(0).put<std::uint64_t>(1);
        d.str("k").put<std::uint32_t>(9).put<std::uint32_t>(6).put<std::uint64_t>(1ull << 60);
        fails_with(d, "runs past the end of the file");
    }
    {
        raw d;
        d.put(gguf_magic).put<std::uint32_t>(3).put<std::uint64_t>(0).put<std::uint64_t>(1);
        d.str("general.alignment").put<std::uint32_t>(4).put<std::uint32_t>(48);
        fails_with(d, "power-of-two");
    }
    {
        raw d;  // two tensors at the same offset
        d.put(gguf_magic).put<std::uint32_t>(3).put<std::uint64_t>(2).put<std::uint64_t>(0);
        for (const char* n : {"a", "b"})
            d.str(n).put<std::uint32_t>(1).put<std::uint64_t>(8).put<std::uint32_t>(0).put<std::uint64_t>(0);
        d.pad(32);
        d.b.resize(d.b.size() + 64, 0);
        fails_with(d, "overlap");
    }
    {
        raw d;
        d.put(gguf_magic).put<std::uint32_t>(3).put<std::uint64_t>(1).put<std::uint64_t>(0);
        d.str("a").put<std::uint32_t>(5);
        fails_with(d, "5 dimensions");
    }
}

TEST_CASE("a file truncated at any offset is an error and never a crash") {
    gguf_writer w;
    w.set_string("general.architecture", "llama")
        .set_u32("llama.block_count", 1)
        .set_strings("tokenizer.ggml.tokens", {"a", "b", "c"});
    w.set_f32s("tokenizer.ggml.scores", {0.5f, 0.25f, 0.0f});
    std::vector<float> data(64, 1.0f);
    w.add_tensor("x", {32, 2}, format{format_id::f32}, data.data(), 256);
    const auto bytes = w.bytes();
    CHECK_NOTHROW(gguf_file::parse("w.gguf", bytes.data(), bytes.size(), bytes.size()));
    for (std::size_t cut = 0; cut < bytes.size(); ++cut) {
        CAPTURE(cut);
        CHECK_THROWS_AS(gguf_file::parse("w.gguf", bytes.data(), cut, cut), gguf_error);
    }
}

TEST_CASE("the writer's files read back exactly") {
    gguf_writer w;
    w.set_string("general.architecture", "llama").set_u32("n", 7).set_f32("f", 0.5f).set_i32s("ids", {-1, 2});
    std::vector<std::uint8_t> q(34 * 2, 3);
    w.add_tensor("q", {64}, format{format_id::q8_0}, q.data(), q.size());
    const auto path = std::filesystem::path(test_temp_path("vramplan_writer_test.gguf"));
    w.write(path.string());
    const gguf_file g = gguf_file::open(path.string());
    CHECK(g.get_uint("n") == 7);
    CHECK(g.get_float("f", 0) == 0.5);
    CHECK(g.get_array("ids", gguf_type::i32).ints == std::vector<std::int64_t>{-1, 2});
    const gguf_tensor_info* t = g.find_tensor("q");
    REQUIRE(t != nullptr);
    CHECK(t->bytes == 68);
    std::vector<std::uint8_t> back(68);
    g.read_tensor(*t, back.data());
    CHECK(back == q);
    CHECK_THROWS_WITH_AS(g.get_uint("missing"), doctest::Contains("missing metadata key 'missing'"), gguf_error);
    CHECK_THROWS_WITH_AS(gguf_file::open("/nonexistent/x.gguf"),
                         "gguf: '/nonexistent/x.gguf' does not exist; give the path of the GGUF model", gguf_error);
    std::filesystem::remove(path);
}

TEST_CASE("a tensor the llama description does not cover is an error, not bytes missing from the plan") {
    const std::string path = test_temp_path("vramplan_stray.gguf");
    test_model::spec s;
    s.stray_tensor = "blk.0.ffn_gate_inp.weight";  // a mixture-of-experts router
    test_model::write(path, s);
    CHECK_THROWS_WITH_AS(describe(gguf_file::open(path)),
                         doctest::Contains("tensor 'blk.0.ffn_gate_inp.weight' is not part of the llama model"),
                         gguf_error);
    s.stray_tensor.clear();
    test_model::write(path, s);
    const gguf_file clean = gguf_file::open(path);
    std::uint64_t bytes = 0;
    for (const auto& t : clean.tensors()) bytes += t.bytes;
    CHECK(weight_bytes(describe(clean)) == bytes);
    std::filesystem::remove(path);
}

TEST_CASE("stories260K GGUF files describe the published shape with their per-tensor formats") {
    if (!have_shared()) {
        MESSAGE("../shared/models absent: skipped");
        return;
    }
    const gguf_file f32file = gguf_file::open(shared_models + "stories260K.gguf");
    const model_desc m = describe(f32file);
    CHECK(param_count(m.shape) == 292'800);
    CHECK(m.shape.n_head_kv == 4);
    CHECK(m.shape.head_dim == 8);
    CHECK_FALSE(m.shape.tied_output);
    CHECK(m.shape.n_ctx_train == 2048);  // llama.context_length, per ../shared/models/README.md
    CHECK(weight_bytes(m) == 292'800 * 4);
    // Q8_0 file: 32 Q8_0 matrices, F16 ffn_down, F32 norms (hand-derived in model_test.cpp).
    const model_desc q8 = describe(gguf_file::open(shared_models + "stories260K-q8_0.gguf"));
    CHECK(weight_bytes(q8) == 364'768);
    CHECK(q8.layer(0)[tensor_role::ffn_down] == format{format_id::f16});
    // Q4_0 file: Q4_0 matrices, Q8_0 output head.
    const model_desc q4 = describe(gguf_file::open(shared_models + "stories260K-q4_0.gguf"));
    CHECK(q4.output == format{format_id::q8_0});
    CHECK(q4.layer(3)[tensor_role::attn_q] == format{format_id::q4_0});
    // The tensor data of each file is exactly the model's weight bytes.
    std::uint64_t sum = 0;
    for (const auto& t : f32file.tensors()) sum += t.bytes;
    CHECK(sum == weight_bytes(m));
}

TEST_CASE("the SentencePiece tokenizer matches llama.cpp on stories260K") {
    if (!have_shared()) {
        MESSAGE("../shared/models absent: skipped");
        return;
    }
    const tokenizer tok = tokenizer::from_gguf(gguf_file::open(shared_models + "stories260K.gguf"));
    CHECK(tok.encode("Once upon a time") == std::vector<std::int32_t>{1, 403, 407, 261, 378});
    CHECK(tok.decode({403, 407, 261, 378}) == "Once upon a time");
    // Characters outside the vocabulary fall back to byte tokens (<0xXX> are ids 3..258).
    const auto ids = tok.encode("\xe4\xb8\xad", false);  // a CJK character: three byte tokens
    REQUIRE(ids.size() >= 3);
    CHECK(ids[ids.size() - 3] == 3 + 0xe4);
    CHECK(ids[ids.size() - 2] == 3 + 0xb8);
    CHECK(ids.back() == 3 + 0xad);
    CHECK(tok.decode(ids).find("\xe4\xb8\xad") != std::string::npos);
}
