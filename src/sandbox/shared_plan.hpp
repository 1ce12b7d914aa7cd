// SPDX-License-Identifier: Apache-2.0
// The plan of a sandbox child that is not a copy of the thread that asked
// for it — a parked child of the SpawnPool, a child of the SpawnServer —
// written into a MAP_SHARED area that both processes have at the same
// address, so the pointers laid out in it (argv, envp, paths) hold in both.
// The child's fds travel beside it as SCM_RIGHTS (fd_message.hpp), in the
// order of PassedFd; the plan holds their indexes until the child binds
// them. Internal to src/sandbox.
#pragma once

#include <cstddef>

#include "nps/base/limits.hpp"
#include "setup.hpp"

namespace nps::sandbox::detail {

// A shared plan area's size.
inline constexpr std::size_t kSharedPlanBytes = limits::kSpawnPoolPlanBytes;

// The fds passed with a plan: these four always, then the network and the
// user namespace when the spec has them (the plan's netns_fd, userns_fd and
// mounts.idmap_fd hold their indexes, -1 for none), then the v1 cgroups'
// `tasks` files (ParentPrep::cgroup_tasks; cgroup_tasks_fds holds their
// indexes).
enum PassedFd : int { kErrorFd, kStdinFd, kStdoutFd, kStderrFd, kFixedFds };
inline constexpr std::size_t kMaxPlanFds = kFixedFds + 2 + kMaxCgroupTasks;

struct PlanFds {
    int fds[kMaxPlanFds] = {};
    std::size_t count = 0;
};

// Where the child's mount and network namespaces come from.
enum class PlanNamespaces {
    from_clone,  // cloned with CLONE_NEWNS (and CLONE_NEWNET): the spawn server's children
    from_child,  // made by the child once it has the plan: a parked child, cloned before the rootfs existed
};

// Lays out spec's plan at the start of the area (`area` of kSharedPlanBytes,
// mapped MAP_SHARED before the child was cloned) and lists the fds to pass
// in `fds`. Returns nullptr when the paths, argv and environment do not fit.
// `empty_caps` is the child's (allocated before its clone).
ChildPlan* lay_out_plan(void* area, const SandboxSpec& spec, const ParentPrep& prep, cap_t empty_caps,
                        PlanNamespaces namespaces, PlanFds& fds);

// In the child (no allocation): replaces the plan's fd indexes by the fds
// received. false when `count` does not match what the plan expects.
bool bind_plan_fds(ChildPlan& plan, const int* fds, std::size_t count);

// A parked child's life (SpawnPool): into its slot's v1 cgroups (writes "0"
// to each of `cgroup_tasks`, then one byte on `socket` says it is placed),
// every fd but `socket` (>= 3) closed — it must not hold its parent's pipes
// open while it waits —, then one message with the fds of the plan laid out
// at `plan` meanwhile, then the sandbox. Exits when the socket closes first,
// or when it cannot place itself. It keeps PR_SET_PDEATHSIG: it dies with
// the thread it counts as its parent's.
[[noreturn]] void parked_child_main(int socket, ChildPlan* plan, const int* cgroup_tasks, std::size_t tasks_count);

}  // namespace nps::sandbox::detail
