// SPDX-License-Identifier: Apache-2.0
#include "nps/executor/recovery.hpp"

#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string_view>
#include <thread>

namespace nps::executor {

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

// The pid in "run-<pid>" (what `nps-runner run` names its worker directory
// and cgroup).
std::optional<pid_t> run_pid(const std::string& name)
{
    constexpr std::string_view kPrefix = "run-";
    if (name.size() <= kPrefix.size() || name.compare(0, kPrefix.size(), kPrefix) != 0)
        return std::nullopt;
    const char* first = name.data() + kPrefix.size();
    const char* last = name.data() + name.size();
    long pid = 0;
    auto [end, ec] = std::from_chars(first, last, pid);
    if (ec != std::errc() || end != last || pid <= 0)
        return std::nullopt;
    return static_cast<pid_t>(pid);
}

// When `pid` started, in seconds of CLOCK_BOOTTIME (/proc/<pid>/stat field
// 22), or nullopt when it cannot be read (gone).
std::optional<double> start_time(pid_t pid)
{
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(in, line))
        return std::nullopt;
    // The command name (field 2) is in parentheses and may hold anything.
    auto close = line.rfind(')');
    if (close == std::string::npos)
        return std::nullopt;
    std::istringstream rest(line.substr(close + 1));
    std::string field;
    // Fields 3 … 22: state is 3, starttime 22.
    for (int i = 3; i <= 22; ++i)
        if (!(rest >> field))
            return std::nullopt;
    unsigned long long ticks = 0;
    auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), ticks);
    if (ec != std::errc())
        return std::nullopt;
    return static_cast<double>(ticks) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

// When `path` was last changed, in seconds of CLOCK_BOOTTIME.
std::optional<double> made_at(const fs::path& path)
{
    struct stat st{};
    if (::lstat(path.c_str(), &st) < 0)
        return std::nullopt;
    timespec real{}, boot{};
    ::clock_gettime(CLOCK_REALTIME, &real);
    ::clock_gettime(CLOCK_BOOTTIME, &boot);
    const double age = (static_cast<double>(real.tv_sec) + real.tv_nsec / 1e9) -
                       (static_cast<double>(st.st_mtim.tv_sec) + st.st_mtim.tv_nsec / 1e9);
    return static_cast<double>(boot.tv_sec) + boot.tv_nsec / 1e9 - age;
}

// True when `pid` is alive and may be the process that made `leftover`: a
// process that started after the leftover was last changed is a later one
// that reuses the pid. Unreadable times count as the owner (never touch
// what may be live).
bool owner_alive(pid_t pid, const fs::path& leftover)
{
    if (::kill(pid, 0) < 0 && errno != EPERM)
        return false;
    auto started = start_time(pid);
    auto made = made_at(leftover);
    if (!started || !made)
        return true;
    // Start times count in clock ticks (10 ms); allow two of them.
    constexpr double kSlackSeconds = 0.02;
    return *started <= *made + kSlackSeconds;
}

// The mount points at or beneath `dir` (mountinfo field 5, octal escapes
// undone), deepest first.
std::vector<std::string> mounts_beneath(const std::string& dir)
{
    std::vector<std::string> found;
    std::ifstream in("/proc/self/mountinfo");
    for (std::string line; std::getline(in, line);) {
        std::istringstream fields(line);
        std::string id, parent, devno, root, escaped;
        if (!(fields >> id >> parent >> devno >> root >> escaped))
            continue;
        std::string point;
        for (std::size_t i = 0; i < escaped.size(); ++i) {
            if (escaped[i] == '\\' && i + 3 < escaped.size()) {
                point += static_cast<char>(std::stoi(escaped.substr(i + 1, 3), nullptr, 8));
                i += 3;
            } else {
                point += escaped[i];
            }
        }
        if (point == dir || point.rfind(dir + "/", 0) == 0)
            found.push_back(point);
    }
    // Among mounts stacked on one point the one listed last is on top and
    // goes first; then deeper points before shallower ones.
    std::reverse(found.begin(), found.end());
    std::stable_sort(found.begin(), found.end(), [](const std::string& a, const std::string& b) {
        return std::count(a.begin(), a.end(), '/') > std::count(b.begin(), b.end(), '/');
    });
    return found;
}

void remove_worker_dir(const fs::path& dir, RecoveryReport& report)
{
    // The overlay on rootfs/, a tmpfs for the upper directory, anything
    // else: detached whatever its state, deepest first.
    for (const std::string& point : mounts_beneath(dir.string()))
        if (::umount2(point.c_str(), MNT_DETACH | UMOUNT_NOFOLLOW) == 0)
            ++report.unmounted;
    // Never delete through something still mounted there.
    if (auto left = mounts_beneath(dir.string()); !left.empty()) {
        report.problems.push_back("Failed to unmount '" + left.front() + "': " + std::strerror(errno) +
                                  "; leaving '" + dir.string() + "' in place");
        return;
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
        const std::string name = entry.path().filename().string();
        auto pid = owner_pid(name, prefix);
        if (!pid)
            pid = run_pid(name);
        if (pid && !owner_alive(*pid, entry.path()))
            remove(entry.path(), report);
    }
}

}  // namespace

RecoveryReport remove_stale_workers(const std::string& state_dir, const cgroup::CgroupBase* cgroups)
{
    RecoveryReport report;
    // Cgroups first: their processes are killed before their files go.
    if (cgroups) {
        if (!cgroups->unified_dir.empty())
            sweep(cgroups->unified_dir, 'w', report, remove_cgroup);
        for (const auto& v1 : cgroups->v1)
            sweep(v1.dir, 'w', report, remove_cgroup);
    }
    if (!state_dir.empty())
        sweep(fs::path(state_dir) / "workers", 't', report, remove_worker_dir);
    return report;
}

}  // namespace nps::executor
