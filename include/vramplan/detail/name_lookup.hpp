// Catalog look-up as people type names: case and separators are forgiven ("RTX 4060 8GB",
// "rtx-4060-8gb" and "rtx_4060_8gb" name the same device; "Llama-3.1-70B" and "llama3.1-70b" the
// same model). A name several entries answer to (an alias they share) is ambiguous and lists them;
// an unknown name suggests the nearest ones.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "vramplan/error.hpp"

namespace vramplan::detail {

// Lower case, no separators, and no vendor or family word in front ("NVIDIA GeForce RTX 4090",
// "RTX 4090" and "4090" are one name): people leave those out, and drivers put them in.
inline std::string normalize_name(std::string_view s) {
    std::string out;
    for (char c : s) {
        if (c == ' ' || c == '-' || c == '_' || c == '.') continue;
        out += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    }
    for (bool stripped = true; stripped;) {
        stripped = false;
        for (std::string_view prefix : {"nvidia", "geforce", "rtx", "gtx"})
            if (out.size() > prefix.size() && out.compare(0, prefix.size(), prefix) == 0) {
                out.erase(0, prefix.size());
                stripped = true;
            }
    }
    return out;
}

template <class Fn>
void for_each_name(std::string_view name, std::string_view aliases, Fn&& fn) {
    fn(name);
    while (!aliases.empty()) {
        const auto sp = aliases.find(' ');
        fn(aliases.substr(0, sp));
        aliases = sp == std::string_view::npos ? std::string_view{} : aliases.substr(sp + 1);
    }
}

// Whether `want` (normalized) is the entry's name or one of its space-separated aliases.
inline bool name_matches(const std::string& want, std::string_view name, std::string_view aliases) {
    bool hit = false;
    for_each_name(name, aliases, [&](std::string_view n) { hit = hit || normalize_name(n) == want; });
    return hit;
}

// Every entry that answers to `name`.
template <class Catalog>
auto find_all_by_name(const Catalog& catalog, std::string_view name) {
    const std::string want = normalize_name(name);
    std::vector<decltype(&catalog[0])> out;
    for (const auto& e : catalog)
        if (name_matches(want, e.name, e.aliases)) out.push_back(&e);
    return out;
}

// The one entry `name` names, or nullptr; a name that several entries answer to is an error
// listing them (`what`: "GPU", "model").
template <class Catalog>
auto find_by_name(const Catalog& catalog, std::string_view name, std::string_view what = "entry")
    -> decltype(&catalog[0]) {
    const auto all = find_all_by_name(catalog, name);
    if (all.size() > 1) {
        std::string list;
        for (const auto* e : all) list += (list.empty() ? "" : ", ") + std::string(e->name);
        throw error("'" + std::string(name) + "' names several " + std::string(what) + "s: " + list +
                    "; give the one you mean");
    }
    return all.empty() ? nullptr : all.front();
}

// Edits between two normalized names: insertions, deletions, substitutions and swaps of two
// neighbouring characters (the commonest typo: "4009" for "4090" is one edit).
inline std::size_t edit_distance(const std::string& a, const std::string& b) {
    const std::size_t n = a.size(), m = b.size();
    std::vector<std::size_t> d((n + 1) * (m + 1));
    auto at = [&](std::size_t i, std::size_t j) -> std::size_t& { return d[i * (m + 1) + j]; };
    for (std::size_t i = 0; i <= n; ++i) at(i, 0) = i;
    for (std::size_t j = 0; j <= m; ++j) at(0, j) = j;
    for (std::size_t i = 1; i <= n; ++i)
        for (std::size_t j = 1; j <= m; ++j) {
            at(i, j) =
                std::min({at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + (a[i - 1] == b[j - 1] ? 0 : 1)});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                at(i, j) = std::min(at(i, j), at(i - 2, j - 2) + 1);
        }
    return at(n, m);
}

// Up to three entries whose name or an alias is nearest to `name` (within a third of its length,
// and at least two edits), nearest first; or those that contain it, when it is part of a name.
template <class Catalog>
std::string nearest_names(const Catalog& catalog, std::string_view name) {
    const std::string want = normalize_name(name);
    const std::size_t limit = std::max<std::size_t>(2, want.size() / 3);
    std::vector<std::pair<std::size_t, std::string>> scored;
    for (const auto& e : catalog) {
        std::size_t best = ~std::size_t{0};
        for_each_name(e.name, e.aliases, [&](std::string_view n) {
            const std::string have = normalize_name(n);
            const std::size_t d = have.find(want) != std::string::npos && !want.empty() ? 0 : edit_distance(want, have);
            best = std::min(best, d);
        });
        if (best <= limit) scored.emplace_back(best, std::string(e.name));
    }
    std::stable_sort(scored.begin(), scored.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    std::string out;
    for (std::size_t i = 0; i < scored.size() && i < 3; ++i) out += (out.empty() ? "" : ", ") + scored[i].second;
    return out;
}

template <class Catalog>
std::string list_names(const Catalog& catalog) {
    std::string out;
    for (const auto& e : catalog) out += (out.empty() ? "" : ", ") + std::string(e.name);
    return out;
}

}  // namespace vramplan::detail
