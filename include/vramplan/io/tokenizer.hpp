// The SentencePiece-style ("llama") tokenizer stored in GGUF metadata: spaces become U+2581,
// characters are merged pairwise, highest-scoring merge first, and characters outside the
// vocabulary fall back to <0xXX> byte tokens.
#pragma once

#include <cstdint>
#include <queue>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "vramplan/io/gguf_reader.hpp"

namespace vramplan::io {

class tokenizer {
public:
    static constexpr std::string_view space_marker = "\xe2\x96\x81";  // U+2581
    enum token_type : std::int64_t { normal = 1, unknown = 2, control = 3, user_defined = 4, unused = 5, byte = 6 };

    static tokenizer from_gguf(const gguf_file& g) {
        const std::string& model = g.get_string("tokenizer.ggml.model");
        if (model != "llama")
            g.fail("tokenizer '" + model + "' is not supported; vramplan reads SentencePiece ('llama') vocabularies");
        tokenizer t;
        t.tokens_ = g.get_array("tokenizer.ggml.tokens", gguf_type::string).strings;
        const auto n = t.tokens_.size();
        if (const gguf_value* s = g.find("tokenizer.ggml.scores")) {
            if (s->type != gguf_type::array || s->floats.size() != n)
                g.fail("tokenizer.ggml.scores must be " + std::to_string(n) + " floats");
            t.scores_.assign(s->floats.begin(), s->floats.end());
        } else {
            t.scores_.assign(n, 0.0);
        }
        if (const gguf_value* ty = g.find("tokenizer.ggml.token_type")) {
            if (ty->type != gguf_type::array || ty->ints.size() != n)
                g.fail("tokenizer.ggml.token_type must be " + std::to_string(n) + " integers");
            t.types_ = ty->ints;
        } else {
            t.types_.assign(n, normal);
        }
        t.bos_ = static_cast<std::int32_t>(g.get_uint("tokenizer.ggml.bos_token_id", 1));
        t.eos_ = static_cast<std::int32_t>(g.get_uint("tokenizer.ggml.eos_token_id", 2));
        if (static_cast<std::size_t>(t.bos_) >= n || static_cast<std::size_t>(t.eos_) >= n)
            g.fail("BOS/EOS token id outside the vocabulary");
        for (std::size_t i = 0; i < n; ++i) t.index_.emplace(t.tokens_[i], static_cast<std::int32_t>(i));
        for (int b = 0; b < 256; ++b) {
            char name[8];
            std::snprintf(name, sizeof name, "<0x%02X>", b);
            auto it = t.index_.find(name);
            t.byte_token_[b] = it == t.index_.end() ? -1 : it->second;
        }
        return t;
    }

    std::int32_t bos() const { return bos_; }
    std::int32_t eos() const { return eos_; }
    std::size_t size() const { return tokens_.size(); }

    std::vector<std::int32_t> encode(std::string_view text, bool add_bos = true) const {
        std::vector<std::int32_t> out;
        if (add_bos) out.push_back(bos_);
        if (text.empty()) return out;
        std::string s(space_marker);  // SentencePiece's add_dummy_prefix
        for (char c : text) {
            if (c == ' ')
                s += space_marker;
            else
                s += c;
        }
        // Symbols: one per UTF-8 character, in a doubly linked list.
        struct symbol {
            std::size_t start, len;
            int prev, next;
        };
        std::vector<symbol> sym;
        for (std::size_t i = 0; i < s.size();) {
            const auto c = static_cast<unsigned char>(s[i]);
            std::size_t len = c < 0x80 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
            if (i + len > s.size()) len = s.size() - i;
            sym.push_back({i, len, static_cast<int>(sym.size()) - 1, static_cast<int>(sym.size()) + 1});
            i += len;
        }
        sym.back().next = -1;
        struct bigram {
            int left, right;
            double score;
            std::size_t len;
            bool operator<(const bigram& o) const { return score < o.score || (score == o.score && left > o.left); }
        };
        std::priority_queue<bigram> queue;
        auto try_pair = [&](int l, int r) {
            if (l < 0 || r < 0) return;
            const std::string_view joined(s.data() + sym[l].start, sym[l].len + sym[r].len);
            auto it = index_.find(std::string(joined));
            if (it == index_.end()) return;
            queue.push({l, r, scores_[it->second], joined.size()});
        };
        for (std::size_t i = 1; i < sym.size(); ++i) try_pair(static_cast<int>(i) - 1, static_cast<int>(i));
        while (!queue.empty()) {
            const bigram b = queue.top();
            queue.pop();
            symbol& l = sym[b.left];
            symbol& r = sym[b.right];
            if (l.len == 0 || r.len == 0 || l.len + r.len != b.len || l.next != b.right) continue;  // stale
            l.len += r.len;
            r.len = 0;
            l.next = r.next;
            if (r.next >= 0) sym[r.next].prev = b.left;
            try_pair(l.prev, b.left);
            try_pair(b.left, l.next);
        }
        for (int i = 0; i >= 0; i = sym[i].next) {
            const std::string piece = s.substr(sym[i].start, sym[i].len);
            if (auto it = index_.find(piece); it != index_.end()) {
                out.push_back(it->second);
                continue;
            }
            for (unsigned char c : piece) {
                if (byte_token_[c] < 0)
                    throw error("tokenizer: byte 0x" + std::to_string(c) + " has no token and no byte fallback");
                out.push_back(byte_token_[c]);
            }
        }
        return out;
    }

    // The text of one token: U+2581 back to a space, byte tokens to their byte, control tokens empty.
    std::string piece(std::int32_t id) const {
        if (id < 0 || static_cast<std::size_t>(id) >= tokens_.size())
            throw error("tokenizer: token id " + std::to_string(id) + " outside the vocabulary");
        const std::string& t = tokens_[id];
        if (types_[id] == control || types_[id] == unknown || types_[id] == unused) return "";
        if (types_[id] == byte && t.size() == 6) {  // <0xAB>
            auto hex = [&](char c) -> int {
                if (c >= '0' && c <= '9') return c - '0';
                if (c >= 'A' && c <= 'F') return c - 'A' + 10;
                if (c >= 'a' && c <= 'f') return c - 'a' + 10;
                throw error("tokenizer: byte token " + std::to_string(id) + " is '" + t +
                            "', not <0xHH>; the GGUF file's vocabulary is damaged");
            };
            return std::string(1, static_cast<char>(hex(t[3]) * 16 + hex(t[4])));
        }
        std::string out;
        for (std::size_t i = 0; i < t.size();) {
            if (t.compare(i, space_marker.size(), space_marker) == 0) {
                out += ' ';
                i += space_marker.size();
            } else {
                out += t[i++];
            }
        }
        return out;
    }

    // Text of a sequence; the space SentencePiece put before the first word is dropped.
    std::string decode(const std::vector<std::int32_t>& ids) const {
        std::string out;
        for (auto id : ids) out += piece(id);
        if (!out.empty() && out[0] == ' ') out.erase(0, 1);
        return out;
    }

private:
    std::vector<std::string> tokens_;
    std::vector<double> scores_;
    std::vector<std::int64_t> types_;
    std::unordered_map<std::string, std::int32_t> index_;
    std::int32_t byte_token_[256]{};
    std::int32_t bos_ = 1, eos_ = 2;
};

}  // namespace vramplan::io
