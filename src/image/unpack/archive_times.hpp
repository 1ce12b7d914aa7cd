// SPDX-License-Identifier: Apache-2.0
// The modification and access times of a libarchive entry, read at the width
// of libarchive's own time_t. The runner uses a 64-bit time_t everywhere,
// also on 32-bit ARM (_TIME_BITS=64), while Debian 12 builds its 32-bit
// libraries with a 32-bit one: calling archive_entry_mtime() through the
// header would read half of the answer from a stale register there
// (docs/platforms.md, "32-bit ARM").
#pragma once

#include <archive_entry.h>

#include <cstdint>
#include <optional>

namespace nps::image::detail {

struct ArchiveTime {
    std::int64_t seconds = 0;
    long nanoseconds = 0;
};

ArchiveTime entry_mtime(archive_entry* entry);
// nullopt when the entry carries no access time.
std::optional<ArchiveTime> entry_atime(archive_entry* entry);

}  // namespace nps::image::detail
