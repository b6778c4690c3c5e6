#include "engine.hpp"
#include "vramplan/runtime/cuda_backend.cuh"
#include "vramplan/runtime/forward_pass.hpp"
#include "vramplan/runtime/model_loader.hpp"

namespace generate {

namespace {
class cuda_engine final : public engine {
public:
    cuda_engine(const vramplan::io::gguf_file& file, const vramplan::plan& p, unsigned threads, progress_fn progress,
                bool planes)
        : backend_(0, planes), arena_(p, backend_) {
        vramplan::runtime::load_weights(file, arena_,
                                        progress ? std::function<void(std::size_t, std::size_t)>(progress)
                                                 : std::function<void(std::size_t, std::size_t)>());
        llm_ = std::make_unique<vramplan::runtime::forward_pass<vramplan::runtime::cuda_backend>>(arena_, threads);
    }
    const float* forward(std::span<const std::int32_t> tokens, std::span<const std::int32_t> positions) override {
        return llm_->forward(tokens, positions);
    }
    const vramplan::plan& plan() const override { return arena_.plan(); }
    std::uint64_t streamed_bytes() const override { return llm_->streamer().bytes_streamed(); }

private:
    vramplan::runtime::cuda_backend backend_;
    vramplan::runtime::arena<vramplan::runtime::cuda_backend> arena_;
    std::unique_ptr<vramplan::runtime::forward_pass<vramplan::runtime::cuda_backend>> llm_;
};
}  // namespace

std::uint64_t cuda_free_bytes() {
    vramplan::runtime::cuda_backend probe;
    return probe.device_memory().free;
}

std::unique_ptr<engine> make_cuda_engine(const vramplan::io::gguf_file& file, const vramplan::plan& p, unsigned threads,
                                         progress_fn progress, bool planes) {
    return std::make_unique<cuda_engine>(file, p, threads, progress, planes);
}

}  // namespace generate
