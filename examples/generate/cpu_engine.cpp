#include "engine.hpp"
#include "vramplan/runtime/cpu_backend.hpp"
#include "vramplan/runtime/forward_pass.hpp"
#include "vramplan/runtime/model_loader.hpp"

namespace generate {

namespace {
class cpu_engine final : public engine {
public:
    cpu_engine(const vramplan::io::gguf_file& file, const vramplan::plan& p, unsigned threads, progress_fn progress)
        : backend_(p.target.capacity, threads), arena_(p, backend_) {
        vramplan::runtime::load_weights(file, arena_,
                                        progress ? std::function<void(std::size_t, std::size_t)>(progress)
                                                 : std::function<void(std::size_t, std::size_t)>());
        llm_ = std::make_unique<vramplan::runtime::forward_pass<vramplan::runtime::cpu_backend>>(arena_);
    }
    const float* forward(std::span<const std::int32_t> tokens, std::span<const std::int32_t> positions) override {
        return llm_->forward(tokens, positions);
    }
    const vramplan::plan& plan() const override { return arena_.plan(); }
    std::uint64_t streamed_bytes() const override { return llm_->streamer().bytes_streamed(); }

private:
    vramplan::runtime::cpu_backend backend_;
    vramplan::runtime::arena<vramplan::runtime::cpu_backend> arena_;
    std::unique_ptr<vramplan::runtime::forward_pass<vramplan::runtime::cpu_backend>> llm_;
};
}  // namespace

std::unique_ptr<engine> make_cpu_engine(const vramplan::io::gguf_file& file, const vramplan::plan& p, unsigned threads,
                                        progress_fn progress) {
    return std::make_unique<cpu_engine>(file, p, threads, progress);
}

}  // namespace generate
