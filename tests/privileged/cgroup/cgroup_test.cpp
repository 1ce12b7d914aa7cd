// SPDX-License-Identifier: Apache-2.0
// Worker cgroups on the real kernel, as root: limits hold, kill-all kills,
// OOM is seen, and nothing is left beneath our own cgroup. Exits 77 (skip)
// when not root or a needed controller is absent. With
// NPS_EXPECT_CGROUP_MODE set (the pure v2 VM test, tests/vm/, sets
// "unified") the detected mode must be that one.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <fcntl.h>
#include <linux/sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <thread>

#include "nps/cgroup/cgroup_fs.hpp"
#include "nps/cgroup/delegation.hpp"
#include "nps/cgroup/mode.hpp"
#include "nps/cgroup/worker_cgroup.hpp"

using namespace nps::cgroup;
using namespace std::chrono_literals;

namespace {

CgroupLayout g_layout;
CgroupBase g_base;
std::string g_prefix;
int g_counter = 0;

std::string next_name() { return g_prefix + std::to_string(++g_counter); }

// Forks a child that runs `body` once it has been placed in `group`.
pid_t spawn_in(WorkerCgroup& group, const std::function<int()>& body)
{
    int fds[2];
    REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        ::close(fds[1]);
        char c;
        if (::read(fds[0], &c, 1) != 1)
            ::_exit(120);
        ::_exit(body());
    }
    ::close(fds[0]);
    auto placed = group.add_pid(pid);
    if (!placed)
        ::kill(pid, SIGKILL);
    REQUIRE_MESSAGE(static_cast<bool>(placed), (placed ? std::string() : placed.error().describe()));
    REQUIRE(::write(fds[1], "g", 1) == 1);
    ::close(fds[1]);
    return pid;
}

// Waits for the group to empty, reaping every child (we are a subreaper, so
// orphaned grandchildren come to us).
void drain(WorkerCgroup& group)
{
    auto deadline = std::chrono::steady_clock::now() + 5s;
    for (;;) {
        while (::waitpid(-1, nullptr, WNOHANG) > 0) {
        }
        auto pids = group.pids();
        REQUIRE(pids);
        if (pids->empty())
            break;
        REQUIRE(std::chrono::steady_clock::now() < deadline);
        std::this_thread::sleep_for(10ms);
    }
    while (::waitpid(-1, nullptr, WNOHANG) > 0) {
    }
}

WorkerCgroup make(CgroupLimits limits, KillMethod kill = KillMethod::automatic)
{
    auto g = WorkerCgroup::create(g_base, {.name = next_name(), .limits = limits, .kill_method = kill});
    REQUIRE_MESSAGE(static_cast<bool>(g), (g ? std::string() : g.error().describe()));
    return std::move(g).value();
}

void finish(WorkerCgroup& g)
{
    auto k = g.kill_all();
    REQUIRE_MESSAGE(static_cast<bool>(k), (k ? std::string() : k.error().describe()));
    drain(g);
    auto dirs = g.dirs();
    auto r = g.remove();
    REQUIRE_MESSAGE(static_cast<bool>(r), (r ? std::string() : r.error().describe()));
    for (const auto& d : dirs)
        CHECK_FALSE(std::filesystem::exists(d));
}

std::vector<std::string> own_dirs()
{
    std::vector<std::string> dirs;
    if (!g_base.unified_dir.empty())
        dirs.push_back(g_base.unified_dir);
    for (const auto& h : g_base.v1)
        dirs.push_back(h.dir);
    return dirs;
}

bool enforceable(std::string_view c)
{
    return g_base.unified_has(c) || g_base.v1_dir(c) != nullptr;
}

}  // namespace

TEST_CASE("detection matches the mounts")
{
    bool hybrid_host = nps::cgroup::file_exists("/sys/fs/cgroup/unified/cgroup.procs") &&
                       nps::cgroup::file_exists("/sys/fs/cgroup/memory/cgroup.procs");
    if (hybrid_host)
        CHECK(g_layout.mode == CgroupMode::hybrid);
    if (const char* expected = std::getenv("NPS_EXPECT_CGROUP_MODE"))
        CHECK(to_string(g_layout.mode) == std::string_view(expected));
    MESSAGE("cgroup mode: " << to_string(g_layout.mode) << ", own cgroup: " << g_layout.unified_own_path);
}

