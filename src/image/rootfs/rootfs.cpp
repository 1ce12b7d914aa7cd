// SPDX-License-Identifier: Apache-2.0
#include "nps/image/rootfs.hpp"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <optional>

#include "nps/base/limits.hpp"
#include "nps/base/unique_fd.hpp"
#include "idmapped_layers.hpp"
#include "overlay_mount.hpp"
#include "../store/remove_tree.hpp"

namespace nps::image {

namespace {

struct MountPoint {
    const char* name;
    mode_t mode;
};

// What the sandbox mounts over (sandbox/mounts.cpp): fresh /proc, a tmpfs
// /dev and a tmpfs /tmp.
constexpr MountPoint kMountPoints[] = {{"proc", 0555}, {"dev", 0755}, {"tmp", 01777}};

Result<void> make_dir(const std::string& path, mode_t mode)
{
    if (::mkdir(path.c_str(), mode) < 0) {
        if (errno == EEXIST)
            return system_error("Failed to create '" + path +
                                    "': it exists (a previous worker of this name was not cleaned up)",
                                EEXIST);
        return system_error_errno("Failed to create '" + path + "'");
    }
    // mkdir() applies the umask; the mode must not depend on it.
    if (::chmod(path.c_str(), mode) < 0)
        return system_error_errno("Failed to set the mode of '" + path + "'");
    return {};
}

// Writes go to the upper directory: unlinking a lower non-directory leaves
// a whiteout there, and the new directory lives there.
Result<void> ensure_mount_points(const std::string& rootfs)
{
    UniqueFd root(::open(rootfs.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!root)
        return system_error_errno("Failed to open rootfs '" + rootfs + "'");
    for (const MountPoint& mp : kMountPoints) {
        std::string path = rootfs + "/" + mp.name;
        struct stat st {};
        if (::fstatat(root.get(), mp.name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
            if (S_ISDIR(st.st_mode))
                continue;
            if (::unlinkat(root.get(), mp.name, 0) < 0)
                return system_error_errno("Failed to replace '" + path + "' with a directory");
        } else if (errno != ENOENT) {
            return system_error_errno("Failed to inspect '" + path + "'");
        }
        if (::mkdirat(root.get(), mp.name, mp.mode) < 0)
            return system_error_errno("Failed to create mount point '" + path + "'");
        // mkdirat() applied the umask and dropped the sticky bit.
        UniqueFd dir(::openat(root.get(), mp.name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        if (!dir || ::fchmod(dir.get(), mp.mode) < 0)
            return system_error_errno("Failed to set the mode of '" + path + "'");
    }
    return {};
}

}  // namespace

Result<OverlayRootfs> OverlayRootfs::mount(const OverlayOptions& options)
{
    if (options.lower_dirs.empty())
        return internal_error("Failed to mount a rootfs in '" + options.worker_dir + "': the image has no layers");
    if (options.lower_dirs.size() > limits::kLayerMaxChainDepth)
        return internal_error("Failed to mount a rootfs in '" + options.worker_dir + "': " +
                              std::to_string(options.lower_dirs.size()) + " layers, more than overlayfs stacks (" +
                              std::to_string(limits::kLayerMaxChainDepth) + ")");
    if (options.disk_bytes && options.retention == UpperRetention::keep)
        return internal_error("Failed to mount a rootfs in '" + options.worker_dir +
                              "': an upper directory in a bounded writable space cannot be kept");
    // With a space, the worker's directory is the space's mount point and
    // everything else lives on the tmpfs: one directory per worker on the
    // state directory's disk, not three (no metadata written there for
    // upper/, work/ or rootfs/; on ext4 without a journal each new inode
    // also walks the recently freed ones).
    std::error_code ec;
    if (options.disk_bytes)
        std::filesystem::create_directories(std::filesystem::path(options.worker_dir).parent_path(), ec);
    else if (std::filesystem::create_directories(options.worker_dir, ec) &&
             ::chmod(options.worker_dir.c_str(), 0700) < 0)
        return system_error_errno("Failed to set the mode of '" + options.worker_dir + "'");
    if (ec)
        return system_error("Failed to create worker directory '" + options.worker_dir + "'", ec.value());

    // From here on the destructor undoes whatever was made.
    OverlayRootfs fs;
    fs.retention_ = options.retention;
    fs.active_ = true;
    if (options.disk_bytes) {
        fs.space_.emplace(NPS_TRY(WorkerSpace::mount({.dir = options.worker_dir,
                                                       .bytes = *options.disk_bytes,
                                                       .owner_uid = options.space_owner_uid,
                                                       .owner_gid = options.space_owner_gid})));
        // Both go with the space's tmpfs: nothing to remove one by one.
        fs.upper_ = fs.space_->upper_dir();
        fs.work_ = fs.space_->work_dir();
    } else {
        NPS_TRY_VOID(make_dir(options.worker_dir + "/upper", 0755));
        fs.upper_ = options.worker_dir + "/upper";
        NPS_TRY_VOID(make_dir(options.worker_dir + "/work", 0700));
        fs.work_ = options.worker_dir + "/work";
    }
    NPS_TRY_VOID(make_dir(options.worker_dir + "/rootfs", 0755));
    fs.rootfs_ = options.worker_dir + "/rootfs";

    const detail::OverlayMount mount{
        .lower_dirs = options.lower_dirs,
        .upper_dir = fs.upper_,
        .work_dir = fs.work_,
        .target = fs.rootfs_,
        .api = options.mount_api,
    };
    if (options.idmap_userns_fd >= 0) {
        // The overlay holds its own clones of the layers once mounted. Ours,
        // given by descriptor, stay detached until release() all the same
        // (rootfs.hpp); ones attached at paths (older kernels) go at once,
        // so none shows in the host's mount table while the worker runs.
        fs.idmapped_ = std::make_unique<detail::IdmappedLayers>(
            NPS_TRY(detail::IdmappedLayers::clone(options.lower_dirs, options.idmap_userns_fd)));
        detail::IdmappedLayers& idmapped = *fs.idmapped_;
        if (!NPS_TRY(detail::mount_overlay_from_fds(mount, idmapped.fds()))) {
            NPS_TRY_VOID(idmapped.attach(options.worker_dir + "/layers"));
            NPS_TRY_VOID(detail::mount_overlay({.lower_dirs = idmapped.paths(),
                                                .upper_dir = fs.upper_,
                                                .work_dir = fs.work_,
                                                .target = fs.rootfs_,
                                                .api = options.mount_api}));
            fs.idmapped_.reset();
        }
    } else {
        NPS_TRY_VOID(detail::mount_overlay(mount));
    }
    fs.mounted_ = true;
    NPS_TRY_VOID(ensure_mount_points(fs.rootfs_));
    return fs;
}

OverlayRootfs::OverlayRootfs(OverlayRootfs&& other) noexcept
    : upper_(std::move(other.upper_)),
      work_(std::move(other.work_)),
      rootfs_(std::move(other.rootfs_)),
      space_(std::exchange(other.space_, std::nullopt)),
      idmapped_(std::move(other.idmapped_)),
      retention_(other.retention_),
      mounted_(std::exchange(other.mounted_, false)),
      active_(std::exchange(other.active_, false))
{
}

OverlayRootfs& OverlayRootfs::operator=(OverlayRootfs&& other) noexcept
{
    if (this != &other) {
        (void)release();
        upper_ = std::move(other.upper_);
        work_ = std::move(other.work_);
        rootfs_ = std::move(other.rootfs_);
        space_ = std::exchange(other.space_, std::nullopt);
        idmapped_ = std::move(other.idmapped_);
        retention_ = other.retention_;
        mounted_ = std::exchange(other.mounted_, false);
        active_ = std::exchange(other.active_, false);
    }
    return *this;
}

OverlayRootfs::~OverlayRootfs()
{
    (void)release();
}

Result<void> OverlayRootfs::release()
{
    if (!active_)
        return {};
    if (mounted_) {
        if (::umount2(rootfs_.c_str(), UMOUNT_NOFOLLOW) < 0) {
            // Busy (an fd or a cwd inside): detached now, freed by the
            // kernel when the last user goes.
            if (errno != EBUSY || ::umount2(rootfs_.c_str(), UMOUNT_NOFOLLOW | MNT_DETACH) < 0)
                // Still mounted: removing the upper beneath a live overlay is
                // not safe, so everything stays for a later attempt.
                return system_error_errno("Failed to unmount overlay '" + rootfs_ + "'");
        }
        mounted_ = false;
    }
    idmapped_.reset();  // the detached clones: their drop waits for a grace period, here rather than at the start
    std::optional<Error> first;
    auto note = [&](Result<void> r) {
        if (!r && !first)
            first = std::move(r).error();
    };
    if (space_) {
        // rootfs/ goes with the tmpfs, and the worker's directory with it.
        note(space_->release());
        space_.reset();
    } else {
        if (!rootfs_.empty() && ::rmdir(rootfs_.c_str()) < 0 && errno != ENOENT)
            note(system_error_errno("Failed to remove '" + rootfs_ + "'"));
        if (!work_.empty())
            note(detail::remove_tree(work_));
        if (!upper_.empty() && retention_ == UpperRetention::remove)
            note(detail::remove_tree(upper_));
    }
    active_ = false;
    if (first)
        return *first;
    return {};
}

}  // namespace nps::image
