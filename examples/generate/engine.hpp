// What generate needs from a device: a planned arena holding the model, and a forward pass that
// returns host-readable logits of the last token. One implementation per backend.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "vramplan/io/gguf_reader.hpp"
#include "vramplan/plan/plan.hpp"

namespace generate {

class engine {
public:
    virtual ~engine() = default;
    virtual const float* forward(std::span<const std::int32_t> tokens, std::span<const std::int32_t> positions) = 0;
    virtual const vramplan::plan& plan() const = 0;
    virtual std::uint64_t streamed_bytes() const = 0;
};

using progress_fn = void (*)(std::size_t done, std::size_t total);

std::unique_ptr<engine> make_cpu_engine(const vramplan::io::gguf_file& file, const vramplan::plan& p, unsigned threads,
                                        progress_fn progress);
#if VRAMPLAN_WITH_CUDA
// planes: hold quantized matrices in the device layout (kernels/weight_planes.hpp); threads: the
// CPU's, for the experts the plan keeps in the host tier.
std::unique_ptr<engine> make_cuda_engine(const vramplan::io::gguf_file& file, const vramplan::plan& p, unsigned threads,
                                         progress_fn progress, bool planes);
// Bytes free on CUDA device 0 now (the CUDA context created); throws the backend's error without one.
std::uint64_t cuda_free_bytes();
#endif

}  // namespace generate
