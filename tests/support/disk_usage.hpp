// SPDX-License-Identifier: Apache-2.0
// Bytes a directory tree costs its own file system (du -x), for the tests of
// the workers' bounded writable space: what a worker's files cost the host's
// disk, its tmpfs space left out.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <filesystem>
#include <string>

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

}  // namespace nps::test
