// libFuzzer target: any bytes as a config.json. Describing the model must either succeed or throw
// vramplan::error naming the file and the key; a JSON library exception, a crash or a sanitizer
// report is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "vramplan/io/hf_config.hpp"
#include "vramplan/model/footprint.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    try {
        const auto d = vramplan::io::describe_config_text("fuzz/config.json",
                                                          std::string(reinterpret_cast<const char*>(data), size));
        (void)vramplan::param_count(d.shape);
    } catch (const vramplan::error&) {
    }
    return 0;
}
