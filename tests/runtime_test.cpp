#include <doctest/doctest.h>

#include "greedy.hpp"
#include "temp_path.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#define VRAMPLAN_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define VRAMPLAN_TEST_ASAN 1
#endif
#endif
#if VRAMPLAN_TEST_ASAN
// AddressSanitizer's runtime exports this (sanitizer/allocator_interface.h, which GCC does not
// always install, declares it the same way).
extern "C" std::size_t __sanitizer_get_current_allocated_bytes();
#else
#include <malloc.h>
#endif

#include "device_double.hpp"
#include "reference_run.hpp"
#include "test_model.hpp"
#include "vramplan/io/gguf_model.hpp"
#include "vramplan/io/tokenizer.hpp"
#include "vramplan/kernels/plane_units.hpp"
#include "vramplan/model/presets.hpp"
#include "vramplan/plan/buffers.hpp"
#include "vramplan/plan/fits.hpp"
#include "vramplan/runtime/arena.hpp"
#include "vramplan/runtime/cpu_backend.hpp"
#include "vramplan/runtime/forward_pass.hpp"
#include "vramplan/runtime/model_loader.hpp"
#include "vramplan/runtime/weight_layout.hpp"

using namespace vramplan;
using reference_run::file_bytes;
using reference_run::gap;
using reference_run::run;
using reference_run::written_model;
using runtime::cpu_backend;

namespace {

const std::string shared_models = std::string(VRAMPLAN_SHARED_DIR) + "/models/";

std::string temp_file(const std::string& name) { return test_temp_path(name); }

// A backend that counts its allocations, to prove one per tier.
struct counting_backend : cpu_backend {
    using cpu_backend::cpu_backend;
    int allocations = 0;
    void* allocate(tier t, std::uint64_t n) {
        ++allocations;
        return cpu_backend::allocate(t, n);
    }
};

}  // namespace

TEST_CASE("the forward pass matches a naive double-precision Llama for F32 and F16 and Q8_0 and Q4_0 weights") {
    const std::vector<std::int32_t> tokens{1, 17, 5, 63, 22, 9, 40, 2, 31};
    for (format_id w : {format_id::f32, format_id::f16, format_id::q8_0, format_id::q4_0}) {
        CAPTURE(name(format{w}));
        test_model::spec s;
        s.weights = format{w};
        const std::string path = temp_file("vramplan_forward_" + name(format{w}) + ".gguf");
        const auto weights = test_model::write(path, s);
        const auto ref = test_model::reference_logits(weights, tokens);
        const auto got = run(path, tokens, 6, 1ull << 30, format{format_id::f32});
        REQUIRE(got.logits.size() == tokens.size());
        // The only difference is f32 against double arithmetic over three layers.
        CHECK(gap(got.logits, ref).within_rounding());
        std::filesystem::remove(path);
    }
}

TEST_CASE(
    "Llama 3.1's RoPE frequency divisors (rope_freqs.weight) are planned, loaded and applied, resident and streamed") {
    test_model::spec s;
    s.rope_freqs = true;
    s.layers = 4;
    const written_model written("vramplan_rope_freqs.gguf", s, 13);
    const auto& [path, weights, file, m] = written;
    CHECK(m.shape.rope_freqs);
    std::uint64_t file_bytes = 0;
    for (const auto& t : file.tensors()) file_bytes += t.bytes;
    CHECK(weight_bytes(m) == file_bytes);  // the 16 divisors (64 bytes) included
    model_desc m32 = m;
    m32.kv = format{format_id::f32};  // as run() plans it
    const plan p =
        plan_inference(m32, target_desc{"cpu", 1ull << 30, 0}, {.context = 64, .ubatch = 8, .all_logits = true});
    const auto all = buffers(p);
    const auto it =
        std::find_if(all.begin(), all.end(), [](const buffer_info& b) { return b.name == "rope_freqs.weight"; });
    REQUIRE(it != all.end());
    CHECK(it->bytes == 16 * 4);
    CHECK(it->where == tier::gpu);

    const std::vector<std::int32_t> tokens{2, 19, 33, 7, 50, 11, 3, 28, 45};
    const auto ref = test_model::reference_logits(weights, tokens);
    auto without = weights;
    without.rope_divisors.clear();
    const auto ref_plain = test_model::reference_logits(without, tokens);
    const auto got = run(path, tokens, 5, 1ull << 30, format{format_id::f32});
    CHECK(gap(got.logits, ref).within_rounding());
    CHECK(gap(ref_plain, ref).far_beyond_rounding());  // ignoring the divisors would fail the check above
    // Every layer streamed: the divisors stay in the GPU tier and give the same logits bit for bit.
    std::uint64_t budget = 0;
    needed_by_gpu_layers(p, [&](std::uint64_t g, std::uint64_t need) {
        if (g == 0) budget = need;
    });
    const auto streamed = run(path, tokens, 5, budget, format{format_id::f32});
    CHECK(streamed.gpu_layers == 0);
    CHECK(streamed.logits == got.logits);
}

