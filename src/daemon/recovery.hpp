// SPDX-License-Identifier: Apache-2.0
// Start-up clean-up after a runner died without cleaning up (kill -9, power
// loss): what its workers left behind is removed, and only that.
//
// Ownership is read from names: worker directories are
// <state_dir>/workers/t-<pid>-<n> and worker cgroups <base>/w-<pid>-<n>,
// spawn pool slots <base>/w-<pid>-p<n> (a parked child dies with its runner,
// its empty slot stays), where <pid> is the runner process that made them. Leftovers of a pid that
// is no longer alive are ours to remove: cgroups beneath our own cgroup
// that our predecessor created, whose processes are its workers. Those of a
// live pid (another runner sharing the state directory or cgroup) are left
// alone.
#pragma once

#include <string>
#include <vector>

#include "nps/cgroup/delegation.hpp"

namespace nps::daemon {

struct RecoveryReport {
    std::size_t worker_dirs = 0;       // directories removed (their overlay unmounted)
    std::size_t cgroups = 0;           // cgroup directories removed
    std::size_t killed = 0;            // leftover worker processes killed
    std::vector<std::string> problems; // what could not be removed, and why
};

// `cgroups` may be null (no cgroups on this host).
RecoveryReport remove_stale_workers(const std::string& state_dir, const cgroup::CgroupBase* cgroups);

}  // namespace nps::daemon
