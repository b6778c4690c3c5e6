// How a matrix product's work is cut for the pool's queue (thread_pool::parallel_queue): units of
// a pass of tokens (as many as a thread's rounded activations hold) times a chunk of row groups
// (rows, groups of rows, or panels). A unit writes only its own outputs, every slice of columns in
// order, so which thread takes it changes nothing in the result. A thread keeps a pass's rounded
// activations across its units of that pass, which is all of them when the columns fit one slice:
// each pass is then rounded once a thread, as with one static share each.
#pragma once

#include <algorithm>
#include <cstdint>

namespace vramplan::kernels::cpu {

class product_units {
public:
    struct unit {
        std::uint64_t pass, t0, nt;  // the pass, its first token and its token count
        std::uint64_t begin, end;    // the chunk's row groups
    };

    // About eight chunks a thread for each pass, so that a thread slowed for a while leaves the
    // others at most an eighth of its share to finish; `least` row groups or more (a product
    // whose units round their activations again keeps that cost small beside the chunk's work).
    product_units(std::uint64_t tokens, std::uint64_t per_pass, std::uint64_t groups, std::uint64_t least,
                  unsigned threads)
        : tokens_(tokens),
          per_pass_(std::max<std::uint64_t>(per_pass, 1)),
          groups_(groups),
          grain_(std::max({(groups + 8 * threads - 1) / (8 * threads), least, std::uint64_t{1}})),
          chunks_((groups + grain_ - 1) / grain_),
          passes_((tokens + per_pass_ - 1) / per_pass_) {}

    std::uint64_t count() const { return passes_ * chunks_; }

    unit operator[](std::uint64_t i) const {
        const std::uint64_t pass = i / chunks_, t0 = pass * per_pass_, begin = i % chunks_ * grain_;
        return {pass, t0, std::min(per_pass_, tokens_ - t0), begin, std::min(groups_, begin + grain_)};
    }

private:
    std::uint64_t tokens_, per_pass_, groups_, grain_, chunks_, passes_;
};

}  // namespace vramplan::kernels::cpu