TEST_CASE("linear RoPE scaling is applied and YaRN is refused by name when the forward pass is built") {
    test_model::spec s;
    s.rope_scaling = "linear";
    s.rope_scaling_factor = 4.0f;
    const std::string path = temp_file("vramplan_rope_linear.gguf");
    const auto weights = test_model::write(path, s, 17);
    const model_desc m = io::describe(io::gguf_file::open(path), "test");
    CHECK(m.shape.scaling == rope_scaling::linear);
    CHECK(m.shape.scaling_factor == 4.0f);
    const std::vector<std::int32_t> tokens{5, 6, 7, 8, 9, 10, 11, 12};
    const auto ref = test_model::reference_logits(weights, tokens);
    auto unscaled = weights;
    unscaled.s.rope_scaling.clear();
    const auto ref_unscaled = test_model::reference_logits(unscaled, tokens);
    const auto got = run(path, tokens, 4, 1ull << 30, format{format_id::f32});
    CHECK(gap(got.logits, ref).within_rounding());
    CHECK(gap(ref_unscaled, ref).far_beyond_rounding());  // ignoring the scaling would fail the check above
    // Older files name the factor alone (rope.scale_linear): the same model, the same logits.
    s.legacy_linear_key = true;
    test_model::write(path, s, 17);
    CHECK(io::describe(io::gguf_file::open(path), "test").shape == m.shape);
    CHECK(run(path, tokens, 4, 1ull << 30, format{format_id::f32}).logits == got.logits);
    s.legacy_linear_key = false;
    s.rope_scaling_factor = 0.0f;
    test_model::write(path, s, 17);
    CHECK_THROWS_WITH_AS(io::describe(io::gguf_file::open(path)),
                         doctest::Contains("rope.scaling.factor must be positive"), io::gguf_error);
    s.rope_scaling_factor = 4.0f;

    s.rope_scaling = "yarn";
    test_model::write(path, s, 17);
    const model_desc y = io::describe(io::gguf_file::open(path), "test");
    CHECK(y.shape.scaling == rope_scaling::yarn);
    // Planning needs nothing from the scaling; running would give wrong text, so it is refused.
    CHECK(plan_inference(y, target_desc{"cpu", 1ull << 30, 0}, {.context = 64, .ubatch = 8}).fits());
    CHECK_THROWS_WITH_AS(run(path, tokens, 4, 1ull << 30, format{format_id::f32}),
                         doctest::Contains("yarn RoPE scaling, which the vramplan runtime does not apply"), error);
    std::filesystem::remove(path);
}

TEST_CASE("a qwen2 GGUF (q/k/v biases, NeoX-style RoPE pairs) plans the whole file and runs as the reference") {
    test_model::spec s;
    s.arch = "qwen2";
    s.weights = format{format_id::q8_0};
    const written_model written("vramplan_qwen2.gguf", s, 19);
    const auto& [path, weights, file, m] = written;
    CHECK(m.shape.qkv_bias);
    CHECK(m.shape.rope_neox);
    std::uint64_t file_bytes = 0;
    for (const auto& t : file.tensors()) file_bytes += t.bytes;
    CHECK(weight_bytes(m) == file_bytes);  // the 3 x 3 bias vectors included
    const std::vector<std::int32_t> tokens{9, 8, 7, 6, 5, 4, 3};
    const auto ref = test_model::reference_logits(weights, tokens);
    const auto got = run(path, tokens, 3, 1ull << 30, format{format_id::f32});
    CHECK(gap(got.logits, ref).within_rounding());
    // Either feature ignored would fail the check above.
    auto llama_pairs = weights;
    llama_pairs.s.arch = "llama";
    CHECK(gap(test_model::reference_logits(llama_pairs, tokens), ref).far_beyond_rounding());
    auto no_bias = weights;
    for (auto& b : no_bias.blk) b.q_bias.clear(), b.k_bias.clear(), b.v_bias.clear();
    CHECK(gap(test_model::reference_logits(no_bias, tokens), ref).far_beyond_rounding());
}

TEST_CASE("a qwen3 GGUF (q/k norms per head, head_dim from key_length, NeoX pairs) runs as the reference") {
    test_model::spec s;
    s.arch = "qwen3";
    s.weights = format{format_id::q8_0};
    s.head_dim = 64;  // 4 heads of 64 over a 128-wide model: q is 256 wide, as in Qwen3
    const written_model written("vramplan_qwen3.gguf", s, 23);
    const auto& [path, weights, file, m] = written;
    CHECK(m.shape.qk_norm);
    CHECK(m.shape.head_dim == 64);
    CHECK(m.shape.q_dim() == 256);
    const std::vector<std::int32_t> tokens{9, 8, 7, 6, 5, 4, 3};
    const auto ref = test_model::reference_logits(weights, tokens);
    const auto got = run(path, tokens, 3, 1ull << 30, format{format_id::f32});
    CHECK(gap(got.logits, ref).within_rounding());
    // Without the per-head norms the logits are far off: the check above sees them.
    auto no_norms = weights;
    for (auto& b : no_norms.blk) b.q_norm.clear(), b.k_norm.clear();
    CHECK(gap(test_model::reference_logits(no_norms, tokens), ref).far_beyond_rounding());
}

