// One exception type for every run-time failure vramplan reports (bad input, a plan that cannot be
// realized, a CUDA error). In constant evaluation the same throw turns into a compile error that
// points at the failing check, which is how constexpr callers see invalid input.
#pragma once

#include <stdexcept>
#include <string>

namespace vramplan {

class error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

}  // namespace vramplan
