// SPDX-License-Identifier: Apache-2.0
// The metadata of a tar entry (owner, mode, times, xattrs), checked, and
// applied to what the unpacker made for it.
#pragma once

#include <sys/types.h>
#include <time.h>

#include <archive.h>
#include <archive_entry.h>

#include <string>
#include <string_view>
#include <vector>

#include "nps/base/result.hpp"
#include "nps/image/layer_unpack.hpp"

namespace nps::image::detail {

struct Xattr {
    const char* name;    // owned by the archive entry
    const void* value;
    std::size_t size;
};

struct EntryMetadata {
    uid_t uid = 0;
    gid_t gid = 0;
    mode_t permissions = 0;  // 07777 bits
    timespec times[2] {};    // atime (the mtime when the archive has none), mtime
    std::vector<Xattr> xattrs;  // trusted.overlay.* already dropped
};

// Refuses (naming `entry`) ids that are not valid uid_t/gid_t values and
// more xattrs than limits::kLayerMaxXattrsPerEntry / ...BytesPerEntry.
// Dropped overlay xattrs are counted in stats.xattrs_skipped.
Result<EntryMetadata> read_metadata(archive_entry* entry, std::string_view name, UnpackStats& stats);

enum class Times {
    apply,
    defer,  // directories: their times are set once all entries are in
};

// Owner, then mode (chown clears set-id bits), then xattrs (chown also
// clears security.capability), then times, on an open fd.
Result<void> apply_metadata(int fd, const EntryMetadata& meta, Times times, std::string_view name,
                            UnpackStats& stats);

// The same for the symlink `name` in `dir_fd`, never following it.
Result<void> apply_symlink_metadata(int dir_fd, const char* name, const EntryMetadata& meta,
                                    std::string_view entry, UnpackStats& stats);

}  // namespace nps::image::detail
