// SPDX-License-Identifier: Apache-2.0
#include "entry_metadata.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>

#include "nps/base/limits.hpp"
#include "archive_times.hpp"

namespace nps::image::detail {

namespace {

// overlayfs reads its own state from these; a layer that carried them could
// redirect lookups or hide lower files. Only the unpacker sets them (opaque).
constexpr std::string_view kOverlayXattrPrefix = "trusted.overlay.";

// Errors meaning "this kernel or filesystem does not take this xattr":
// skipped and counted, as the layer stays usable without it.
bool xattr_refused_by_host(int err)
{
    return err == EOPNOTSUPP || err == EPERM || err == EINVAL || err == E2BIG || err == ERANGE;
}

Error refuse(std::string_view name, const std::string& why)
{
    return internal_error("Refusing layer entry '" + std::string(name) + "': " + why);
}

bool valid_id(la_int64_t id)
{
    // (uid_t)-1 means "no change" to chown, so it is no valid owner.
    return id >= 0 && id < static_cast<la_int64_t>(std::numeric_limits<uid_t>::max());
}

Error failed(const char* what, std::string_view name)
{
    return system_error_errno(std::string("Failed to ") + what + " of '" + std::string(name) + "' in the layer");
}

}  // namespace

Result<EntryMetadata> read_metadata(archive_entry* entry, std::string_view name, UnpackStats& stats)
{
    EntryMetadata meta;
    la_int64_t uid = archive_entry_uid(entry);
    la_int64_t gid = archive_entry_gid(entry);
    if (!valid_id(uid) || !valid_id(gid))
        return refuse(name, "owner " + std::to_string(uid) + ":" + std::to_string(gid) + " out of range");
    meta.uid = static_cast<uid_t>(uid);
    meta.gid = static_cast<gid_t>(gid);
    meta.permissions = archive_entry_perm(entry) & 07777;
    const ArchiveTime mtime = entry_mtime(entry);
    const ArchiveTime atime = entry_atime(entry).value_or(mtime);
    meta.times[1] = timespec{static_cast<time_t>(mtime.seconds), mtime.nanoseconds};
    meta.times[0] = timespec{static_cast<time_t>(atime.seconds), atime.nanoseconds};

    int count = archive_entry_xattr_reset(entry);
    if (count < 0 || static_cast<std::size_t>(count) > limits::kLayerMaxXattrsPerEntry)
        return refuse(name, "more extended attributes than the per-entry limit");
    std::size_t bytes = 0;
    const char* xname = nullptr;
    const void* value = nullptr;
    std::size_t size = 0;
    while (archive_entry_xattr_next(entry, &xname, &value, &size) == ARCHIVE_OK) {
        if (xname == nullptr)
            continue;
        bytes += std::strlen(xname) + size;
        if (bytes > limits::kLayerMaxXattrBytesPerEntry)
            return refuse(name, "extended attributes larger than the per-entry limit");
        if (std::string_view(xname).substr(0, kOverlayXattrPrefix.size()) == kOverlayXattrPrefix) {
            ++stats.xattrs_skipped;
            continue;
        }
        meta.xattrs.push_back({xname, value, size});
    }
    return meta;
}

Result<void> apply_metadata(int fd, const EntryMetadata& meta, Times times, std::string_view name,
                            UnpackStats& stats)
{
    if (::fchown(fd, meta.uid, meta.gid) < 0)
        return failed("set the owner", name);
    if (::fchmod(fd, meta.permissions) < 0)
        return failed("set the mode", name);
    for (const Xattr& x : meta.xattrs) {
        if (::fsetxattr(fd, x.name, x.value, x.size, 0) == 0)
            continue;
        if (!xattr_refused_by_host(errno))
            return system_error_errno("Failed to set xattr '" + std::string(x.name) + "' of '" + std::string(name) +
                                      "' in the layer");
        ++stats.xattrs_skipped;
    }
    if (times == Times::apply && ::futimens(fd, meta.times) < 0)
        return failed("set the times", name);
    return {};
}

Result<void> apply_symlink_metadata(int dir_fd, const char* name, const EntryMetadata& meta,
                                    std::string_view entry, UnpackStats& stats)
{
    if (::fchownat(dir_fd, name, meta.uid, meta.gid, AT_SYMLINK_NOFOLLOW) < 0)
        return failed("set the owner", entry);
    if (!meta.xattrs.empty()) {
        // No fd can carry xattrs of a symlink itself (O_PATH fds refuse
        // them), so the path goes through our own directory fd; lsetxattr
        // does not follow the final symlink.
        char path[64 + 256];  // a name is at most NAME_MAX (255) bytes
        int n = std::snprintf(path, sizeof path, "/proc/self/fd/%d/%s", dir_fd, name);
        if (n <= 0 || static_cast<std::size_t>(n) >= sizeof path)
            return refuse(entry, "name too long");
        for (const Xattr& x : meta.xattrs) {
            if (::lsetxattr(path, x.name, x.value, x.size, 0) == 0)
                continue;
            if (!xattr_refused_by_host(errno))
                return system_error_errno("Failed to set xattr '" + std::string(x.name) + "' of '" +
                                          std::string(entry) + "' in the layer");
            ++stats.xattrs_skipped;
        }
    }
    if (::utimensat(dir_fd, name, meta.times, AT_SYMLINK_NOFOLLOW) < 0)
        return failed("set the times", entry);
    return {};
}

}  // namespace nps::image::detail
