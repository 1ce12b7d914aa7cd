// SPDX-License-Identifier: Apache-2.0
// Start-up clean-up after a runner (`serve`) or a `run` died without
// cleaning up (kill -9, power loss): what its workers left behind is
// removed, and only that. `serve` calls it when its executor starts, `run`
// before it prepares its own worker directory and cgroup.
//
// Ownership is read from names: worker directories are
// <state_dir>/workers/t-<pid>-<n> (serve) or run-<pid> (run) and worker
// cgroups <base>/w-<pid>-<n> or <base>/run-<pid>, spawn pool slots
// <base>/w-<pid>-p<n> (a parked child dies with its runner, its empty slot
// stays), where <pid> is the process that made them. Leftovers of a pid that
// is no longer alive are ours to remove: cgroups beneath our own cgroup
// that our predecessor created, whose processes are its workers. Those of a
// live pid (another runner sharing the state directory or cgroup) are left
// alone; a live pid counts as the owner only if that process started before
// the leftover was made (its start time, /proc/<pid>/stat, against the
// directory's mtime), since pids are reused.
//
// A worker directory goes only after everything mounted beneath it
// (/proc/self/mountinfo: the overlay on rootfs/, tmpfs mounts, anything
// else) is detached, deepest first, and nothing is left mounted there.
#pragma once

#include <string>
#include <vector>

#include "nps/cgroup/delegation.hpp"

namespace nps::executor {

struct RecoveryReport {
    std::size_t worker_dirs = 0;       // directories removed (their overlay unmounted)
    std::size_t unmounted = 0;         // mounts detached beneath them
    std::size_t cgroups = 0;           // cgroup directories removed
    std::size_t killed = 0;            // leftover worker processes killed
    std::vector<std::string> problems; // what could not be removed, and why
};

// `state_dir` may be empty (no worker directories to look at), `cgroups`
// null (no cgroups on this host, or none to look at).
RecoveryReport remove_stale_workers(const std::string& state_dir, const cgroup::CgroupBase* cgroups);

}  // namespace nps::executor
