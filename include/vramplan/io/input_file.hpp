// A file named by a user, opened for reading: the one place that turns every way a path can be
// wrong (missing, a directory, a FIFO, a socket, a device, empty, unreadable, a symlink loop) into
// one sentence naming the path and what to do, before a byte is read. Opening never blocks (a FIFO
// is refused, not waited on), and reads are exact: a file that ends before what its header claims
// (truncated, or shrinking while it is read) is an error, never a short buffer.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>

#include "vramplan/error.hpp"

namespace vramplan::io {

class input_file {
public:
    // `what` names what the file should be ("GGUF model", "config.json"), for the messages.
    static input_file open(const std::string& path, std::string_view what) {
        const std::string head = "'" + path + "'";
        const std::string expected = std::string(what);
        // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
        const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0) {
            const int e = errno;
            switch (e) {
                case ENOENT: throw error(head + " does not exist; give the path of the " + expected);
                case EACCES:
                    throw error(head +
                                " is not readable by this user (permission denied); make it readable or copy it");
                case ELOOP:
                    throw error(head + " is a loop of symbolic links; point the link at the " + expected + " itself");
                case ENOTDIR: throw error(head + ": a part of the path is not a directory");
                case ENXIO: throw error(head + " is a socket or a device, not a " + expected + " file");
                default: throw error("cannot open " + head + ": " + std::strerror(e));
            }
        }
        input_file f(fd, path);
        struct stat st {};
        if (::fstat(fd, &st) != 0) throw error("cannot examine " + head + ": " + std::strerror(errno));
        if (S_ISDIR(st.st_mode))
            throw error(head + " is a directory, not a " + expected + " file; give the path of the file inside it");
        if (S_ISFIFO(st.st_mode))
            throw error(head + " is a FIFO (named pipe), not a " + expected + " file; give a regular file");
        if (S_ISSOCK(st.st_mode)) throw error(head + " is a socket, not a " + expected + " file; give a regular file");
        if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode))
            throw error(head + " is a device, not a " + expected + " file; give a regular file");
        if (!S_ISREG(st.st_mode)) throw error(head + " is not a regular file; give the " + expected + " file");
        if (st.st_size <= 0) throw error(head + " is empty (0 bytes), not a " + expected + " file");
        f.size_ = static_cast<std::uint64_t>(st.st_size);
        const int flags = ::fcntl(fd, F_GETFL);
        if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
        return f;
    }

    input_file(input_file&& o) noexcept : fd_(std::exchange(o.fd_, -1)), size_(o.size_), path_(std::move(o.path_)) {}
    input_file& operator=(input_file&& o) noexcept {
        if (this != &o) {
            close();
            fd_ = std::exchange(o.fd_, -1);
            size_ = o.size_;
            path_ = std::move(o.path_);
        }
        return *this;
    }
    input_file(const input_file&) = delete;
    input_file& operator=(const input_file&) = delete;
    ~input_file() { close(); }

    const std::string& path() const { return path_; }
    std::uint64_t size() const { return size_; }  // when opened

    // Exactly n bytes at offset, or an error saying where the file ended.
    void read_at(std::uint64_t offset, void* dst, std::uint64_t n) const {
        auto* out = static_cast<char*>(dst);
        std::uint64_t done = 0;
        while (done < n) {
            const ::ssize_t got =
                ::pread(fd_, out + done, static_cast<std::size_t>(n - done), static_cast<::off_t>(offset + done));
            if (got < 0) {
                if (errno == EINTR) continue;
                throw error("cannot read '" + path_ + "' at offset " + std::to_string(offset + done) + ": " +
                            std::strerror(errno));
            }
            if (got == 0)
                throw error("'" + path_ + "' ends at byte " + std::to_string(offset + done) + ", before the " +
                            std::to_string(n) + " bytes at offset " + std::to_string(offset) +
                            " it should hold (truncated, or changed while it was read)");
            done += static_cast<std::uint64_t>(got);
        }
    }

    // The whole file as text, refused past `limit` bytes (what such a file can honestly be).
    std::string read_all(std::uint64_t limit, std::string_view what) const {
        if (size_ > limit)
            throw error("'" + path_ + "' is " + std::to_string(size_) + " bytes, more than a " + std::string(what) +
                        " can be (at most " + std::to_string(limit) + ")");
        std::string s(static_cast<std::size_t>(size_), '\0');
        read_at(0, s.data(), size_);
        return s;
    }

private:
    input_file(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
    void close() noexcept {
        if (fd_ >= 0) ::close(fd_);
        fd_ = -1;
    }

    int fd_ = -1;
    std::uint64_t size_ = 0;
    std::string path_;
};

}  // namespace vramplan::io
