// SPDX-License-Identifier: Apache-2.0
#include "disk_usage.hpp"

#include <ftw.h>
#include <sys/statvfs.h>

namespace nps::image::detail {

namespace {

// nftw has no user pointer; one walk per thread at a time.
thread_local std::uint64_t walk_total = 0;

int add_entry(const char*, const struct stat* st, int type, FTW*)
{
    if (type != FTW_NS)
        walk_total += static_cast<std::uint64_t>(st->st_blocks) * 512;
    return 0;
}

}  // namespace

std::uint64_t disk_usage(const std::string& path)
{
    walk_total = 0;
    ::nftw(path.c_str(), add_entry, 32, FTW_PHYS | FTW_MOUNT);
    return walk_total;
}

Result<FilesystemUsage> filesystem_usage(const std::string& path)
{
    struct statvfs vfs{};
    if (::statvfs(path.c_str(), &vfs) != 0)
        return system_error_errno("Failed to measure the filesystem of '" + path + "'");
    const std::uint64_t unit = vfs.f_frsize ? vfs.f_frsize : vfs.f_bsize;
    return FilesystemUsage{static_cast<std::uint64_t>(vfs.f_blocks) * unit,
                           static_cast<std::uint64_t>(vfs.f_blocks - vfs.f_bfree) * unit};
}

}  // namespace nps::image::detail
