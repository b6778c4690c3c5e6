// Writes GGUF v3 files: metadata, tensor infos, aligned tensor data. Tests and examples use it to
// make models with chosen formats; the reader reads back whatever it writes.
#pragma once

#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "vramplan/io/gguf_types.hpp"

namespace vramplan::io {

class gguf_writer {
public:
    explicit gguf_writer(std::uint64_t alignment = gguf_default_alignment) : alignment_(alignment) {}

    gguf_writer& set_u32(const std::string& key, std::uint32_t v) { return kv(key, gguf_type::u32, &v, 4); }
    gguf_writer& set_f32(const std::string& key, float v) { return kv(key, gguf_type::f32, &v, 4); }
    gguf_writer& set_string(const std::string& key, const std::string& v) {
        header(key, gguf_type::string);
        put_string(meta_, v);
        ++n_kv_;
        return *this;
    }
    gguf_writer& set_strings(const std::string& key, const std::vector<std::string>& v) {
        array_header(key, gguf_type::string, v.size());
        for (const auto& s : v) put_string(meta_, s);
        return *this;
    }
    gguf_writer& set_f32s(const std::string& key, const std::vector<float>& v) {
        array_header(key, gguf_type::f32, v.size());
        append(meta_, v.data(), v.size() * 4);
        return *this;
    }
    gguf_writer& set_i32s(const std::string& key, const std::vector<std::int32_t>& v) {
        array_header(key, gguf_type::i32, v.size());
        append(meta_, v.data(), v.size() * 4);
        return *this;
    }

    // dims: ne[0] (the row) first. `data` must hold exactly the tensor's bytes in `fmt`.
    gguf_writer& add_tensor(const std::string& name, std::vector<std::uint64_t> dims, format fmt, const void* data,
                            std::uint64_t bytes) {
        std::uint64_t rows = 1;
        for (std::size_t d = 1; d < dims.size(); ++d) rows *= dims[d];
        if (tensor_bytes(fmt, rows, dims.at(0)) != bytes)
            throw error("gguf_writer: tensor '" + name + "' has the wrong number of bytes for its shape");
        const std::uint64_t offset = data_.size();
        append(data_, data, bytes);
        data_.resize(static_cast<std::size_t>(align_up(data_.size(), alignment_)), 0);
        put_string(infos_, name);
        put(infos_, static_cast<std::uint32_t>(dims.size()));
        for (auto d : dims) put(infos_, d);
        put(infos_, static_cast<std::uint32_t>(fmt.id));
        put(infos_, offset);
        ++n_tensors_;
        return *this;
    }

    std::vector<std::uint8_t> bytes() const {
        std::vector<std::uint8_t> out;
        put(out, gguf_magic);
        put(out, std::uint32_t{3});
        put(out, n_tensors_);
        put(out, n_kv_);
        out.insert(out.end(), meta_.begin(), meta_.end());
        out.insert(out.end(), infos_.begin(), infos_.end());
        out.resize(static_cast<std::size_t>(align_up(out.size(), alignment_)), 0);
        out.insert(out.end(), data_.begin(), data_.end());
        return out;
    }

    void write(const std::string& path) const {
        const auto b = bytes();
        std::ofstream f(path, std::ios::binary | std::ios::trunc);
        f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
        if (!f) throw error("gguf_writer: cannot write '" + path + "'");
    }

private:
    template <class T>
    static void put(std::vector<std::uint8_t>& out, T v) {
        append(out, &v, sizeof v);
    }
    static void append(std::vector<std::uint8_t>& out, const void* p, std::uint64_t n) {
        const auto* b = static_cast<const std::uint8_t*>(p);
        out.insert(out.end(), b, b + n);
    }
    static void put_string(std::vector<std::uint8_t>& out, const std::string& s) {
        put(out, static_cast<std::uint64_t>(s.size()));
        append(out, s.data(), s.size());
    }
    void header(const std::string& key, gguf_type t) {
        put_string(meta_, key);
        put(meta_, static_cast<std::uint32_t>(t));
    }
    gguf_writer& kv(const std::string& key, gguf_type t, const void* v, std::uint64_t n) {
        header(key, t);
        append(meta_, v, n);
        ++n_kv_;
        return *this;
    }
    void array_header(const std::string& key, gguf_type elem, std::uint64_t count) {
        header(key, gguf_type::array);
        put(meta_, static_cast<std::uint32_t>(elem));
        put(meta_, count);
        ++n_kv_;
    }

    std::uint64_t alignment_;
    std::uint64_t n_kv_ = 0, n_tensors_ = 0;
    std::vector<std::uint8_t> meta_, infos_, data_;
};

}  // namespace vramplan::io
