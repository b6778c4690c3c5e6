// Hybrid state-space models (Granite-4.0-H: Mamba-2 layers among a few attention layers):
// parameter counts derived here from the published config.json numbers tensor by tensor, the
// Mamba-2 state by hand from its definition (the convolution's last d_conv - 1 inputs of every
// convolved channel, and d_state values for each inner channel, f32), the KV cache of the
// attention layers alone, GGUF files written here in llama.cpp's granitehybrid layout, and
// config.json. Nothing here comes from vramplan's footprint code.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "fixtures.hpp"
#include "vramplan/io/gguf_model.hpp"
#include "vramplan/io/hf_config.hpp"
#include "vramplan/model/format_policy.hpp"
#include "vramplan/model/presets.hpp"
#include "vramplan/model/training.hpp"
#include "vramplan/plan/advice.hpp"
#include "vramplan/plan/buffers.hpp"
#include "vramplan/plan/multi_gpu.hpp"
#include "vramplan/plan/plan.hpp"
#include "vramplan/runtime/forward_pass.hpp"

using namespace vramplan;

namespace {
using u64 = std::uint64_t;

// One Granite-4.0-H config.json's numbers; the attention layers are those `attending` lists.
struct granite_numbers {
    u64 embd, layers, heads, kv_heads, head_dim, experts, used, expert_ff, shared_ff, vocab;
    u64 ssm_heads, ssm_head_dim, ssm_state, ssm_groups, conv;
    std::vector<u64> attending;
    bool conv_bias = true;
};
u64 inner(const granite_numbers& n) { return n.ssm_heads * n.ssm_head_dim; }
// transformers' GraniteMoeHybridMambaLayer: in_proj (z, x, B, C, dt), a depthwise conv1d of
// d_conv taps (and a bias) over x, B and C, dt_bias, A_log and D per head, the gated norm, out_proj.
u64 mamba_params(const granite_numbers& n) {
    const u64 channels = inner(n) + 2 * n.ssm_groups * n.ssm_state;
    return n.embd * (inner(n) + channels + n.ssm_heads) + channels * n.conv + (n.conv_bias ? channels : 0) +
           3 * n.ssm_heads + inner(n) + inner(n) * n.embd;
}
u64 attention_params(const granite_numbers& n) {
    return 2 * n.embd * n.heads * n.head_dim + 2 * n.embd * n.kv_heads * n.head_dim;
}
// The two norms, then the router and the routed experts (a token's `used`, or all) beside the
// shared MLP, or the shared MLP alone when there are no experts (it is the dense feed-forward).
u64 ffn_params(const granite_numbers& n, bool active) {
    const u64 shared = 3 * n.embd * n.shared_ff;
    if (n.experts == 0) return 2 * n.embd + shared;
    return 2 * n.embd + n.experts * n.embd + (active ? n.used : n.experts) * 3 * n.embd * n.expert_ff + shared;
}
u64 model_params(const granite_numbers& n, bool active = false) {
    const u64 attending = n.attending.size();
    return attending * attention_params(n) + (n.layers - attending) * mamba_params(n) +
           n.layers * ffn_params(n, active) + n.vocab * n.embd /* tied */ + n.embd;
}
double billions(u64 n, int decimals) {
    const double scale = std::pow(10.0, decimals);
    return std::round(static_cast<double>(n) / 1e9 * scale) / scale;
}

// Granite-4.0-H-Tiny and -350M, from their config.json files (below).
const granite_numbers tiny{1536, 40, 12, 4, 128, 64, 6, 512, 1024, 100352, 48, 64, 128, 1, 4, {5, 15, 25, 35}};
const granite_numbers h350m{768, 32, 12, 4, 64, 0, 0, 0, 2048, 100352, 48, 32, 128, 1, 4, {10, 13, 17, 27}};

std::string layer_types(const granite_numbers& n) {
    std::string s;
    for (u64 l = 0; l < n.layers; ++l) {
        bool attends = false;
        for (u64 a : n.attending) attends = attends || a == l;
        s += std::string(l ? ", " : "") + (attends ? "\"attention\"" : "\"mamba\"");
    }
    return "[" + s + "]";
}

// Granite-4.0-H-Tiny's config.json (ibm-granite/granite-4.0-h-tiny), its planning keys.
std::string tiny_config() {
    return R"({
  "architectures": ["GraniteMoeHybridForCausalLM"], "model_type": "granitemoehybrid",
  "attention_bias": false, "attention_multiplier": 0.0078125, "embedding_multiplier": 12, "hidden_act": "silu",
  "hidden_size": 1536, "intermediate_size": 512, "layer_types": )" +
           layer_types(tiny) + R"(, "logits_scaling": 6,
  "mamba_chunk_size": 256, "mamba_conv_bias": true, "mamba_d_conv": 4, "mamba_d_head": 64, "mamba_d_state": 128,
  "mamba_expand": 2, "mamba_n_groups": 1, "mamba_n_heads": 48, "mamba_proj_bias": false,
  "max_position_embeddings": 131072, "normalization_function": "rmsnorm", "num_attention_heads": 12,
  "num_experts_per_tok": 6, "num_hidden_layers": 40, "num_key_value_heads": 4, "num_local_experts": 64,
  "position_embedding_type": "nope", "residual_multiplier": 0.22, "rms_norm_eps": 1e-05, "rope_scaling": null,
  "rope_theta": 10000, "shared_intermediate_size": 1024, "tie_word_embeddings": true, "torch_dtype": "bfloat16",
  "vocab_size": 100352
})";
}

