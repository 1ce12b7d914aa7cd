// SPDX-License-Identifier: Apache-2.0
// Bytes a directory tree costs its own file system (du -x), for the tests of
// the workers' bounded writable space: what a worker's files cost the host's
// disk, its tmpfs space left out. And a file system filled to the last byte,
// for the tests of a full disk.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace nps::test {

inline std::uintmax_t disk_bytes_beneath(const std::string& dir)
{
    struct stat top {};
    if (::lstat(dir.c_str(), &top) < 0)
        return 0;
    std::uintmax_t total = 0;
    std::error_code ec;
    for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
         it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
        struct stat st {};
        if (::lstat(it->path().c_str(), &st) < 0)
            continue;
        if (st.st_dev != top.st_dev) {  // another file system (the tmpfs space): not descended
            it.disable_recursion_pending();
            continue;
        }
        total += static_cast<std::uintmax_t>(st.st_blocks) * 512;
    }
    return total;
}

// Writes the new file `path` until its file system is full (64 KiB blocks,
// then 512 bytes). False when the file cannot be created.
inline bool fill_filesystem(const std::string& path)
{
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return false;
    std::vector<char> block(64 * 1024, 'x');
    while (::write(fd, block.data(), block.size()) > 0) {
    }
    std::vector<char> small(512, 'x');
    while (::write(fd, small.data(), small.size()) > 0) {
    }
    ::close(fd);
    return true;
}

}  // namespace nps::test
