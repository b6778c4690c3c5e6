// How a matrix product's work is cut for the pool's queue (thread_pool::parallel_queue): units of
// a pass of tokens (as many as a thread's rounded activations hold) times a chunk of row groups
// (rows, groups of rows, or panels). A unit writes only its own outputs, every slice of columns in
// order, so which thread takes it changes nothing in the result. A thread keeps a pass's rounded
// activations across its units of that pass, which is all of them when the columns fit one slice:
// each pass is then rounded once a thread, as with one static share each.
#pragma once

#include <algorithm>
#include <cstdint>

#include "vramplan/kernels/cpu/thread_pool.hpp"

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

// One thread's part of a product: takes units from the queue until none is left and, for each,
// every slice of nblocks columns in order (slices of `slice` blocks), calls round(unit, b0, nb)
// unless the thread's activations are already those of the unit's pass and slice, then
// work(unit, b0, nb).
template <class Round, class Work>
void take_units(const product_units& units, thread_pool::work_queue& queue, std::uint64_t nblocks, std::uint64_t slice,
                Round&& round, Work&& work) {
    const std::uint64_t slices = (nblocks + slice - 1) / std::max<std::uint64_t>(slice, 1);
    std::uint64_t rounded_for = ~std::uint64_t{0};  // as pass * slices + slice
    for (std::uint64_t i, after; queue.take(i, after);) {
        const product_units::unit u = units[i];
        for (std::uint64_t b0 = 0; b0 < nblocks; b0 += slice) {
            const std::uint64_t nb = std::min(slice, nblocks - b0);
            if (const std::uint64_t key = u.pass * slices + b0 / slice; key != rounded_for) {
                round(u, b0, nb);
                rounded_for = key;
            }
            work(u, b0, nb);
        }
    }
}

}  // namespace vramplan::kernels::cpu
