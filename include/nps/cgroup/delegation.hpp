// SPDX-License-Identifier: Apache-2.0
// The directories beneath which worker cgroups are created, prepared once at
// start from the detected layout.
//
// Every directory here is the runner's own cgroup in its hierarchy, as
// /proc/self/cgroup names it: we create nothing anywhere else.
//
// Pure v2 (the model of systemd's Delegate=yes): a cgroup with processes
// cannot enable controllers for its children, so the runner moves itself
// into the leaf `<own>/runner` and enables memory, cpu and pids (those the
// parent hands down) in `<own>/cgroup.subtree_control`; workers become
// siblings of `runner`. Only the real root cgroup, exempt from that rule,
// enables them in place; the root of a private cgroup namespace (it reads
// "/") is not it. The leaf is the runner's home and outlives it, the one
// cgroup we create and do not remove. When `<own>` already delegates the
// controllers (a restart), nothing moves. Another process sharing `<own>` is
// not ours to move: enabling then fails and the error says so.
//
// Hybrid: the v2 group (placement, cgroup.kill, events) needs no
// controllers; limits go to the v1 hierarchies. Legacy: v1 only.
#pragma once

#include <string>
#include <vector>

#include "nps/base/result.hpp"
#include "nps/cgroup/mode.hpp"

namespace nps::cgroup {

struct CgroupBase {
    CgroupMode mode = CgroupMode::none;
    std::string unified_dir;                    // empty without cgroup2
    std::vector<std::string> unified_controllers;  // enabled for children of unified_dir
    struct V1 {
        std::vector<std::string> controllers;
        std::string dir;
    };
    // v1 hierarchies carrying memory, cpu or pids (legacy: also cpuacct, freezer).
    std::vector<V1> v1;

    bool unified_has(std::string_view controller) const;
    // Where a limit on `controller` ("memory", "cpu", "pids") is enforced:
    // "v2", "v1", or "" when this host cannot enforce it.
    std::string_view enforced_by(std::string_view controller) const;
    // One line for the log: "hybrid (memory: v1, cpu: v1, pids: v1)".
    std::string summary() const;
    // The v1 directory for `controller`, or nullptr.
    const std::string* v1_dir(std::string_view controller) const;
};

Result<CgroupBase> prepare_cgroup_base(const CgroupLayout& layout);

}  // namespace nps::cgroup