decoder_shape shape_of(const std::string& name, const std::string& text) {
    const std::string path = write_temp_text(name, text);
    try {
        const decoder_shape s = io::shape_from_config(path);
        std::filesystem::remove(path);
        return s;
    } catch (...) {
        std::filesystem::remove(path);
        throw;
    }
}
std::string refused_config(const std::string& text) {
    try {
        (void)shape_of("vramplan_granite_bad.json", text);
    } catch (const error& e) {
        return e.what();
    }
    return "accepted";
}
std::string with(std::string text, const std::string& from, const std::string& to) {
    const auto at = text.find(from);
    REQUIRE(at != std::string::npos);
    return text.replace(at, from.size(), to);
}
}  // namespace

TEST_CASE("Granite-4.0-H-Tiny: parameters by hand from its config.json, against the model card's 7B and 1B active") {
    const u64 total = model_params(tiny), active = model_params(tiny, true);
    CHECK(total == 6939037248);
    CHECK(billions(total, 0) == 7.0);  // "7B total parameters"
    // "1B active": the card leaves the embedding table out of the active count; vramplan counts it.
    CHECK(billions(active - tiny.vocab * tiny.embd, 0) == 1.0);
    const auto& e = presets::granite_4_h_tiny_entry;
    CHECK(param_count(e.shape) == total);
    CHECK(active_param_count(e.shape) == active);
    CHECK(e.published_params == total);
    // The published config.json gives the preset's shape, field by field.
    CHECK(shape_of("vramplan_granite_tiny.json", tiny_config()) == e.shape);
    // 36 Mamba-2 layers, 4 attention layers at 5, 15, 25 and 35.
    for (u64 l = 0; l < 40; ++l) CHECK(e.shape.is_recurrent(l) == (l % 10 != 5));
}

TEST_CASE("Mamba-2 state by hand: fixed per sequence, f32; only the attention layers' KV grows with the context") {
    const model_desc m =
        make_model("granite", presets::granite_4_h_tiny_entry.shape, uniform_policy(format{format_id::q4_0}));
    const u64 context = 8192, batch = 2;
    const plan p = plan_inference(m, target_desc{"big", 1ull << 40, 0}, {.context = context, .batch = batch});
    // Convolution: 3 of 4 taps of x (3072), B and C (128 each) = 9984 values; scan: 128 x 3072.
    const u64 state = ((4 - 1) * (3072 + 2 * 128) + 128 * 3072) * 4;
    CHECK(state == 1612800);
    CHECK(p.state_bytes() == 36 * batch * state);  // 3,225,600 a layer: a multiple of the 256-byte alignment
    // K and V of the 4 attention layers: 4 KV heads of 128, f16.
    const u64 kv = 4 * context * batch * (4 * 128 * 2) * 2;
    CHECK(p.kv_bytes() == kv + 36 * batch * state);
    CHECK(kv_cache_bytes(m, context, batch, p.lim.ubatch) == kv);
    CHECK(kv_bytes_per_token(m) == 4 * 4 * 128 * 2 * 2);  // 40 layers of attention would be 10x this
    // Twice the context: the KV doubles, the states do not move.
    const plan longer = plan_inference(m, target_desc{"big", 1ull << 40, 0}, {.context = 2 * context, .batch = batch});
    CHECK(longer.state_bytes() == p.state_bytes());
    CHECK(longer.kv_bytes() - p.kv_bytes() == kv);
    // A KV cache in Q8_0 quantizes the attention layers' rows, not the states.
    model_desc q = m;
    q.kv = format{format_id::q8_0};
    const plan pq = plan_inference(q, target_desc{"big", 1ull << 40, 0}, {.context = context, .batch = batch});
    CHECK(pq.state_bytes() == p.state_bytes());
    CHECK(pq.kv_bytes() - pq.state_bytes() == 4 * context * batch * (512 / 32 * 34) * 2);
    // The plan lists each Mamba-2 layer's state at its slot in the KV region.
    const auto all = buffers(p);
    const buffer_info* s0 = find_buffer(all, "state.0");
    REQUIRE(s0);
    CHECK(s0->bytes == batch * state);
    CHECK(s0->kind == buffer_kind::kv);
    CHECK(find_buffer(all, "cache_k.5"));
    CHECK_FALSE(find_buffer(all, "cache_k.0"));
    CHECK_FALSE(find_buffer(all, "state.5"));
    // Split across two devices, each keeps its layers' share: the states and KV add up.
    const auto shares = plan_pipeline(m, target_desc{"big", 1ull << 40, 0}, p.lim, 2);
    CHECK(shares[0].kv + shares[1].kv == p.kv_bytes());
    CHECK(shares[0].kv == 2 * context * batch * 2048 + 18 * batch * state);  // layers 0..19: 2 attend
    // Tensor parallelism does not model how Mamba-2's heads split: said, not guessed.
    CHECK_THROWS_WITH_AS(tensor_parallel_shard(m, 2), doctest::Contains("Mamba-2"), error);
}

