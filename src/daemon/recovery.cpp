// SPDX-License-Identifier: Apache-2.0
#include "recovery.hpp"

#include <signal.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>

namespace nps::daemon {

namespace {

namespace fs = std::filesystem;

// The pid in "<prefix>-<pid>-<n>" (a worker) or "<prefix>-<pid>-p<n>" (a
// spawn pool slot, parked or running a worker), if the name has that shape.
std::optional<pid_t> owner_pid(const std::string& name, char prefix)
{
    if (name.size() < 5 || name[0] != prefix || name[1] != '-')
        return std::nullopt;
    const char* first = name.data() + 2;
    const char* last = name.data() + name.size();
    long pid = 0;
    auto [end, ec] = std::from_chars(first, last, pid);
    if (ec != std::errc() || end == first || end == last || *end != '-' || pid <= 0)
        return std::nullopt;
    const char* serial = end + 1;
    if (serial != last && *serial == 'p')
        ++serial;
    long n = 0;
    auto [tail, ec2] = std::from_chars(serial, last, n);
    if (ec2 != std::errc() || tail != last)
        return std::nullopt;
    return static_cast<pid_t>(pid);
}

bool alive(pid_t pid)
{
    return ::kill(pid, 0) == 0 || errno == EPERM;
}

void remove_worker_dir(const fs::path& dir, RecoveryReport& report)
{
    // The overlay is mounted on rootfs/, the writable space's tmpfs
    // (image/worker_space.hpp) on space/, beneath the overlay's upper:
    // detach both whatever their state, the overlay first.
    for (const char* mount_point : {"rootfs", "space"}) {
        const std::string path = (dir / mount_point).string();
        if (::umount2(path.c_str(), MNT_DETACH | UMOUNT_NOFOLLOW) < 0 && errno != EINVAL && errno != ENOENT) {
            // Never delete through something still mounted there.
            report.problems.push_back("Failed to unmount '" + path + "': " + std::strerror(errno));
            return;
        }
    }
    std::error_code ec;
    fs::remove_all(dir, ec);
    if (ec)
        report.problems.push_back("Failed to remove '" + dir.string() + "': " + ec.message());
    else
        ++report.worker_dirs;
}

std::vector<pid_t> read_procs(const fs::path& group)
{
    std::vector<pid_t> pids;
    std::ifstream in(group / "cgroup.procs");
    for (pid_t pid; in >> pid;)
        pids.push_back(pid);
    return pids;
}

void remove_cgroup(const fs::path& group, RecoveryReport& report)
{
    // Every process in it is a worker of our dead predecessor.
    if (std::ofstream kill_file(group / "cgroup.kill"); kill_file) {
        kill_file << "1";
    }
    for (pid_t pid : read_procs(group))
        if (::kill(pid, SIGKILL) == 0)
            ++report.killed;
    for (int i = 0; i < 100; ++i) {
        if (::rmdir(group.c_str()) == 0) {
            ++report.cgroups;
            return;
        }
        if (errno != EBUSY)
            break;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    report.problems.push_back("Failed to remove cgroup '" + group.string() + "': " + std::strerror(errno));
}

void sweep(const fs::path& dir, char prefix, RecoveryReport& report, void (*remove)(const fs::path&, RecoveryReport&))
{
    std::error_code ec;
    fs::directory_iterator it(dir, ec);
    if (ec)
        return;
    for (const auto& entry : it) {
        if (!entry.is_directory(ec) || entry.is_symlink(ec))
            continue;
        auto pid = owner_pid(entry.path().filename().string(), prefix);
        if (pid && !alive(*pid))
            remove(entry.path(), report);
    }
}

}  // namespace

RecoveryReport remove_stale_workers(const std::string& state_dir, const cgroup::CgroupBase* cgroups)
{
    RecoveryReport report;
    sweep(fs::path(state_dir) / "workers", 't', report, remove_worker_dir);
    if (cgroups) {
        if (!cgroups->unified_dir.empty())
            sweep(cgroups->unified_dir, 'w', report, remove_cgroup);
        for (const auto& v1 : cgroups->v1)
            sweep(v1.dir, 'w', report, remove_cgroup);
    }
    return report;
}

}  // namespace nps::daemon
