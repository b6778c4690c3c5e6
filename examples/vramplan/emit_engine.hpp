// `--emit llama.cpp|vllm|ollama`: the command or configuration that realizes a plan in an engine
// people already run, with comment lines for what the engine will allocate differently from the
// plan and for what it lacks (and the nearest setting emitted instead).
//
// Sources read (options and their meaning):
// - llama.cpp release b4747 (February 2025): common/arg.cpp for -c, -np, -b, -ub, -ngl, -fa, -ctk,
//   -ctv; src/llama-model.cpp for -ngl's counting: the last N of the n_layer blocks go to the GPU,
//   the output head only when N > n_layer (so "all" is n_layer + 1), the token embedding never.
//   In b4747 -fa is a switch; releases from mid-2025 take -fa on|off|auto, which is emitted here.
//   --n-cpu-moe N (releases from August 2025) keeps the expert tensors of blocks 0..N-1 in host
//   memory, computed by the CPU: the plan's host experts.
// - vLLM's engine arguments: --max-model-len, --max-num-seqs, --gpu-memory-utilization (the share
//   of the GPU's whole memory the instance may use), --kv-cache-dtype auto|fp8|fp8_e4m3|fp8_e5m2,
//   --tensor-parallel-size, --pipeline-parallel-size, --cpu-offload-gb (GiB per GPU).
// - Ollama: Modelfile PARAMETER num_ctx, num_gpu (llama.cpp's -ngl), num_batch; the server's
//   OLLAMA_FLASH_ATTENTION, OLLAMA_KV_CACHE_TYPE (f16, q8_0, q4_0) and OLLAMA_NUM_PARALLEL.
#pragma once

#include <fmt/format.h>

#include <cmath>
#include <string>
#include <vector>

#include "report.hpp"
#include "vramplan/plan/plan.hpp"

