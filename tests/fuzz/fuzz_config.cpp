// libFuzzer target: any bytes as a config.json. Describing the model (and converting the layers its
// quantization_config names) must either succeed or throw
// vramplan::error naming the file and the key; a JSON library exception, a crash or a sanitizer
// report is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "vramplan/io/hf_config.hpp"
#include "vramplan/model/footprint.hpp"
#include "vramplan/model/format_policy.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    try {
        const auto d = vramplan::io::describe_config_text("fuzz/config.json",
                                                          std::string(reinterpret_cast<const char*>(data), size));
        (void)vramplan::param_count(d.shape);
        // The layers quantization_config converts, and their bytes.
        const auto m =
            vramplan::make_model("fuzz", d.shape, vramplan::uniform_policy(vramplan::format{vramplan::format_id::f16}));
        (void)vramplan::weight_bytes(vramplan::io::apply_checkpoint_quantization(m, d));
    } catch (const vramplan::error&) {
    }
    return 0;
}
