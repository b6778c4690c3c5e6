// libFuzzer target: the run-time planner's inputs (shape, formats, limits, target, options) taken
// from raw bytes: zero, huge and mismatched values included. Planning must succeed or throw
// vramplan::error, never overflow silently or crash.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "vramplan/model/format_policy.hpp"
#include "vramplan/model/training.hpp"
#include "vramplan/plan/advice.hpp"
#include "vramplan/plan/best_fit.hpp"
#include "vramplan/plan/buffers.hpp"

namespace {
struct reader {
    const std::uint8_t* p;
    std::size_t n;
    std::uint64_t u64() {
        std::uint64_t v = 0;
        const std::size_t k = n < 8 ? n : 8;
        std::memcpy(&v, p, k);
        p += k;
        n -= k;
        return v;
    }
    // Mostly small numbers, sometimes anything: both kinds of failure get exercised.
    std::uint64_t dim() {
        const std::uint64_t v = u64();
        return (v & 7) == 0 ? v >> 3 : (v >> 3) % 70000;
    }
};
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace vramplan;
    reader r{data, size};
    decoder_shape s;
    s.n_vocab = r.dim();
    s.n_embd = r.dim();
    s.n_layer = r.dim() % 300;
    s.n_head = r.dim();
    s.n_head_kv = r.dim();
    s.head_dim = r.dim();
    s.n_ff = r.dim();
    const std::uint64_t flags = r.u64();
    s.qkv_bias = flags & 1;
    s.tied_output = flags & 2;
    static constexpr format_id ids[] = {format_id::f32,  format_id::f16,  format_id::q8_0,
                                        format_id::q4_0, format_id::q6_k, format_id::int4_group};
    auto fmt = [&] {
        const std::uint64_t v = r.u64();
        return format{ids[v % 6], static_cast<std::uint32_t>((v >> 8) % 300), ((v >> 20) & 1) != 0};
    };
    format_policy pol = uniform_policy(fmt(), fmt());
    pol.with({tensor_role::ffn_down, fmt()});
    limits lim{r.dim() * (flags & 4 ? 1 : 4096), r.dim() % 64, r.dim(),
               flags & 8 ? attention_kernel::naive : attention_kernel::fused, (flags & 16) != 0};
    target_desc t{"fuzz", r.u64(), r.u64() >> (r.u64() % 64), 1'000'000'000, 32'000'000'000};
    plan_options o;
    o.alignment = 1 + r.dim() % 4096;
    o.gpu_layers = flags & 32 ? all_gpu_layers : r.dim();
    // Experts, windows and the extra norms: read last, so a shorter input is a dense model.
    s.n_expert = r.dim() % 300;
    s.n_expert_used = r.dim() % 300;
    s.n_ff_expert = r.dim();
    s.n_ff_shared = r.dim();
    s.sliding_window = r.dim();
    s.window_period = r.dim() % 64;
    o.host_expert_layers = r.dim();
    const std::uint64_t more = r.u64();
    s.qk_norm = more & 1;
    s.post_norms = more & 2;
    s.shared_expert_gate = more & 4;
    s.gelu = more & 8;
    t.host_bandwidth = (more >> 8) % 1'000'000'000'000;
    s.attention_chunk = more & 16 ? r.dim() : 0;  // read last of all: older seeds keep their meaning
    o.offload = more & 32 ? offload_mode::compute : offload_mode::stream;
    s.attn_sinks = more & 128;
    // gpt-oss's biases and latent attention: read after everything else, so older seeds keep their
    // meaning.
    s.attn_output_bias = more & 256;
    s.expert_bias = more & 512;
    s.expert_probs_bias = more & 1024;
    if (more & 2048) {
        s.kv_lora_rank = r.dim();
        s.q_lora_rank = r.dim();
        s.rope_dim = r.dim();
        s.v_head_dim = r.dim();
    }
    // Mamba-2 layers: a mask of them and their sizes, read after everything else too.
    if (more & 4096) {
        s.recurrent_layers[0] = r.u64();
        s.recurrent_layers[1] = more & 8192 ? r.u64() : 0;
        s.ssm_conv_kernel = r.dim() % 16;
        s.ssm_inner = r.dim();
        s.ssm_state = r.dim() % 512;
        s.ssm_groups = r.dim() % 16;
        s.ssm_heads = r.dim() % 256;
        s.ssm_conv_bias = more & 16384;
    }
    try {
        const model_desc m = make_model("fuzz", s, pol);
        const plan p = plan_inference(m, t, lim, o);
        if (p.model.shape.n_layer <= 4) (void)buffers(p).size();
        (void)plan_auto_offload(m, t, lim, o).needed();
        (void)estimate_decode(p).seconds();
        if (flags & 64) (void)advise(m, t, lim, o).size();
        if (flags & 64 && more & 64) (void)best_fit(m, t, lim, o).has_value();
        training_config c;
        c.seq = r.dim() + 1;
        c.lora_rank = r.dim() % 64;
        (void)training_memory(m, c).total();
    } catch (const error&) {
    }
    return 0;
}
