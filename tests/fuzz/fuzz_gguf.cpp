// libFuzzer target: any bytes as a GGUF file. Parsing, describing the model and reading the
// tokenizer must either succeed or throw vramplan::error; anything else (a crash, a sanitizer
// report, another exception) is a bug.
#include <cstddef>
#include <cstdint>

#include "vramplan/io/gguf_model.hpp"
#include "vramplan/io/tokenizer.hpp"
#include "vramplan/model/footprint.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    try {
        const auto file = vramplan::io::gguf_file::parse("fuzz.gguf", data, size, size);
        try {
            const auto m = vramplan::io::describe(file, "fuzz");
            (void)vramplan::weight_bytes(m);
        } catch (const vramplan::error&) {
        }
        try {
            const auto tok = vramplan::io::tokenizer::from_gguf(file);
            (void)tok.decode(tok.encode("Once upon a time"));
        } catch (const vramplan::error&) {
        }
    } catch (const vramplan::error&) {
    }
    return 0;
}
