// SPDX-License-Identifier: Apache-2.0
// Internal to image/: how much disk the store's files take.
#pragma once

#include <cstdint>
#include <string>

#include "nps/base/result.hpp"

namespace nps::image::detail {

// Bytes allocated (st_blocks × 512) to everything under `path`, not
// following symlinks or crossing mounts; 0 when it does not exist.
std::uint64_t disk_usage(const std::string& path);

struct FilesystemUsage {
    std::uint64_t total_bytes = 0;
    std::uint64_t used_bytes = 0;
};
Result<FilesystemUsage> filesystem_usage(const std::string& path);

}  // namespace nps::image::detail