TEST_CASE("a quantized KV cache stays close to the f32 one") {
    test_model::spec s;
    const std::string path = temp_file("vramplan_kv.gguf");
    const auto weights = test_model::write(path, s, 7);
    const std::vector<std::int32_t> tokens{3, 8, 13, 21, 34, 55};
    const auto ref = run(path, tokens, 3, 1ull << 30, format{format_id::f32});
    // Bounds relative to the largest logit: per element the formats round by at most 2^-11 (f16),
    // 1/254 (q8_0) and 1/16 (q4_0) of the block's largest value; three layers of attention and
    // MLP amplify that about sixfold on this random model.
    for (auto [kv, tol] :
         {std::pair{format_id::f16, 0.002}, std::pair{format_id::q8_0, 0.03}, std::pair{format_id::q4_0, 0.4}}) {
        CAPTURE(name(format{kv}));
        const auto got = run(path, tokens, 3, 1ull << 30, format{kv});
        double worst = 0, range = 0;
        for (std::size_t t = 0; t < tokens.size(); ++t)
            for (std::size_t v = 0; v < s.vocab; ++v) {
                worst = std::max(worst, std::fabs(double(got.logits[t][v]) - ref.logits[t][v]));
                range = std::max(range, std::fabs(double(ref.logits[t][v])));
            }
        CHECK(worst <= tol * range);
    }
    std::filesystem::remove(path);
}

TEST_CASE("streaming most layers through staging gives exactly the resident results") {
    test_model::spec s;
    s.weights = format{format_id::q8_0};
    s.layers = 5;
    const std::string path = temp_file("vramplan_offload.gguf");
    test_model::write(path, s, 9);
    const std::vector<std::int32_t> tokens{4, 44, 12, 7, 60, 1, 9};
    const auto resident = run(path, tokens, 4, 1ull << 30, format{format_id::f16});
    CHECK(resident.gpu_layers == 5);
    CHECK(resident.streamed_copies == 0);
    // Budget for the head, KV, activations, staging and one resident layer.
    const auto file = io::gguf_file::open(path);
    model_desc m = io::describe(file, "test");
    const plan full =
        plan_inference(m, target_desc{"cpu", 1ull << 30, 0}, {.context = 64, .ubatch = 8, .all_logits = true});
    std::uint64_t budget = 0;
    needed_by_gpu_layers(full, [&](std::uint64_t g, std::uint64_t need) {
        if (g == 1) budget = need;
    });
    const auto streamed = run(path, tokens, 4, budget, format{format_id::f16});
    CHECK(streamed.gpu_layers == 1);
    CHECK(streamed.streamed_copies >= 4 * 4);   // 4 streamed layers in each of 4 passes
    CHECK(streamed.logits == resident.logits);  // bit for bit
    std::filesystem::remove(path);
}

TEST_CASE(
    "layers the plan has the CPU compute (offload compute): their cache, weights and activations in the host tier, "
    "logits exactly the resident ones") {
    test_model::spec s;
    s.layers = 5;
    const written_model written("vramplan_offload_compute.gguf", s, 13);
    const auto& m = written.m;
    const plan p = plan_inference(m, target_desc{"cpu", 1ull << 30, 0}, {.context = 32, .ubatch = 4},
                                  {.gpu_layers = 2, .offload = offload_mode::compute});
    CHECK(p.host_computed_layers() == 3);
    CHECK(p.staging_slot == 0);
    runtime::cpu_backend backend;
    runtime::arena<runtime::cpu_backend> a(p, backend);
    // Layer 2's cache sits in the host tier's KV region, layer 3's in the GPU tier's.
    CHECK(a.kv(2, false).where == tier::host);
    CHECK(a.kv(2, true).data == a.base(tier::host) + p.host.kv.offset + p.kv_offset[2] + p.kv_plane_of(2));
    CHECK(a.kv(3, false).data == a.base(tier::gpu) + p.gpu.kv.offset);
    CHECK(p.host.activations.bytes == p.gpu.activations.bytes);  // the CPU's copy of the arena
    // The CPU backend computes those layers in the host tier, handing over only the residual stream
    // and positions: the same kernels on the same values as with every layer resident.
    const std::vector<std::int32_t> tokens{4, 8, 15, 16, 23, 42};
    const auto resident = run(written.path, tokens, 4, 1ull << 30, format{format_id::f16});
    for (std::uint64_t gpu_layers : {2, 0}) {
        CAPTURE(gpu_layers);
        const auto computed = run(written.path, tokens, 4, 1ull << 30, format{format_id::f16},
                                  {.gpu_layers = gpu_layers, .offload = offload_mode::compute});
        CHECK(computed.gpu_layers == gpu_layers);
        CHECK(computed.streamed_copies == 0);
        CHECK(computed.logits == resident.logits);
    }
}

