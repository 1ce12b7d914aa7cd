// SPDX-License-Identifier: Apache-2.0
// A worker's bounded writable space (docs/sandbox.md "Disk"): its overlay
// upper directory, /tmp and /dev/shm live on ONE tmpfs whose size is the
// worker's disk limit, so together they hold at most that much; a write
// beyond fails with ENOSPC. tmpfs pages are charged to the memory cgroup of
// the task that faults them in, i.e. the worker's: the host's disk is never
// touched and its memory is spent only within the worker's limits.
#pragma once

#include <cstdint>
#include <string>

#include "nps/base/limits.hpp"

namespace nps::sandbox {

struct WritableSpace {
    // A host directory on such a tmpfs holding the directories "tmp" and
    // "shm" (image::WorkerSpace, which also holds the overlay's upper):
    // they are bound onto the sandbox's /tmp and /dev/shm.
    // Empty: the sandbox mounts a fresh tmpfs of `bytes` for /tmp and
    // /dev/shm itself, in its own mount namespace (it goes with it).
    std::string host_dir;
    std::uint64_t bytes = limits::kDefaultWorkerDiskBytes;  // without host_dir

    bool operator==(const WritableSpace&) const = default;
};

// The tmpfs options of a space of `bytes`: its size, an inode count in
// proportion (limits::kWorkerDiskBytesPerInode), a root-owned root of
// `root_mode` (octal).
inline std::string space_tmpfs_options(std::uint64_t bytes, const char* root_mode = "0755")
{
    std::uint64_t inodes = bytes / limits::kWorkerDiskBytesPerInode;
    if (inodes < limits::kMinWorkerDiskInodes)
        inodes = limits::kMinWorkerDiskInodes;
    return "size=" + std::to_string(bytes) + ",nr_inodes=" + std::to_string(inodes) + ",mode=" + root_mode;
}

// The tmpfs "source" shown in /proc/self/mountinfo for every space, so a
// dead runner's leftovers are easy to find.
inline constexpr const char* kSpaceMountSource = "nps-worker";

}  // namespace nps::sandbox
