// A typed view of one planned buffer: where it lives, what format, what shape. Views never own.
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <span>

#include "vramplan/format/format.hpp"
#include "vramplan/plan/plan.hpp"

namespace vramplan::runtime {

struct tensor_view {
    std::byte* data = nullptr;
    std::uint64_t bytes = 0;
    format fmt{};
    tier where = tier::gpu;
    std::uint64_t rows = 0, cols = 0;

    explicit operator bool() const { return data != nullptr; }

    // Elements of type T over the whole buffer; `count` checks the caller's expectation in debug builds.
    template <class T>
    std::span<T> as(std::uint64_t count) const {
        assert(count * sizeof(T) <= bytes && "view is smaller than the elements asked for");
        return {reinterpret_cast<T*>(data), static_cast<std::size_t>(count)};
    }
    template <class T>
    T* ptr() const {
        return reinterpret_cast<T*>(data);
    }
};

}  // namespace vramplan::runtime