TEST_CASE("pure v2: the runner delegates from a leaf and limits land in the v2 files")
{
    if (g_layout.mode != CgroupMode::unified) {
        MESSAGE("not pure cgroup v2 here");
        return;
    }
    for (const char* c : {"memory", "cpu", "pids"})
        CHECK(g_base.unified_has(c));
    // Below the root a cgroup with processes cannot hand controllers down, so
    // prepare_cgroup_base moved us into <own>/runner; the real root (no
    // cgroup.type) is exempt, the root of a cgroup namespace is not.
    const std::string& own = g_layout.unified_own_path;
    bool real_root = own == "/" && !file_exists(g_base.unified_dir + "/cgroup.type");
    std::string home = real_root ? "/" : (own == "/" ? "" : own) + "/runner";
    CHECK(read_file("/proc/self/cgroup").value() == "0::" + home + "\n");
    std::string subtree = read_file(g_base.unified_dir + "/cgroup.subtree_control").value();
    for (const char* c : {"memory", "cpu", "pids"})
        CHECK(subtree.find(c) != std::string::npos);

    auto g = make({.memory_bytes = 64LL << 20, .cpu_millicores = 250, .pids_max = 20});
    REQUIRE(g.dirs().size() == 1);
    const std::string& dir = g.dirs().front();
    CHECK(dir == g_base.unified_dir + "/" + dir.substr(dir.rfind('/') + 1));
    CHECK(read_file(dir + "/memory.max").value() == "67108864\n");
    if (file_exists(dir + "/memory.swap.max"))
        CHECK(read_file(dir + "/memory.swap.max").value() == "0\n");
    CHECK(read_file(dir + "/cpu.max").value() == "25000 100000\n");
    CHECK(read_file(dir + "/pids.max").value() == "20\n");
    finish(g);
}

TEST_CASE("an existing group is not adopted and a bad name is refused")
{
    auto g = make({});
    auto again = WorkerCgroup::create(g_base, {.name = g.dirs().front().substr(g.dirs().front().rfind('/') + 1)});
    REQUIRE_FALSE(again);
    CHECK(again.error().describe().find("File exists") != std::string::npos);
    CHECK(std::filesystem::exists(g.dirs().front()));
    CHECK_FALSE(WorkerCgroup::create(g_base, {.name = "../escape"}));
    CHECK_FALSE(WorkerCgroup::create(g_base, {.name = ".."}));
    finish(g);
}

TEST_CASE("a fork bomb stops at pids.max")
{
    auto g = make({.pids_max = 20});
    pid_t child = spawn_in(g, [] {
        int forks = 0;
        for (int i = 0; i < 200; ++i) {
            pid_t p = ::fork();
            if (p < 0)
                return forks;
            if (p == 0) {
                ::pause();
                ::_exit(0);
            }
            ++forks;
        }
        return 200;
    });
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) < 20);
    CHECK(WEXITSTATUS(status) >= 10);
    CHECK(g.pids()->size() <= 20);
    finish(g);
}

TEST_CASE("a memory hog is OOM-killed and the OOM is seen")
{
    auto g = make({.memory_bytes = 64LL << 20});
    CHECK_FALSE(g.oom_killed().value());
    pid_t child = spawn_in(g, [] {
        constexpr std::size_t kBytes = 200u << 20;
        auto* p = static_cast<volatile char*>(std::malloc(kBytes));
        if (p == nullptr)
            return 3;
        for (std::size_t i = 0; i < kBytes; i += 4096)
            p[i] = 1;
        return 0;
    });
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    CHECK(WIFSIGNALED(status));
    if (WIFSIGNALED(status))
        CHECK(WTERMSIG(status) == SIGKILL);
    CHECK(g.oom_killed().value());
    finish(g);
}

