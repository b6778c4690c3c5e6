// Command-line inputs shared by the examples: byte sizes, models (preset, GGUF, config.json) and
// GPUs (catalog name or size). Each failure is a vramplan::error whose message says what is valid.
#pragma once

#include <cctype>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "vramplan/format/bytes.hpp"
#include "vramplan/io/checkpoint.hpp"
#include "vramplan/io/gguf_model.hpp"
#include "vramplan/io/hf_config.hpp"
#include "vramplan/model/format_policy.hpp"
#include "vramplan/model/presets.hpp"
#include "vramplan/plan/advice.hpp"
#include "vramplan/target/catalog.hpp"
#include "vramplan/target/local_gpus.hpp"

namespace vramplan::cli {

// "12GiB", "12 GB", "512MiB", "4096" (bytes). Decimal units are powers of 1000, binary of 1024.
inline std::uint64_t parse_size(const std::string& text) {
    std::size_t i = 0;
    while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
    std::string unit = text.substr(i);
    std::erase_if(unit, [](char c) { return c == ' '; });
    for (auto& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const std::string number = text.substr(0, i);
    if (number.empty() || number.find_first_not_of("0123456789.") != std::string::npos ||
        std::count(number.begin(), number.end(), '.') > 1)
        throw error("invalid size '" + text +
                    "': give a number with an optional unit, e.g. 12GiB, 8GB, 512MiB or 4096");
    static const std::pair<const char*, double> units[] = {
        {"", 1},      {"b", 1},        {"kb", 1e3},        {"mb", 1e6},           {"gb", 1e9},
        {"tb", 1e12}, {"kib", 1024.0}, {"mib", 1048576.0}, {"gib", 1073741824.0}, {"tib", 1099511627776.0}};
    for (auto [name, factor] : units)
        if (unit == name) {
            // At most 20 significant digits: beyond that no size fits 64 bits, and stold could throw.
            if (number.size() > 24) throw error("size '" + text + "' is out of range (at most 16 EiB)");
            const long double v = std::stold(number) * static_cast<long double>(factor);
            if (v < 0 || v > 1.8e19L) throw error("size '" + text + "' is out of range (at most 16 EiB)");
            return static_cast<std::uint64_t>(v + 0.5L);
        }
    throw error("unknown size unit in '" + text + "': use B, KB, MB, GB, TB, KiB, MiB, GiB or TiB");
}

// More context than the model was trained for is memory spent on output nobody wants: say so next
// to the numbers. Empty when the context is within training or the trained length is unknown.
// --host-experts N|all: how many layers with experts keep their routed experts in host memory.
inline std::uint64_t host_expert_layers(const std::string& option, const model_desc& m) {
    const std::uint64_t moe = moe_layer_count(m);
    if (moe == 0)
        throw error("--host-experts: " + std::string(m.name) +
                    " has no experts (it is not a mixture-of-experts model)");
    if (option == "all") return moe;
    if (option.empty() || option.size() > 6 || option.find_first_not_of("0123456789") != std::string::npos)
        throw error("--host-experts takes a number of MoE layers or 'all', not '" + option + "'");
    const std::uint64_t n = std::stoull(option);  // at most 6 digits: cannot overflow
    if (n > moe)
        throw error("--host-experts " + option + " exceeds the model's " + std::to_string(moe) +
                    " layers with experts");
    return n;
}

inline std::string trained_context_warning(const model_desc& m, std::uint64_t context) {
    if (!m.shape.beyond_trained_context(context)) return {};
    return "warning: context " + with_separators(context) + " exceeds the " + with_separators(m.shape.n_ctx_train) +
           " tokens " + std::string(m.name) +
           " was trained for; past that, output degrades unless the runtime scales RoPE (e.g. YaRN): use a context of "
           "at most " +
           std::to_string(m.shape.n_ctx_train) + " for this model as trained";
}

inline bool ends_with(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Names outlive every description that views them (model_desc holds a string_view).
inline std::string_view intern(const std::string& s) {
    static std::set<std::string> names;
    return *names.insert(s).first;
}

struct model_choice {
    model_desc desc;
    std::string name;
    std::string source;  // "preset", "gguf", "config.json"
    std::uint64_t published_params = 0;
    std::vector<std::string> notes;  // what the input describes that is not planned
};

// weights/kv: empty = the default (f16 for presets and configs; as stored for GGUF, f16 KV; a
// preset's experts as its release stores them). expert_weights: the routed experts' format, after
// weights (empty: as weights left them).
inline model_choice load_model(const std::string& spec, const std::string& weights, const std::string& kv,
                               const std::string& expert_weights = {}) {
    model_choice c;
    const format kv_fmt = kv.empty() ? format{format_id::f16} : format_by_name(kv);
    // Presets and configs start in f16; a requested weight format applies to every matrix whose
    // rows it can hold, and the others stay as they are (as llama.cpp's quantizer does).
    const format_policy f16_policy = uniform_policy(format{format_id::f16}, kv_fmt);
    if (ends_with(spec, ".gguf")) {
        const auto file = io::gguf_file::open(spec);
        c.source = "gguf";
        c.name = file.find("general.name") && file.find("general.name")->type == io::gguf_type::string
                     ? file.get_string("general.name")
                     : spec;
        c.desc = io::describe(file, c.name);
        if (const std::uint64_t mtp = io::mtp_layers(file); mtp != 0 && c.desc.shape.activations_planned)
            c.notes.push_back("the file's " + std::to_string(mtp) +
                              " multi-token-prediction layer(s) after the model's are not planned: llama.cpp loads "
                              "them only for speculative decoding");
        if (!c.desc.shape.activations_planned)
            c.notes.push_back(
                "architecture '" + file.get_string("general.architecture") +
                "': weights and KV planned, activations not (vramplan has no forward graph for it); "
                "the verdict covers weights, KV cache and reserve" +
                (c.desc.shape.kv_dim() ? std::string() : ", and the file gives no KV heads: KV not planned either"));
    } else if (ends_with(spec, ".json")) {
        c.source = "config.json";
        c.name = spec;
        io::config_description d = io::describe_config(spec);
        c.desc = io::checkpoint_model(c.name, d, kv_fmt);
        c.notes = std::move(d.notes);
        // The checkpoint beside it, when there is one, says its weights' bytes exactly.
        const auto tensors = io::read_checkpoint_headers(std::filesystem::absolute(spec).parent_path());
        if (!tensors.empty()) {
            if (!weights.empty() || !expert_weights.empty())
                throw error("--weights and --expert-weights re-format a model, but " + spec +
                            " sits beside its checkpoint, whose safetensors headers give its weights as stored; copy "
                            "config.json elsewhere to plan other formats");
            c.desc = io::with_checkpoint_weights(c.desc, tensors, c.notes);
            c.source = "config.json + safetensors";
        }
    } else {
        const auto& e = presets::by_name(spec);
        c.source = "preset";
        c.name = std::string(e.name);
        c.published_params = e.published_params;
        c.desc = presets::describe(e, f16_policy);
    }
    if (!weights.empty()) c.desc = requantize_weights(c.desc, format_by_name(weights));
    if (!expert_weights.empty()) {
        if (moe_layer_count(c.desc) == 0)
            throw error("--expert-weights: " + c.name + " has no experts (it is not a mixture-of-experts model)");
        c.desc = with_expert_format(c.desc, format_by_name(expert_weights));
    }
    c.desc.kv = kv_fmt;
    c.desc.name = intern(c.name);
    validate_formats(c.desc);
    return c;
}

// "a,b,c" as its parts; an empty part is an error naming the option.
inline std::vector<std::string> split_list(const std::string& text, const char* option) {
    std::vector<std::string> parts;
    std::size_t at = 0;
    for (;;) {
        const std::size_t comma = text.find(',', at);
        parts.push_back(text.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
        if (parts.back().empty())
            throw error(std::string(option) + " '" + text +
                        "' has an empty item; separate the items with single commas");
        if (comma == std::string::npos) return parts;
        at = comma + 1;
    }
}

// "local" or "local:N": GPU N of this machine, read from the driver.
inline std::optional<unsigned> local_gpu_index(const std::string& spec) {
    if (spec == "local") return 0u;
    if (spec.rfind("local:", 0) != 0) return std::nullopt;
    const std::string n = spec.substr(6);
    if (n.empty() || n.size() > 3 || n.find_first_not_of("0123456789") != std::string::npos)
        throw error("'" + spec + "': give local (GPU 0) or local:N with N a GPU index (see `vramplan gpus --local`)");
    return static_cast<unsigned>(std::stoul(n));
}

struct gpu_input {
    target_desc desc;
    std::optional<targets::local_gpu> local;  // when the GPU is this machine's
};

// A catalog device, a bare size (with the given reserve and no bandwidth figures), or a local GPU
// (its memory in use now counted in its reserve; --reserve replaces the runtime part).
inline gpu_input load_gpu_input(const std::string& spec, const std::string& reserve) {
    if (const auto index = local_gpu_index(spec)) {
        gpu_input g;
        g.local = targets::local_gpu_at(*index);
        g.desc = targets::target_of(*g.local);
        g.desc.name = intern(g.local->name);
        if (!reserve.empty()) g.desc.reserve = g.local->used_bytes() + parse_size(reserve);
        if (g.desc.reserve >= g.desc.capacity)
            throw error("GPU " + std::to_string(*index) + " (" + g.local->name +
                        ") has nothing free: " + to_string(bytes{g.local->used_bytes()}) + " of its " +
                        to_string(bytes{g.desc.capacity}) + " are in use now (`vramplan gpus --local` shows by what)");
        return g;
    }
    target_desc t;
    if (const target_desc* known = targets::find(spec)) {
        t = *known;
    } else if (!spec.empty() && std::isdigit(static_cast<unsigned char>(spec[0]))) {
        t.name = "custom";
        try {
            t.capacity = parse_size(spec);
        } catch (const error&) {
            throw error(targets::unknown_gpu_message(spec));
        }
        t.reserve = 512ull << 20;
    } else {
        throw error(targets::unknown_gpu_message(spec));
    }
    if (!reserve.empty()) t.reserve = parse_size(reserve);
    if (t.reserve >= t.capacity)
        throw error("the reserve (" + to_string(bytes{t.reserve}) + ") leaves nothing of the GPU's " +
                    to_string(bytes{t.capacity}) + "; give a larger GPU size or a smaller --reserve");
    return {t, std::nullopt};
}

inline target_desc load_gpu(const std::string& spec, const std::string& reserve) {
    return load_gpu_input(spec, reserve).desc;
}

}  // namespace vramplan::cli
