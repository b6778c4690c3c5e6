// A GGUF (v2, v3) reader that trusts nothing in the file: every count, length, dimension and
// offset is checked against the file size and for overflow before it is used, and a malformed
// file is an error naming the problem and its byte offset. The file is opened read-only and only
// its header is parsed here; tensor data is read on request into caller-provided memory.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "vramplan/error.hpp"
#include "vramplan/format/checked_math.hpp"
#include "vramplan/io/gguf_types.hpp"
#include "vramplan/io/input_file.hpp"

namespace vramplan::io {

class gguf_error : public error {
public:
    using error::error;
};

namespace detail {

// Reads little-endian values from a byte buffer with bounds checks.
class byte_cursor {
public:
    byte_cursor(const std::string& source, const std::uint8_t* data, std::uint64_t size)
        : source_(source), data_(data), size_(size) {}

    [[noreturn]] void fail(const std::string& what) const { fail_at(pos_, what); }
    [[noreturn]] void fail_at(std::uint64_t at, const std::string& what) const {
        throw gguf_error("gguf: " + source_ + ": " + what + " (at byte offset " + std::to_string(at) + ")");
    }
    std::uint64_t pos() const { return pos_; }
    std::uint64_t remaining() const { return size_ - pos_; }

    void need(std::uint64_t n, const char* what) const {
        if (n > remaining())
            fail(std::string("file truncated: ") + what + " needs " + std::to_string(n) + " bytes but only " +
                 std::to_string(remaining()) + " remain");
    }
    template <class T>
    T read(const char* what) {
        need(sizeof(T), what);
        T v;
        std::memcpy(&v, data_ + pos_, sizeof(T));
        pos_ += sizeof(T);
        return v;
    }
    std::string read_string(const char* what) {
        const std::uint64_t at = pos_;
        const auto len = read<std::uint64_t>(what);
        if (len > remaining())
            fail_at(at,
                    std::string(what) + ": string length " + std::to_string(len) + " runs past the end of the file");
        std::string s(reinterpret_cast<const char*>(data_ + pos_), static_cast<std::size_t>(len));
        pos_ += len;
        return s;
    }
    void skip(std::uint64_t n, const char* what) {
        need(n, what);
        pos_ += n;
    }

private:
    std::string source_;
    const std::uint8_t* data_;
    std::uint64_t size_;
    std::uint64_t pos_ = 0;
};

inline std::uint64_t scalar_size(gguf_type t) {
    switch (t) {
        case gguf_type::u8:
        case gguf_type::i8:
        case gguf_type::boolean: return 1;
        case gguf_type::u16:
        case gguf_type::i16: return 2;
        case gguf_type::u32:
        case gguf_type::i32:
        case gguf_type::f32: return 4;
        case gguf_type::u64:
        case gguf_type::i64:
        case gguf_type::f64: return 8;
        default: return 0;
    }
}

inline void read_scalar(byte_cursor& c, gguf_type t, gguf_value& v, bool into_array) {
    auto put_u = [&](std::uint64_t x) {
        if (into_array)
            v.ints.push_back(static_cast<std::int64_t>(x));
        else
            v.u = x;
    };
    auto put_i = [&](std::int64_t x) {
        if (into_array)
            v.ints.push_back(x);
        else
            v.i = x;
    };
    auto put_f = [&](double x) {
        if (into_array)
            v.floats.push_back(x);
        else
            v.f = x;
    };
    switch (t) {
        case gguf_type::u8: put_u(c.read<std::uint8_t>("u8 value")); break;
        case gguf_type::i8: put_i(c.read<std::int8_t>("i8 value")); break;
        case gguf_type::u16: put_u(c.read<std::uint16_t>("u16 value")); break;
        case gguf_type::i16: put_i(c.read<std::int16_t>("i16 value")); break;
        case gguf_type::u32: put_u(c.read<std::uint32_t>("u32 value")); break;
        case gguf_type::i32: put_i(c.read<std::int32_t>("i32 value")); break;
        case gguf_type::f32: put_f(c.read<float>("f32 value")); break;
        case gguf_type::u64: put_u(c.read<std::uint64_t>("u64 value")); break;
        case gguf_type::i64: put_i(c.read<std::int64_t>("i64 value")); break;
        case gguf_type::f64: put_f(c.read<double>("f64 value")); break;
        case gguf_type::boolean: {
            const auto b = c.read<std::uint8_t>("bool value");
            if (b > 1) c.fail("bool value " + std::to_string(b) + " is neither 0 nor 1");
            put_u(b);
            break;
        }
        default: c.fail("internal: not a scalar type");
    }
}

inline void read_value(byte_cursor& c, gguf_type t, gguf_value& v, int depth) {
    v.type = t;
    if (t == gguf_type::string) {
        v.s = c.read_string("string value");
        return;
    }
    if (t != gguf_type::array) {
        if (scalar_size(t) == 0) c.fail("unknown metadata value type " + std::to_string(static_cast<std::uint32_t>(t)));
        read_scalar(c, t, v, false);
        return;
    }
    const std::uint64_t at = c.pos();
    const auto elem = static_cast<gguf_type>(c.read<std::uint32_t>("array element type"));
    const auto count = c.read<std::uint64_t>("array length");
    v.elem = elem;
    v.count = count;
    if (elem == gguf_type::string) {
        if (count > c.remaining() / 8)
            c.fail_at(at, "array of " + std::to_string(count) + " strings cannot fit in the rest of the file");
        v.strings.reserve(static_cast<std::size_t>(count));
        for (std::uint64_t k = 0; k < count; ++k) v.strings.push_back(c.read_string("array string"));
    } else if (elem == gguf_type::array) {
        if (depth >= 3) c.fail_at(at, "arrays nested more than 3 deep");
        if (count > c.remaining() / 12)
            c.fail_at(at, "array of " + std::to_string(count) + " arrays cannot fit in the rest of the file");
        for (std::uint64_t k = 0; k < count; ++k) {
            gguf_value inner;  // nested arrays are validated and skipped: no key vramplan reads uses them
            const auto inner_type = static_cast<gguf_type>(elem);
            read_value(c, inner_type, inner, depth + 1);
        }
    } else {
        const std::uint64_t size = scalar_size(elem);
        if (size == 0) c.fail_at(at, "unknown array element type " + std::to_string(static_cast<std::uint32_t>(elem)));
        if (count > c.remaining() / size)
            c.fail_at(at, "array of " + std::to_string(count) + " values runs past the end of the file");
        if (elem == gguf_type::f32 || elem == gguf_type::f64)
            v.floats.reserve(static_cast<std::size_t>(count));
        else
            v.ints.reserve(static_cast<std::size_t>(count));
        for (std::uint64_t k = 0; k < count; ++k) read_scalar(c, elem, v, true);
    }
}

}  // namespace detail

class gguf_file {
public:
    // Parses and validates the header of the file at `path` (the data section is not read).
    static gguf_file open(const std::string& path) {
        const input_file in = [&] {
            try {
                return input_file::open(path, "GGUF model");
            } catch (const error& e) {
                throw gguf_error(std::string("gguf: ") + e.what());
            }
        }();
        const std::uint64_t size = in.size();
        // The header is at most the whole file; read it in growing chunks so a small header of a
        // large file costs little. Memory never exceeds the file's own size.
        std::uint64_t chunk = std::min<std::uint64_t>(size, 1 << 20);
        std::vector<std::uint8_t> buf;
        for (;;) {
            buf.resize(static_cast<std::size_t>(chunk));
            try {
                in.read_at(0, buf.data(), chunk);
            } catch (const error& e) {
                throw gguf_error(std::string("gguf: ") + e.what());
            }
            try {
                return parse(path, buf.data(), chunk, size);
            } catch (const gguf_error&) {
                if (chunk == size) throw;
                chunk = std::min<std::uint64_t>(size, chunk * 8);
            }
        }
    }

