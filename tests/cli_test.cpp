// The vramplan command and generate, run as a user runs them. Expected numbers are derived by hand in
// plan_test.cpp and model_test.cpp (and repeated in comments here).
#include <doctest/doctest.h>

#include "temp_path.hpp"

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "test_model.hpp"

namespace {

struct result {
    int rc = -1;
    std::string out;
};

result run_program(const std::string& program, const std::string& args) {
    const std::string cmd = program + " " + args + " 2>&1";
    result r;
    FILE* p = popen(cmd.c_str(), "r");
    REQUIRE(p != nullptr);
    std::array<char, 4096> buf{};
    while (std::size_t n = std::fread(buf.data(), 1, buf.size(), p)) r.out.append(buf.data(), n);
    const int status = pclose(p);
    r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return r;
}

result run(const std::string& args) { return run_program(VRAMPLAN_CLI, args); }

nlohmann::json run_json(const std::string& args, int expected_rc) {
    const auto r = run(args + " --json");
    CAPTURE(r.out);
    REQUIRE(r.rc == expected_rc);
    return nlohmann::json::parse(r.out);
}

std::string temp(const std::string& name) { return test_temp_path(name); }

int lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

}  // namespace

TEST_CASE("plan: Llama-3-8B Q4_0 at 8192 tokens on an RTX 4060 8GB and every number by hand") {
    const auto j = run_json("plan -m llama-3-8b -g rtx-4060-8gb --weights q4_0 --ctx 8192", 0);
    CHECK(j["fits"] == true);
    CHECK(j["params"] == 8'030'261'248ull);
    CHECK(j["weights_bytes"] == 4'517'937'152ull);   // 266,240 f32 norm values + the rest at 18/32 bytes
    CHECK(j["kv_bytes"] == 1'073'741'824ull);        // 32 x 8192 x 1024 x 2 x 2 B
    CHECK(j["activations_bytes"] == 75'499'520ull);  // the gate+up step's live set
    CHECK(j["needed_bytes"] == 6'204'049'408ull);    // + 512 MiB reserve
    CHECK(j["max_context"] == 26394);
    CHECK(j["gpu_layers"] == 32);
    CHECK(j["tiers"]["gpu"]["capacity_bytes"] == 8ull << 30);
    CHECK(j["buffers"].size() == 3 + 32 * 9 + 64 + 16);  // globals, layer tensors, K/V per layer, activations
    CHECK(j["buffers"][0].contains("offset"));
    // The steps are the forward graph's ops, the decoder block's (16) once for every layer, and a
    // buffer's first and last steps name the ops that write and last read it.
    const auto& steps = j["steps"];
    REQUIRE(steps.size() == 2 + 16 + 3);
    CHECK(steps[3]["name"] == "matmul attn_q.weight");
    CHECK(steps[9]["name"] == "attention attn_out");
    CHECK(steps[2]["per_layer"] == true);
    CHECK(steps[18]["per_layer"] == false);
    for (const auto& b : j["buffers"])
        if (b["name"] == "act.q") {
            CHECK(b["first"] == 3);
            CHECK(b["last"] == 9);
        }
    const auto text = run("plan -m llama-3-8b -g 4060 --weights q4_0 --ctx 8192");
    CHECK(text.rc == 0);
    CHECK(text.out.find("verdict FITS") != std::string::npos);
    CHECK(text.out.find("6,204,049,408 B") != std::string::npos);
    CHECK(text.out.find("[WWW") != std::string::npos);
}

TEST_CASE("Llama-3.1-70B Q4_0 on one RTX 4090: check fails and advise and auto offload name 37 layers") {
    const auto c = run("check -m llama3.1-70b -g 4090 --weights q4_0 --ctx 8192");
    CHECK(c.rc == 1);
    CHECK(lines(c.out) == 1);
    CHECK(c.out.rfind("does not fit", 0) == 0);
    const auto a = run("advise -m llama3.1-70b -g 4090 --weights q4_0 --ctx 8192");
    CHECK(a.rc == 1);
    CHECK(a.out.find("offload 37 of 80 layers") != std::string::npos);
    CHECK(a.out.find("quantize the KV cache to q8_0") != std::string::npos);
    const auto j = run_json("plan -m llama3.1-70b -g 4090 --weights q4_0 --ctx 8192 --gpu-layers auto", 0);
    CHECK(j["gpu_layers"] == 43);
    CHECK(j["auto_gpu_layers"] == 43);
    CHECK(j["tiers"]["host"]["used_bytes"] == 37 * 481'361'920ull + 591'003'648ull);
    // Two RTX 4090s in a pipeline: 40 layers each (the embedding on the first, the head on the
    // last), each with its own KV, activations (150,996,992), rope_freqs.weight (256: every layer
    // rotates with it) and 512 MiB reserve: it fits.
    const auto p = run_json("plan -m llama3.1-70b -g 4090 --weights q4_0 --ctx 8192 --gpus 2", 0);
    CHECK(p["devices"].size() == 2);
    CHECK(p["devices"][0]["n_layers"] == 40);
    CHECK(p["devices"][0]["weights_bytes"] == 40 * 481'361'920ull + 591'003'648ull + 256);
    CHECK(p["devices"][1]["kv_bytes"] == 40 * 2 * 8192 * 2048ull);
    CHECK(p["devices"][0]["needed_bytes"] ==
          40 * 481'361'920ull + 591'003'648ull + 256 + 40 * 2 * 8192 * 2048ull + 150'996'992ull + 536'870'912ull);
    CHECK(p["devices"][1]["needed_bytes"] == 40 * 481'361'920ull + 591'003'648ull + 32'768 + 256 +
                                                 40 * 2 * 8192 * 2048ull + 150'996'992ull + 536'870'912ull);
    CHECK(run("check -m llama3.1-70b -g 4090 --weights q4_0 --ctx 65536 --gpus 2").rc == 1);
}

TEST_CASE("tensor parallelism: each of 4 GPUs holds a quarter of every layer and of the vocabulary") {
    const auto j = run_json("plan -m llama3.1-70b -g h100-sxm --tp 4 --weights f16 --ctx 8192", 0);
    CHECK(j["tensor_parallel"] == 4);
    // Per layer: (8192x2048 q + 2 x 8192x256 k,v + 2048x8192 o + 3 x 8192x7168 ffn) x 2 B + 2 norms x 32,768 B;
    // embedding and head: 32,064 x 8192 x 2 B each; output norm 32,768 B; rope_freqs 256 B (64 f32).
    const std::uint64_t layer = (2 * 8192ull * 2048 + 2 * 8192ull * 256 + 3 * 8192ull * 7168) * 2 + 2 * 32'768;
    CHECK(j["weights_bytes"] == 80 * layer + 2 * 32'064ull * 8192 * 2 + 32'768 + 256);
    CHECK(j["kv_bytes"] == 80 * 2 * 8192ull * 256 * 2);  // 2 of the 8 KV heads
    CHECK(run("check -m llama3.1-70b -g h100-sxm --tp 3").out.find("tensor parallelism needs a factor") !=
          std::string::npos);
}

TEST_CASE("config.json and GGUF inputs and only the GGUF header is read") {
    const std::string cfg = temp("vramplan_cli_config.json");
    std::ofstream(cfg) << R"({"model_type": "llama", "vocab_size": 32000, "hidden_size": 4096, "num_hidden_layers": 32,
        "num_attention_heads": 32, "num_key_value_heads": 32, "intermediate_size": 11008, "rms_norm_eps": 1e-5,
        "max_position_embeddings": 4096})";
    auto j = run_json("plan -m " + cfg + " -g a100", 0);
    CHECK(j["params"] == 6'738'415'616ull);  // Llama-2-7B
    CHECK(j["trained_context"] == 4096);
    CHECK(j["beyond_trained_context"] == false);
    // Twice the trained context: planned as asked, with a warning that names the limit.
    CHECK(run_json("plan -m " + cfg + " -g a100 --ctx 8192", 0)["beyond_trained_context"] == true);
    const auto beyond = run("plan -m " + cfg + " -g a100 --ctx 8192");
    CHECK(beyond.out.find("warning: context 8,192 exceeds the 4,096 tokens") != std::string::npos);
    CHECK(run("plan -m " + cfg + " -g a100 --ctx 4096").out.find("warning") == std::string::npos);
    // Llama 3.1's config: rope_scaling "llama3" is the 64 divisors its GGUF stores as rope_freqs.weight.
    std::ofstream(cfg) << R"({"model_type": "llama", "vocab_size": 128256, "hidden_size": 4096, "num_hidden_layers": 32,
        "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336, "rope_theta": 500000.0,
        "max_position_embeddings": 131072, "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8192, "rope_type": "llama3"}})";
    const auto l31 = run_json("plan -m " + cfg + " -g h100-sxm --weights q4_0", 0);
    CHECK(l31["params"] == 8'030'261'248ull);
    CHECK(l31["weights_bytes"] == run_json("plan -m llama-3.1-8b -g h100-sxm --weights q4_0", 0)["weights_bytes"]);
    CHECK(l31["weights_bytes"].get<std::uint64_t>() ==
          run_json("plan -m llama-3-8b -g h100-sxm --weights q4_0", 0)["weights_bytes"].get<std::uint64_t>() + 256);
    CHECK(j["weights_bytes"] == 6'738'415'616ull * 2 + 65 * 4096 * 2ull);  // f16, norms f32
    std::ofstream(cfg) << R"({"model_type": "gpt2", "vocab_size": 5})";
    auto bad = run("plan -m " + cfg + " -g a100");
    CHECK(bad.rc == 2);
    CHECK(bad.out.find("model_type 'gpt2' is not supported") != std::string::npos);
    std::ofstream(cfg) << "{not json";
    CHECK(run("plan -m " + cfg + " -g a100").out.find("is not valid JSON") != std::string::npos);
    std::filesystem::remove(cfg);

    const std::string gguf = temp("vramplan_cli_model.gguf");
    test_model::spec s;
    s.weights = vramplan::format{vramplan::format_id::q8_0};
    test_model::write(gguf, s);
    j = run_json("plan -m " + gguf + " -g 1GiB --reserve 0", 0);
    // 3 layers of q, k, v, o, gate, up, down in Q8_0 plus embeddings; norms f32.
    const std::uint64_t layer = (128 * 128 * 2 + 64 * 128 * 2 + 96 * 128 * 3) / 32 * 34 + 2 * 128 * 4;
    CHECK(j["weights_bytes"] == 3 * layer + 2 * 64 * 128 / 32 * 34 + 128 * 4);
    CHECK(j["trained_context"].is_null());  // no llama.context_length: no warning at any context
    CHECK(run("plan -m " + gguf + " -g 1GiB --ctx 100000").out.find("warning") == std::string::npos);
    s.context_length = 256;
    test_model::write(gguf, s);
    CHECK(run_json("plan -m " + gguf + " -g 1GiB --ctx 256", 0)["trained_context"] == 256);
    // check keeps its one line on stdout; the warning goes to stderr.
    const auto checked = run("check -m " + gguf + " -g 1GiB --ctx 512");
    CHECK(checked.rc == 0);
    CHECK(lines(checked.out) == 2);
    CHECK(checked.out.find("warning: context 512 exceeds the 256 tokens") != std::string::npos);
    std::ofstream(gguf, std::ios::binary) << "GGUF\x03";
    bad = run("plan -m " + gguf + " -g 4090");
    CHECK(bad.rc == 2);
    CHECK(bad.out.find("file truncated") != std::string::npos);
    std::filesystem::remove(gguf);
}

TEST_CASE("train: LoRA on Llama-2-7B and largest micro-batch and accumulation by hand") {
    const auto j = run_json("train -m llama2-7b -g a100-80gb --seq 2048 --global-batch 64 --lora 8", 0);
    CHECK(j["trainable_params"] == 19'988'480);
    CHECK(j["weights_bytes"] == 2 * 6'738'415'616ull + 2 * 19'988'480ull);
    // Per sequence: 2048 tokens x (32 layers x 131,832 B + 272,384 B of head) = 9,197,584,384 B;
    // (80 GiB - 1 GiB - 13,796,646,912 B fixed) / that = 7.7.
    CHECK(j["activations_per_sequence_bytes"] == 9'197'584'384ull);
    CHECK(j["micro_batch"] == 7);
    CHECK(j["accumulation_steps"] == 10);
    const auto t = run("train -m llama2-7b -g a100-80gb --seq 2048 --global-batch 64");
    CHECK(t.rc == 1);
    CHECK(t.out.find("does not fit") != std::string::npos);
}

TEST_CASE("models and gpus and the SVG picture") {
    const auto m = run("models");
    CHECK(m.rc == 0);
    CHECK(m.out.find("70,553,706,496") != std::string::npos);
    CHECK(lines(m.out) == 30);                                        // a header and 29 presets
    CHECK(m.out.find("  131072  llama3.1-8b") != std::string::npos);  // Llama-3.1-8B's trained context
    const auto g = run("gpus");
    CHECK(g.out.find("Jetson AGX Orin 64GB") != std::string::npos);
    CHECK(lines(g.out) == 1 + 69);  // a header and the catalog
    const std::string svg = temp("vramplan_cli.svg");
    CHECK(run("plan -m llama3.1-70b -g 4090 --weights q4_0 --gpu-layers auto --svg " + svg).rc == 0);
    std::ifstream in(svg);
    const std::string pic((std::istreambuf_iterator<char>(in)), {});
    CHECK(pic.rfind("<svg", 0) == 0);
    CHECK(pic.find("pinned host tier") != std::string::npos);
    CHECK(pic.find("budget: capacity - reserve") != std::string::npos);
    CHECK(pic.find("GPU activation arena (zoomed)") != std::string::npos);
    CHECK(std::count(pic.begin(), pic.end(), '\n') > 400);  // a rectangle per buffer
    std::filesystem::remove(svg);
}

TEST_CASE("bad input: one clear line and exit 2 and the valid choices named") {
    for (auto [args, expect] :
         {std::pair{"plan -m gpt-9 -g 4090", "built-in models: Llama-2-7B"},
          std::pair{"plan -m llama3-8b -g gtx9999", "known GPUs: GTX 1060 6GB, GTX 1070, GTX 1080"},
          std::pair{"plan -m llama3-8b -g rtx4009", "unknown GPU 'rtx4009'; did you mean RTX 4090, "},
          std::pair{"plan -m llama3-8b -g h100",
                    "'h100' names several GPUs: H100 SXM 80GB, H100 PCIe 80GB, H100 NVL 94GB"},
          std::pair{"plan -m llama3-8b -g '3050 laptop'",
                    "names several GPUs: RTX 3050 Laptop 4GB, RTX 3050 Laptop 6GB"},
          std::pair{"plan -m llama3-8b -g '4060 ti'",
                    "'4060 ti' names several GPUs: RTX 4060 Ti 8GB, RTX 4060 Ti 16GB"},
          std::pair{"plan -m llama-3-8 -g 4090", "unknown model 'llama-3-8'; did you mean Llama-3-8B"},
          std::pair{"plan -m llama3-8b -g 4090 --kv q9", "known formats:"},
          std::pair{"plan -m llama3-8b -g 4090 --ctx 0", "context must be"},
          std::pair{"plan -m llama3-8b -g 4090 --gpu-layers many", "--gpu-layers takes"},
          std::pair{"plan -m llama3-8b -g 4090 --ctx 100000000000000000", "overflow"},
          std::pair{"plan -m llama3-8b -g 4090 --ctx -5", "--ctx: takes a whole number"},
          std::pair{"train -m llama3-8b -g 4090 --seq -1", "--seq: takes a whole number"},
          std::pair{"plan -m llama3-8b -g 12XB", "unknown GPU"},
          std::pair{"plan -m llama3-8b -g 8GiB --reserve 9GiB", "leaves nothing"},
          std::pair{"plan -m /nonexistent/model.gguf -g 4090", "'/nonexistent/model.gguf' does not exist"},
          std::pair{"plan -m llama3-8b -g 4090 --gpu-layers 99999999999999999999999", "--gpu-layers takes"},
          std::pair{"plan -m llama3-8b -g 4090 --reserve 1000000000000000000000000000000GiB", "out of range"},
          std::pair{"plan -g 4090", "--model is required"}}) {
        CAPTURE(args);
        const auto r = run(args);
        CAPTURE(r.out);
        CHECK(r.rc == 2);
        CHECK(r.out.find(expect) != std::string::npos);
        CHECK(r.out.find("terminate") == std::string::npos);
    }
}

namespace {
// A path that is not a model file, made as the test needs it.
struct hostile_path {
    std::string path, expect;
};

void write_text(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

std::vector<hostile_path> hostile_paths() {
    namespace fs = std::filesystem;
    std::vector<hostile_path> all;
    const std::string dir = temp("vramplan_dir.gguf"), fifo = temp("vramplan_fifo.gguf"),
                      empty = temp("vramplan_empty.gguf");
    const std::string loop_a = temp("vramplan_loop_a.gguf"), loop_b = temp("vramplan_loop_b.gguf");
    const std::string zero = temp("vramplan_zero.gguf"), urandom = temp("vramplan_urandom.gguf"),
                      sock = temp("vramplan_sock.gguf");
    for (const auto& p : {dir, fifo, empty, loop_a, loop_b, zero, urandom, sock}) fs::remove_all(p);
    fs::create_directory(dir);
    REQUIRE(mkfifo(fifo.c_str(), 0644) == 0);
    write_text(empty, "");
    fs::create_symlink(loop_b, loop_a);
    fs::create_symlink(loop_a, loop_b);
    fs::create_symlink("/dev/zero", zero);
    fs::create_symlink("/dev/urandom", urandom);
    const int s = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", sock.c_str());
    REQUIRE(bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    close(s);  // the socket file stays
    all.push_back({dir, "is a directory"});
    all.push_back({fifo, "is a FIFO"});
    all.push_back({empty, "is empty"});
    all.push_back({loop_a, "loop of symbolic links"});
    all.push_back({zero, "is a device"});
    all.push_back({urandom, "is a device"});
    all.push_back({sock, "is a socket"});
    // config.json inputs: the same checks, and every value read by its key.
    const std::string cdir = temp("vramplan_dir.json"), bad = temp("vramplan_bad.json"),
                      arr = temp("vramplan_array.json");
    const std::string wrong = temp("vramplan_wrong_type.json"), scaling = temp("vramplan_bad_scaling.json");
    fs::remove_all(cdir);
    fs::create_directory(cdir);
    write_text(bad, "{\"model_type\": \"llama\", ");
    write_text(arr, "[1, 2, 3]");
    const std::string base =
        R"("model_type": "llama", "vocab_size": 32000, "hidden_size": 4096, "num_hidden_layers": 32, )"
        R"("num_attention_heads": 32, "intermediate_size": 11008)";
    write_text(wrong, "{" + base + R"(, "rope_theta": "big"})");
    write_text(scaling, "{" + base + R"(, "rope_scaling": {"type": "linear", "factor": "two"}})");
    all.push_back({cdir, "is a directory"});
    all.push_back({bad, "is not valid JSON (a syntax error near byte"});
    all.push_back({arr, "is JSON but not an object"});
    all.push_back({wrong, "'rope_theta' must be a number, not \"big\""});
    all.push_back({scaling, "'rope_scaling.factor' must be a number"});
    return all;
}
}  // namespace

TEST_CASE("hostile paths and files: one clear line naming the path, exit 2, and never a wait") {
    const auto all = hostile_paths();
    for (const auto& h : all) {
        CAPTURE(h.path);
        // timeout: a FIFO that made the planner wait for a writer would fail here, not hang the suite.
        const auto r = run_program("timeout 10 " + std::string(VRAMPLAN_CLI), "plan -m " + h.path + " -g 4090");
        CAPTURE(r.out);
        CHECK(r.rc == 2);
        CHECK(lines(r.out) == 1);
        CHECK(r.out.find(h.path) != std::string::npos);
        CHECK(r.out.find(h.expect) != std::string::npos);
        if (h.path.ends_with(".gguf")) {
            const auto g = run_program("timeout 10 " + std::string(VRAMPLAN_GENERATE), "-m " + h.path + " -n 1");
            CAPTURE(g.out);
            CHECK(g.rc == 2);
            CHECK(g.out.find(h.expect) != std::string::npos);
        }
    }
    for (const auto& h : all) std::filesystem::remove_all(h.path);
    std::filesystem::remove(temp("vramplan_loop_b.gguf"));  // the other half of the loop
}

TEST_CASE("a model file the user cannot read is refused as such") {
    const std::string path = temp("vramplan_unreadable.gguf");
    write_text(path, "GGUF");
    std::filesystem::permissions(path, std::filesystem::perms::none);
    // root reads every file: run the command as an ordinary user where the test runs as root.
    std::string prefix;
    if (geteuid() == 0) {
        if (std::system("command -v runuser >/dev/null 2>&1 && runuser -u nobody -- true >/dev/null 2>&1") != 0) {
            MESSAGE("running as root without runuser: skipped");
            std::filesystem::remove(path);
            return;
        }
        prefix = "runuser -u nobody -- ";
    }
    const auto r = run_program(prefix + VRAMPLAN_CLI, "plan -m " + path + " -g 4090");
    CAPTURE(r.out);
    CHECK(r.rc == 2);
    CHECK(r.out.find("is not readable by this user (permission denied)") != std::string::npos);
    std::filesystem::remove(path);
}

TEST_CASE("emit-header: the generated type compiles and its static_assert holds or fails as it should") {
    const std::string gguf = temp("vramplan_emit.gguf"), header = temp("vramplan_emitted.hpp");
    test_model::spec s;
    s.weights = vramplan::format{vramplan::format_id::q4_0};
    s.context_length = 256;
    test_model::write(gguf, s);
    const auto r = run("emit-header -m " + gguf + " -o " + header + " --name shipped_model");
    REQUIRE(r.rc == 0);
    auto compile = [&](const std::string& capacity) {
        const std::string src = temp("vramplan_emit_use.cpp");
        std::ofstream(src)
            << "#include \"" << header << "\"\n"
            << "struct board { static constexpr vramplan::target_desc value{.name = \"board\", .capacity = " << capacity
            << "}; };\n"
            << "static_assert(vramplan::fits<shipped_model, board, vramplan::limits{.context = 256, .ubatch = 32}>);\n"
            << "static_assert(shipped_model::describe().shape.n_ctx_train == 256);\n"
            << "static_assert(vramplan::param_count(shipped_model::describe().shape) == 3 * (2 * 128 * 128 + 2 * 64 * "
               "128 + 3 * 96 * 128 + 256) + 2 * 64 * 128 + 128);\n"
            << "int main() {}\n";
        const std::string cmd =
            std::string(VRAMPLAN_CXX) + " -std=c++20 -fsyntax-only -I" + VRAMPLAN_INCLUDE + " " + src + " 2>&1";
        result out;
        FILE* p = popen(cmd.c_str(), "r");
        std::array<char, 4096> buf{};
        while (std::size_t n = std::fread(buf.data(), 1, buf.size(), p)) out.out.append(buf.data(), n);
        const int st = pclose(p);
        out.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        std::filesystem::remove(src);
        return out;
    };
    const auto ok = compile("64ull << 20");
    CAPTURE(ok.out);
    CHECK(ok.rc == 0);
    const auto too_small = compile("100000");
    CHECK(too_small.rc != 0);
    CHECK(too_small.out.find("model_does_not_fit") != std::string::npos);
    std::filesystem::remove(gguf);
    std::filesystem::remove(header);
}

TEST_CASE(
    "generate: stories260K prints llama.cpp's greedy text, resident and streamed, and bad options are one clear line") {
    const std::string model = std::string(VRAMPLAN_SHARED_DIR) + "/models/stories260K.gguf";
    for (const char* args :
         {"-n 0 -t 0", "-n -5", "--top-p 1.5", "--temp -1", "--kv q5_0", "--weight-layout tiles", "--offload swap"}) {
        CAPTURE(args);
        const auto r = run_program(VRAMPLAN_GENERATE, "-m " + model + " " + args);
        CHECK(r.rc == 2);
        CHECK(lines(r.out) <= 2);  // the error and CLI11's "Run with --help"
    }
    if (!std::filesystem::exists(model)) {
        MESSAGE("../shared/models absent: the runs are skipped");
        return;
    }
    // The device layout is the CUDA backend's to choose; the CPU backend holds its own.
    const auto layout = run_program(VRAMPLAN_GENERATE, "-m " + model + " -n 1 --weight-layout planes");
    CHECK(layout.rc == 2);
    CHECK(layout.out.find("--weight-layout planes chooses the layout of the CUDA backend") != std::string::npos);
    // An instruction set the kernels do not know is one line naming the variable and the choices.
    const auto isa = run_program("VRAMPLAN_CPU_ISA=avx3 " + std::string(VRAMPLAN_GENERATE), "-m " + model + " -n 1");
    CHECK(isa.rc == 2);
    CHECK(
        isa.out.find("unknown CPU instruction set 'avx3' (VRAMPLAN_CPU_ISA): use portable, avx2, avx2-vnni, avx512 or "
                     "avx512-vnni") != std::string::npos);
    // llama.cpp's greedy continuation of 32 tokens (../shared/models/README.md).
    const std::string reference =
        "Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One day, she saw";
    for (const char* budget : {"", " --device-budget 600KiB"}) {
        CAPTURE(budget);
        const auto r = run_program(VRAMPLAN_GENERATE, "-m " + model + " -n 32 -t 2" + std::string(budget));
        CAPTURE(r.out);
        CHECK(r.rc == 0);
        CHECK(r.out.rfind(reference, 0) == 0);
        CHECK(r.out.find("warning") == std::string::npos);
    }
    CHECK(run_program(VRAMPLAN_GENERATE, "-m " + model + " -n 32 --device-budget 600KiB")
              .out.find("0 of 5 layers resident") != std::string::npos);
    // The layers beyond the budget computed by the CPU instead of streamed: the same text.
    const auto computed =
        run_program(VRAMPLAN_GENERATE, "-m " + model + " -n 32 -t 2 --device-budget 600KiB --offload compute");
    CAPTURE(computed.out);
    CHECK(computed.rc == 0);
    CHECK(computed.out.rfind(reference, 0) == 0);
    CHECK(computed.out.find("computed by the CPU") != std::string::npos);
    // Beyond llama.context_length (2048): it runs, and says so.
    const auto beyond = run_program(VRAMPLAN_GENERATE, "-m " + model + " -n 4 --ctx 3000");
    CHECK(beyond.rc == 0);
    CHECK(beyond.out.find("warning: context 3,000 exceeds the 2,048 tokens") != std::string::npos);
}

TEST_CASE("generate: the stories260K MoE file prints llama.cpp's greedy text with --host-experts 0, 3 and all") {
    const std::string model = std::string(VRAMPLAN_SHARED_DIR) + "/models/stories260K-moe-f32.gguf";
    if (!std::filesystem::exists(model)) {
        MESSAGE("../shared/models absent: the runs are skipped");
        return;
    }
    const std::string reference =
        "Once upon a time, there was a little girl named Lily. She loved to play with her toys and her friends. One "
        "day, Lily went";
    for (const char* n : {"0", "3", "all"}) {
        CAPTURE(n);
        const auto r = run_program(VRAMPLAN_GENERATE, "-m " + model + " -n 32 -t 2 --host-experts " + n);
        CAPTURE(r.out);
        CHECK(r.rc == 0);
        CHECK(r.out.rfind(reference, 0) == 0);
        const std::string moved = std::string(n) == "0" ? "" : std::string(n) == "3" ? "3" : "5";
        CHECK((r.out.find("the experts of " + moved + " layers in host memory") != std::string::npos) ==
              !moved.empty());
    }
    const auto bad = run_program(VRAMPLAN_GENERATE, "-m " + model + " --host-experts 6");
    CHECK(bad.rc == 2);
    CHECK(bad.out.find("--host-experts 6 exceeds the model's 5 layers with experts") != std::string::npos);
}

namespace {
// The vramplan command with the stand-in NVML library as the driver, on machine `scenario`.
result run_local(const std::string& scenario, const std::string& args) {
    return run_program("VRAMPLAN_NVML_LIBRARY=" + std::string(VRAMPLAN_FAKE_NVML) + " VRAMPLAN_FAKE_NVML=" + scenario +
                           " " + VRAMPLAN_CLI,
                       args);
}
constexpr std::uint64_t GiB = 1ull << 30, MiB = 1ull << 20;
}  // namespace

TEST_CASE("--gpu local: this machine's GPU with what other processes hold counted, and who holds it") {
    // The stand-in machine: GPU 0 an RTX 4090 with 24 GiB, 10 GiB in use (python3 9 GiB, Xorg 512 MiB).
    auto r = run_local("busy", "plan -m llama-3-8b -g local --weights q4_0 --ctx 8192 --json");
    REQUIRE(r.rc == 0);
    auto j = nlohmann::json::parse(r.out);
    CHECK(j["budget_bytes"] == 24 * GiB);
    // The GPU tier of this plan is 5,667,178,496 bytes (6,204,049,408 needed on a catalog GPU less
    // its 512 MiB reserve); here the reserve is the 10 GiB in use plus the same 512 MiB.
    CHECK(j["reserve_bytes"] == 10 * GiB + 512 * MiB);
    CHECK(j["needed_bytes"] == 5'667'178'496ull + 10 * GiB + 512 * MiB);
    CHECK(j["local_device"]["name"] == "NVIDIA GeForce RTX 4090");
    CHECK(j["local_device"]["total_bytes"] == 24 * GiB);
    CHECK(j["local_device"]["free_bytes"] == 14 * GiB);
    CHECK(j["local_device"]["compute_capability"] == "8.9");
    REQUIRE(j["local_device"]["processes"].size() == 2);  // largest first
    CHECK(j["local_device"]["processes"][0] ==
          nlohmann::json{{"pid", 4242}, {"name", "/usr/bin/python3"}, {"bytes", 9 * GiB}});
    CHECK(j["local_device"]["processes"][1] ==
          nlohmann::json{{"pid", 777}, {"name", "/usr/lib/xorg/Xorg"}, {"bytes", 512 * MiB}});

    // f16 weights: the same plan on a free 24 GiB device fits, but not beside 10 GiB in use.
    const auto free_device = run_json("plan -m llama-3-8b -g 24GiB --ctx 8192", 0);
    r = run_local("busy", "plan -m llama-3-8b -g local --ctx 8192 --json");
    CHECK(r.rc == 1);
    j = nlohmann::json::parse(r.out);
    CHECK(j["needed_bytes"] == free_device["needed_bytes"].get<std::uint64_t>() + 10 * GiB);
    r = run_local("busy", "plan -m llama-3-8b -g local --ctx 8192");
    CAPTURE(r.out);
    CHECK(r.rc == 1);
    CHECK(r.out.find("gpu     NVIDIA GeForce RTX 4090: 24.00 GiB capacity, 10.50 GiB reserve") != std::string::npos);
    CHECK(r.out.find("local   GPU 0: 24.00 GiB total, 14.00 GiB free now") != std::string::npos);
    CHECK(r.out.find("held by pid 4242 /usr/bin/python3: 9.00 GiB") != std::string::npos);
    CHECK(r.out.find("the driver and processes NVML does not list: 512.00 MiB") != std::string::npos);
    CHECK(r.out.find("with the memory in use now freed it would fit: it needs 16.53 GiB of the GPU's 24.00 GiB") !=
          std::string::npos);

    // GPU 1, and the list of both.
    j = nlohmann::json::parse(run_local("busy", "plan -m llama-3-8b -g local:1 --weights q4_0 --ctx 8192 --json").out);
    CHECK(j["gpu"] == "NVIDIA GeForce RTX 3060");
    CHECK(j["reserve_bytes"] == 256 * MiB + 512 * MiB);
    r = run_local("busy", "gpus --local --json");
    REQUIRE(r.rc == 0);
    j = nlohmann::json::parse(r.out);
    REQUIRE(j["devices"].size() == 2);
    CHECK(j["devices"][1]["index"] == 1);
    CHECK(j["devices"][1]["free_bytes"] == 12 * GiB - 256 * MiB);
    CHECK(j["devices"][1]["processes"].empty());
    r = run_local("busy", "gpus --local");
    CHECK(r.out.find("pid 4242 /usr/bin/python3 9.00 GiB, pid 777 /usr/lib/xorg/Xorg 512.00 MiB") != std::string::npos);

    // More processes than one query has room for are all read.
    j = nlohmann::json::parse(run_local("crowded", "gpus --local --json").out);
    CHECK(j["devices"][0]["processes"].size() == 100);
    CHECK(j["devices"][0]["processes"][99]["bytes"] == 64 * MiB);
}

TEST_CASE("--gpu local without a driver, without a GPU or with an NVML failure is one clear line") {
    for (auto [scenario, args, expect] :
         {std::tuple{"none", "plan -m llama-3-8b -g local", "the NVIDIA driver reports no GPU"},
          std::tuple{"none", "gpus --local", "the NVIDIA driver reports no GPU"},
          std::tuple{"nodriver", "plan -m llama-3-8b -g local", "NVML: nvmlInit failed: Driver Not Loaded"},
          std::tuple{"busy", "plan -m llama-3-8b -g local:5", "there is no local GPU 5: this machine has 2 (0 to 1)"},
          std::tuple{"busy", "plan -m llama-3-8b -g local:x", "give local (GPU 0) or local:N"}}) {
        CAPTURE(args);
        const auto r = run_local(scenario, args);
        CAPTURE(r.out);
        CHECK(r.rc == 2);
        CHECK(lines(r.out) == 1);
        CHECK(r.out.find(expect) != std::string::npos);
    }
    const auto r = run_program("VRAMPLAN_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1 " + std::string(VRAMPLAN_CLI),
                               "gpus --local");
    CAPTURE(r.out);
    CHECK(r.rc == 2);
    CHECK(r.out.find("no NVIDIA driver: cannot load /nonexistent/libnvidia-ml.so.1") != std::string::npos);
}

TEST_CASE("--emit: the llama.cpp, vLLM and Ollama settings of a plan, by hand") {
    auto emit = [](const std::string& args, int rc) {
        const auto r = run(args);
        CAPTURE(args);
        CAPTURE(r.out);
        CHECK(r.rc == rc);
        return r.out;
    };
    // Every block resident: llama.cpp counts the output head as one more layer (-ngl 33 of 32 blocks).
    std::string out = emit("plan -m llama-3-8b -g 4060 --weights q4_0 --ctx 8192 --emit llama.cpp", 0);
    CHECK(out.find("llama-server -m MODEL.gguf -c 8192 -np 1 -b 512 -ub 512 -ngl 33 -fa on -ctk f16 -ctv f16\n") !=
          std::string::npos);
    CHECK(out.find("keeps the token embedding (281.81 MiB) in host memory") != std::string::npos);
    // Four sequences of 2048: llama.cpp's -c is the whole cache, split over -np slots.
    out = emit("plan -m llama-3-8b -g 4090 --weights q4_0 --ctx 2048 --batch 4 --ubatch 256 --kv q8_0 --emit llama.cpp",
               0);
    CHECK(out.find("-c 8192 -np 4 -b 256 -ub 256 -ngl 33 -fa on -ctk q8_0 -ctv q8_0") != std::string::npos);
    // 20 resident blocks: -ngl 20, and llama.cpp then keeps the head in host memory too.
    out = emit("plan -m llama-3-8b -g 4060 --ctx 8192 --gpu-layers 20 --emit llama.cpp", 1);
    CHECK(out.find(" -ngl 20 ") != std::string::npos);
    CHECK(out.find("also keeps the output head in host memory") != std::string::npos);
    CHECK(out.find("# The plan does not fit RTX 4060 8GB") != std::string::npos);
    out = emit("plan -m llama-3-8b -g 4090 --weights q4_0 --kv fp8 --emit llama.cpp", 0);
    CHECK(out.find("llama.cpp has no fp8_e4m3 KV cache; q8_0 is the nearest") != std::string::npos);
    CHECK(out.find("-ctk q8_0 -ctv q8_0") != std::string::npos);

    // vLLM: the share of the whole GPU the plan needs, 6,204,049,408 / 8,589,934,592 = 0.7222, rounded up.
    out = emit("plan -m llama-3-8b -g 4060 --weights q4_0 --ctx 8192 --emit vllm", 0);
    CHECK(out.find("vllm serve MODEL --max-model-len 8192 --max-num-seqs 1 --gpu-memory-utilization 0.73 "
                   "--kv-cache-dtype auto\n") != std::string::npos);
    CHECK(out.find("q4_0 weights are a GGUF format") != std::string::npos);
    out = emit("plan -m llama-3-8b -g h100-sxm --ctx 8192 --kv q4_0 --tp 2 --emit vllm", 0);
    CHECK(out.find("vLLM has no q4_0 KV cache; fp8 is the nearest (8 bits a value, twice the plan's KV bytes)") !=
          std::string::npos);
    CHECK(out.find("--kv-cache-dtype fp8 --tensor-parallel-size 2") != std::string::npos);

    // Ollama: num_gpu is llama.cpp's -ngl; the KV type and flash attention are the server's environment.
    out = emit("plan -m llama-3-8b -g 4060 --weights q4_0 --ctx 8192 --kv q8_0 --emit ollama", 0);
    CHECK(out.find("FROM MODEL.gguf\nPARAMETER num_ctx 8192\nPARAMETER num_gpu 33\nPARAMETER num_batch 512\n") !=
          std::string::npos);
    CHECK(out.find("OLLAMA_FLASH_ATTENTION=1 OLLAMA_KV_CACHE_TYPE=q8_0 OLLAMA_NUM_PARALLEL=1 ollama serve") !=
          std::string::npos);
    emit("plan -m llama-3-8b -g 4060 --emit tgi", 2);
    // A GGUF file is named as given.
    const std::string gguf = temp("vramplan_emit_model.gguf");
    test_model::write(gguf, test_model::spec{}, 3);
    out = emit("plan -m " + gguf + " -g 4090 --ctx 64 --emit llama.cpp", 0);
    CHECK(out.find("llama-server -m " + gguf + " -c 64 -np 1 -b 64 -ub 64 -ngl 4 ") !=
          std::string::npos);  // 3 blocks + the head
    std::filesystem::remove(gguf);
}

TEST_CASE("mixed GPUs: layers in proportion to each budget or to --split, each device against its own memory") {
    // Budgets: RTX 3090 24 GiB - 512 MiB = 23.5 GiB, RTX 3060 12 GiB - 512 MiB = 11.5 GiB; 32 layers x
    // 23.5 / 35 = 21.49, so layers 0-20 on the 3090 and 21-31 on the 3060.
    auto j = run_json("plan -m llama-3-8b -g 3090,3060 --ctx 8192", 0);
    REQUIRE(j["devices"].size() == 2);
    CHECK(j["devices"][0]["gpu"] == "RTX 3090");
    CHECK(j["devices"][0]["first_layer"] == 0);
    CHECK(j["devices"][0]["n_layers"] == 21);
    CHECK(j["devices"][1]["gpu"] == "RTX 3060 12GB");
    CHECK(j["devices"][1]["first_layer"] == 21);
    CHECK(j["devices"][1]["n_layers"] == 11);
    CHECK(j["devices"][1]["capacity_bytes"] == 12ull << 30);
    // Each device's KV is its own layers': 8192 tokens x 1024 values x 2 B x 2 (K and V) per layer.
    CHECK(j["devices"][0]["kv_bytes"] == 21ull * 8192 * 1024 * 2 * 2);
    CHECK(j["devices"][1]["kv_bytes"] == 11ull * 8192 * 1024 * 2 * 2);
    // --split 1,3: 8 layers on the 3090, 24 on the 3060, which cannot hold them in f16.
    j = run_json("plan -m llama-3-8b -g 3090,3060 --ctx 8192 --split 1,3", 1);
    CHECK(j["devices"][0]["n_layers"] == 8);
    CHECK(j["devices"][1]["n_layers"] == 24);
    CHECK(j["devices"][0]["fits"] == true);
    CHECK(j["devices"][1]["fits"] == false);
    auto r = run("check -m llama-3-8b -g 3090,3060 --ctx 8192");
    CHECK(r.rc == 0);
    CHECK(r.out.find("fits: Llama-3-8B on RTX 3090 + RTX 3060 12GB (pipeline), tightest device 1 (RTX 3060 12GB)") !=
          std::string::npos);
    r = run("plan -m llama-3-8b -g 3090,3060 --weights q4_0 --ctx 8192 --emit llama.cpp");
    CHECK(r.out.find(" -ts 21,11\n") != std::string::npos);
    for (auto [args, expect] :
         {std::pair{"plan -m llama-3-8b -g 3090,3060 --gpus 2", "leave out --gpus"},
          std::pair{"plan -m llama-3-8b -g 3090 --split 1,1", "name two or more"},
          std::pair{"plan -m llama-3-8b -g 3090,,3060", "has an empty item"},
          std::pair{"plan -m llama-3-8b -g 3090,3060 --split 1,x", "whole-number shares"},
          std::pair{"plan -m llama-3-8b -g 3090,3060 --split 1,2,3", "3 shares for 2 GPUs"},
          std::pair{"plan -m llama-3-8b -g 3090,3060 --split 1000,1", "gives GPU 1 (RTX 3060 12GB) no layer"}}) {
        CAPTURE(args);
        r = run(args);
        CAPTURE(r.out);
        CHECK(r.rc == 2);
        CHECK(r.out.find(expect) != std::string::npos);
    }
}

TEST_CASE("--nodes N --tp K: tensor parallelism inside each machine, a pipeline across them, every stage by hand") {
    // Llama-3.1-70B in f16, 4-way tensor parallel: a GPU's share of one layer is q 8192 x 2048, k and v
    // 8192 x 256, o 2048 x 8192, gate/up/down 8192 x 7168 each (2 B a value) and two f32 norms of 8192:
    // 427,884,544 bytes; 40 layers a stage = 17,115,381,760. Stage 0 adds the embedding's quarter
    // (32,064 x 8192 x 2 = 525,336,576) and stage 1 the head's quarter and the output norm (32,768);
    // both hold rope_freqs.weight (256).
    const auto j = run_json("plan -m llama-3.1-70b -g h100-sxm --ctx 8192 --tp 4 --nodes 2", 0);
    REQUIRE(j["devices"].size() == 2);
    CHECK(j["devices"][0]["n_layers"] == 40);
    CHECK(j["devices"][0]["weights_bytes"] == 17'115'381'760ull + 525'336'576ull + 256);
    CHECK(j["devices"][1]["weights_bytes"] == 17'115'381'760ull + 525'336'576ull + 32'768ull + 256);
    CHECK(j["devices"][1]["kv_bytes"] == 40ull * 8192 * 256 * 2 * 2);  // 2 KV heads of 128 per GPU
    const auto r = run("plan -m llama-3.1-70b -g h100-sxm --ctx 8192 --tp 4 --nodes 2 --emit vllm");
    CAPTURE(r.out);
    CHECK(r.out.find("--tensor-parallel-size 4 --pipeline-parallel-size 2") != std::string::npos);
    CHECK(r.out.find("start a Ray cluster") != std::string::npos);
    CHECK(run("plan -m llama-3.1-70b -g h100-sxm --tp 4 --nodes 2 --gpus 2").rc == 2);
    CHECK(run("plan -m llama-3.1-70b -g h100-sxm,a100 --tp 4 --nodes 2").rc == 2);
}

TEST_CASE("a laptop part: its own memory size, and no speed predicted from bandwidths its maker sets") {
    const auto j = run_json("plan -m llama-3-8b -g '4060 laptop' --weights q4_0 --ctx 8192", 0);
    CHECK(j["gpu"] == "RTX 4060 Laptop 8GB");
    CHECK(j["budget_bytes"] == 8ull << 30);
    CHECK(j["decode"]["tokens_per_second"].is_null());
    const auto r = run("advise -m llama-3-8b -g 'rtx 4060 laptop' --ctx 8192");
    CAPTURE(r.out);
    CHECK(r.out.find("decode speed not predicted: this GPU's bandwidths are not known") != std::string::npos);
    CHECK(r.out.find("0.0x") == std::string::npos);
}

TEST_CASE("MoE and sliding-window models: --host-experts, active parameters and each layer's cache") {
    // Qwen3-30B-A3B in Q4_K at 8192 tokens does not fit an 8 GiB RTX 4060 with its experts on the GPU.
    const auto whole = run_json("plan -m qwen3-30b-a3b -g rtx-4060-8gb --weights q4_k --ctx 8192", 1);
    CHECK(whole["active_params"] == 3'353'032'704ull);  // attention, router, 8 of 128 experts, embeddings
    CHECK(whole["experts"]["count"] == 128);
    CHECK(whole["experts"]["used_per_token"] == 8);
    CHECK(whole["host_expert_layers"] == 0);
    // Automatic fit moves experts first: every layer stays on the GPU, 30 layers' experts go to the host.
    CHECK(whole["auto_gpu_layers"] == 48);
    CHECK(whole["auto_host_expert_layers"] == 30);
    // 30 is the fewest: with 29 layers' experts moved, the plan is still short.
    CHECK(run("check -m qwen3-30b-a3b -g rtx-4060-8gb --weights q4_k --ctx 8192 --host-experts 29").rc == 1);
    const auto moved = run_json("plan -m qwen3-30b-a3b -g rtx-4060-8gb --weights q4_k --ctx 8192 --host-experts 30", 0);
    CHECK(moved["host_expert_layers"] == 30);
    CHECK(moved["gpu_layers"] == 48);
    // Each layer's experts: 3 tensors of 128 x 768 x 2048 Q4_K values (144 bytes per 256).
    const std::uint64_t layer_experts = 3ull * 128 * 768 * 2048 / 256 * 144;
    // The host tier holds them and the CPU's copy of the activations, where it computes them.
    CHECK(moved["tiers"]["host"]["used_bytes"] ==
          30 * layer_experts + moved["activations_bytes"].get<std::uint64_t>());
    CHECK(whole["needed_bytes"].get<std::uint64_t>() - moved["needed_bytes"].get<std::uint64_t>() ==
          30 * layer_experts);
    // Reading them costs host memory bandwidth: 8 of 128 experts of 30 layers per token.
    CHECK(moved["decode"]["host_bytes_per_token"] == 30 * layer_experts / 16);
    const auto all = run_json("plan -m qwen3-30b-a3b -g rtx-4060-8gb --weights q4_k --ctx 8192 --host-experts all", 0);
    CHECK(all["host_expert_layers"] == 48);
    const auto text = run("plan -m qwen3-30b-a3b -g rtx-4060-8gb --weights q4_k --ctx 8192 --host-experts 30");
    CHECK(text.out.find("30 of 48 layers keep theirs in the host tier (computed by the CPU)") != std::string::npos);
    CHECK(text.out.find("blk.0..29 experts (30 layers)") != std::string::npos);
    const auto advice = run("advise -m qwen3-30b-a3b -g rtx-4060-8gb --weights q4_k --ctx 8192");
    CHECK(advice.out.find("keep the experts of 30 of 48 MoE layers in host memory (--host-experts 30)") !=
          std::string::npos);
    // llama.cpp keeps the experts of blocks 0..29 on the CPU with --n-cpu-moe 30; Ollama cannot.
    const auto emitted =
        run("plan -m qwen3-30b-a3b -g rtx-4060-8gb --weights q4_k --ctx 8192 --host-experts 30 --emit llama.cpp");
    CHECK(emitted.out.find("-ngl 49 -fa on -ctk f16 -ctv f16 --n-cpu-moe 30\n") != std::string::npos);
    CHECK(run("plan -m qwen3-30b-a3b -g rtx-4060-8gb --weights q4_k --ctx 8192 --host-experts 30 --emit ollama")
              .out.find("Ollama has no setting that keeps only the experts in host memory") != std::string::npos);
    CHECK(run("plan -m qwen3-30b-a3b -g rtx-4060-8gb --weights q4_k --ctx 8192 --emit llama.cpp")
              .out.find("--n-cpu-moe") == std::string::npos);
    // Refusals name what to change.
    const auto dense = run("plan -m llama-3-8b -g rtx-4060-8gb --host-experts 2");
    CHECK(dense.rc == 2);
    CHECK(dense.out.find("has no experts") != std::string::npos);
    const auto many = run("plan -m qwen3-30b-a3b -g rtx-4060-8gb --host-experts 49");
    CHECK(many.rc == 2);
    CHECK(many.out.find("--host-experts 49 exceeds the model's 48 layers with experts") != std::string::npos);
    // Gemma-3-4B: layers 5, 11, ... are global; the others hold 1024 + 512 - 1 positions.
    const auto g = run_json("plan -m gemma-3-4b -g rtx-4090 --ctx 32768", 0);
    CHECK(g["sliding_window"] == 1024);
    CHECK(g["layer_kinds"].size() == 34);
    CHECK(g["layer_kinds"][5]["attention"] == "full");
    CHECK(g["layer_kinds"][5]["kv_positions"] == 32768);
    CHECK(g["layer_kinds"][0]["attention"] == "sliding");
    CHECK(g["layer_kinds"][0]["kv_positions"] == 1535);
    CHECK(g["kv_bytes"] == (5ull * 32768 + 29ull * 1535) * 4 * 256 * 2 * 2);
    CHECK(g["attention_chunk"].is_null());
    // Llama-4-Scout: layers 3, 7, ... attend to the whole context, the others within chunks of
    // 8192, holding 8192 + 512 - 1 positions.
    const auto scout = run_json("plan -m llama4-scout -g h200 --weights q4_k --ctx 65536", 0);
    CHECK(scout["attention_chunk"] == 8192);
    CHECK(scout["sliding_window"].is_null());
    CHECK(scout["layer_kinds"][0]["attention"] == "chunked");
    CHECK(scout["layer_kinds"][0]["kv_positions"] == 8703);
    CHECK(scout["layer_kinds"][3]["attention"] == "full");
    CHECK(scout["kv_bytes"] == (12ull * 65536 + 36ull * 8703) * 8 * 128 * 2 * 2);
    CHECK(run("plan -m llama4-scout -g h200 --weights q4_k --ctx 65536")
              .out.find("36 chunked-attention layers (8192 positions, a cache ring of 8703 at this micro-batch) and "
                        "12 full-attention layers") != std::string::npos);
}

TEST_CASE("gpt-oss: MXFP4 experts as released, --expert-weights to change them, 12 sliding layers") {
    const auto j = run_json("plan -m gpt-oss-20b -g rtx-4090 --ctx 8192", 0);
    CHECK(j["params"] == 20'914'757'184ull);
    CHECK(j["sliding_window"] == 128);
    // 12 full layers hold 8192 positions, 12 sliding ones 128 + 512 - 1; 8 KV heads of 64, f16.
    CHECK(j["kv_bytes"] == (12ull * 8192 + 12ull * 639) * 8 * 64 * 2 * 2);
    CHECK(j["layer_kinds"][0]["attention"] == "sliding");
    CHECK(j["layer_kinds"][1]["attention"] == "full");
    // Q8_0 experts instead of MXFP4: 34 bytes per 32 values instead of 17, over 24 layers of
    // 32 experts x 3 projections of 2880 x 2880.
    const auto q8 = run_json("plan -m gpt-oss-20b -g rtx-4090 --ctx 8192 --expert-weights q8_0", 0);
    CHECK(q8["weights_bytes"].get<std::uint64_t>() - j["weights_bytes"].get<std::uint64_t>() ==
          24ull * 32 * 3 * 2880 * 2880 / 32 * (34 - 17));
    CHECK(run("plan -m gpt-oss-20b -g rtx-4090 --emit llama.cpp")
              .out.find("the GGUF file of gpt-oss-20b with f16 weights and mxfp4 experts") != std::string::npos);
    const auto dense = run("plan -m llama-3-8b -g rtx-4090 --expert-weights q8_0");
    CHECK(dense.rc == 2);
    CHECK(dense.out.find("--expert-weights: Llama-3-8B has no experts") != std::string::npos);
    // 2880-value rows hold no K-quant block: asked for every matrix, Q4_K takes only the 4096-wide
    // attention output and the rest stays as it was.
    const auto k = run_json("plan -m gpt-oss-20b -g rtx-4090 --ctx 8192 --weights q4_k", 0);
    CHECK(k["weights_bytes"].get<std::uint64_t>() ==
          j["weights_bytes"].get<std::uint64_t>() - 24ull * 2880 * 4096 * 2 + 24ull * 2880 * 4096 / 256 * 144);
}

TEST_CASE("DeepSeek-V3: the latent cache, 576 values per token and layer in one plane, and experts moved first") {
    const auto j = run_json("plan -m deepseek-v3 -g h200 --weights q4_k --ctx 32768 --gpu-layers auto", 0);
    CHECK(j["params"] == 671'026'419'200ull);
    CHECK(j["kv_bytes"] == 61ull * 32768 * (512 + 64) * 2);
    CHECK(j["gpu_layers"] == 61);
    CHECK(j["host_expert_layers"].get<std::uint64_t>() > 0);
    const auto text = run("plan -m deepseek-v3 -g h200 --weights q4_k --ctx 32768 --gpu-layers auto");
    CHECK(text.out.find("caches a latent of 512 and a rotated key of 64 per layer (576 values, one plane)") !=
          std::string::npos);
    CHECK(text.out.find("cache_latent.0..60 (KV cache)") != std::string::npos);
}

TEST_CASE("Granite-4.0-H-Tiny: the Mamba-2 layers' states beside the 4 attention layers' KV") {
    const auto j = run_json("plan -m granite-4.0-h-tiny -g rtx-4060-8gb --weights q4_k --ctx 32768", 0);
    CHECK(j["params"] == 6'939'037'248ull);
    // 4 attention layers x 32768 positions x 4 KV heads of 128, f16, K and V; 36 layers' states of
    // (3 x 3328 + 128 x 3072) f32 values.
    const std::uint64_t states = 36ull * (3 * 3328 + 128 * 3072) * 4;
    CHECK(j["recurrent_state_bytes"] == states);
    CHECK(j["kv_bytes"] == 4ull * 32768 * 512 * 2 * 2 + states);
    CHECK(j["layer_kinds"][0]["attention"] == "recurrent");
    CHECK(j["layer_kinds"][5]["attention"] == "full");
    const auto text = run("plan -m granite-4.0-h-tiny -g rtx-4060-8gb --weights q4_k --ctx 32768");
    CHECK(text.out.find("mamba2  36 Mamba-2 layers (48 heads of 64, a state of 128, 1 group, a 4-tap "
                        "convolution) keep 55.37 MiB of f32 state per sequence") != std::string::npos);
    CHECK(text.out.find("only the 4 attention layers' KV grows with it") != std::string::npos);
    CHECK(text.out.find("cache_k/v+state.0..39 (KV cache)") != std::string::npos);
}

TEST_CASE("a quantized config.json, a checkpoint beside it, and QLoRA's base format") {
    const std::string dir = temp("vramplan_cli_checkpoint");
    std::filesystem::create_directories(dir);
    const std::string cfg = dir + "/config.json";
    // Llama-2-7B's shape in bitsandbytes NF4 with double quantization: each of the 224 projections
    // is n / 2 + n / 64 + 4 ceil(n / 16384) + 1092 bytes (n values); embedding and head f16, norms f32.
    std::ofstream(cfg) << R"({"model_type": "llama", "vocab_size": 32000, "hidden_size": 4096, "num_hidden_layers": 32,
        "num_attention_heads": 32, "num_key_value_heads": 32, "intermediate_size": 11008, "rms_norm_eps": 1e-5,
        "quantization_config": {"quant_method": "bitsandbytes", "load_in_4bit": true, "bnb_4bit_quant_type": "nf4",
        "bnb_4bit_use_double_quant": true}})";
    // Each tensor starts at a multiple of 256 bytes (the plan's alignment), so each is padded to one.
    auto nf4 = [](std::uint64_t n) { return (n / 2 + n / 64 + 4 * ((n + 16383) / 16384) + 1092 + 255) / 256 * 256; };
    const std::uint64_t q = 4096ull * 4096, f = 11008ull * 4096;
    const auto j = run_json("plan -m " + cfg + " -g rtx-4090", 0);
    CHECK(j["weights_bytes"] == 32 * (4 * nf4(q) + 3 * nf4(f)) + 2 * 32000ull * 4096 * 2 + 65 * 4096 * 4);
    CHECK(j["notes"][0].get<std::string>().find("bitsandbytes nf4_dq") != std::string::npos);
    // A checkpoint beside it: its headers' bytes, and --weights refused.
    const std::string header =
        R"({"model.embed_tokens.weight": {"dtype": "F16", "shape": [32000, 4096], "data_offsets": [0, 262144000]}})";
    {
        std::ofstream st(dir + "/model.safetensors", std::ios::binary);
        const std::uint64_t n = header.size();
        for (int b = 0; b < 8; ++b) st.put(static_cast<char>(n >> (8 * b) & 0xff));
        st << header;
    }
    // Sparse: the data is never read, only its length checked.
    std::filesystem::resize_file(dir + "/model.safetensors", 8 + header.size() + 262144000ull);
    const auto bad = run("plan -m " + cfg + " -g rtx-4090");
    CHECK(bad.rc == 2);
    CHECK(bad.out.find("no tensors for layer 0") != std::string::npos);
    const auto weights = run("plan -m " + cfg + " -g rtx-4090 --weights q4_0");
    CHECK(weights.out.find("--weights and --expert-weights re-format a model") != std::string::npos);
    // A whole (tiny) checkpoint: 2 layers of 64, feed-forward 96, vocabulary 32, bf16.
    std::ofstream(cfg) << R"({"model_type": "llama", "vocab_size": 32, "hidden_size": 64, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 4, "intermediate_size": 96, "torch_dtype": "bfloat16"})";
    {
        std::string h = "{";
        std::uint64_t at = 0;
        auto add = [&](const std::string& name, std::uint64_t rows, std::uint64_t cols) {
            const std::uint64_t b = rows * cols * 2;
            h += (at ? ", \"" : "\"") + name + "\": {\"dtype\": \"BF16\", \"shape\": [" + std::to_string(rows) +
                 (cols > 1 ? ", " + std::to_string(cols) : "") + "], \"data_offsets\": [" + std::to_string(at) + ", " +
                 std::to_string(at + b) + "]}";
            at += b;
        };
        add("model.embed_tokens.weight", 32, 64);
        add("model.norm.weight", 64, 1);
        add("lm_head.weight", 32, 64);
        for (int l = 0; l < 2; ++l) {
            const std::string p = "model.layers." + std::to_string(l) + ".";
            add(p + "input_layernorm.weight", 64, 1);
            add(p + "post_attention_layernorm.weight", 64, 1);
            for (const char* m : {"q_proj", "k_proj", "v_proj", "o_proj"})
                add(p + "self_attn." + m + ".weight", 64, 64);
            add(p + "mlp.gate_proj.weight", 96, 64);
            add(p + "mlp.up_proj.weight", 96, 64);
            add(p + "mlp.down_proj.weight", 64, 96);
        }
        h += "}";
        std::ofstream st(dir + "/model.safetensors", std::ios::binary | std::ios::trunc);
        for (int b = 0; b < 8; ++b) st.put(static_cast<char>(h.size() >> (8 * b) & 0xff));
        st << h << std::string(at, '\0');
    }
    const auto ck = run_json("plan -m " + cfg + " -g rtx-4090", 0);
    // The embedding (4096 bytes), the head and final norm (4224, padded to 4352) and each layer's
    // tensors in one block of (2 x 64 + 4 x 64 x 64 + 3 x 64 x 96) x 2 = 69,888 bytes.
    CHECK(ck["weights_bytes"] == 4096 + 4352 + 2 * 69888);
    CHECK(ck["notes"][0].get<std::string>().find("weights from the safetensors headers: 21 tensors, 148,096 bytes") !=
          std::string::npos);
    std::filesystem::remove_all(dir);
    // QLoRA: NF4 with double quantization unless --qlora-format says otherwise.
    const auto t = run_json("train -m llama2-7b -g rtx-4090 --qlora 16", 0);
    CHECK(t["qlora_format"] == "nf4_dq");
    const auto g64 = run_json("train -m llama2-7b -g rtx-4090 --qlora 16 --qlora-format int4_g64", 0);
    CHECK(g64["qlora_format"] == "int4_g64");
    CHECK(g64["weights_bytes"].get<std::uint64_t>() > t["weights_bytes"].get<std::uint64_t>());
    CHECK(run("train -m llama2-7b -g rtx-4090 --qlora-format nf4").out.find("give --qlora too") != std::string::npos);
}

TEST_CASE("--offload compute keeps the host layers' KV cache in host memory; advise says what to combine") {
    const auto j =
        run_json("plan -m llama3.1-70b -g rtx-4090 --weights q4_0 --ctx 8192 --gpu-layers 47 --offload compute", 0);
    CHECK(j["offload_mode"] == "compute");
    CHECK(j["fits"] == true);
    CHECK(j["host_kv_bytes"] == 33ull * 33'554'432);  // 33 layers' K and V planes: 2 x 8192 x 1024 x 2 bytes
    CHECK(j["kv_bytes"] == 80ull * 33'554'432);
    CHECK(j["staging_bytes"] == 0);
    const auto text =
        run("plan -m llama3.1-70b -g rtx-4090 --weights q4_0 --ctx 8192 --gpu-layers 47 --offload compute");
    CHECK(text.out.find("Pinned host tier (layers computed by the CPU, with their KV cache)") != std::string::npos);
    CHECK(text.out.find("cache_k/v.0..32 (KV cache)") != std::string::npos);
    const auto bad = run("plan -m llama3.1-70b -g rtx-4090 --offload sideways");
    CHECK(bad.rc == 2);
    CHECK(bad.out.find("--offload: sideways not in {stream,compute}") != std::string::npos);
    // A plan that does not fit: single remedies, both offload modes, and the best combination.
    const auto advice = run("advise -m llama3.1-70b -g rtx-4090 --weights q8_0 --ctx 8192");
    CHECK(advice.out.find("offload") != std::string::npos);
    CHECK(advice.out.find("computed by the CPU (--gpu-layers") != std::string::npos);
    CHECK(advice.out.find("best fit: weights q4_k + KV q8_0 + ") != std::string::npos);
    const auto a = run_json("plan -m llama3.1-70b -g rtx-4090 --weights q8_0 --ctx 8192", 1);  // does not fit: 1
    REQUIRE(a["best_fit"].is_object());
    CHECK(a["best_fit"]["flags"].get<std::string>().find("--weights q4_k --kv q8_0 --gpu-layers ") == 0);
    CHECK(a["best_fit"]["predicted_tokens_per_second"].get<double>() > 0);
    CHECK(run_json("plan -m llama3-8b -g rtx-4090", 0)["best_fit"].is_null());
    // The flags best_fit and the offload remedy print remake the plans they describe, experts and
    // offloaded layers together (Qwen3-235B-A22B on 8 GB: every MoE layer's experts move first).
    const std::string big = "plan -m qwen3-235b-a22b -g rtx-4060-8gb --weights q4_k --ctx 32768";
    const auto moe = run_json(big, 1);
    REQUIRE(moe["best_fit"].is_object());
    const auto remade = run_json(big + " " + moe["best_fit"]["flags"].get<std::string>(), 0);
    CHECK(remade["needed_bytes"] == moe["best_fit"]["needed_bytes"]);
    CHECK(remade["gpu_layers"] == moe["best_fit"]["gpu_layers"]);
    CHECK(remade["host_expert_layers"] == moe["best_fit"]["host_expert_layers"]);
    int offloads = 0;
    for (const auto& item : moe["advice"]) {
        const std::string remedy = item["remedy"];
        if (remedy.rfind("offload ", 0) != 0) continue;
        ++offloads;
        CAPTURE(remedy);
        CHECK(remedy.find("--host-experts 94") != std::string::npos);
        const std::string flags = remedy.substr(remedy.find("(--") + 1, remedy.size() - remedy.find("(--") - 2);
        CHECK(run_json(big + " " + flags, 0)["needed_bytes"] == item["needed_bytes"]);
    }
    CHECK(offloads ==
          1);  // computing layers fits; streaming does not (two staging slots of a whole layer, experts included)
}

TEST_CASE("a gemma3 config.json plans its text model and says the vision tower is left out") {
    const std::string path = temp("vramplan_cli_gemma3.json");
    std::ofstream(path) << R"({"model_type": "gemma3", "vision_config": {"hidden_size": 1152},
        "text_config": {"vocab_size": 262208, "hidden_size": 2560, "num_hidden_layers": 34,
        "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256, "intermediate_size": 10240,
        "sliding_window": 1024, "rope_theta": 1000000.0, "rms_norm_eps": 1e-06,
        "max_position_embeddings": 131072}})";
    const auto j = run_json("plan -m " + path + " -g rtx-4090 --ctx 8192", 0);
    CHECK(j["params"] == 3'880'263'168ull);  // as the Gemma-3-4B preset: the text model alone
    REQUIRE(j["notes"].size() == 1);
    CHECK(j["notes"][0].get<std::string>().find("vision tower") != std::string::npos);
    CHECK(run("plan -m " + path + " -g rtx-4090 --ctx 8192").out.find("note    the vision tower") != std::string::npos);
    std::filesystem::remove(path);
}

TEST_CASE("a GGUF file of an architecture without a graph: weights and KV planned, activations not, and said so") {
    const std::string path = temp("vramplan_cli_unknown.gguf");
    vramplan::io::gguf_writer w;
    w.set_string("general.architecture", "rwkv7")
        .set_u32("rwkv7.block_count", 1)
        .set_u32("rwkv7.embedding_length", 64)
        .set_u32("rwkv7.attention.head_count", 4)
        .set_string("tokenizer.ggml.model", "llama");
    std::vector<std::string> tokens;
    for (int i = 0; i < 64; ++i) tokens.push_back("t" + std::to_string(i));
    w.set_strings("tokenizer.ggml.tokens", tokens);
    const std::vector<float> zeros(64 * 64);
    w.add_tensor("token_embd.weight", {64, 64}, vramplan::format{vramplan::format_id::f32}, zeros.data(), 64 * 64 * 4);
    w.add_tensor("blk.0.time_mix.weight", {64, 64}, vramplan::format{vramplan::format_id::f32}, zeros.data(),
                 64 * 64 * 4);
    w.write(path);
    const auto j = run_json("plan -m " + path + " -g rtx-4090 --ctx 256", 0);
    CHECK(j["activations_planned"] == false);
    CHECK(j["activations_bytes"] == 0);
    CHECK(j["weights_bytes"] == 2 * 64 * 64 * 4);  // both tensors, 256-byte multiples already
    CHECK(j["params"] == 2 * 64 * 64);
    CHECK(j["kv_bytes"] == 256 * 64 * 2 * 2);  // 4 KV heads of 16 (head_count_kv defaults to head_count), f16
    REQUIRE(j["notes"].size() == 1);
    CHECK(j["notes"][0].get<std::string>().find("architecture 'rwkv7': weights and KV planned, activations not") !=
          std::string::npos);
    const auto c = run("check -m " + path + " -g rtx-4090 --ctx 256");
    CHECK(c.rc == 0);
    CHECK(c.out.find("(weights, KV and reserve; activations not included)") != std::string::npos);
    // generate names the architecture and what is missing, and stops before loading anything.
    const auto g = run_program(VRAMPLAN_GENERATE, "-m " + path + " -n 4");
    CHECK(g.rc == 2);
    CHECK(g.out.find("(architecture rwkv7): vramplan has no forward graph for this architecture") != std::string::npos);
    CHECK(lines(g.out) == 1);
    std::filesystem::remove(path);
}
