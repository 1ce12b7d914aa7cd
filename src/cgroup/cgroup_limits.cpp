// SPDX-License-Identifier: Apache-2.0
// WorkerCgroup::apply_limits: the v2 and v1 spellings of each limit.
#include <algorithm>
#include <cerrno>
#include <string>

#include "nps/base/limits.hpp"
#include "nps/cgroup/cgroup_fs.hpp"
#include "nps/cgroup/worker_cgroup.hpp"

namespace nps::cgroup {
namespace {

constexpr std::int64_t kCpuPeriodUsec = 100'000;

// Without swap accounting a memory limit still holds, but the worker could
// page out past it; that only matters when the host has swap.
bool host_has_swap()
{
    auto swaps = read_file("/proc/swaps");
    if (!swaps)
        return false;
    return std::count(swaps->begin(), swaps->end(), '\n') > 1;
}

}  // namespace

Error unenforceable_limit(std::string_view what, std::string_view why)
{
    const std::string limit(what);
    std::string fix;
    if (limit == "swap")
        fix = "enable swap accounting (swapaccount=1 on the kernel command line) or turn swap off";
    else if (limit == "limits")
        fix = "mount cgroups (cgroup2 on /sys/fs/cgroup) and delegate the memory, cpu and pids controllers to the "
              "runner's cgroup (systemd: Delegate=yes)";
    else
        fix = "enable the " + limit + " controller (cgroup_enable=" + limit +
              " on the kernel command line, e.g. /boot/cmdline.txt on a Raspberry Pi) and delegate it to the "
              "runner's cgroup (systemd: Delegate=yes)";
    std::string opt_out = "set [sandbox] allow_unenforced_limits = true";
    if (limit == "memory" || limit == "cpu" || limit == "pids")
        opt_out += ", or workers.default_" + limit + " = 0 if no SpawnSpec asks for one";
    const bool all = limit == "limits";
    return internal_error((all ? std::string("Cannot enforce resource limits: ")
                               : "Cannot enforce the " + limit + " limit: ") +
                          std::string(why) + (all ? ". To enforce them, " : ". To enforce it, ") + fix +
                          (all ? "; to run without them, " : "; to run without it, ") + opt_out);
}

Result<void> validate_limits(const CgroupLimits& limits)
{
    if (limits.cpu_millicores) {
        auto m = *limits.cpu_millicores;
        if (m < limits::kMinCpuMillicores)
            return internal_error("CPU limit " + std::to_string(m) + "m is below the kernel's minimum of " +
                                  std::to_string(limits::kMinCpuMillicores) + "m");
        if (m > limits::kMaxCpuMillicores)
            return internal_error("CPU limit " + std::to_string(m) + "m is out of range");
    }
    if (limits.memory_bytes && *limits.memory_bytes < limits::kMinMemoryBytes)
        return internal_error("Memory limit of " + std::to_string(*limits.memory_bytes) +
                              " bytes is below the minimum of " + std::to_string(limits::kMinMemoryBytes));
    if (limits.pids_max && *limits.pids_max < 1)
        return internal_error("pids limit " + std::to_string(*limits.pids_max) + " is below 1");
    return {};
}

Result<void> WorkerCgroup::apply_limits(const CgroupBase& base, const WorkerCgroupOptions& options)
{
    const CgroupLimits& limits = options.limits;
    auto skip = [&](std::string_view what, std::string_view why) -> Result<void> {
        if (options.enforcement == Enforcement::strict)
            return unenforceable_limit(what, why);
        unenforced_.emplace_back(what);
        return {};
    };

    if (limits.memory_bytes) {
        std::string bytes = std::to_string(*limits.memory_bytes);
        if (base.unified_has("memory")) {
            NPS_TRY_VOID(write_file(v2_dir_ + "/memory.max", bytes));
            if (file_exists(v2_dir_ + "/memory.swap.max"))
                NPS_TRY_VOID(write_file(v2_dir_ + "/memory.swap.max", "0"));
            else if (host_has_swap())
                NPS_TRY_VOID(skip("swap", "the host has swap but no memory.swap.max"));
        } else if (!memory_dir_.empty()) {
            const std::string memory = memory_dir_ + "/memory.limit_in_bytes";
            const std::string memsw = memory_dir_ + "/memory.memsw.limit_in_bytes";
            if (file_exists(memsw)) {
                // v1 refuses (EINVAL) any write that would leave memory's
                // limit above memory+swap's: lowering a limit set before,
                // memory goes first; raising it, memory+swap.
                if (Result<void> first = write_file(memory, bytes); !first) {
                    if (first.error().sys_errno != EINVAL)
                        return first;
                    NPS_TRY_VOID(write_file(memsw, bytes));
                    NPS_TRY_VOID(write_file(memory, bytes));
                } else {
                    NPS_TRY_VOID(write_file(memsw, bytes));
                }
            } else {
                NPS_TRY_VOID(write_file(memory, bytes));
                if (host_has_swap())
                    NPS_TRY_VOID(skip("swap", "the host has swap but no memory.memsw.limit_in_bytes"));
            }
        } else {
            NPS_TRY_VOID(skip("memory", "no memory cgroup controller is available"));
        }
    }

    if (limits.cpu_millicores) {
        // millicores / 1000 of a CPU per period, in µs.
        std::int64_t quota = *limits.cpu_millicores * kCpuPeriodUsec / 1000;
        if (base.unified_has("cpu")) {
            NPS_TRY_VOID(write_file(v2_dir_ + "/cpu.max",
                                    std::to_string(quota) + " " + std::to_string(kCpuPeriodUsec)));
        } else if (!cpu_dir_.empty()) {
            NPS_TRY_VOID(write_file(cpu_dir_ + "/cpu.cfs_period_us", std::to_string(kCpuPeriodUsec)));
            NPS_TRY_VOID(write_file(cpu_dir_ + "/cpu.cfs_quota_us", std::to_string(quota)));
        } else {
            NPS_TRY_VOID(skip("cpu", "no cpu cgroup controller is available"));
        }
    }

    if (limits.pids_max) {
        std::string n = std::to_string(*limits.pids_max);
        if (base.unified_has("pids"))
            NPS_TRY_VOID(write_file(v2_dir_ + "/pids.max", n));
        else if (!pids_dir_.empty())
            NPS_TRY_VOID(write_file(pids_dir_ + "/pids.max", n));
        else
            NPS_TRY_VOID(skip("pids", "no pids cgroup controller is available"));
    }
    return {};
}

}  // namespace nps::cgroup