    // Parses a header held in memory: `bytes` are the first `available` bytes of a file of
    // `file_size` bytes (pass the same number twice for a whole file).
    static gguf_file parse(const std::string& source, const std::uint8_t* bytes, std::uint64_t available,
                           std::uint64_t file_size) {
        detail::byte_cursor c(source, bytes, available);
        gguf_file g;
        g.path_ = source;
        g.file_size_ = file_size;
        if (c.read<std::uint32_t>("magic") != gguf_magic) c.fail_at(0, "not a GGUF file (bad magic; expected 'GGUF')");
        g.version_ = c.read<std::uint32_t>("version");
        if (g.version_ != 2 && g.version_ != 3)
            c.fail_at(4,
                      "unsupported GGUF version " + std::to_string(g.version_) + " (vramplan reads versions 2 and 3)");
        const auto n_tensors = c.read<std::uint64_t>("tensor count");
        const auto n_kv = c.read<std::uint64_t>("metadata count");
        // Each metadata entry takes at least 13 bytes and each tensor info at least 28: counts
        // beyond that are corrupt, and would otherwise drive huge allocations.
        if (n_kv > file_size / 13)
            c.fail_at(16, "metadata count " + std::to_string(n_kv) + " is impossible for a file of " +
                              std::to_string(file_size) + " bytes");
        if (n_tensors > file_size / 28)
            c.fail_at(8, "tensor count " + std::to_string(n_tensors) + " is impossible for a file of " +
                             std::to_string(file_size) + " bytes");
        for (std::uint64_t k = 0; k < n_kv; ++k) {
            const std::uint64_t at = c.pos();
            std::string key = c.read_string("metadata key");
            const auto type = static_cast<gguf_type>(c.read<std::uint32_t>("metadata value type"));
            gguf_value v;
            detail::read_value(c, type, v, 0);
            if (!g.metadata_.emplace(std::move(key), std::move(v)).second) c.fail_at(at, "duplicate metadata key");
        }
        if (auto it = g.metadata_.find("general.alignment"); it != g.metadata_.end()) {
            const auto& v = it->second;
            if (v.type != gguf_type::u32 || v.u == 0 || (v.u & (v.u - 1)) != 0)
                c.fail("general.alignment must be a power-of-two u32, got " + std::to_string(v.u));
            g.alignment_ = v.u;
        }
        g.tensors_.reserve(static_cast<std::size_t>(n_tensors));
        for (std::uint64_t k = 0; k < n_tensors; ++k) {
            const std::uint64_t at = c.pos();
            gguf_tensor_info t;
            t.name = c.read_string("tensor name");
            const auto n_dims = c.read<std::uint32_t>("tensor dimension count");
            if (n_dims == 0 || n_dims > gguf_max_dims)
                c.fail_at(at, "tensor '" + t.name + "' has " + std::to_string(n_dims) + " dimensions (1 to 4 allowed)");
            for (std::uint32_t d = 0; d < n_dims; ++d) {
                const auto ne = c.read<std::uint64_t>("tensor dimension");
                if (ne == 0 || ne > (1ull << 62))
                    c.fail_at(at, "tensor '" + t.name + "' has an invalid dimension " + std::to_string(ne));
                t.dims.push_back(ne);
            }
            const auto type = c.read<std::uint32_t>("tensor type");
            try {
                t.fmt = format_by_gguf_type(type);
                std::uint64_t rows = 1;
                for (std::size_t d = 1; d < t.dims.size(); ++d) rows = checked_mul(rows, t.dims[d]);
                t.bytes = tensor_bytes(t.fmt, rows, t.dims[0]);
            } catch (const gguf_error&) {
                throw;
            } catch (const error& e) {
                c.fail_at(at, "tensor '" + t.name + "': " + e.what());
            }
            t.offset = c.read<std::uint64_t>("tensor data offset");
            if (t.offset % g.alignment_ != 0)
                c.fail_at(at, "tensor '" + t.name + "' data offset " + std::to_string(t.offset) +
                                  " is not aligned to " + std::to_string(g.alignment_));
            g.tensors_.push_back(std::move(t));
        }
        g.data_offset_ = align_up(c.pos(), g.alignment_);
        std::vector<const gguf_tensor_info*> by_offset;
        for (auto& t : g.tensors_) {
            t.file_offset = checked_add(g.data_offset_, t.offset);
            if (t.file_offset > file_size || t.bytes > file_size - t.file_offset)
                c.fail_at(t.file_offset, "tensor '" + t.name + "' data (" + std::to_string(t.bytes) +
                                             " bytes at offset " + std::to_string(t.file_offset) +
                                             ") runs past the end of the file (" + std::to_string(file_size) +
                                             " bytes)");
            by_offset.push_back(&t);
        }
        std::sort(by_offset.begin(), by_offset.end(), [](auto* a, auto* b) { return a->offset < b->offset; });
        for (std::size_t k = 1; k < by_offset.size(); ++k)
            if (by_offset[k - 1]->offset + by_offset[k - 1]->bytes > by_offset[k]->offset)
                c.fail_at(by_offset[k]->file_offset,
                          "tensors '" + by_offset[k - 1]->name + "' and '" + by_offset[k]->name + "' overlap");
        for (std::size_t k = 0; k < g.tensors_.size(); ++k)
            if (!g.index_.emplace(g.tensors_[k].name, k).second)
                c.fail("duplicate tensor name '" + g.tensors_[k].name + "'");
        return g;
    }

