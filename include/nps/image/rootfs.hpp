// SPDX-License-Identifier: Apache-2.0
// OverlayRootfs: a worker's root filesystem, an overlay of read-only image
// layers under a writable upper directory of its own. A second worker of
// the same image costs one mount: the layers are shared, only the upper
// directory is per worker.
//
// Layout, in the worker's directory (<state_dir>/workers/<name>/):
//   upper/  the worker's changes       work/  overlayfs's scratch
//   rootfs/ the mount point, what the sandbox gets as its rootfs
// or, with a disk limit (disk_bytes), the worker's directory is itself the
// bounded writable space (worker_space.hpp), a tmpfs of disk_bytes holding
//   upper/, work/, tmp/ and shm/ (the sandbox's /tmp and /dev/shm)
//   rootfs/ the mount point
// so the state directory's disk sees one directory per worker.
// The overlay is mounted nodev. Mount points the sandbox needs (/proc,
// /dev, /tmp) are made in the upper directory when the image lacks them;
// one that the image has as a non-directory (a symlink, say) is replaced by
// a directory, so the sandbox never mounts through an image's symlink.
//
// Long layer chains (up to limits::kLayerMaxChainDepth) are mounted with the
// new mount API, one "lowerdir+" per layer (kernel >= 6.8; by file
// descriptor from 6.13), so no option string limits them; older kernels
// get mount(2) with one page of options, /proc/self/fd/<n> per layer,
// which holds a couple of hundred layers, and a clear error beyond.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nps/base/result.hpp"
#include "nps/image/worker_space.hpp"

namespace nps::image {

namespace detail {
class IdmappedLayers;
}

enum class UpperRetention {
    remove,  // upper/, work/ and rootfs/ go when the rootfs is released
    keep,    // upper/ stays (inspection after a failure); work/ and rootfs/ go
};

// How the overlay is mounted: automatic everywhere but in the tests of the
// paths older kernels take.
enum class OverlayMountApi {
    automatic,         // the best the kernel has, in the order below
    lowerdir_by_fd,    // new mount API, "lowerdir+" by file descriptor (kernel >= 6.13)
    lowerdir_by_path,  // new mount API, "lowerdir+" by path (kernel >= 6.8)
    legacy,            // mount(2) with a "lowerdir=" option string
};

struct OverlayOptions {
    std::vector<std::string> lower_dirs;  // unpacked layer directories, TOP layer first
    // Without disk_bytes: made (0700) when missing, must not hold upper/,
    // work/ or rootfs/. With disk_bytes: must not exist (the space's mount
    // point); its parent is made when missing.
    std::string worker_dir;
    UpperRetention retention = UpperRetention::remove;
    OverlayMountApi mount_api = OverlayMountApi::automatic;
    // With a value, upper, work and rootfs/ live in a WorkerSpace of this many
    // bytes mounted on worker_dir, which release() unmounts and removes; UpperRetention::keep is
    // then refused (the upper lives in memory). Without, they are plain
    // directories on worker_dir's filesystem, unbounded.
    std::optional<std::uint64_t> disk_bytes;
    uid_t space_owner_uid = 0;  // WorkerSpaceOptions::owner_uid / owner_gid
    gid_t space_owner_gid = 0;
    // >= 0: a user namespace (an fd, not consumed) the worker runs in. The
    // overlay is mounted from idmapped clones of the layers (idmapped_layers.hpp;
    // detached ones are kept until release(): dropping one waits for an RCU
    // grace period, which belongs to the teardown, not to the worker's
    // start), so the layers' owner 0 is that namespace's root: the sandbox
    // then needs no idmapped rootfs of its own. Give the space to the
    // namespace's root (space_owner_*) with it.
    int idmap_userns_fd = -1;
};

class OverlayRootfs {
public:
    static Result<OverlayRootfs> mount(const OverlayOptions& options);

    OverlayRootfs(OverlayRootfs&& other) noexcept;
    OverlayRootfs& operator=(OverlayRootfs&& other) noexcept;
    OverlayRootfs(const OverlayRootfs&) = delete;
    OverlayRootfs& operator=(const OverlayRootfs&) = delete;
    // release(), errors ignored.
    ~OverlayRootfs();

    // The merged root (worker_dir/rootfs).
    const std::string& path() const { return rootfs_; }
    const std::string& upper_dir() const { return upper_; }
    // The writable space holding tmp/ and shm/ (SandboxSpec::writable.host_dir);
    // "" without a disk limit.
    std::string space_dir() const { return space_ ? space_->dir() : std::string(); }

    // Unmounts (lazily, MNT_DETACH, when busy) and removes the directories
    // as `retention` says. Call once the sandbox's processes are gone.
    // Idempotent; the first error is returned after every step was tried.
    Result<void> release();

private:
    OverlayRootfs() = default;

    std::string upper_;
    std::string work_;
    std::string rootfs_;
    std::optional<WorkerSpace> space_;
    std::unique_ptr<detail::IdmappedLayers> idmapped_;  // with idmap_userns_fd
    UpperRetention retention_ = UpperRetention::remove;
    bool mounted_ = false;
    bool active_ = false;
};

}  // namespace nps::image
