// SPDX-License-Identifier: Apache-2.0
// The root filesystem of one worker made from an image: the image pinned
// (so gc and rm leave it alone), every layer unpacked once into the layer
// cache, and an overlay of them with this worker's own upper directory.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "nps/base/limits.hpp"
#include "nps/base/result.hpp"
#include "nps/image/image_store.hpp"
#include "nps/image/rootfs.hpp"

namespace nps::image {

struct WorkerRootfsRequest {
    std::string ref;         // image name or digest (ImageStore::resolve)
    std::string worker_dir;  // e.g. <state_dir>/workers/<worker>; must not hold upper/, work/, rootfs/
    std::string holder;      // who pins the image, for operators ("run 1234", "worker w-17")
    // The worker's disk limit: its overlay upper, /tmp and /dev/shm share a
    // tmpfs of this size (OverlayOptions::disk_bytes, worker_space.hpp).
    std::uint64_t disk_bytes = limits::kDefaultWorkerDiskBytes;
    // The worker's user namespace, when it runs in one: its fd (>= 0) and
    // the host ids of its root, who owns the writable space
    // (OverlayOptions::idmap_userns_fd).
    int userns_fd = -1;
    uid_t userns_root_uid = 0;
    gid_t userns_root_gid = 0;
};

// Owns, in this order of release: the overlay, then the pin.
struct WorkerRootfs {
    PinnedImage pinned;
    OverlayRootfs overlay;

    const std::string& path() const { return overlay.path(); }
    // SandboxSpec::writable.host_dir for this rootfs.
    std::string space_dir() const { return overlay.space_dir(); }
    const ImageConfig& config() const { return pinned.image.config; }
};

Result<WorkerRootfs> prepare_worker_rootfs(ImageStore& store, const WorkerRootfsRequest& request);

}  // namespace nps::image
