// SPDX-License-Identifier: Apache-2.0
// WorkerSpace: a worker's bounded writable space on the host
// (sandbox/writable_space.hpp, docs/sandbox.md "Disk"). One tmpfs of the
// worker's disk limit, mounted in the runner's mount namespace on `dir`
// (nosuid, nodev, source "nps-worker", options sandbox::space_tmpfs_options,
// a root-owned 0700 root: it is a worker's directory, OverlayRootfs puts
// its rootfs/ mount point there too), holding
//   upper/  0755  the overlay's upper directory
//   work/   0700  overlayfs's work directory
//   tmp/    1777  bound onto the sandbox's /tmp
//   shm/    1777  bound onto the sandbox's /dev/shm
// so the worker's changes to its root, /tmp and /dev/shm together hold at
// most `bytes`, in memory charged to the worker's memory cgroup (the task
// that writes a tmpfs page pays for it), never on the host's disk.
// upper/, tmp/ and shm/ belong to owner_uid:owner_gid (the sandbox's root
// as the host sees it; 0 without a user namespace).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "nps/base/result.hpp"

namespace nps::image {

struct WorkerSpaceOptions {
    std::string dir;      // the mount point: made (0700), must not exist yet
    std::uint64_t bytes;  // limits::kMinWorkerDiskBytes .. kMaxWorkerDiskBytes
    uid_t owner_uid = 0;
    gid_t owner_gid = 0;
};

class WorkerSpace {
public:
    static Result<WorkerSpace> mount(const WorkerSpaceOptions& options);

    WorkerSpace(WorkerSpace&& other) noexcept;
    WorkerSpace& operator=(WorkerSpace&& other) noexcept;
    WorkerSpace(const WorkerSpace&) = delete;
    WorkerSpace& operator=(const WorkerSpace&) = delete;
    // release(), errors ignored.
    ~WorkerSpace();

    const std::string& dir() const { return dir_; }
    std::string upper_dir() const { return dir_ + "/upper"; }
    std::string work_dir() const { return dir_ + "/work"; }

    // Unmounts the tmpfs (lazily when busy: the kernel frees it when the
    // last user goes), which drops everything in it, and removes `dir`.
    // Call after the overlay on upper/ is unmounted. Idempotent.
    Result<void> release();

private:
    WorkerSpace() = default;

    std::string dir_;
    bool mounted_ = false;
    bool active_ = false;
};

}  // namespace nps::image
