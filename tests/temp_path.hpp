// A path in the temporary directory that no other test process uses at the same time: ctest runs
// each test case alone and, beside them, the whole binary at once (vramplan_tests.every_case), so
// a fixed name would be written by two processes together.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include <unistd.h>

inline std::string test_temp_path(std::string_view name) {
    return (std::filesystem::temp_directory_path() / (std::to_string(::getpid()) + "_" + std::string(name))).string();
}