TEST_CASE("a hybrid's largest context and advice count only the attention layers' KV") {
    const model_desc m =
        make_model("granite", presets::granite_4_h_tiny_entry.shape, uniform_policy(format{format_id::q4_0}));
    const limits at_4k{.context = 4096};
    const plan fits_4k = plan_inference(m, target_desc{"probe", 1ull << 40, 0}, at_4k);
    // A device exactly as large as the 4096-token plan: 4096 is the longest context that fits.
    const target_desc exact{"exact", fits_4k.needed(), 0};
    CHECK(max_context(m, exact, at_4k) == 4096);
    // Each token more costs 4 layers x 4 KV heads x 128 x 2 planes x 2 bytes, not 40 layers' worth.
    const plan at_5k = plan_inference(m, target_desc{"probe", 1ull << 40, 0}, {.context = 5120});
    CHECK(at_5k.kv_bytes() - fits_4k.kv_bytes() == 1024ull * 4 * 4 * 128 * 2 * 2);
    bool shortened = false;
    for (const auto& a : advise(m, exact, {.context = 8192}, {}))
        shortened = shortened || a.remedy.find("shorten the context to 4096 tokens") != std::string::npos;
    CHECK(shortened);
}

namespace {
// A small granitehybrid GGUF as llama.cpp's converter writes it: head_count_kv 0 marks a Mamba-2
// layer; tensors zero-filled. Layers 1 and 3 attend; experts optional.
struct granite_file {
    u64 layers = 4, embd = 64, heads = 4, kv_heads = 2, ff = 32, experts = 4, used = 2, shared = 48, vocab = 32;
    u64 ssm_heads = 8, state = 16, groups = 2, conv = 4;
    bool conv_bias = true, state_key = true, all_recurrent = false;
    bool attends(u64 l) const { return !all_recurrent && l % 2 == 1; }
    u64 inner() const { return 2 * embd; }
    void write(const std::string& path) const {
        io::gguf_writer w;
        const auto u32 = [](u64 x) { return static_cast<std::uint32_t>(x); };
        std::vector<std::int32_t> kv;
        for (u64 l = 0; l < layers; ++l) kv.push_back(attends(l) ? static_cast<std::int32_t>(kv_heads) : 0);
        w.set_string("general.architecture", "granitehybrid")
            .set_u32("granitehybrid.block_count", u32(layers))
            .set_u32("granitehybrid.embedding_length", u32(embd))
            .set_u32("granitehybrid.feed_forward_length", u32(ff))
            .set_u32("granitehybrid.attention.head_count", u32(heads))
            .set_i32s("granitehybrid.attention.head_count_kv", kv)
            .set_u32("granitehybrid.ssm.conv_kernel", u32(conv))
            .set_u32("granitehybrid.ssm.inner_size", u32(inner()))
            .set_u32("granitehybrid.ssm.time_step_rank", u32(ssm_heads))
            .set_u32("granitehybrid.ssm.group_count", u32(groups));
        if (state_key) w.set_u32("granitehybrid.ssm.state_size", u32(state));
        if (experts)
            w.set_u32("granitehybrid.expert_count", u32(experts))
                .set_u32("granitehybrid.expert_used_count", u32(used))
                .set_u32("granitehybrid.expert_shared_feed_forward_length", u32(shared));
        auto tensor = [&](const std::string& name, std::vector<u64> dims) { add_zero_tensor(w, name, dims); };
        tensor("token_embd.weight", {embd, vocab});
        tensor("output_norm.weight", {embd});
        const u64 channels = inner() + 2 * groups * state, hd = embd / heads;
        for (u64 l = 0; l < layers; ++l) {
            const std::string p = "blk." + std::to_string(l) + ".";
            tensor(p + "attn_norm.weight", {embd});
            if (attends(l)) {
                tensor(p + "attn_q.weight", {embd, heads * hd});
                tensor(p + "attn_k.weight", {embd, kv_heads * hd});
                tensor(p + "attn_v.weight", {embd, kv_heads * hd});
                tensor(p + "attn_output.weight", {heads * hd, embd});
            } else {
                tensor(p + "ssm_in.weight", {embd, inner() + channels + ssm_heads});
                tensor(p + "ssm_conv1d.weight", {conv, channels});
                if (conv_bias) tensor(p + "ssm_conv1d.bias", {channels});
                tensor(p + "ssm_dt.bias", {ssm_heads});
                tensor(p + "ssm_a", {1, ssm_heads});
                tensor(p + "ssm_d", {1, ssm_heads});
                tensor(p + "ssm_norm.weight", {inner() / groups, groups});  // [128, 1] with one group
                tensor(p + "ssm_out.weight", {inner(), embd});
            }
            tensor(p + "ffn_norm.weight", {embd});
            if (experts) {
                tensor(p + "ffn_gate_inp.weight", {embd, experts});
                tensor(p + "ffn_gate_exps.weight", {embd, ff, experts});
                tensor(p + "ffn_up_exps.weight", {embd, ff, experts});
                tensor(p + "ffn_down_exps.weight", {ff, embd, experts});
                tensor(p + "ffn_gate_shexp.weight", {embd, shared});
                tensor(p + "ffn_up_shexp.weight", {embd, shared});
                tensor(p + "ffn_down_shexp.weight", {shared, embd});
            } else {
                tensor(p + "ffn_gate.weight", {embd, ff});
                tensor(p + "ffn_up.weight", {embd, ff});
                tensor(p + "ffn_down.weight", {ff, embd});
            }
        }
        w.write(path);
    }
    // The same model in the config.json numbers above (the dense feed-forward is "shared_ff").
    granite_numbers numbers() const {
        std::vector<u64> a;
        for (u64 l = 0; l < layers; ++l)
            if (attends(l)) a.push_back(l);
        return {embd,     layers,       heads,
                kv_heads, embd / heads, experts,
                used,     ff,           experts ? shared : ff,
                vocab,    ssm_heads,    inner() / ssm_heads,
                state,    groups,       conv,
                a,        conv_bias};
    }
};

model_desc described(const granite_file& f) { return describe_written(f, "vramplan_granitehybrid.gguf"); }
std::string refused(const granite_file& f) {
    try {
        (void)described(f);
    } catch (const error& e) {
        return e.what();
    }
    return "accepted";
}
}  // namespace

