// libFuzzer target: any bytes as a .safetensors file. Reading its header must either give tensors
// whose spans fit the data or throw vramplan::error naming the file; a JSON library exception, a
// crash or a sanitizer report is a bug.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "vramplan/error.hpp"
#include "vramplan/io/safetensors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view file(reinterpret_cast<const char*>(data), size);
    try {
        std::uint64_t total = 0;
        for (const auto& t : vramplan::io::parse_safetensors("fuzz/model.safetensors", file)) total += t.bytes;
        if (size >= 8 && total > size) __builtin_trap();  // tensors cannot hold more bytes than the file
    } catch (const vramplan::error&) {
    }
    return 0;
}