    const std::string& path() const { return path_; }
    std::uint32_t version() const { return version_; }
    std::uint64_t alignment() const { return alignment_; }
    std::uint64_t data_offset() const { return data_offset_; }
    std::uint64_t file_size() const { return file_size_; }
    const std::map<std::string, gguf_value>& metadata() const { return metadata_; }
    const std::vector<gguf_tensor_info>& tensors() const { return tensors_; }

    const gguf_value* find(const std::string& key) const {
        auto it = metadata_.find(key);
        return it == metadata_.end() ? nullptr : &it->second;
    }
    const gguf_tensor_info* find_tensor(const std::string& name) const {
        auto it = index_.find(name);
        return it == index_.end() ? nullptr : &tensors_[it->second];
    }

    [[noreturn]] void fail(const std::string& what) const { throw gguf_error("gguf: " + path_ + ": " + what); }

    // Typed metadata access; a missing key or a value of another kind is an error naming the key.
    std::uint64_t get_uint(const std::string& key) const {
        const gguf_value* v = find(key);
        if (!v) fail("missing metadata key '" + key + "'");
        switch (v->type) {
            case gguf_type::u8:
            case gguf_type::u16:
            case gguf_type::u32:
            case gguf_type::u64: return v->u;
            case gguf_type::i8:
            case gguf_type::i16:
            case gguf_type::i32:
            case gguf_type::i64:
                if (v->i < 0) fail("metadata key '" + key + "' is negative");
                return static_cast<std::uint64_t>(v->i);
            default: fail("metadata key '" + key + "' is not an integer");
        }
    }
    std::uint64_t get_uint(const std::string& key, std::uint64_t fallback) const {
        return find(key) ? get_uint(key) : fallback;
    }
    double get_float(const std::string& key, double fallback) const {
        const gguf_value* v = find(key);
        if (!v) return fallback;
        if (v->type != gguf_type::f32 && v->type != gguf_type::f64) fail("metadata key '" + key + "' is not a float");
        return v->f;
    }
    const std::string& get_string(const std::string& key) const {
        const gguf_value* v = find(key);
        if (!v) fail("missing metadata key '" + key + "'");
        if (v->type != gguf_type::string) fail("metadata key '" + key + "' is not a string");
        return v->s;
    }
    const gguf_value& get_array(const std::string& key, gguf_type elem) const {
        const gguf_value* v = find(key);
        if (!v) fail("missing metadata key '" + key + "'");
        if (v->type != gguf_type::array || v->elem != elem)
            fail("metadata key '" + key + "' is not an array of the expected type");
        return *v;
    }

    // Reads one tensor's bytes into `dst` (which must hold t.bytes), in one read.
    void read_tensor(const gguf_tensor_info& t, void* dst) const {
        std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path_.c_str(), "rb"), &std::fclose);
        if (!f) fail(std::string("cannot reopen for reading: ") + std::strerror(errno));
        read_tensor(f.get(), t, dst);
    }
    void read_tensor(std::FILE* f, const gguf_tensor_info& t, void* dst) const {
        if (std::fseek(f, static_cast<long>(t.file_offset), SEEK_SET) != 0 || std::fread(dst, 1, t.bytes, f) != t.bytes)
            fail("could not read " + std::to_string(t.bytes) + " bytes of tensor '" + t.name + "' at offset " +
                 std::to_string(t.file_offset) +
                 ": the file ends sooner than its header says (truncated, or changed while it was read)");
    }

private:
    std::string path_;
    std::uint32_t version_ = 0;
    std::uint64_t alignment_ = gguf_default_alignment;
    std::uint64_t data_offset_ = 0;
    std::uint64_t file_size_ = 0;
    std::map<std::string, gguf_value> metadata_;
    std::vector<gguf_tensor_info> tensors_;
    std::map<std::string, std::size_t> index_;
};

}  // namespace vramplan::io
