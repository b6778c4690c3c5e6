// Catalog look-up that forgives case and separators: "RTX 4060 8GB", "rtx-4060-8gb" and
// "rtx_4060_8gb" name the same device; "Llama-3.1-70B" and "llama3.1-70b" the same model.
#pragma once

#include <string>
#include <string_view>

namespace vramplan::detail {

inline std::string normalize_name(std::string_view s) {
    std::string out;
    for (char c : s) {
        if (c == ' ' || c == '-' || c == '_' || c == '.') continue;
        out += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    }
    return out;
}

// Whether `want` (normalized) is the entry's name or one of its space-separated aliases.
inline bool name_matches(const std::string& want, std::string_view name, std::string_view aliases) {
    if (normalize_name(name) == want) return true;
    while (!aliases.empty()) {
        const auto sp = aliases.find(' ');
        if (normalize_name(aliases.substr(0, sp)) == want) return true;
        aliases = sp == std::string_view::npos ? std::string_view{} : aliases.substr(sp + 1);
    }
    return false;
}

template <class Catalog>
auto find_by_name(const Catalog& catalog, std::string_view name) -> decltype(&catalog[0]) {
    const std::string want = normalize_name(name);
    for (const auto& e : catalog)
        if (name_matches(want, e.name, e.aliases)) return &e;
    return nullptr;
}

template <class Catalog>
std::string list_names(const Catalog& catalog) {
    std::string out;
    for (const auto& e : catalog) out += (out.empty() ? "" : ", ") + std::string(e.name);
    return out;
}

}  // namespace vramplan::detail
