// Loads a GGUF file's tensors straight into their planned slots: one read per tensor. Slots in
// memory the host can address (the host tier, or every tier of the CPU backend) are read into
// directly; device slots go through one load-time bounce buffer, freed before inference starts.
// A tensor the backend holds in its own layout is converted in its slot, or (planes) on its way to
// it; beside a device, the tensors the CPU computes on are held as the CPU backend holds them
// (runtime/weight_layout.hpp).
#pragma once

#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "vramplan/io/gguf_reader.hpp"
#include "vramplan/runtime/arena.hpp"
#include "vramplan/runtime/weight_layout.hpp"

namespace vramplan::runtime {

// progress(done, total) is called after each tensor.
template <class Backend>
void load_weights(const io::gguf_file& file, arena<Backend>& a,
                  const std::function<void(std::size_t, std::size_t)>& progress = {}) {
    const auto& all = a.buffers();
    std::size_t total = 0, done = 0;
    for (const auto& b : all) total += b.kind == buffer_kind::weights;
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(file.path().c_str(), "rb"), &std::fclose);
    if (!f) throw error("cannot open '" + file.path() + "' for reading");
    std::vector<std::byte> bounce, planes;  // planes: a tensor split into planes before it is uploaded
    const bool planes_held = holds_planes(a.backend());
    std::vector<std::uint8_t> scratch;  // sixteen rows, for tensors the backend holds as panels
    a.begin_loading();                  // until the last tensor is in, the arena's weights are incomplete
    for (const auto& b : all) {
        if (b.kind != buffer_kind::weights) continue;
        const io::gguf_tensor_info* t = file.find_tensor(b.name);
        if (!t) throw error("the model file has no tensor '" + b.name + "' that the plan expects");
        if (t->bytes != b.bytes || !(t->fmt == b.fmt))
            throw error("tensor '" + b.name + "' in the file (" + name(t->fmt) + ", " + std::to_string(t->bytes) +
                        " bytes) differs from the plan (" + name(b.fmt) + ", " + std::to_string(b.bytes) + " bytes)");
        std::byte* dst = a.base(b.where) + b.offset;
        const bool by_cpu = !Backend::device_is_host_memory && computed_by_cpu(a.plan(), b);
        if (planes_held && !by_cpu && held_as_planes(a.plan(), b.ref, b.fmt)) {
            // The file's order is read aside and split into planes in the slot, or on its way there.
            bounce.resize(static_cast<std::size_t>(t->bytes));
            file.read_tensor(f.get(), *t, bounce.data());
            if (b.where == tier::host || Backend::device_is_host_memory) {
                convert_to_planes(b.fmt, bounce.data(), dst, t->bytes);
            } else {
                planes.resize(static_cast<std::size_t>(t->bytes));
                convert_to_planes(b.fmt, bounce.data(), planes.data(), t->bytes);
                a.backend().upload(dst, planes.data(), t->bytes);
            }
        } else if (b.where == tier::host || Backend::device_is_host_memory) {
            file.read_tensor(f.get(), *t, dst);
            if (holds_panels<Backend> || by_cpu) {
                const weight_matrices m = matrices_of(a.plan(), b);
                if (held_as_panels(a.plan().graph, b.ref, b.fmt, m.rows))
                    for (std::uint64_t i = 0; i < m.count; ++i)
                        convert_to_panels(b.fmt, dst + i * (t->bytes / m.count), m.rows, b.cols, scratch);
            }
        } else {
            bounce.resize(static_cast<std::size_t>(t->bytes));
            file.read_tensor(f.get(), *t, bounce.data());
            a.backend().upload(dst, bounce.data(), t->bytes);
        }
        if (progress) progress(++done, total);
    }
    a.end_loading();
}

}  // namespace vramplan::runtime
