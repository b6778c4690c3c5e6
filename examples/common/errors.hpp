// How the command-line tools report a failure: one line on stderr, exit code 2. vramplan's own
// errors already name the input and the fix; what else can escape is put in words here, so no
// bare library text ("std::bad_alloc", "stoull") reaches a user.
#pragma once

#include <fmt/format.h>

#include <exception>
#include <new>
#include <string_view>

#include "vramplan/error.hpp"

namespace vramplan::cli {

inline int report_failure(std::string_view program, const std::exception& e) {
    if (dynamic_cast<const error*>(&e)) {
        fmt::print(stderr, "{}: error: {}\n", program, e.what());
    } else if (dynamic_cast<const std::bad_alloc*>(&e)) {
        fmt::print(stderr,
                   "{}: error: out of memory: the machine could not give what the model or the options asked for; "
                   "use a smaller --ctx or --ubatch, or a smaller model\n",
                   program);
    } else {
        fmt::print(
            stderr,
            "{}: error: unexpected failure ({}); this is a vramplan bug, please report it with the command line\n",
            program, e.what());
    }
    return 2;
}

}  // namespace vramplan::cli