TEST_CASE(
    "beside a device, a CPU backend of the pass's own computes the layers the plan has the CPU compute, as the "
    "reference") {
    // Llama 3.1's RoPE divisors live in the device tier: the host layers read the pass's copy of them.
    test_model::spec s;
    s.layers = 5;
    s.rope_freqs = true;
    const std::vector<std::int32_t> tokens{4, 8, 15, 16, 23, 42};
    // f32 weights: the device and the CPU multiply with the same kernels, so the logits are the
    // device's own bit for bit; Q8_0: the CPU computes its layers on the panels it holds them as.
    for (const format w : {format{format_id::f32}, format{format_id::q8_0}}) {
        CAPTURE(name(w));
        s.weights = w;
        const written_model written("vramplan_offload_compute_device.gguf", s, 19);
        const auto ref = test_model::reference_logits(written.weights, tokens);
        const auto resident = run<device_double>(written.path, tokens, 4, 1ull << 30, format{format_id::f32});
        CHECK(resident.host_weight_products == 0);
        for (std::uint64_t gpu_layers : {2, 0}) {
            CAPTURE(gpu_layers);
            const auto computed = run<device_double>(written.path, tokens, 4, 1ull << 30, format{format_id::f32},
                                                     {.gpu_layers = gpu_layers, .offload = offload_mode::compute});
            CHECK(computed.gpu_layers == gpu_layers);
            CHECK(computed.streamed_copies == 0);
            CHECK(computed.host_weight_products == 0);
            if (w == format{format_id::f32})
                CHECK(computed.logits == resident.logits);
            else
                CHECK(gap(computed.logits, ref).within_rounding());
        }
        // Streamed instead, the device computes every layer from its staging copies.
        const auto streamed =
            run<device_double>(written.path, tokens, 4, 1ull << 30, format{format_id::f32}, {.gpu_layers = 2});
        CHECK(streamed.streamed_copies > 0);
        CHECK(streamed.host_weight_products == 0);
        CHECK(gap(streamed.logits, ref).within_rounding());
    }
}

