// Small inputs the tests write for themselves: zero-filled GGUF tensors (the planner reads shapes
// and formats only) and text files such as config.json, each under a per-process temporary name.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "temp_path.hpp"
#include "vramplan/io/gguf_writer.hpp"

// An f32 tensor of zeros; dims innermost first, as GGUF lists them.
inline void add_zero_tensor(vramplan::io::gguf_writer& w, const std::string& name, std::vector<std::uint64_t> dims) {
    std::uint64_t n = 1;
    for (auto d : dims) n *= d;
    const std::vector<float> zeros(n);
    w.add_tensor(name, dims, vramplan::format{vramplan::format_id::f32}, zeros.data(), n * 4);
}

// Writes `text` to a fresh temporary file and returns its path.
inline std::string write_temp_text(const std::string& name, const std::string& text) {
    const std::string path = test_temp_path(name);
    std::ofstream(path) << text;
    return path;
}

// The path of a model in ../shared/models, or empty (the caller returns: the test skips) when the
// folder is absent, as in users' clones; the skip is said in the test's output.
#define VRAMPLAN_SHARED_MODEL_OR_SKIP(path, file)                 \
    const std::string path = VRAMPLAN_SHARED_DIR "/models/" file; \
    if (!std::filesystem::exists(path)) {                         \
        MESSAGE("skipped: " << path << " is absent");             \
        return;                                                   \
    }
