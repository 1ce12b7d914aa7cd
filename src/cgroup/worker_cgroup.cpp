// SPDX-License-Identifier: Apache-2.0
#include "nps/cgroup/worker_cgroup.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <thread>

#include "nps/cgroup/cgroup_fs.hpp"

namespace nps::cgroup {
namespace {

using namespace std::chrono_literals;

constexpr std::size_t kMaxNameChars = 64;
constexpr int kRemoveAttempts = 100;  // × 10 ms
constexpr int kKillRounds = 50;       // freeze–kill–thaw or kill-loop rounds

bool valid_name(const std::string& name)
{
    if (name.empty() || name.size() > kMaxNameChars || name == "." || name == "..")
        return false;
    return std::all_of(name.begin(), name.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '.' || c == '_' || c == '-';
    });
}

Result<void> make_dir(const std::string& dir)
{
    if (::mkdir(dir.c_str(), 0755) < 0)
        return system_error_errno("Failed to create cgroup '" + dir + "'");
    return {};
}

// SIGKILLs the pids listed in `procs`; they are in a group we created.
Result<std::size_t> kill_listed(const std::string& procs)
{
    auto pids = NPS_TRY(read_pids(procs));
    for (int pid : pids)
        if (::kill(pid, SIGKILL) < 0 && errno != ESRCH)
            return system_error_errno("Failed to kill pid " + std::to_string(pid) + " of '" + procs + "'");
    return pids.size();
}

}  // namespace

WorkerCgroup::WorkerCgroup(WorkerCgroup&& o) noexcept
    : v2_dir_(std::move(o.v2_dir_)),
      memory_dir_(std::move(o.memory_dir_)),
      cpu_dir_(std::move(o.cpu_dir_)),
      pids_dir_(std::move(o.pids_dir_)),
      cpuacct_dir_(std::move(o.cpuacct_dir_)),
      freezer_dir_(std::move(o.freezer_dir_)),
      memory_v2_(o.memory_v2_),
      kill_method_(o.kill_method_),
      created_(std::exchange(o.created_, {})),
      unenforced_(std::move(o.unenforced_)),
      v2_fd_(std::move(o.v2_fd_))
{
}

WorkerCgroup& WorkerCgroup::operator=(WorkerCgroup&& o) noexcept
{
    if (this != &o) {
        if (!created_.empty()) {
            (void)kill_all();
            (void)remove();
        }
        v2_dir_ = std::move(o.v2_dir_);
        memory_dir_ = std::move(o.memory_dir_);
        cpu_dir_ = std::move(o.cpu_dir_);
        pids_dir_ = std::move(o.pids_dir_);
        cpuacct_dir_ = std::move(o.cpuacct_dir_);
        freezer_dir_ = std::move(o.freezer_dir_);
        memory_v2_ = o.memory_v2_;
        kill_method_ = o.kill_method_;
        created_ = std::exchange(o.created_, {});
        unenforced_ = std::move(o.unenforced_);
        v2_fd_ = std::move(o.v2_fd_);
    }
    return *this;
}

WorkerCgroup::~WorkerCgroup()
{
    if (created_.empty())
        return;
    (void)kill_all();
    (void)remove();
}