TEST_CASE("one allocation per tier and views at planned offsets and refusal before allocation") {
    test_model::spec s;
    const written_model written("vramplan_arena.gguf", s, 11);
    const auto& [path, weights, file, m] = written;
    const plan p = plan_inference(m, target_desc{"cpu", 1ull << 30, 0}, {.context = 32, .ubatch = 4});
    counting_backend backend(1ull << 30);
    {
        runtime::arena<counting_backend> a(p, backend);
        CHECK(backend.allocations == 2);
        const auto byname = a.view("blk.1.attn_q.weight");
        const auto fast = a.weight(1, tensor_role::attn_q);
        CHECK(byname.data == fast.data);
        CHECK(byname.bytes == 128 * 128 * 4);
        CHECK(a.view("cache_v.2").data == a.kv(2, true).data);
        CHECK(a.view("act.logits").data == a.activation(p.graph.n_buffers - 1).data);
        CHECK(reinterpret_cast<std::uintptr_t>(fast.data) % 256 == 0);
        CHECK_THROWS_WITH_AS(a.view("blk.9.attn_q.weight"), doctest::Contains("no buffer named"), error);
    }
    cpu_backend tiny(100'000);
    CHECK_THROWS_WITH_AS(runtime::arena<cpu_backend>(p, tiny), doctest::Contains("refusing to allocate"), error);
    try {
        runtime::arena<cpu_backend> a(p, tiny);
    } catch (const error& e) {
        const std::string msg = e.what();
        CHECK(msg.find("device shortfall") != std::string::npos);
        CHECK(msg.find("try:") != std::string::npos);
        CHECK(msg.find("gpu tier") != std::string::npos);
    }
}

namespace {
struct board {
    static constexpr target_desc value{.name = "board", .capacity = 4ull << 20, .reserve = 0};
};
constexpr limits edge_limits{.context = 128, .ubatch = 16};
using edge_model = presets::stories260k<f32, f16>;
static_assert(fits<edge_model, board, edge_limits>);
constexpr plan edge_plan = compile_time_plan<edge_model, board, edge_limits>;
alignas(256) std::byte edge_memory[edge_plan.gpu.total()];  // no heap: sized at compile time
}  // namespace

TEST_CASE("the CPU backend holds the Q4_0 and Q8_0 tensors only matmuls read as panels: the file's bytes, rearranged") {
    for (format_id w : {format_id::q4_0, format_id::q8_0}) {
        CAPTURE(name(format{w}));
        test_model::spec s;
        s.weights = format{w};
        s.vocab = 72;  // the head's 72 rows: four panels and eight rows as stored
        const written_model written("vramplan_panels.gguf", s, 5);
        const auto& [path, weights, file, m] = written;
        const plan p = plan_inference(m, target_desc{"cpu", 1ull << 30, 0}, {.context = 32, .ubatch = 4});
        cpu_backend backend(1ull << 30);
        runtime::arena<cpu_backend> a(p, backend);
        runtime::load_weights(file, a);
        // Read by embed: as the file stores it.
        const auto embd = file_bytes(file, "token_embd.weight");
        CHECK(std::memcmp(a.view("token_embd.weight").data, embd.data(), embd.size()) == 0);
        CHECK_FALSE(runtime::held_as_panels(p.graph, global_weight(global_tensor::token_embd), format{w}, s.vocab));
        // Read by matmuls only: block b of row 16 g + r is panel g's block b, lane r; rows after
        // the last whole panel as stored.
        for (const std::string tensor : {"blk.1.attn_q.weight", "blk.2.ffn_up.weight", "output.weight"}) {
            CAPTURE(tensor);
            const auto want = file_bytes(file, tensor);
            const auto view = a.view(tensor);
            REQUIRE(view.bytes == want.size());
            CHECK(std::memcmp(view.data, want.data(), want.size()) != 0);
            const std::uint64_t row_bytes = want.size() / view.rows, nb = view.cols / 32;
            auto same = [&]<class B>(B) {
                using panel = kernels::cpu::panel_block<B>;
                for (std::uint64_t row = 0; row < view.rows; ++row)
                    for (std::uint64_t b = 0; b < nb; ++b) {
                        const std::uint64_t g = row / 16;
                        const B got = row < view.rows / 16 * 16
                                          ? kernels::cpu::unpack_panel(
                                                reinterpret_cast<const panel*>(view.data + g * 16 * row_bytes)[b],
                                                static_cast<int>(row % 16))
                                          : reinterpret_cast<const B*>(view.data + row * row_bytes)[b];
                        if (std::memcmp(&got, want.data() + row * row_bytes + b * sizeof(B), sizeof(B)) != 0)
                            return false;
                    }
                return true;
            };
            CHECK((w == format_id::q4_0 ? same(blocks::q4_0{}) : same(blocks::q8_0{})));
        }
    }
}

TEST_CASE("planes: each block's fields in separate arrays, at the offsets the layout's definition gives") {
    // Block b's byte i is b * 37 + i (mod 256), so every byte says where it came from.
    auto blocks_of = [](int block_bytes, int n) {
        std::vector<std::uint8_t> v(static_cast<std::size_t>(block_bytes * n));
        for (int b = 0; b < n; ++b)
            for (int i = 0; i < block_bytes; ++i) v[b * block_bytes + i] = static_cast<std::uint8_t>(b * 37 + i);
        return v;
    };
    auto byte = [](int b, int i) { return static_cast<std::uint8_t>(b * 37 + i); };
    struct expect {
        kernels::kernel_format f;
        int block_bytes;
        std::vector<std::array<int, 3>> planes;  // {first byte in the block, bytes, start of the plane for 3 blocks}
    };
    // Offsets from GGUF's block definitions: Q4_0 d(2) qs(16); Q8_0 d(2) qs(32); Q4_K d dmin(4)
    // scales(12) qs(128); Q5_K d dmin scales(16) qh(32) qs(128); Q6_K ql(128) qh(64) scales(16) d(2).
    const std::vector<expect> all{
        {kernels::kernel_format::q4_0, 18, {{2, 16, 0}, {0, 2, 48}}},
        {kernels::kernel_format::q8_0, 34, {{2, 32, 0}, {0, 2, 96}}},
        {kernels::kernel_format::q4_k, 144, {{16, 128, 0}, {0, 16, 384}}},
        {kernels::kernel_format::q5_k, 176, {{16, 160, 0}, {0, 16, 480}}},
        {kernels::kernel_format::q6_k, 210, {{0, 192, 0}, {192, 16, 576}, {208, 2, 624}}},
    };
    for (const auto& e : all) {
        CAPTURE(kernels::kernel_format_name(e.f));
        const auto file_order = blocks_of(e.block_bytes, 3);
        std::vector<std::uint8_t> planes(file_order.size()), back(file_order.size());
        kernels::split_into_planes(e.f, file_order.data(), planes.data(), 3);
        for (const auto& [first, bytes, start] : e.planes) {
            CHECK(start % 16 == 0);
            for (int b = 0; b < 3; ++b)
                for (int i = 0; i < bytes; ++i) REQUIRE(planes[start + b * bytes + i] == byte(b, first + i));
        }
        kernels::join_planes(e.f, planes.data(), back.data(), 3);
        CHECK(back == file_order);
    }
    CHECK_FALSE(kernels::has_planes(kernels::kernel_format::q5_0));
    CHECK_FALSE(kernels::has_planes(kernels::kernel_format::f16));
}

namespace {
// n blocks of random bytes in format F, each block's f16 scales set to small finite values, so that
// every value decodes to a number.
template <kernels::kernel_format F>
std::vector<std::uint8_t> random_blocks(std::uint64_t n, std::uint64_t seed) {
    using B = typename kernels::block_of<F>::type;
    std::vector<std::uint8_t> bytes(n * sizeof(B));
    std::uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;
    for (auto& byte : bytes) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        byte = static_cast<std::uint8_t>(state >> 56);
    }
    for (std::uint64_t i = 0; i < n; ++i) {
        B b;
        std::memcpy(&b, bytes.data() + i * sizeof(B), sizeof(B));
        b.d = to_half(0.01f + 0.001f * static_cast<float>(i % 7));
        if constexpr (requires { b.dmin; }) b.dmin = to_half(0.004f + 0.0005f * static_cast<float>(i % 3));
        std::memcpy(bytes.data() + i * sizeof(B), &b, sizeof(B));
    }
    return bytes;
}

// Every unit of every block of a tensor in planes, as the CUDA plane kernel reads it, against the
// element-by-element decoding of the file's blocks: each value once, exactly.
template <kernels::kernel_format F>
void check_plane_units(std::uint64_t rows, std::uint64_t blocks_per_row) {
    CAPTURE(kernels::kernel_format_name(F));
    using U = kernels::plane_units<F>;
    const std::uint64_t n = rows * blocks_per_row, cols = blocks_per_row * U::values;
    const auto file_order = random_blocks<F>(n, rows);
    std::vector<std::uint8_t> planes(file_order.size());
    kernels::split_into_planes(F, file_order.data(), planes.data(), n);
    const kernels::plane_ptrs p = kernels::planes_at<F>(planes.data(), n);
    const std::uint64_t row_bytes = kernels::kernel_row_bytes(F, cols);
    std::uint64_t wrong = 0, seen_twice = 0, missing = 0;
    for (std::uint64_t r = 0; r < rows; ++r)
        for (std::uint64_t b = 0; b < blocks_per_row; ++b) {
            std::vector<int> seen(U::values, 0);
            for (int u = 0; u < U::units; ++u) {
                const kernels::plane_unit pu = U::read(p, r * blocks_per_row + b, u);
                for (int h = 0; h < 2; ++h)
                    for (int i = 0; i < 16; ++i) {
                        const int at = U::x_at(u, h) + i;
                        const int byte = static_cast<int>(pu.q[h][i / 4] >> (8 * (i % 4)) & 0xff);
                        const float got = pu.a[h].scale * static_cast<float>(byte - U::bias) - pu.a[h].min;
                        const float want = kernels::load<F>(file_order.data() + r * row_bytes, b * U::values + at);
                        wrong += got != want;
                        ++seen[at];
                    }
            }
            for (int c : seen) seen_twice += c > 1, missing += c == 0;
        }
    CHECK(wrong == 0);
    CHECK(seen_twice == 0);
    CHECK(missing == 0);
}
}  // namespace