namespace vramplan::cli {

struct engine_request {
    std::string engine;  // llama.cpp, vllm, ollama
    std::string model;   // what the user gave: a .gguf path is used as is, anything else is named
    std::uint64_t gpus = 1, tp = 1;
    std::vector<std::uint64_t> layers;  // per pipeline device, when there are several
    bool mixed = false;                 // the pipeline's GPUs are not all alike
    std::uint64_t nodes = 1;            // machines in the pipeline, each with tp GPUs
    std::uint64_t needed = 0;           // a pipeline's largest device's needed bytes (0: the plan's)
};

namespace detail {

// A .gguf path as given; otherwise a placeholder, named on a comment line of its own.
inline std::string model_argument(const engine_request& r, const plan& p, const char* placeholder, std::string& out) {
    if (r.model.ends_with(".gguf")) return r.model;
    // The experts' format when it is not the other weights' (gpt-oss's MXFP4 experts).
    const block_kind& last = p.model.layer(p.model.shape.n_layer - 1);
    const format weights = last[tensor_role::attn_q], experts = last[tensor_role::ffn_gate_exps];
    const std::string with_experts =
        last.ffn == ffn_kind::moe && experts != weights ? fmt::format(" and {} experts", name(experts)) : std::string();
    out += fmt::format("# {}: the {} of {} with {} weights{}\n", placeholder,
                       std::string_view(placeholder).ends_with(".gguf") ? "GGUF file" : "checkpoint", r.model,
                       name(weights), with_experts);
    return placeholder;
}

// llama.cpp's --n-cpu-moe: blocks 0..N-1 keep their experts on the CPU, so N is one past the last
// resident layer whose experts the plan puts in the host tier (0: none).
inline std::uint64_t llama_cpp_cpu_moe_layers(const plan& p) {
    std::uint64_t n = 0;
    for (std::uint64_t l = 0; l < p.model.shape.n_layer; ++l)
        if (p.experts_on_host(l)) n = l + 1;
    return n;
}

// llama.cpp's -ngl (and Ollama's num_gpu): the resident blocks, plus one for the output head when
// every block is resident (only then does llama.cpp put the head on the GPU).
inline std::uint64_t llama_cpp_gpu_layers(const plan& p) {
    return p.gpu_layers == p.model.shape.n_layer ? p.model.shape.n_layer + 1 : p.gpu_layers;
}

inline bool llama_cpp_kv_type(format f) {
    for (const char* t : {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1"})
        if (name(f) == t) return true;
    return false;
}

inline std::string differences_llama_cpp(const plan& p) {
    const std::uint64_t embd = tensor_bytes(p.model.token_embd, p.model.shape.n_vocab, p.model.shape.n_embd);
    std::string s = fmt::format(
        "# llama.cpp keeps the token embedding ({}) in host memory and allocates its own compute buffers in place of "
        "the\n"
        "# plan's {} activation arena, so its GPU use differs from the plan's {} by about those amounts.\n",
        human(embd), human(p.gpu.activations.bytes), human(p.gpu.total()));
    if (p.gpu_layers < p.model.shape.n_layer)
        s += fmt::format(
            "# With {} of {} blocks on the GPU llama.cpp also keeps the output head in host memory, and it computes "
            "the\n"
            "# offloaded blocks and the head on the CPU, {}.\n",
            p.gpu_layers, p.model.shape.n_layer,
            p.host_computed_layers() ? "as the plan computes those blocks (--offload compute)"
                                     : "where the plan streams them to the GPU (plan with --offload compute to match)");
    return s;
}

}  // namespace detail

// The text to print; throws for an engine it does not know.
inline std::string emit_engine(const engine_request& r, const plan& p) {
    const auto& lim = p.lim;
    const std::string kv = name(p.model.kv);
    const bool fused = lim.attention == attention_kernel::fused;
    std::string out;
    if (!p.fits())
        out += fmt::format(
            "# The plan does not fit {} (short by {}): these settings would run out of memory; see `vramplan "
            "advise`.\n",
            p.target.name, human(p.shortfall()));
    if (r.engine == "llama.cpp") {
        out += detail::differences_llama_cpp(p);
        std::string ctk = kv;
        if (!detail::llama_cpp_kv_type(p.model.kv)) {
            out += fmt::format("# llama.cpp has no {} KV cache; q8_0 is the nearest it has.\n", kv);
            ctk = "q8_0";
        }
        if (!fused && ctk != "f16" && ctk != "f32" && ctk != "bf16")
            out +=
                "# llama.cpp needs flash attention for a quantized V cache; the plan's naive attention is emitted as "
                "-fa off.\n";
        if (r.gpus > 1)
            out += "# -ts gives each GPU the plan's share of the layers (llama.cpp reads it as proportions).\n";
        const std::string model = detail::model_argument(r, p, "MODEL.gguf", out);
        out += fmt::format("llama-server -m {} -c {} -np {} -b {} -ub {} -ngl {} -fa {} -ctk {} -ctv {}", model,
                           lim.context * lim.batch, lim.batch, lim.tokens_per_pass(), lim.tokens_per_pass(),
                           detail::llama_cpp_gpu_layers(p), fused ? "on" : "off", ctk, ctk);
        if (const std::uint64_t moe = detail::llama_cpp_cpu_moe_layers(p); moe != 0)
            out += fmt::format(" --n-cpu-moe {}", moe);
        if (r.gpus > 1) {
            std::string split;
            for (std::size_t g = 0; g < r.layers.size(); ++g) split += (g ? "," : "") + std::to_string(r.layers[g]);
            out += " -ts " + split;
        }
        if (r.tp > 1)
            out = "# llama.cpp does not split layers by tensor parallelism; the plan's --tp has no llama.cpp flag.\n" +
                  out;
        return out + "\n";
    }
    if (r.engine == "vllm") {
        // The share of the GPU's whole memory the plan needs, rounded up so the plan fits in it.
        const std::uint64_t needed = r.needed ? r.needed : p.needed();
        const double share =
            std::ceil(static_cast<double>(needed) / static_cast<double>(p.target.capacity) * 100.0) / 100.0;
        out += fmt::format(
            "# vLLM gives every byte under --gpu-memory-utilization that the weights and its activations leave to the\n"
            "# KV cache (more sequences than --max-num-seqs can then be cached); the share below is the plan's {} of\n"
            "# {}{}.\n",
            human(needed), human(p.target.capacity), r.needed ? " on its fullest device" : "");
        const std::string weights = name(p.model.layer(0)[tensor_role::attn_q]);
        if (weights != "f16" && weights != "bf16" && weights != "f32" && !weights.starts_with("fp8"))
            out += fmt::format(
                "# {} weights are a GGUF format: vLLM loads Hugging Face checkpoints (its GGUF loading is "
                "experimental);\n"
                "# a 4- or 8-bit AWQ/GPTQ checkpoint of the same size is the usual way.\n",
                weights);
        std::string dtype = "auto";
        if (kv == "fp8" || kv == "fp8_e4m3" || kv == "fp8_e5m2")
            dtype = kv == "fp8_e5m2" ? "fp8_e5m2" : "fp8";
        else if (kv != "f16" && kv != "bf16" && kv != "f32") {
            out += fmt::format("# vLLM has no {} KV cache; fp8 is the nearest (8 bits a value{}).\n", kv,
                               kv == "q4_0" ? ", twice the plan's KV bytes" : "");
            dtype = "fp8";
        }
        if (share > 1.0) out += "# The plan does not fit this GPU: no --gpu-memory-utilization can hold it.\n";
        const std::string model = detail::model_argument(r, p, "MODEL", out);
        out += fmt::format(
            "vllm serve {} --max-model-len {} --max-num-seqs {} --gpu-memory-utilization {:.2f} --kv-cache-dtype {}",
            model, lim.context, lim.batch, std::min(share, 1.0), dtype);
        if (r.mixed)
            out +=
                "# vLLM splits pipeline stages evenly and sizes every GPU like the first; the plan's uneven split of "
                "mixed GPUs has no vLLM flag.\n";
        if (r.tp > 1) out += fmt::format(" --tensor-parallel-size {}", r.tp);
        if (r.gpus > 1) out += fmt::format(" --pipeline-parallel-size {}", r.gpus);
        if (r.nodes > 1)
            out = fmt::format(
                      "# {} machines of {} GPUs: start a Ray cluster over them first (vLLM's multi-node serving).\n",
                      r.nodes, r.tp) +
                  out;
        if (p.host_expert_layer_count() != 0 || p.host_computed_layers() != 0)
            out +=
                "# vLLM computes every layer on the GPU: the plan's experts or layers computed by the CPU become "
                "weights it streams (--cpu-offload-gb).\n";
        if (p.host.weights.bytes) {
            const double gib =
                std::ceil(static_cast<double>(p.host.weights.bytes) / static_cast<double>(1ull << 30) * 100.0) / 100.0;
            out += fmt::format(" --cpu-offload-gb {:.2f}", gib);
        }
        return out + "\n";
    }
    if (r.engine == "ollama") {
        out += "# Ollama runs llama.cpp: " + detail::differences_llama_cpp(p).substr(2);
        std::string kv_type = kv;
        if (kv != "f16" && kv != "q8_0" && kv != "q4_0") {
            out += fmt::format("# Ollama has no {} KV cache (it takes f16, q8_0 and q4_0); q8_0 is the nearest.\n", kv);
            kv_type = "q8_0";
        }
        if (p.host_expert_layer_count() != 0)
            out +=
                "# Ollama has no setting that keeps only the experts in host memory (llama.cpp's --n-cpu-moe); "
                "num_gpu offloads whole layers.\n";
        const std::string model = detail::model_argument(r, p, "MODEL.gguf", out);
        out += fmt::format("# Modelfile\nFROM {}\nPARAMETER num_ctx {}\nPARAMETER num_gpu {}\nPARAMETER num_batch {}\n",
                           model, lim.context, detail::llama_cpp_gpu_layers(p), lim.tokens_per_pass());
        out += fmt::format(
            "# the server's environment (a quantized KV cache needs flash attention):\nOLLAMA_FLASH_ATTENTION={} "
            "OLLAMA_KV_CACHE_TYPE={} OLLAMA_NUM_PARALLEL={} ollama serve\n",
            fused ? 1 : 0, kv_type, lim.batch);
        return out;
    }
    throw error("--emit takes llama.cpp, vllm or ollama, not '" + r.engine + "'");
}

}  // namespace vramplan::cli
