// A safetensors checkpoint's headers: every tensor's name, dtype, shape and exact bytes, read
// without its data. The format (huggingface/safetensors): an 8-byte little-endian header length
// N, N bytes of JSON mapping each tensor name to {"dtype", "shape", "data_offsets": [begin, end]}
// (offsets into the data after the header) and an optional "__metadata__" of strings, then the
// data. A sharded checkpoint lists its shards in model.safetensors.index.json ("weight_map":
// tensor name -> shard file). A header that is not what the format says is one error naming the
// file and the tensor. Like config.json, it needs nlohmann-json.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "vramplan/error.hpp"
#include "vramplan/format/checked_math.hpp"
#include "vramplan/io/input_file.hpp"

namespace vramplan::io {

// The safetensors library refuses headers past 100 MB; so does vramplan, before reading one.
inline constexpr std::uint64_t max_safetensors_header = 100'000'000;

struct safetensors_tensor {
    std::string name;
    std::string dtype;  // as the header spells it: "BF16", "F8_E4M3", "I32", ...
    std::vector<std::uint64_t> shape;
    std::uint64_t bytes = 0;  // data_offsets' span, which the dtype and shape agree with
    std::string file;         // the shard that holds it
};

namespace detail {
struct safetensors_dtype {
    std::string_view name;
    std::uint64_t bits;
};
// The dtypes of safetensors' Dtype enum; F4 (e2m1, two a byte) and F6 pack below a byte.
inline constexpr std::array<safetensors_dtype, 19> safetensors_dtypes{{
    {"BOOL", 8}, {"U8", 8},   {"I8", 8},    {"F8_E5M2", 8}, {"F8_E4M3", 8}, {"F8_E8M0", 8}, {"I16", 16},
    {"U16", 16}, {"F16", 16}, {"BF16", 16}, {"I32", 32},    {"U32", 32},    {"F32", 32},    {"I64", 64},
    {"U64", 64}, {"F64", 64}, {"F4", 4},    {"F6_E2M3", 6}, {"F6_E3M2", 6},
}};

inline std::string known_safetensors_dtypes() {
    std::string s;
    for (const auto& d : safetensors_dtypes) s += (s.empty() ? "" : ", ") + std::string(d.name);
    return s;
}
}  // namespace detail

// The tensors a header describes, given the header's JSON text and the bytes of data after it;
// `path` names the file in errors. Checks what the format requires: an object of tensors, each a
// known dtype, a shape of whole numbers and offsets inside the data whose span is the shape's
// bytes, no two tensors overlapping.
inline std::vector<safetensors_tensor> parse_safetensors_header(const std::string& path, std::string_view header,
                                                                std::uint64_t data_bytes) {
    const std::string head = "'" + path + "': ";
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(header);
    } catch (const nlohmann::json::exception&) {
        throw error(head +
                    "its safetensors header is not valid JSON (a truncated or corrupt file, or not a "
                    ".safetensors file)");
    }
    if (!j.is_object()) throw error(head + "its safetensors header is not a JSON object of tensors");
    std::vector<safetensors_tensor> out;
    std::vector<std::array<std::uint64_t, 3>> spans;  // begin, end, index into out
    for (auto it = j.begin(); it != j.end(); ++it) {
        if (it.key() == "__metadata__") continue;
        const std::string t = head + "tensor '" + it.key() + "' ";
        const auto& v = it.value();
        if (!v.is_object() || !v.contains("dtype") || !v.contains("shape") || !v.contains("data_offsets"))
            throw error(t + "needs a dtype, a shape and data_offsets");
        if (!v["dtype"].is_string()) throw error(t + "has a dtype that is not a string");
        safetensors_tensor s;
        s.name = it.key();
        s.dtype = v["dtype"].get<std::string>();
        s.file = path;
        const auto dt = std::find_if(detail::safetensors_dtypes.begin(), detail::safetensors_dtypes.end(),
                                     [&](const auto& d) { return d.name == s.dtype; });
        if (dt == detail::safetensors_dtypes.end())
            throw error(t + "has dtype '" + s.dtype + "', which safetensors does not define (" +
                        detail::known_safetensors_dtypes() + ")");
        if (!v["shape"].is_array()) throw error(t + "has a shape that is not a list of sizes");
        std::uint64_t elements = 1;
        for (const auto& d : v["shape"]) {
            if (!d.is_number_unsigned())
                throw error(t + "has a shape that is not a list of sizes: " + v["shape"].dump());
            s.shape.push_back(d.get<std::uint64_t>());
            elements = checked_mul(elements, s.shape.back());
        }
        const auto& o = v["data_offsets"];
        if (!o.is_array() || o.size() != 2 || !o[0].is_number_unsigned() || !o[1].is_number_unsigned())
            throw error(t + "needs data_offsets [begin, end], two byte offsets");
        const std::uint64_t begin = o[0].get<std::uint64_t>(), end = o[1].get<std::uint64_t>();
        if (begin > end || end > data_bytes)
            throw error(t + "has data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                        "], outside the file's " + std::to_string(data_bytes) +
                        " bytes of data (a truncated download, or a corrupt header)");
        s.bytes = end - begin;
        const std::uint64_t want = ceil_div(checked_mul(elements, dt->bits), 8);
        if (s.bytes != want)
            throw error(t + "spans " + std::to_string(s.bytes) + " bytes, but its shape " + v["shape"].dump() + " of " +
                        s.dtype + " is " + std::to_string(want) + " bytes");
        if (begin != end) spans.push_back({begin, end, out.size()});
        out.push_back(std::move(s));
    }
    // No two tensors share a byte: sorted by where they begin, each ends before the next begins.
    std::sort(spans.begin(), spans.end());
    for (std::size_t k = 1; k < spans.size(); ++k)
        if (spans[k][0] < spans[k - 1][1])
            throw error(head + "tensors '" + out[spans[k - 1][2]].name + "' and '" + out[spans[k][2]].name +
                        "' overlap in the data (a corrupt header)");
    return out;
}

