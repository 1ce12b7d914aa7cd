// SPDX-License-Identifier: Apache-2.0
// WorkerCgroup: one worker's cgroup in every hierarchy we use, created beneath
// the runner's own (see delegation.hpp), with its limits applied.
//
// Lifecycle: create() makes the directories (an existing one is an error:
// we never adopt a cgroup we did not create) and writes the limits; the
// spawner places the child with CLONE_INTO_CGROUP on dir_fd() (v2 group) and,
// where v1 hierarchies carry limits (hybrid, legacy), with add_pid() before
// the child runs its workload. kill_all() SIGKILLs every process in the
// group and nothing else; remove() rmdirs once the group has emptied. The
// destructor does both, best effort.
//
// Not thread-safe; one owner.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nps/base/result.hpp"
#include "nps/base/unique_fd.hpp"
#include "nps/cgroup/delegation.hpp"

namespace nps::cgroup {

// Bounds in base/limits.hpp: memory ≥ kMinMemoryBytes, CPU within
// [kMinCpuMillicores, kMaxCpuMillicores], pids ≥ 1; out of range fails create().
struct CgroupLimits {
    std::optional<std::int64_t> memory_bytes;     // swap is always off
    std::optional<std::int64_t> cpu_millicores;
    std::optional<std::int64_t> pids_max;

    bool operator==(const CgroupLimits&) const = default;
};

Result<void> validate_limits(const CgroupLimits& limits);

// The refusal of a limit this host cannot enforce, `what` being "memory",
// "cpu", "pids", "swap" or "limits" (no cgroups at all): the reason, how to
// make the host enforce it, and how to opt out. "Cannot enforce the memory
// limit: no memory cgroup controller is available. To enforce it, enable the
// memory controller (cgroup_enable=memory on the kernel command line, …); to
// run without it, set [sandbox] allow_unenforced_limits = true, …".
Error unenforceable_limit(std::string_view what, std::string_view why);

enum class Enforcement {
    strict,            // a limit the host cannot enforce fails create()
    allow_unenforced,  // ... is skipped and listed in unenforced()
};

enum class KillMethod {
    automatic,         // cgroup.kill where the kernel has it, else freeze–kill–thaw
    freeze_kill_thaw,  // never cgroup.kill (older kernels' path, and its test)
};

struct WorkerCgroupOptions {
    std::string name;  // [A-Za-z0-9._-]{1,64}, not "." or ".."
    CgroupLimits limits;
    Enforcement enforcement = Enforcement::strict;
    KillMethod kill_method = KillMethod::automatic;
};

class WorkerCgroup {
public:
    static Result<WorkerCgroup> create(const CgroupBase& base, const WorkerCgroupOptions& options);

    WorkerCgroup(WorkerCgroup&& other) noexcept;
    WorkerCgroup& operator=(WorkerCgroup&& other) noexcept;
    WorkerCgroup(const WorkerCgroup&) = delete;
    WorkerCgroup& operator=(const WorkerCgroup&) = delete;
    ~WorkerCgroup();

    // O_PATH|O_DIRECTORY fd of the v2 group for clone3's CLONE_INTO_CGROUP;
    // -1 when there is no cgroup2 (legacy).
    int dir_fd() const { return v2_fd_.get(); }
    // The directories created, v2 first.
    const std::vector<std::string>& dirs() const { return created_; }
    // Limits skipped under Enforcement::allow_unenforced ("memory", "cpu", "pids").
    const std::vector<std::string>& unenforced() const { return unenforced_; }

    // Applies `limits` to a group created without any (a sandbox::SpawnPool
    // slot, whose process already sits in it), with create()'s rules. Call
    // before the process runs anything the limits must hold.
    Result<void> set_limits(const CgroupBase& base, const CgroupLimits& limits, Enforcement enforcement);

    // The `tasks` files of the hierarchies a clone on dir_fd() does not
    // cover (the v1 ones; all of them when dir_fd() is -1), opened for
    // writing: how a child cloned with CLONE_INTO_CGROUP on dir_fd() completes
    // its placement. A single-threaded child that writes "0" to each moves
    // itself there — which the kernel does without the RCU grace period a
    // move by pid (add_pid) waits for on v1 (~15 ms after a pause on this
    // 2-CPU host; docs/cgroups.md "Placement cost on v1 hierarchies"). The
    // opener's credentials are the ones checked.
    Result<std::vector<UniqueFd>> open_tasks_outside_clone() const;
    // Writes `pid` to cgroup.procs in every hierarchy.
    Result<void> add_pid(pid_t pid);
    // The pids now in the group (from the placement hierarchy).
    Result<std::vector<int>> pids() const;
    // SIGKILLs every process in the group: cgroup.kill where present, else
    // freeze, kill, thaw (cgroup.freeze or the v1 freezer), else a kill loop.
    Result<void> kill_all();
    // Whether the kernel's OOM killer has killed a process of the group.
    Result<bool> oom_killed() const;
    // CPU time used by the group, microseconds.
    Result<std::uint64_t> cpu_usage_usec() const;
    // Memory the group uses now, bytes (memory.current, or v1's
    // memory.usage_in_bytes); an error without a memory controller.
    Result<std::uint64_t> memory_usage_bytes() const;
    // rmdirs every directory, waiting briefly (about 1 s) for the group to
    // empty; does not kill.
    Result<void> remove();

private:
    WorkerCgroup() = default;
    Result<void> apply_limits(const CgroupBase& base, const WorkerCgroupOptions& options);
    std::string placement_dir() const;

    std::string v2_dir_;
    std::string memory_dir_, cpu_dir_, pids_dir_, cpuacct_dir_, freezer_dir_;
    bool memory_v2_ = false;
    KillMethod kill_method_ = KillMethod::automatic;
    std::vector<std::string> created_;
    std::vector<std::string> unenforced_;
    UniqueFd v2_fd_;
};

}  // namespace nps::cgroup