TEST_CASE("a granitehybrid GGUF written here plans every tensor; its Mamba-2 layers keep states, not KV") {
    const granite_file f;
    const model_desc m = described(f);
    const auto& s = m.shape;
    CHECK(s.hybrid());
    CHECK(s.ssm_inner == 128);
    CHECK(s.ssm_conv_channels() == 128 + 2 * 2 * 16);
    CHECK(s.ssm_conv_bias);
    CHECK(m.layer(0).attention == attention_kind::recurrent);
    CHECK(m.layer(1).attention == attention_kind::full);
    CHECK(m.n_kinds == 2);
    // Every tensor is f32 here: parameters x 4 bytes, and the count is the hand-derived one.
    CHECK(param_count(m) == model_params(f.numbers()));
    CHECK(weight_bytes(m) == 4 * model_params(f.numbers()));
    CHECK(active_param_count(s) == model_params(f.numbers(), true));
    // KV: 2 attention layers x 100 positions x 2 KV heads of 16, f16, K and V; states: 2 Mamba-2
    // layers x (3 x 192 + 16 x 128) f32 values, for each of 3 sequences.
    const plan p = plan_inference(m, target_desc{"cpu", 1ull << 30, 0}, {.context = 100, .batch = 3, .ubatch = 8},
                                  {.alignment = 32});
    const u64 state = (3 * 192 + 16 * 128) * 4;
    CHECK(p.kv_bytes() == 2ull * 100 * 3 * 32 * 2 * 2 + 2 * 3 * state);
    CHECK(p.state_bytes() == 2 * 3 * state);
    // The graph: one variant per kind of layer, Mamba-2's with its own ops and the same experts.
    const forward_graph& g = p.graph;
    const auto attn = block_variant(false, true), mamba = block_variant(true, true);
    CHECK(g.variant_begin[attn] != g.variant_end[attn]);
    CHECK(g.variant_begin[mamba] != g.variant_end[mamba]);
    CHECK(g.variant_begin[block_variant(false, false)] == g.variant_end[block_variant(false, false)]);
    const auto conv = g.first_op(op_kind::ssm_conv), scan = g.first_op(op_kind::ssm_scan);
    CHECK(conv >= g.variant_begin[mamba]);
    CHECK(scan < g.variant_end[mamba]);
    CHECK(g.ops[scan].heads == 8);
    CHECK(g.ops[scan].kv_heads == 2);
    CHECK(g.ops[g.weight_step(layer_weight(tensor_role::ssm_in))].n == 128 + 192 + 8);
    CHECK(g.weight_step(layer_weight(tensor_role::ffn_gate_exps)) < g.variant_end[attn]);
    // The packed activations stay at their lower bound.
    CHECK(p.gpu.activations.bytes == p.act_lower_bound);
    // What does not run yet says so.
    CHECK_THROWS_WITH_AS(runtime::check_runnable(p.model), doctest::Contains("Mamba-2"), error);
    CHECK_THROWS_WITH_AS(training_memory(p.model, training_config{}), doctest::Contains("inference only"), error);

    // Dense (H-Micro's layout), one group (the norm stored as [128, 1]), no convolution bias.
    granite_file dense;
    dense.experts = 0;
    dense.groups = 1;
    dense.conv_bias = false;
    const model_desc d = described(dense);
    CHECK(d.shape.n_expert == 0);
    CHECK_FALSE(d.shape.ssm_conv_bias);
    CHECK(param_count(d) == model_params(dense.numbers()));
}