TEST_CASE("the plane kernel's units read every value of every format in planes exactly as the file's blocks decode") {
    check_plane_units<kernels::kernel_format::q4_0>(3, 9);
    check_plane_units<kernels::kernel_format::q8_0>(3, 9);
    check_plane_units<kernels::kernel_format::q4_k>(3, 5);
    check_plane_units<kernels::kernel_format::q5_k>(3, 5);
    check_plane_units<kernels::kernel_format::q6_k>(3, 5);
}

namespace {
// The CPU backend told to hold planes, to see what the loader writes for a GPU backend that does.
struct planes_holding_backend : cpu_backend {
    using cpu_backend::cpu_backend;
    bool holds_planes() const { return true; }
};
}  // namespace

TEST_CASE("a backend that holds planes gets the matrices only matmuls read in planes, resident and streamed") {
    for (format_id w : {format_id::q4_0, format_id::q8_0}) {
        CAPTURE(name(format{w}));
        test_model::spec s;
        s.weights = format{w};
        const written_model written("vramplan_planes.gguf", s, 9);
        const auto& [path, weights, file, m] = written;
        // A device budget for one resident layer: the others sit in the host tier, to be streamed.
        const limits lim{.context = 32, .ubatch = 4};
        const plan full = plan_inference(m, target_desc{"cpu", 1ull << 30, 0}, lim);
        std::uint64_t budget = 0;
        needed_by_gpu_layers(full, [&](std::uint64_t g, std::uint64_t need) {
            if (g == 1) budget = need;
        });
        const plan p = plan_auto_offload(m, target_desc{"cpu", budget, 0}, lim);
        REQUIRE(p.fits());
        REQUIRE(p.gpu_layers == 1);
        REQUIRE(m.shape.n_layer > 1);
        planes_holding_backend backend(p.target.capacity);
        runtime::arena<planes_holding_backend> a(p, backend);
        runtime::load_weights(file, a);
        const auto embd = file_bytes(file, "token_embd.weight");
        CHECK(std::memcmp(a.view("token_embd.weight").data, embd.data(), embd.size()) == 0);
        CHECK_FALSE(runtime::held_as_planes(p, global_weight(global_tensor::token_embd), format{w}));
        CHECK(runtime::held_as_planes(p, layer_weight(tensor_role::attn_q), format{w}));
        // Slots aligned below 16 bytes keep the file's layout: the plane kernel loads 16 bytes at a time.
        plan_options loose;
        loose.alignment = 8;
        CHECK_FALSE(runtime::held_as_planes(plan_inference(m, target_desc{"cpu", 1ull << 30, 0}, lim, loose),
                                            layer_weight(tensor_role::attn_q), format{w}));
        const auto kf = kernels::to_kernel_format(format{w}, "test");
        const std::uint64_t block = kernels::block_bytes(kf);
        for (std::uint64_t l = 0; l < m.shape.n_layer; ++l)
            for (const std::string role : {"attn_q", "ffn_down"}) {
                const std::string tensor = "blk." + std::to_string(l) + "." + role + ".weight";
                CAPTURE(tensor);
                const auto want = file_bytes(file, tensor);
                const auto view = a.view(tensor);
                REQUIRE(view.bytes == want.size());
                // Hand-placed: the values of block i at i * (block - 2), its scale after all the values.
                const std::uint64_t n = want.size() / block, values = block - 2;
                const auto* held = reinterpret_cast<const std::uint8_t*>(view.data);
                bool same = true;
                for (std::uint64_t i = 0; i < n; ++i) {
                    same = same && std::memcmp(held + i * values, want.data() + i * block + 2, values) == 0;
                    same = same && std::memcmp(held + n * values + 2 * i, want.data() + i * block, 2) == 0;
                }
                CHECK(same);
            }
    }
}

