// Small inputs the tests write for themselves: zero-filled GGUF tensors (the planner reads shapes
// and formats only) and text files such as config.json, each under a per-process temporary name.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "temp_path.hpp"
#include "vramplan/io/gguf_model.hpp"
#include "vramplan/io/gguf_writer.hpp"

// A tensor of zero bytes in format f (f32 unless given); dims innermost first, as GGUF lists them.
inline void add_zero_tensor(vramplan::io::gguf_writer& w, const std::string& name, std::vector<std::uint64_t> dims,
                            vramplan::format f = vramplan::format{vramplan::format_id::f32}) {
    std::uint64_t rows = 1;
    for (std::size_t d = 1; d < dims.size(); ++d) rows *= dims[d];
    const std::vector<std::uint8_t> zeros(vramplan::tensor_bytes(f, rows, dims.at(0)));
    w.add_tensor(name, dims, f, zeros.data(), zeros.size());
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

// The description of a GGUF file that `file.write(path)` writes to a temporary path, removed
// afterwards whether describing it succeeds or throws.
template <class File>
vramplan::model_desc describe_written(const File& file, const std::string& name) {
    const std::string path = test_temp_path(name);
    file.write(path);
    try {
        vramplan::model_desc m = vramplan::io::describe(vramplan::io::gguf_file::open(path));
        std::filesystem::remove(path);
        return m;
    } catch (...) {
        std::filesystem::remove(path);
        throw;
    }
}