Result<WorkerCgroup> WorkerCgroup::create(const CgroupBase& base, const WorkerCgroupOptions& options)
{
    if (!valid_name(options.name))
        return internal_error("Invalid cgroup name '" + options.name + "'");
    NPS_TRY_VOID(validate_limits(options.limits));
    if (base.mode == CgroupMode::none) {
        const auto& l = options.limits;
        bool any = l.memory_bytes || l.cpu_millicores || l.pids_max;
        if (any && options.enforcement == Enforcement::strict)
            return unenforceable_limit("limits", "this host has no usable cgroups");
    }

    WorkerCgroup g;  // its destructor removes whatever was created if we fail below
    g.kill_method_ = options.kill_method;
    if (!base.unified_dir.empty()) {
        g.v2_dir_ = base.unified_dir + "/" + options.name;
        NPS_TRY_VOID(make_dir(g.v2_dir_));
        g.created_.push_back(g.v2_dir_);
        g.v2_fd_ = UniqueFd(::open(g.v2_dir_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
        if (!g.v2_fd_)
            return system_error_errno("Failed to open cgroup '" + g.v2_dir_ + "'");
        g.memory_v2_ = base.unified_has("memory");
    }
    for (const auto& h : base.v1) {
        std::string dir = h.dir + "/" + options.name;
        NPS_TRY_VOID(make_dir(dir));
        g.created_.push_back(dir);
        for (const auto& c : h.controllers) {
            if (c == "memory") g.memory_dir_ = dir;
            else if (c == "cpu") g.cpu_dir_ = dir;
            else if (c == "pids") g.pids_dir_ = dir;
            else if (c == "cpuacct") g.cpuacct_dir_ = dir;
            else if (c == "freezer") g.freezer_dir_ = dir;
        }
    }
    NPS_TRY_VOID(g.apply_limits(base, options));
    return g;
}

Result<void> WorkerCgroup::set_limits(const CgroupBase& base, const CgroupLimits& limits, Enforcement enforcement)
{
    NPS_TRY_VOID(validate_limits(limits));
    bool any = limits.memory_bytes || limits.cpu_millicores || limits.pids_max;
    if (base.mode == CgroupMode::none && any && enforcement == Enforcement::strict)
        return unenforceable_limit("limits", "this host has no usable cgroups");
    return apply_limits(base, {.limits = limits, .enforcement = enforcement});
}

std::string WorkerCgroup::placement_dir() const
{
    return created_.empty() ? std::string{} : created_.front();
}

Result<void> WorkerCgroup::add_pid(pid_t pid)
{
    for (const auto& dir : created_)
        NPS_TRY_VOID(write_file(dir + "/cgroup.procs", std::to_string(pid)));
    return {};
}

Result<std::vector<UniqueFd>> WorkerCgroup::open_tasks_outside_clone() const
{
    std::vector<UniqueFd> files;
    for (const auto& dir : created_) {
        if (v2_fd_ && dir == v2_dir_)
            continue;
        const std::string path = dir + "/tasks";
        UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
        if (!fd)
            return system_error_errno("Failed to open '" + path + "'");
        files.push_back(std::move(fd));
    }
    return files;
}

Result<std::vector<int>> WorkerCgroup::pids() const
{
    if (created_.empty())
        return std::vector<int>{};
    return read_pids(placement_dir() + "/cgroup.procs");
}

Result<void> WorkerCgroup::kill_all()
{
    if (created_.empty())
        return {};
    if (kill_method_ == KillMethod::automatic && !v2_dir_.empty() &&
        file_exists(v2_dir_ + "/cgroup.kill"))
        return write_file(v2_dir_ + "/cgroup.kill", "1");

    // Freeze so nothing forks while we read and signal, kill, thaw so the
    // SIGKILLs are delivered; repeat until the group is empty.
    std::string freeze_file, frozen, thawed;
    if (!v2_dir_.empty() && file_exists(v2_dir_ + "/cgroup.freeze")) {
        freeze_file = v2_dir_ + "/cgroup.freeze", frozen = "1", thawed = "0";
    } else if (!freezer_dir_.empty()) {
        freeze_file = freezer_dir_ + "/freezer.state", frozen = "FROZEN", thawed = "THAWED";
    }
    std::string procs = placement_dir() + "/cgroup.procs";
    for (int round = 0; round < kKillRounds; ++round) {
        if (!freeze_file.empty())
            NPS_TRY_VOID(write_file(freeze_file, frozen));
        auto killed = kill_listed(procs);
        if (!freeze_file.empty())
            NPS_TRY_VOID(write_file(freeze_file, thawed));
        if (!killed)
            return std::move(killed).error();
        if (*killed == 0)
            return {};
        std::this_thread::sleep_for(10ms);
    }
    return internal_error("Failed to kill every process of cgroup '" + placement_dir() + "'");
}

Result<bool> WorkerCgroup::oom_killed() const
{
    if (memory_v2_)
        return NPS_TRY(read_keyed(v2_dir_ + "/memory.events", "oom_kill")) > 0;
    if (!memory_dir_.empty())
        return NPS_TRY(read_keyed(memory_dir_ + "/memory.oom_control", "oom_kill")) > 0;
    return false;
}

Result<std::uint64_t> WorkerCgroup::cpu_usage_usec() const
{
    if (!v2_dir_.empty())
        return static_cast<std::uint64_t>(NPS_TRY(read_keyed(v2_dir_ + "/cpu.stat", "usage_usec")));
    if (!cpuacct_dir_.empty()) {
        std::string path = cpuacct_dir_ + "/cpuacct.usage";
        auto text = NPS_TRY(read_file(path));
        std::uint64_t ns = 0;
        auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), ns);
        if (ec != std::errc{})
            return internal_error("Unexpected content of '" + path + "'");
        return ns / 1000;
    }
    return internal_error("No CPU accounting for this cgroup");
}

Result<std::uint64_t> WorkerCgroup::memory_usage_bytes() const
{
    std::string path;
    if (memory_v2_)
        path = v2_dir_ + "/memory.current";
    else if (!memory_dir_.empty())
        path = memory_dir_ + "/memory.usage_in_bytes";
    else
        return internal_error("No memory accounting for this cgroup");
    auto text = NPS_TRY(read_file(path));
    std::uint64_t bytes = 0;
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), bytes);
    if (ec != std::errc{})
        return internal_error("Unexpected content of '" + path + "'");
    return bytes;
}

Result<void> WorkerCgroup::remove()
{
    v2_fd_.reset();
    while (!created_.empty()) {
        const std::string& dir = created_.back();
        int attempt = 0;
        while (::rmdir(dir.c_str()) < 0) {
            if (errno == ENOENT)
                break;
            if (errno != EBUSY || ++attempt >= kRemoveAttempts)
                return system_error_errno("Failed to remove cgroup '" + dir + "'");
            std::this_thread::sleep_for(10ms);
        }
        created_.pop_back();
    }
    return {};
}

}  // namespace nps::cgroup
