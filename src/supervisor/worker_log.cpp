// SPDX-License-Identifier: Apache-2.0
#include "nps/supervisor/worker_log.hpp"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

namespace nps::supervisor {

namespace {

std::string rotated_name(const std::string& path, std::uint32_t n)
{
    return path + "." + std::to_string(n);
}

std::string marker(std::uint64_t max_bytes)
{
    return "\n[nps-runner: this log reached its limit of " + std::to_string(max_bytes) +
           " bytes; later output is dropped]\n";
}

}  // namespace

Result<void> RotatingLog::open_file()
{
    const auto slash = path_.rfind('/');
    if (slash != std::string::npos && slash > 0) {
        const std::string dir = path_.substr(0, slash);
        if (::mkdir(dir.c_str(), 0750) < 0 && errno != EEXIST)
            return system_error_errno("Failed to create log directory '" + dir + "'");
    }
    fd_ = UniqueFd(::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640));
    if (!fd_)
        return system_error_errno("Failed to open log '" + path_ + "'");
    size_ = 0;
    return {};
}

Result<void> RotatingLog::rotate()
{
    fd_.reset();
    // Oldest first, so no rename overwrites a file still to be moved.
    (void)::unlink(rotated_name(path_, limits_.keep).c_str());
    for (std::uint32_t n = limits_.keep; n > 1; --n) {
        if (::rename(rotated_name(path_, n - 1).c_str(), rotated_name(path_, n).c_str()) < 0 && errno != ENOENT)
            return system_error_errno("Failed to rotate log '" + rotated_name(path_, n - 1) + "'");
    }
    if (::rename(path_.c_str(), rotated_name(path_, 1).c_str()) < 0)
        return system_error_errno("Failed to rotate log '" + path_ + "'");
    return open_file();
}

Result<void> RotatingLog::write_all(std::string_view bytes)
{
    while (!bytes.empty()) {
        ssize_t n = ::write(fd_.get(), bytes.data(), bytes.size());
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return system_error_errno("Failed to write log '" + path_ + "'");
        bytes.remove_prefix(static_cast<std::size_t>(n));
        size_ += static_cast<std::uint64_t>(n);
    }
    return {};
}

void RotatingLog::write(std::string_view bytes)
{
    if (path_.empty() || bytes.empty())
        return;
    if (error_ || full_) {
        dropped_ += bytes.size();
        return;
    }
    auto fail = [&](Error e) {
        error_ = std::move(e);
        fd_.reset();
        dropped_ += bytes.size();
    };
    if (!fd_) {
        if (auto opened = open_file(); !opened)
            return fail(opened.error());
    }
    const std::uint64_t max = limits_.max_bytes;
    if (limits_.keep > 0) {
        // Only the last (keep + 1) × max bytes can survive the rotations this
        // write would cause; skip what would be rotated away unseen.
        const std::uint64_t survivable = max * (limits_.keep + 1ull);
        if (bytes.size() > survivable) {
            written_ += bytes.size() - survivable;
            bytes.remove_prefix(bytes.size() - survivable);
        }
    }
    while (!bytes.empty()) {
        if (size_ >= max) {
            if (limits_.keep == 0) {
                (void)write_all(marker(max));
                full_ = true;
                fd_.reset();
                dropped_ += bytes.size();
                return;
            }
            if (auto rotated = rotate(); !rotated)
                return fail(rotated.error());
        }
        const std::size_t room = static_cast<std::size_t>(std::min<std::uint64_t>(max - size_, bytes.size()));
        if (auto wrote = write_all(bytes.substr(0, room)); !wrote)
            return fail(wrote.error());
        written_ += room;
        bytes.remove_prefix(room);
    }
}

Result<std::string> read_log_tail(const std::string& path, std::size_t max_bytes)
{
    std::vector<std::string> pieces;  // newest first
    std::size_t total = 0;
    for (std::uint32_t n = 0; total < max_bytes; ++n) {
        const std::string name = n == 0 ? path : rotated_name(path, n);
        UniqueFd fd(::open(name.c_str(), O_RDONLY | O_CLOEXEC));
        if (!fd) {
            if (errno == ENOENT)
                break;
            return system_error_errno("Failed to open log '" + name + "'");
        }
        struct stat st {};
        if (::fstat(fd.get(), &st) < 0)
            return system_error_errno("Failed to stat log '" + name + "'");
        const std::size_t size = static_cast<std::size_t>(st.st_size);
        const std::size_t want = std::min(size, max_bytes - total);
        std::string piece(want, '\0');
        std::size_t got = 0;
        while (got < want) {
            ssize_t r = ::pread(fd.get(), piece.data() + got, want - got, static_cast<off_t>(size - want + got));
            if (r < 0 && errno == EINTR)
                continue;
            if (r < 0)
                return system_error_errno("Failed to read log '" + name + "'");
            if (r == 0)
                break;
            got += static_cast<std::size_t>(r);
        }
        piece.resize(got);
        total += got;
        pieces.push_back(std::move(piece));
        if (n == 1000)
            break;
    }
    std::string out;
    out.reserve(total);
    for (auto it = pieces.rbegin(); it != pieces.rend(); ++it)
        out += *it;
    return out;
}

}  // namespace nps::supervisor
