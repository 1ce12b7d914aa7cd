// SPDX-License-Identifier: Apache-2.0
// The body of `nps-runner run`: one sandboxed command attached to this
// process's stdio, with optional cgroup limits and time limits.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "nps/cgroup/delegation.hpp"
#include "nps/cgroup/worker_cgroup.hpp"
#include "nps/sandbox/spawner.hpp"

namespace nps::cli {

// The command's own exit status is passed through; these are ours.
inline constexpr int kExitTimeLimit = 124;       // as timeout(1): a time limit stopped the command
inline constexpr int kExitSandboxFailure = 125;  // as podman: the command never ran

struct RunRequest {
    sandbox::SandboxSpec sandbox;
    cgroup::CgroupLimits limits;  // none set: no cgroup is made
    cgroup::Enforcement enforcement = cgroup::Enforcement::strict;
    std::optional<std::uint32_t> max_runtime_seconds;
    std::optional<std::uint32_t> idle_timeout_seconds;  // no byte on stdout/stderr for this long
    bool terminal = false;  // run -t: a pty of its own as stdio and controlling terminal
};

// Removes what dead `run`s and runners left in `state_dir`/workers (when
// not empty) and beneath `cgroups` (when not null), as `serve` does at
// start (nps/daemon/recovery.hpp); says on stderr what it removed and what
// it could not.
void remove_dead_leftovers(const std::string& state_dir, const cgroup::CgroupBase* cgroups);

// Runs the command to its end and returns the exit status for `run`,
// reporting on stderr why the runner ended it (time limit, OOM, signal).
int run_attached(RunRequest request);

}  // namespace nps::cli
