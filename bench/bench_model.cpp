// Writes a Llama GGUF file of random weights for speed comparisons (bench/vs_llamacpp.sh): the
// project's test model (tests/test_model.hpp) at a real model's shape, with a vocabulary of
// "t0".."tN" and SentencePiece's 256 byte fallbacks (so any prompt tokenizes).
//   vramplan_bench_model [--fast] OUT.gguf FORMAT [layers] [embd] [ff] [vocab]
// --fast: quantized tensors are random bytes under fixed scales (test_model's keep_values = false),
// for multi-gigabyte files in seconds: the GPU's 3.8 GB decode run (bench/gpu_check.sh) uses it.
// FORMAT: f16, q8_0, q4_0, or q4_k_m (llama.cpp's mix of Q4_K and Q6_K, random valid blocks). Defaults: 12 layers of
// 2048, feed-forward 5632, vocabulary 32000 (TinyLlama's widths with 12 layers: 0.34 GB in Q4_0, 0.64 GB in Q8_0).
#include <cstdio>
#include <cstdlib>
#include <string>

#include "../tests/test_model.hpp"

int main(int argc, char** argv) {
    const bool fast = argc > 1 && std::string(argv[1]) == "--fast";
    if (fast) {
        --argc;
        ++argv;
    }
    if (argc < 3) {
        std::fprintf(stderr, "usage: %s [--fast] OUT.gguf f16|q8_0|q4_0|q4_k_m [layers] [embd] [ff] [vocab]\n",
                     argv[0]);
        return 2;
    }
    const std::string fmt = argv[2];
    test_model::spec s;
    if (fmt == "f16")
        s.weights = vramplan::format{vramplan::format_id::f16};
    else if (fmt == "q8_0")
        s.weights = vramplan::format{vramplan::format_id::q8_0};
    else if (fmt == "q4_0")
        s.weights = vramplan::format{vramplan::format_id::q4_0};
    else if (fmt == "q4_k_m")
        s.q4_k_m = true;
    else {
        std::fprintf(stderr, "unknown format '%s': use f16, q8_0, q4_0 or q4_k_m\n", fmt.c_str());
        return 2;
    }
    auto arg = [&](int i, std::uint64_t fallback) { return argc > i ? std::strtoull(argv[i], nullptr, 10) : fallback; };
    s.layers = arg(3, 12);
    s.embd = arg(4, 2048);
    s.ff = arg(5, 5632);
    s.vocab = arg(6, 32000);
    s.head_dim = 64;
    s.heads = s.embd / s.head_dim;
    s.kv_heads = s.heads / 8 ? s.heads / 8 : 1;
    s.context_length = 4096;
    s.byte_tokens = true;
    s.keep_values = !fast;
    test_model::write(argv[1], s);
    std::printf("%s: llama, %llu layers of %llu, ff %llu, vocabulary %llu, %s\n", argv[1],
                static_cast<unsigned long long>(s.layers), static_cast<unsigned long long>(s.embd),
                static_cast<unsigned long long>(s.ff), static_cast<unsigned long long>(s.vocab), fmt.c_str());
}