TEST_CASE("an arena in a static buffer sized by the compile-time plan runs the real model") {
    if (!std::filesystem::exists(shared_models + "stories260K.gguf")) {
        MESSAGE("../shared/models absent: skipped");
        return;
    }
    const auto file = io::gguf_file::open(shared_models + "stories260K.gguf");
    CHECK(io::describe(file, "stories260K").shape == edge_plan.model.shape);
    cpu_backend backend;
    runtime::arena<cpu_backend> a(edge_plan, backend, edge_memory);
    CHECK(a.base(tier::gpu) == edge_memory);
    runtime::load_weights(file, a);
    runtime::forward_pass<cpu_backend> llm(a);
    const std::vector<std::int32_t> prompt{1, 403, 407, 261, 378};
    const std::vector<std::int32_t> pos{0, 1, 2, 3, 4};
    const float* logits = llm.forward(prompt, pos);
    CHECK(kernels::cpu::argmax(logits, 512) == 432);
    CHECK(logits[432] == doctest::Approx(17.79887).epsilon(1e-4));  // llama.cpp's value
    std::byte small[64];
    CHECK_THROWS_WITH_AS(runtime::arena<cpu_backend>(edge_plan, backend, std::span(small)),
                         doctest::Contains("buffer holds 64 bytes"), error);
}

TEST_CASE("stories260K generates exactly llama.cpp's greedy tokens and the quantized files generate fluent text") {
    if (!std::filesystem::exists(shared_models + "stories260K.gguf")) {
        MESSAGE("../shared/models absent: skipped");
        return;
    }
    const std::vector<std::int32_t> expected{432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426,
                                             338, 401, 396, 267, 337, 410, 408, 419, 292, 411, 322,
                                             265, 282, 295, 433, 426, 385, 328, 432, 358, 394};
    for (const char* f : {"stories260K.gguf", "stories260K-q8_0.gguf", "stories260K-q4_0.gguf"}) {
        CAPTURE(f);
        const auto file = io::gguf_file::open(shared_models + f);
        const auto tok = io::tokenizer::from_gguf(file);
        const model_desc m = io::describe(file, f);
        const plan p = plan_inference(m, target_desc{"cpu", 1ull << 30, 0}, {.context = 128, .ubatch = 16});
        cpu_backend backend(0, 2);
        runtime::arena<cpu_backend> a(p, backend);
        runtime::load_weights(file, a);
        runtime::forward_pass<cpu_backend> llm(a);
        std::vector<std::int32_t> ids = tok.encode("Once upon a time");
        REQUIRE(ids == std::vector<std::int32_t>{1, 403, 407, 261, 378});
        const std::vector<std::int32_t> out = greedy_tokens(llm, ids, 32, m.shape.n_vocab);
        const std::string text = "Once upon a time" + tok.decode(out);
        if (std::string(f) == "stories260K.gguf") {
            CHECK(out == expected);
            CHECK(text ==
                  "Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One "
                  "day, she saw");
        } else {
            // Quantized weights drift from the F32 model late; the story's opening survives.
            CHECK(std::vector<std::int32_t>(out.begin(), out.begin() + 16) ==
                  std::vector<std::int32_t>(expected.begin(), expected.begin() + 16));
            for (char c : text) CHECK((c >= 32 && c < 127));
        }
    }
}