TEST_CASE("a CPU spinner is held near its quota")
{
    auto g = make({.cpu_millicores = 200});
    pid_t child = spawn_in(g, [] {
        for (;;)
            __asm__ __volatile__("" ::: "memory");
        return 0;
    });
    std::this_thread::sleep_for(200ms);
    auto t0 = std::chrono::steady_clock::now();
    auto u0 = g.cpu_usage_usec();
    REQUIRE(u0);
    std::this_thread::sleep_for(1s);
    auto u1 = g.cpu_usage_usec();
    auto t1 = std::chrono::steady_clock::now();
    REQUIRE(u1);
    double wall = std::chrono::duration<double, std::micro>(t1 - t0).count();
    double ratio = static_cast<double>(*u1 - *u0) / wall;
    MESSAGE("CPU share at 200m: " << ratio);
    CHECK(ratio < 0.5);
    CHECK(ratio > 0.05);
    finish(g);
    int status = 0;
    CHECK(::waitpid(child, &status, WNOHANG) <= 0);  // already reaped by drain
}

namespace {

void check_kill_all(KillMethod method)
{
    auto g = make({.pids_max = 64}, method);
    pid_t child = spawn_in(g, [] {
        for (int i = 0; i < 5; ++i)
            if (::fork() == 0) {
                ::pause();
                ::_exit(0);
            }
        ::pause();
        return 0;
    });
    auto deadline = std::chrono::steady_clock::now() + 5s;
    while (g.pids()->size() < 6) {
        REQUIRE(std::chrono::steady_clock::now() < deadline);
        std::this_thread::sleep_for(5ms);
    }
    REQUIRE(g.kill_all());
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    CHECK(WIFSIGNALED(status));
    drain(g);
    CHECK(g.pids()->empty());
    finish(g);
}

}  // namespace

TEST_CASE("kill_all kills every process of the group (cgroup.kill)")
{
    check_kill_all(KillMethod::automatic);
}

TEST_CASE("kill_all kills every process of the group (freeze, kill, thaw)")
{
    check_kill_all(KillMethod::freeze_kill_thaw);
}

TEST_CASE("CLONE_INTO_CGROUP on dir_fd() starts the child in the v2 group")
{
    auto g = make({.pids_max = 8});
    if (g.dir_fd() < 0) {
        MESSAGE("no cgroup2 group in this mode; CLONE_INTO_CGROUP not applicable");
        finish(g);
        return;
    }
    clone_args args{};
    args.flags = CLONE_INTO_CGROUP;
    args.exit_signal = SIGCHLD;
    args.cgroup = static_cast<std::uint64_t>(g.dir_fd());
    long pid = ::syscall(SYS_clone3, &args, sizeof args);
    REQUIRE(pid >= 0);
    if (pid == 0) {
        ::pause();
        ::_exit(0);
    }
    auto pids = g.pids();
    REQUIRE(pids);
    CHECK(*pids == std::vector<int>{static_cast<int>(pid)});
    finish(g);
}

TEST_CASE("the destructor kills and removes")
{
    std::vector<std::string> dirs;
    {
        auto g = make({.pids_max = 8});
        dirs = g.dirs();
        spawn_in(g, [] {
            ::pause();
            return 0;
        });
    }
    while (::waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    for (const auto& d : dirs)
        CHECK_FALSE(std::filesystem::exists(d));
}

int main(int argc, char** argv)
{
    if (::geteuid() != 0) {
        std::puts("SKIP: the cgroup tests need root");
        return 77;
    }
    auto layout = detect_cgroup_layout();
    if (!layout) {
        std::printf("SKIP: %s\n", layout.error().describe().c_str());
        return 77;
    }
    g_layout = *layout;
    auto base = prepare_cgroup_base(g_layout);
    if (!base) {
        std::printf("SKIP: cannot prepare cgroups: %s\n", base.error().describe().c_str());
        return 77;
    }
    g_base = *base;
    for (const char* c : {"memory", "cpu", "pids"})
        if (!enforceable(c)) {
            std::printf("SKIP: no %s controller beneath our own cgroup (mode %s)\n", c,
                        std::string(to_string(g_layout.mode)).c_str());
            return 77;
        }
    if (::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
        std::perror("prctl(PR_SET_CHILD_SUBREAPER)");
        return 1;
    }
    g_prefix = "nps-test-" + std::to_string(::getpid()) + "-";

    doctest::Context context(argc, argv);
    int rc = context.run();

    // Nothing of ours may be left beneath our own cgroup.
    for (const auto& dir : own_dirs())
        for (const auto& e : std::filesystem::directory_iterator(dir))
            if (e.path().filename().string().rfind(g_prefix, 0) == 0) {
                std::printf("FAIL: left behind: %s\n", e.path().c_str());
                rc = 1;
            }
    return rc;
}