TEST_CASE("granitehybrid GGUF metadata: what is missing or inconsistent is one error naming it") {
    granite_file no_state;
    no_state.state_key = false;
    CHECK(refused(no_state).find("ssm.state_size") != std::string::npos);
    granite_file all;
    all.all_recurrent = true;
    CHECK(refused(all).find("every layer is a Mamba-2 layer") != std::string::npos);
    granite_file odd;
    odd.ssm_heads = 6;  // 128 channels do not split into 6 heads
    CHECK(refused(odd).find("must split into its 6 heads") != std::string::npos);
}

TEST_CASE("Granite-4.0-H-350M's config.json: a dense hybrid, 340M parameters; bad Mamba-2 keys are refused") {
    const std::string h350 = R"({
  "model_type": "granitemoehybrid", "attention_bias": false, "hidden_size": 768, "intermediate_size": 2048,
  "layer_types": )" + layer_types(h350m) +
                             R"(,
  "mamba_conv_bias": true, "mamba_d_conv": 4, "mamba_d_head": 32, "mamba_d_state": 128, "mamba_n_groups": 1,
  "mamba_n_heads": 48, "mamba_proj_bias": false, "max_position_embeddings": 32768, "num_attention_heads": 12,
  "num_experts_per_tok": 0, "num_hidden_layers": 32, "num_key_value_heads": 4, "num_local_experts": 0,
  "position_embedding_type": "nope", "rms_norm_eps": 1e-05, "rope_theta": 10000, "shared_intermediate_size": 2048,
  "tie_word_embeddings": true, "vocab_size": 100352
})";
    const decoder_shape s = shape_of("vramplan_granite_350m.json", h350);
    CHECK(s.n_expert == 0);
    CHECK(s.n_ff == 2048);
    CHECK(s.ssm_inner == 1536);
    CHECK(param_count(s) == model_params(h350m));
    CHECK(model_params(h350m) == 340332224);  // "340M"
    CHECK(std::round(static_cast<double>(param_count(s)) / 1e7) == 34.0);

    CHECK(refused_config(with(h350, R"("mamba_d_head": 32)", R"("mamba_d_head": 30)")).find("mamba_d_head") !=
          std::string::npos);
    CHECK(refused_config(with(h350, R"("mamba_proj_bias": false)", R"("mamba_proj_bias": true)"))
              .find("mamba_proj_bias") != std::string::npos);
    CHECK(refused_config(with(h350, R"("mamba", "mamba")", R"("mamba", "moe")")).find("layer 1 \"moe\"") !=
          std::string::npos);
    CHECK(refused_config(with(h350, R"("num_hidden_layers": 32)", R"("num_hidden_layers": 31)")).find("layer_types") !=
          std::string::npos);
}
