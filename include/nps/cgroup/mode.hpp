// SPDX-License-Identifier: Apache-2.0
// Which cgroup layout this host offers and where this process sits in it.
//
// The parser takes the text of /proc/self/cgroup and /proc/self/mountinfo so
// it is tested with fixtures; detect_cgroup_layout() reads the live files.
//
//   unified  only cgroup2 (controllers live there)
//   hybrid   v1 controller hierarchies plus a cgroup2 mount (placement,
//            cgroup.kill, events on v2; limits on v1)
//   legacy   v1 controller hierarchies only
//   none     no usable cgroup mount: rlimits only
//
// A hierarchy counts only when it is mounted and this process's own cgroup
// lies beneath the mount's root (a mount of some other subtree is of no use:
// we create groups only beneath our own).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "nps/base/result.hpp"

namespace nps::cgroup {

enum class CgroupMode { unified, hybrid, legacy, none };

std::string_view to_string(CgroupMode mode);

// One v1 hierarchy, e.g. controllers {"cpu","cpuacct"} mounted on
// /sys/fs/cgroup/cpu,cpuacct, own path "/system.slice/x".
struct V1Hierarchy {
    std::vector<std::string> controllers;
    std::string mount_point;
    std::string own_path;  // as /proc/self/cgroup names it, relative to the hierarchy root
    // Our own cgroup's directory: mount point + own path below the mount root.
    std::string own_dir;
    // Mounted with favordynmods (Linux 6.0+): moving a process into a group
    // then costs microseconds instead of an RCU grace period (milliseconds),
    // which every worker on this hierarchy pays once (see docs/cgroups.md).
    bool favordynmods = false;

    bool has(std::string_view controller) const;
};

struct CgroupLayout {
    CgroupMode mode = CgroupMode::none;
    // The cgroup2 mount (empty when there is none) and our own directory in it.
    std::string unified_mount;
    std::string unified_own_path;
    std::string unified_own_dir;
    // v1 hierarchies that carry at least one controller (named-only ones such
    // as name=systemd are left out).
    std::vector<V1Hierarchy> v1;

    // The v1 hierarchy carrying `controller`, or nullptr.
    const V1Hierarchy* v1_for(std::string_view controller) const;
};

Result<CgroupLayout> parse_cgroup_layout(std::string_view proc_self_cgroup,
                                         std::string_view mountinfo);

// Reads /proc/self/cgroup and /proc/self/mountinfo.
Result<CgroupLayout> detect_cgroup_layout();

}  // namespace nps::cgroup
