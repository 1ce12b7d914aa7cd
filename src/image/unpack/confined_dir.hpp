// SPDX-License-Identifier: Apache-2.0
// ConfinedDir: the directory a layer is unpacked into, and the only way the
// unpacker reaches anything inside it. Paths are resolved with openat2()
// under RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
// RESOLVE_NO_XDEV, so a symlink (planted by an earlier entry or not), a
// mount point or ".." can never lead a lookup out of it.
#pragma once

#include <string>
#include <utility>
#include <string_view>

#include "nps/base/result.hpp"
#include "nps/base/unique_fd.hpp"

namespace nps::image::detail {

class ConfinedDir {
public:
    // Makes `path` (which must not exist; its parent must) and opens it.
    static Result<ConfinedDir> create_new(const std::string& path);

    int fd() const { return root_.get(); }
    const std::string& path() const { return path_; }

    // The directory `rel` ("" is the root) as an fd owned by this object,
    // valid until the next call or forget_beneath(). Missing directories
    // are made (0755, owned by the caller). Errors name `entry`, the
    // archive entry that needed it: a symlink or non-directory on the way
    // is refused.
    Result<int> directory(std::string_view rel, std::string_view entry);

    // Drops the cached directory if it is `rel` or beneath it: call after
    // removing the directory `rel`.
    void forget_beneath(std::string_view rel);

private:
    ConfinedDir(std::string path, UniqueFd root) : path_(std::move(path)), root_(std::move(root)) {}

    void forget();
    Result<UniqueFd> walk(std::string_view rel, std::string_view entry);
    Error blocked(std::string_view rel, int err, std::string_view entry) const;

    std::string path_;
    UniqueFd root_;
    // Tar archives list a directory's entries together, so the last
    // directory looked up answers most lookups.
    std::string cached_rel_;
    UniqueFd cached_;
};

// openat2(dirfd, path, flags) confined beneath dirfd, following no symlink.
// Returns -1 with errno set on failure.
int open_beneath(int dirfd, const char* path, int flags);

}  // namespace nps::image::detail
