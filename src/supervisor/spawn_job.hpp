// SPDX-License-Identifier: Apache-2.0
// Internal: one spawn's inputs and results, shared by its two halves (the
// loop fills the inputs, a spawn thread the results: worker_spawn.cpp), and
// a process held ahead (worker_held.cpp). The fds the sandbox refers to stay
// open here until the spawn is over; a job dropped with its child (the
// Supervisor went first, a hold nobody took) kills the child and removes its
// cgroup on destruction: the child goes first, then the cgroup.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nps/base/result.hpp"
#include "nps/base/unique_fd.hpp"
#include "nps/cgroup/worker_cgroup.hpp"
#include "nps/sandbox/child.hpp"
#include "nps/supervisor/supervisor.hpp"

namespace nps::supervisor {

struct Pipe {
    UniqueFd read_end, write_end;
};

struct Supervisor::SpawnJob {
    sandbox::SandboxSpec sandbox;
    std::string name;
    cgroup::CgroupLimits limits;
    cgroup::Enforcement enforcement = cgroup::Enforcement::strict;
    UniqueFd in, child_in;  // the worker's stdin socket: ours, its
    Pipe out, err;
    // A held process's release: the NPS_* entries its environment lacks.
    std::vector<std::string> late_env;

    Result<void> spawned;
    std::optional<cgroup::WorkerCgroup> cgroup;
    sandbox::Child child;
    // The child's mount namespace, held so that its exit does not tear it
    // down (worker_spawn.cpp, keep_mount_namespace).
    UniqueFd mount_ns;

    // What destruction does, now, whoever else still holds the job: the
    // child killed and reaped, then its cgroup removed. For a job replaced
    // by a spawn under the same name, which must find that name free.
    void discard()
    {
        child = sandbox::Child();
        cgroup.reset();
    }
};

// A process held ahead (Supervisor::hold) until start() or drop_held().
struct Supervisor::Held {
    // What hold() was given, which start() compares with its spec.
    sandbox::SandboxSpec sandbox;
    cgroup::CgroupLimits limits;
    cgroup::Enforcement enforcement = cgroup::Enforcement::strict;
    std::shared_ptr<SpawnJob> job;
    bool spawning = true;            // its spawn is still on a spawn thread
    std::function<void()> when_spawned;  // a start() or drop_held() waiting for it
};

}  // namespace nps::supervisor
