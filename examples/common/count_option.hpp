// Unsigned command-line options (tokens, sequences, ranks, threads). CLI11 reads "-5" into an
// unsigned integer as 2^64 - 5, which then surfaces far away as a size overflow or an empty
// context; this validator rejects the sign where the user typed it.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace vramplan::cli {

inline const CLI::Validator count{[](std::string& v) -> std::string {
                                      if (v.find_first_not_of("0123456789") == std::string::npos && !v.empty())
                                          return {};
                                      return "takes a whole number (0, 1, 2, ...), not '" + v + "'";
                                  },
                                  "COUNT"};

}  // namespace vramplan::cli