// The header's length from a file's first 8 bytes, checked against the file's size.
inline std::uint64_t safetensors_header_length(const std::string& path, const unsigned char* first8,
                                               std::uint64_t file_size) {
    std::uint64_t n = 0;
    for (int b = 7; b >= 0; --b) n = n << 8 | first8[b];
    if (n > max_safetensors_header)
        throw error("'" + path + "' claims a safetensors header of " + std::to_string(n) +
                    " bytes, more than the 100 MB the format allows (not a .safetensors file, or corrupt)");
    if (n > file_size - 8)
        throw error("'" + path + "' claims a safetensors header of " + std::to_string(n) +
                    " bytes, but the file ends " + std::to_string(file_size - 8) +
                    " bytes after the length (a truncated download)");
    return n;
}

// A whole file held in memory (what the fuzzer feeds), read as read_safetensors reads a file.
inline std::vector<safetensors_tensor> parse_safetensors(const std::string& path, std::string_view file) {
    if (file.size() < 8)
        throw error("'" + path + "' is " + std::to_string(file.size()) +
                    " bytes, shorter than a safetensors header's 8-byte length");
    const std::uint64_t n =
        safetensors_header_length(path, reinterpret_cast<const unsigned char*>(file.data()), file.size());
    return parse_safetensors_header(path, file.substr(8, n), file.size() - 8 - n);
}

// One .safetensors file's tensors, reading its header only.
inline std::vector<safetensors_tensor> read_safetensors(const std::string& path) {
    const input_file f = input_file::open(path, "safetensors checkpoint");
    if (f.size() < 8)
        throw error("'" + path + "' is " + std::to_string(f.size()) +
                    " bytes, shorter than a safetensors header's 8-byte length");
    unsigned char len[8];
    f.read_at(0, len, 8);
    const std::uint64_t n = safetensors_header_length(path, len, f.size());
    std::string header(static_cast<std::size_t>(n), '\0');
    f.read_at(8, header.data(), n);
    return parse_safetensors_header(path, header, f.size() - 8 - n);
}

// The checkpoint beside a config.json, if there is one: model.safetensors, or the shards that
// model.safetensors.index.json lists (each read once, each tensor where the index says). Empty when
// neither file is there.
inline std::vector<safetensors_tensor> read_checkpoint_headers(const std::filesystem::path& dir) {
    const auto single = dir / "model.safetensors", index = dir / "model.safetensors.index.json";
    if (std::filesystem::exists(index)) {
        const std::string path = index.string();
        nlohmann::json j;
        try {
            j = nlohmann::json::parse(
                input_file::open(path, "safetensors index").read_all(64ull << 20, "safetensors index"));
        } catch (const nlohmann::json::exception&) {
            throw error("'" + path + "' is not valid JSON; a safetensors index is one JSON object with a weight_map");
        }
        if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
            throw error("'" + path + "' has no weight_map (tensor name -> shard file)");
        std::map<std::string, std::string> where;  // tensor -> shard
        std::set<std::string> shards;
        for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
            if (!it.value().is_string())
                throw error("'" + path + "': weight_map['" + it.key() + "'] is not a file name");
            const std::string shard = it.value().get<std::string>();
            if (shard.empty() || shard.find('/') != std::string::npos || shard == "." || shard == "..")
                throw error("'" + path + "': weight_map['" + it.key() + "'] names '" + shard +
                            "', not a file beside the index");
            where[it.key()] = shard;
            shards.insert(shard);
        }
        std::vector<safetensors_tensor> out;
        std::set<std::string> seen;
        for (const auto& shard : shards)
            for (auto& t : read_safetensors((dir / shard).string())) {
                const auto w = where.find(t.name);
                if (w == where.end() || w->second != std::filesystem::path(t.file).filename().string())
                    throw error("'" + t.file + "' holds tensor '" + t.name + "', which " + path +
                                " does not place in that shard");
                seen.insert(t.name);
                out.push_back(std::move(t));
            }
        for (const auto& [name, shard] : where)
            if (!seen.contains(name))
                throw error("'" + path + "' places tensor '" + name + "' in " + shard + ", which does not hold it");
        return out;
    }
    if (std::filesystem::exists(single)) return read_safetensors(single.string());
    return {};
}

}  // namespace vramplan::io
