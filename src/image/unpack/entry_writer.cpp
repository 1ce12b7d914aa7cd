// SPDX-License-Identifier: Apache-2.0
#include "entry_writer.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "nps/base/limits.hpp"
#include "nps/base/unique_fd.hpp"

namespace nps::image::detail {

namespace {

Error refuse(const EntryPath& path, const std::string& why)
{
    return internal_error("Refusing layer entry '" + path.full() + "': " + why);
}

Error failed(const char* what, const EntryPath& path)
{
    return system_error_errno(std::string("Failed to ") + what + " '" + path.full() + "' in the layer");
}

Result<void> write_all(int fd, const DataBlock& block, const EntryPath& path)
{
    const char* data = static_cast<const char*>(block.data);
    std::size_t left = block.size;
    off_t offset = block.offset;
    while (left > 0) {
        ssize_t n = ::pwrite(fd, data, left, offset);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return failed("write", path);
        data += n;
        left -= static_cast<std::size_t>(n);
        offset += n;
    }
    return {};
}

constexpr const char kOpaqueXattr[] = "trusted.overlay.opaque";

}  // namespace

Result<void> EntryWriter::write(archive_entry* entry, const EntryPath& path, LayerStream& stream)
{
    const std::string full = path.full();
    int parent = NPS_TRY(dir_.directory(path.parent, full));

    if (path.name == kOpaqueWhiteout)
        return opaque(parent, path);
    if (path.name.compare(0, kWhiteoutPrefix.size(), kWhiteoutPrefix) == 0)
        return whiteout(parent, path);

    const char* link_target = archive_entry_hardlink(entry);
    mode_t type = archive_entry_filetype(entry);
    if (path.name.empty() && (link_target != nullptr || type != AE_IFDIR))
        return refuse(path, "the layer root is not a directory");
    if (link_target != nullptr)
        return hard_link(parent, path, link_target);

    EntryMetadata meta = NPS_TRY(read_metadata(entry, full, stats_));
    switch (type) {
    case AE_IFREG: return regular_file(parent, path, meta, entry, stream);
    case AE_IFDIR: return directory(parent, path, meta);
    case AE_IFLNK: return symlink(parent, path, meta, entry);
    case AE_IFIFO: return fifo(parent, path, meta);
    case AE_IFCHR:
    case AE_IFBLK:
        if (options_.device_nodes == DeviceNodes::refuse)
            return refuse(path, "device node (the device policy refuses them)");
        ++stats_.devices_skipped;
        return {};
    default:
        return refuse(path, "unsupported entry type " + std::to_string(type));
    }
}

Result<void> EntryWriter::clear(int parent, const EntryPath& path)
{
    struct stat st {};
    if (::fstatat(parent, path.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) < 0)
        return errno == ENOENT ? Result<void>() : failed("inspect", path);
    if (!S_ISDIR(st.st_mode)) {
        if (::unlinkat(parent, path.name.c_str(), 0) < 0)
            return failed("replace", path);
        return {};
    }
    if (::unlinkat(parent, path.name.c_str(), AT_REMOVEDIR) < 0)
        return errno == ENOTEMPTY ? refuse(path, "replaces a non-empty directory") : failed("replace", path);
    dir_.forget_beneath(path.full());
    return {};
}

Result<void> EntryWriter::regular_file(int parent, const EntryPath& path, const EntryMetadata& meta,
                                       archive_entry* entry, LayerStream& stream)
{
    la_int64_t declared = archive_entry_size(entry);
    if (declared < 0 || static_cast<std::uint64_t>(declared) > options_.max_file_bytes)
        return refuse(path, "declared size " + std::to_string(declared) + " exceeds the layer byte limit");
    constexpr int kFlags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
    UniqueFd fd(::openat(parent, path.name.c_str(), kFlags, 0600));
    if (!fd && errno == EEXIST) {
        NPS_TRY_VOID(clear(parent, path));
        fd = UniqueFd(::openat(parent, path.name.c_str(), kFlags, 0600));
    }
    if (!fd)
        return failed("create", path);

    std::int64_t end = 0;
    for (;;) {
        std::optional<DataBlock> block = NPS_TRY(stream.next_block());
        if (!block)
            break;
        if (block->offset < 0 || block->offset > declared ||
            static_cast<std::uint64_t>(declared - block->offset) < block->size)
            return refuse(path, "file data beyond its declared size");
        NPS_TRY_VOID(write_all(fd.get(), *block, path));
        end = block->offset + static_cast<std::int64_t>(block->size);
    }
    // A sparse file's trailing hole has no data block.
    if (end < declared && ::ftruncate(fd.get(), declared) < 0)
        return failed("extend", path);
    // Start writing the data back now, without waiting: the final syncfs()
    // then finds most of the layer on disk already instead of flushing it
    // all at the end. Only a hint; its failure changes nothing.
    if (options_.durability == Durability::sync && declared > 0)
        (void)::sync_file_range(fd.get(), 0, 0, SYNC_FILE_RANGE_WRITE);
    NPS_TRY_VOID(apply_metadata(fd.get(), meta, Times::apply, path.full(), stats_));
    ++stats_.regular_files;
    return {};
}

Result<void> EntryWriter::directory(int parent, const EntryPath& path, const EntryMetadata& meta)
{
    UniqueFd fd;
    if (path.name.empty()) {
        fd = UniqueFd(::fcntl(dir_.fd(), F_DUPFD_CLOEXEC, 0));
    } else {
        if (::mkdirat(parent, path.name.c_str(), 0700) < 0) {
            if (errno != EEXIST)
                return failed("create directory", path);
            struct stat st {};
            if (::fstatat(parent, path.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) < 0)
                return failed("inspect", path);
            if (!S_ISDIR(st.st_mode)) {
                NPS_TRY_VOID(clear(parent, path));
                if (::mkdirat(parent, path.name.c_str(), 0700) < 0)
                    return failed("create directory", path);
            }
        }
        fd = UniqueFd(open_beneath(parent, path.name.c_str(), O_RDONLY | O_DIRECTORY));
    }
    if (!fd)
        return failed("open directory", path);
    NPS_TRY_VOID(apply_metadata(fd.get(), meta, Times::defer, path.full(), stats_));
    dir_times_.push_back({path.full(), {meta.times[0], meta.times[1]}});
    ++stats_.directories;
    return {};
}

Result<void> EntryWriter::symlink(int parent, const EntryPath& path, const EntryMetadata& meta, archive_entry* entry)
{
    // The target is stored as it is and never resolved here; inside the
    // sandbox it resolves against the sandbox's root.
    const char* target = archive_entry_symlink(entry);
    if (target == nullptr || *target == '\0')
        return refuse(path, "symbolic link without a target");
    if (std::strlen(target) > limits::kLayerMaxPathBytes)
        return refuse(path, "symbolic link target longer than the layer path limit");
    if (::symlinkat(target, parent, path.name.c_str()) < 0) {
        if (errno != EEXIST)
            return failed("create symbolic link", path);
        NPS_TRY_VOID(clear(parent, path));
        if (::symlinkat(target, parent, path.name.c_str()) < 0)
            return failed("create symbolic link", path);
    }
    NPS_TRY_VOID(apply_symlink_metadata(parent, path.name.c_str(), meta, path.full(), stats_));
    ++stats_.symlinks;
    return {};
}

Result<void> EntryWriter::hard_link(int parent, const EntryPath& path, const char* target)
{
    Result<EntryPath> parsed = parse_entry_path(target);
    if (!parsed)
        return refuse(path, "hard link target: " + parsed.error().message);
    const EntryPath& to = *parsed;
    if (to.name.empty() || to.aufs_meta || to.name.compare(0, kWhiteoutPrefix.size(), kWhiteoutPrefix) == 0)
        return refuse(path, "hard link to '" + std::string(target) + "'");
    if (to.full() == path.full())
        return {};  // a link to itself changes nothing
    // The target's directory is looked up beneath the layer root like any
    // other path; linkat() without AT_SYMLINK_FOLLOW links a symlink itself,
    // never what it points to. What is not in this layer is not found.
    UniqueFd target_dir;
    int target_parent = dir_.fd();
    if (!to.parent.empty()) {
        target_dir = UniqueFd(open_beneath(dir_.fd(), to.parent.c_str(), O_RDONLY | O_DIRECTORY));
        if (!target_dir)
            return refuse(path, "hard link target '" + to.full() + "' is not in the layer (" +
                                    std::strerror(errno) + ")");
        target_parent = target_dir.get();
    }
    int r = ::linkat(target_parent, to.name.c_str(), parent, path.name.c_str(), 0);
    if (r < 0 && errno == EEXIST) {
        NPS_TRY_VOID(clear(parent, path));
        r = ::linkat(target_parent, to.name.c_str(), parent, path.name.c_str(), 0);
    }
    if (r < 0) {
        if (errno == ENOENT)
            return refuse(path, "hard link target '" + to.full() + "' is not in the layer");
        if (errno == EPERM)
            return refuse(path, "hard link to the directory '" + to.full() + "'");
        return failed("create hard link", path);
    }
    ++stats_.hard_links;
    return {};
}

Result<void> EntryWriter::fifo(int parent, const EntryPath& path, const EntryMetadata& meta)
{
    if (::mknodat(parent, path.name.c_str(), S_IFIFO | 0600, 0) < 0) {
        if (errno != EEXIST)
            return failed("create fifo", path);
        NPS_TRY_VOID(clear(parent, path));
        if (::mknodat(parent, path.name.c_str(), S_IFIFO | 0600, 0) < 0)
            return failed("create fifo", path);
    }
    // A fifo opened for reading without O_NONBLOCK would wait for a writer;
    // with it the open returns at once and the fd carries the metadata.
    UniqueFd fd(open_beneath(parent, path.name.c_str(), O_RDONLY | O_NONBLOCK));
    if (!fd)
        return failed("open fifo", path);
    NPS_TRY_VOID(apply_metadata(fd.get(), meta, Times::apply, path.full(), stats_));
    ++stats_.fifos;
    return {};
}

Result<void> EntryWriter::whiteout(int parent, const EntryPath& path)
{
    std::string hidden = path.name.substr(kWhiteoutPrefix.size());
    if (hidden.empty() || hidden == "." || hidden == "..")
        return refuse(path, "malformed whiteout");
    ++stats_.whiteouts;
    // A whiteout hides lower layers only: an entry of the same name in this
    // layer wins, whichever comes first in the archive (a later one
    // replaces the whiteout device like any earlier entry).
    struct stat st {};
    if (::fstatat(parent, hidden.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0)
        return {};
    if (::mknodat(parent, hidden.c_str(), S_IFCHR | 0000, makedev(0, 0)) < 0)
        return failed("create the whiteout", path);
    return {};
}

Result<void> EntryWriter::opaque(int parent, const EntryPath& path)
{
    // overlayfs hides every lower entry of a directory with this xattr; this
    // layer's own entries in it stay visible.
    if (::fsetxattr(parent, kOpaqueXattr, "y", 1, 0) < 0)
        return failed("mark opaque the directory of", path);
    ++stats_.opaque_dirs;
    return {};
}

Result<void> EntryWriter::finish()
{
    for (const DirTimes& d : dir_times_) {
        UniqueFd fd;
        int target = dir_.fd();
        if (!d.path.empty()) {
            fd = UniqueFd(open_beneath(dir_.fd(), d.path.c_str(), O_RDONLY | O_DIRECTORY));
            // Replaced by a later entry of another type: its times are set.
            if (!fd && (errno == ENOENT || errno == ENOTDIR || errno == ELOOP))
                continue;
            if (!fd)
                return system_error_errno("Failed to open directory '" + d.path + "' in the layer");
            target = fd.get();
        }
        if (::futimens(target, d.times) < 0)
            return system_error_errno("Failed to set the times of directory '" + d.path + "' in the layer");
    }
    return {};
}

}  // namespace nps::image::detail
