// Software prefetch of the next tile of a KV cache, paced to the arithmetic of the current one.
// A tile's K and V rows are a few hundred cache lines. Requested in one burst they fill the
// core's miss buffers and load queue, and the arithmetic stalls behind them until they drain:
// compute and memory then take turns instead of overlapping. Handed out a few lines at a time,
// between the key pairs of the attention steps, the same requests stay in flight all through
// the tile (decode attention at 8k, Llama-3-8B shape, two cores: f16 1.8-2.5 ms per layer,
// was 3.1-3.4 ms with a burst per KV head). The unit is the whole next tile of whole rows, not
// the next head slice: prefetching one, two or four slices ahead (a smaller working set, which
// fits L1) was slower at 4k, 2 threads (Q8_0 60-83 ns per key and KV head against 44-61 with
// the tile), as were items of two or four KV heads; without software prefetch it was 2-3x slower.
// Nor does reaching further help: two or three tiles ahead was slower again (same shape, Q8_0
// 73-93 ns per key and KV head against 60-62 with one tile; f16 67-104 against 53-89).
#pragma once

#include <cstdint>
#include <limits>

namespace vramplan::kernels::cpu {

class tile_prefetcher {
public:
    tile_prefetcher() = default;
    // Rows [0, rows) of k and v (row_bytes apart), span bytes of each from the given pointers,
    // spread over `steps` calls of step().
    tile_prefetcher(const std::uint8_t* k, const std::uint8_t* v, std::uint64_t row_bytes, std::uint64_t span,
                    std::uint64_t rows, std::uint64_t steps)
        : k_(k), v_(v), row_bytes_(row_bytes), span_(span), rows_(span == 0 ? 0 : rows) {
        const std::uint64_t lines = rows_ * ((span + 63) / 64);
        // One more line per step than an even share, so the last line goes out before the tile ends.
        per_step_ = steps == 0 ? lines : (lines + steps - 1) / steps + 1;
    }

    // Requests the next few lines of both caches.
    void step() { issue(per_step_); }
    // Requests every line not yet requested.
    void finish() { issue(std::numeric_limits<std::uint64_t>::max()); }

private:
    void issue(std::uint64_t lines) {
        for (; lines > 0 && row_ < rows_; --lines) {
            const std::uint64_t at = row_ * row_bytes_ + offset_;
            __builtin_prefetch(k_ + at, 0, 2);
            __builtin_prefetch(v_ + at, 0, 2);
            offset_ += 64;
            if (offset_ >= span_) {
                // The span need not end on a line boundary: its last byte's line, then the next row.
                __builtin_prefetch(k_ + row_ * row_bytes_ + span_ - 1, 0, 2);
                __builtin_prefetch(v_ + row_ * row_bytes_ + span_ - 1, 0, 2);
                offset_ = 0;
                ++row_;
            }
        }
    }

    const std::uint8_t* k_ = nullptr;
    const std::uint8_t* v_ = nullptr;
    std::uint64_t row_bytes_ = 0, span_ = 0, rows_ = 0, per_step_ = 0, row_ = 0, offset_ = 0;
};

}  // namespace vramplan::kernels::cpu