TEST_CASE(
    "the forward pass checks its inputs in one place, whatever the backend, and refuses what it cannot run at "
    "start-up") {
    test_model::spec s;
    const written_model written("vramplan_forward_inputs.gguf", s, 21);
    const auto& [path, weights, file, m] = written;
    const plan p = plan_inference(m, target_desc{"cpu", 1ull << 30, 0}, {.context = 16, .ubatch = 4});
    cpu_backend backend;
    runtime::arena<cpu_backend> a(p, backend);
    runtime::load_weights(file, a);
    runtime::forward_pass<cpu_backend> llm(a);
    const std::vector<std::int32_t> one{3}, at0{0};
    CHECK_THROWS_WITH_AS(llm.forward(std::vector<std::int32_t>{64}, at0),
                         "forward: token id 64 is outside the vocabulary of 64", error);
    CHECK_THROWS_WITH_AS(llm.forward(std::vector<std::int32_t>{-1}, at0),
                         "forward: token id -1 is outside the vocabulary of 64", error);
    CHECK_THROWS_WITH_AS(llm.forward(one, std::vector<std::int32_t>{16}),
                         "forward: position 16 is outside the planned context of 16 tokens", error);
    CHECK_THROWS_WITH_AS(llm.forward(one, std::vector<std::int32_t>{-2}),
                         "forward: position -2 is outside the planned context of 16 tokens", error);
    CHECK_THROWS_WITH_AS(llm.forward({}, {}), doctest::Contains("1 to 4 tokens per pass"), error);
    CHECK_THROWS_WITH_AS(llm.forward(std::vector<std::int32_t>(5, 1), std::vector<std::int32_t>{0, 1, 2, 3, 4}),
                         doctest::Contains("1 to 4 tokens"), error);
    CHECK_THROWS_WITH_AS(llm.forward(one, std::vector<std::int32_t>{0, 1}), doctest::Contains("one position each"),
                         error);
    CHECK_THROWS_WITH_AS(llm.forward(std::vector<std::int32_t>{1, 2}, std::vector<std::int32_t>{0, 1}, true),
                         doctest::Contains("plan with all_logits"), error);
    const float* ok = llm.forward(one, at0);  // and a good call still runs after the refusals
    CHECK(std::isfinite(ok[0]));

    // A norm vector in f16 is refused by name when the pass is built, not mid-generation.
    model_desc f16_norms = m;
    block_kind b = f16_norms.layer(0);
    b[tensor_role::ffn_norm] = format{format_id::f16};
    for (std::uint64_t l = 0; l < m.shape.n_layer; ++l) f16_norms.set_layer(l, b);
    const plan q = plan_inference(f16_norms, target_desc{"cpu", 1ull << 30, 0}, {.context = 16, .ubatch = 4});
    runtime::arena<cpu_backend> qa(q, backend);
    CHECK_THROWS_WITH_AS(runtime::forward_pass<cpu_backend>{qa},
                         "tensor blk.*.ffn_norm.weight is stored as f16; norm and bias vectors must be f32", error);
}

// Bytes the program holds on the heap now. Resident pages would also count what the allocator
// keeps after a free (AddressSanitizer's quarantine never hands freed memory back at once), so
// ask the allocator itself.
std::uint64_t heap_bytes_in_use() {
#if VRAMPLAN_TEST_ASAN
    return __sanitizer_get_current_allocated_bytes();
#else
    const struct mallinfo2 info = mallinfo2();
    return info.uordblks + info.hblkhd;
#endif
}

TEST_CASE("generating to the context limit again and again stops cleanly at the limit and heap memory stays flat") {
    test_model::spec s;
    s.weights = format{format_id::q8_0};
    const written_model written("vramplan_long_run.gguf", s, 51);
    const auto& [path, weights, file, m] = written;
    constexpr std::uint64_t context = 48;
    const plan p = plan_inference(m, target_desc{"cpu", 1ull << 30, 0}, {.context = context, .ubatch = 8});
    cpu_backend backend(0, 2);
    runtime::arena<cpu_backend> a(p, backend);
    runtime::load_weights(file, a);
    runtime::forward_pass<cpu_backend> llm(a);
    const std::vector<std::int32_t> prompt{1, 2, 3, 4, 5, 6, 7, 8}, prompt_pos{0, 1, 2, 3, 4, 5, 6, 7};
    std::uint64_t after_warm_up = 0;
    std::vector<float> first_last_logits;
    for (int run = 0; run < 5; ++run) {
        CAPTURE(run);
        const float* lg = llm.forward(prompt, prompt_pos);  // a new sequence over the same cache
        std::int32_t at = 8;
        for (; static_cast<std::uint64_t>(at) < context; ++at) {
            const auto next = static_cast<std::int32_t>(kernels::cpu::argmax(lg, m.shape.n_vocab));
            lg = llm.forward(std::span(&next, 1), std::span(&at, 1));
        }
        const std::vector<float> last(lg, lg + m.shape.n_vocab);
        // The limit: one position more is refused with the limit named, and nothing breaks.
        const std::int32_t one = 1;
        CHECK_THROWS_WITH_AS(llm.forward(std::span(&one, 1), std::span(&at, 1)),
                             "forward: position 48 is outside the planned context of 48 tokens", error);
        if (run == 0) {
            first_last_logits = last;
            continue;
        }
        CHECK(last == first_last_logits);  // the same greedy run, every time
        // Flat: after two runs (the first of each check may set up the test framework's own state),
        // a run holds nothing more (the refusals' messages were freed).
        if (run == 1)
            after_warm_up = heap_bytes_in_use();
        else
            CHECK(heap_bytes_in_use() == after_warm_up);
    }
}
