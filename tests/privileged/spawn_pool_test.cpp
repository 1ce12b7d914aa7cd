// SPDX-License-Identifier: Apache-2.0
// sandbox::SpawnPool on this host's real cgroups: a pooled worker is the same
// sandbox as a spawned one, sits in its slot's cgroup in every hierarchy
// (placed before it ran), is held by its limits, killed with its cgroup,
// and its OOM is seen; parked children hold none of the caller's fds and
// go, with their cgroups, when the pool does.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "nps/base/unique_fd.hpp"
#include "nps/cgroup/delegation.hpp"
#include "nps/cgroup/mode.hpp"
#include "nps/sandbox/loopback_netns.hpp"
#include "nps/sandbox/spawn_pool.hpp"
#include "nps/sandbox/spawn_server.hpp"
#include "nps/sandbox/userns.hpp"
#include "sandbox_io.hpp"
#include "sandbox_rootfs.hpp"

namespace {

using namespace nps::test;
using nps::sandbox::SandboxSpec;
using nps::sandbox::SpawnPool;

bool has_cgroups()
{
    return cgroup_base().mode != nps::cgroup::CgroupMode::none;
}

SpawnPool make_pool(std::size_t size = 1, std::optional<nps::cgroup::CgroupLimits> park_limits = std::nullopt)
{
    static int serial = 0;
    auto pool = SpawnPool::create({.cgroup_base = &cgroup_base(),
                                   .name_prefix = "pool-test-" + std::to_string(::getpid()) + "-" +
                                                  std::to_string(serial++) + "-",
                                   .size = size,
                                   .park_limits = park_limits});
    REQUIRE_MESSAGE(pool.has_value(), (pool ? std::string() : pool.error().describe()));
    auto filled = pool->refill();
    REQUIRE_MESSAGE(filled.has_value(), (filled ? std::string() : filled.error().describe()));
    return std::move(*pool);
}

std::string describe(const nps::Error& e)
{
    return e.describe();
}

}  // namespace

TEST_CASE("a pooled worker runs in the same sandbox as a spawned one")
{
    SpawnPool pool = make_pool();
    CHECK(pool.ready() == 1);
    Pipe out = make_pipe();
    auto worker = pool.spawn(shell("echo pid=$$; hostname; cat /proc/self/status | grep -E '^(CapEff|NoNewPrivs|Seccomp):';"
                                   "touch /x 2>/dev/null && echo rw || echo ro; ls /sys | wc -l;"
                                   "readlink /proc/self/ns/net; readlink /proc/1/ns/mnt",
                                   out.write_end.get()),
                             {});
    REQUIRE_MESSAGE(worker.has_value(), (worker ? std::string() : describe(worker.error())));
    CHECK(pool.ready() == 0);
    out.write_end.reset();
    std::string text = read_all(out.read_end.get());
    auto status = worker->child.wait();
    REQUIRE(status);
    CHECK(status->shell_status() == 0);
    CHECK(text.find("pid=1\n") != std::string::npos);
    CHECK(text.find("nps-sandbox\n") != std::string::npos);
    CHECK(text.find("CapEff:\t0000000000000000") != std::string::npos);
    CHECK(text.find("NoNewPrivs:\t1") != std::string::npos);
    CHECK(text.find("Seccomp:\t2") != std::string::npos);
    CHECK(text.find("\nro\n") != std::string::npos);
    char host_net[64] = {}, host_mnt[64] = {};
    REQUIRE(::readlink("/proc/self/ns/net", host_net, sizeof host_net - 1) > 0);
    REQUIRE(::readlink("/proc/self/ns/mnt", host_mnt, sizeof host_mnt - 1) > 0);
    CHECK(text.find(host_net) == std::string::npos);  // a private network namespace
    CHECK(text.find(host_mnt) == std::string::npos);
}

TEST_CASE("a pooled worker joins the shared loopback namespace when given it")
{
    auto netns = nps::sandbox::LoopbackNetns::create();
    REQUIRE(netns);
    char shared[64] = {};
    REQUIRE(::readlink(("/proc/self/fd/" + std::to_string(netns->fd())).c_str(), shared, sizeof shared - 1) > 0);
    SpawnPool pool = make_pool();
    Pipe out = make_pipe();
    SandboxSpec spec = shell("readlink /proc/self/ns/net; ip -o link show | wc -l", out.write_end.get());
    spec.netns_fd = netns->fd();
    auto worker = pool.spawn(spec, {});
    REQUIRE_MESSAGE(worker.has_value(), (worker ? std::string() : describe(worker.error())));
    out.write_end.reset();
    std::string text = read_all(out.read_end.get());
    REQUIRE(worker->child.wait());
    CHECK(text == std::string(shared) + "\n1\n");
}

TEST_CASE("a pooled worker is in its cgroup in every hierarchy, held by its limits, and killed with it")
{
    if (!has_cgroups()) {
        MESSAGE("no cgroups on this host: placement is not tested here");
        return;
    }
    SpawnPool pool = make_pool();
    Pipe out = make_pipe();
    auto worker = pool.spawn(shell("echo started; exec sleep 1000", out.write_end.get()),
                             {.memory_bytes = 64LL << 20, .pids_max = 5});
    REQUIRE_MESSAGE(worker.has_value(), (worker ? std::string() : describe(worker.error())));
    out.write_end.reset();
    char c[8] = {};
    REQUIRE(::read(out.read_end.get(), c, sizeof c) > 0);
    const std::string pid = std::to_string(worker->child.pid());
    for (const auto& dir : worker->cgroup.dirs())
        CHECK_MESSAGE(read_text(dir + "/cgroup.procs") == pid + "\n", dir);
    for (const auto& dir : worker->cgroup.dirs()) {
        if (std::filesystem::exists(dir + "/pids.max"))
            CHECK(read_text(dir + "/pids.max") == "5\n");
        if (std::filesystem::exists(dir + "/memory.limit_in_bytes"))
            CHECK(read_text(dir + "/memory.limit_in_bytes") == std::to_string(64LL << 20) + "\n");
        if (std::filesystem::exists(dir + "/memory.max"))
            CHECK(read_text(dir + "/memory.max") == std::to_string(64LL << 20) + "\n");
    }
    REQUIRE(worker->cgroup.kill_all());
    auto status = worker->child.wait();
    REQUIRE(status);
    CHECK(status->shell_status() == 128 + SIGKILL);
    const auto dirs = worker->cgroup.dirs();
    REQUIRE(worker->cgroup.remove());
    for (const auto& dir : dirs)
        CHECK_FALSE(std::filesystem::exists(dir));
}

namespace {

// The limit files this host has in `group` say `limits` (each of which is set).
void check_limit_files(const nps::cgroup::WorkerCgroup& group, const nps::cgroup::CgroupLimits& limits)
{
    const std::string memory = std::to_string(*limits.memory_bytes) + "\n";
    const std::string quota = std::to_string(*limits.cpu_millicores * 100);  // of a 100 ms period
    for (const auto& dir : group.dirs()) {
        auto check = [&](const char* name, const std::string& expected, bool prefix = false) {
            if (!std::filesystem::exists(dir + "/" + name))
                return;
            CAPTURE(name);
            const std::string text = read_text(dir + "/" + name);
            CHECK((prefix ? text.rfind(expected, 0) == 0 : text == expected));
        };
        check("pids.max", std::to_string(*limits.pids_max) + "\n");
        check("memory.limit_in_bytes", memory);
        check("memory.max", memory);
        check("cpu.cfs_quota_us", quota + "\n");
        check("cpu.max", quota + " ", true);
    }
}

}  // namespace

TEST_CASE("limits set on parked slots ahead are a worker's when it asks for them, and never when it does not")
{
    if (!has_cgroups()) {
        MESSAGE("no cgroups on this host: limits are not tested here");
        return;
    }
    const nps::cgroup::CgroupLimits preset{.memory_bytes = 96LL << 20, .cpu_millicores = 500, .pids_max = 7};
    auto run = [](SpawnPool& pool, const nps::cgroup::CgroupLimits& limits) {
        auto worker = pool.try_spawn(shell("exit 0", 1), limits, nps::cgroup::Enforcement::strict);
        REQUIRE_MESSAGE(worker.has_value(), (worker ? std::string() : describe(worker.error())));
        return std::move(*worker);
    };
    auto run_and_check = [&](const nps::cgroup::CgroupLimits& limits) {
        SpawnPool pool = make_pool(1, preset);
        auto attempt = run(pool, limits);
        REQUIRE_MESSAGE(attempt.started, attempt.missed);
        check_limit_files(attempt.started->cgroup, limits);
        REQUIRE(attempt.started->child.wait());
        REQUIRE(attempt.started->cgroup.remove());
    };
    SUBCASE("the same limits: the slot's, as written while parked")
    {
        run_and_check(preset);
    }
    SUBCASE("other values of every kind, memory raised: the worker's own")
    {
        // Raising a v1 memory limit set ahead writes memory+swap's first
        // (memory's may never exceed it).
        run_and_check({.memory_bytes = 160LL << 20, .cpu_millicores = 250, .pids_max = 9});
    }
    SUBCASE("memory lowered: the worker's own")
    {
        run_and_check({.memory_bytes = 80LL << 20, .cpu_millicores = 500, .pids_max = 7});
    }
    SUBCASE("fewer kinds than were set ahead: the pool declines, so no preset limit is left on the worker")
    {
        SpawnPool pool = make_pool(1, preset);
        auto attempt = run(pool, {.pids_max = 9});
        CHECK_FALSE(attempt.started);
        CHECK(attempt.missed.find("limits this worker does not ask for") != std::string::npos);
        // The slot stays parked for a worker that does ask for them.
        auto again = run(pool, preset);
        CHECK_MESSAGE(again.started, again.missed);
        if (again.started) {
            REQUIRE(again.started->child.wait());
            REQUIRE(again.started->cgroup.remove());
        }
    }
}

TEST_CASE("a pooled worker's memory hog is OOM-killed and the OOM is seen")
{
    if (!has_cgroups() || cgroup_base().enforced_by("memory").empty()) {
        MESSAGE("no memory controller on this host: OOM is not tested here");
        return;
    }
    SpawnPool pool = make_pool();
    auto worker = pool.spawn(shell("x=$(head -c 200000000 /dev/zero | tr '\\0' x); echo survived", 1),
                             {.memory_bytes = 32LL << 20});
    REQUIRE_MESSAGE(worker.has_value(), (worker ? std::string() : describe(worker.error())));
    auto status = worker->child.wait();
    REQUIRE(status);
    CHECK(worker->cgroup.oom_killed().value());
}

TEST_CASE("pooled spawn failures are reported like spawn()'s, and the slot is used up")
{
    SpawnPool pool = make_pool(2);
    CHECK(pool.ready() == 2);
    auto fine = pool.spawn(shell("", 1), {});
    REQUIRE(fine);
    REQUIRE(fine->child.wait());
    SandboxSpec spec = shell("", 1);
    spec.argv = {"/bin/nope"};
    auto failed = pool.spawn(spec, {});
    REQUIRE_FALSE(failed);
    CHECK(describe(failed.error()).find("Failed to execute '/bin/nope' in the sandbox: No such file or directory") !=
          std::string::npos);
    CHECK(pool.ready() == 0);
    auto empty = pool.spawn(shell("", 1), {});
    REQUIRE_FALSE(empty);
    CHECK(describe(empty.error()).find("no parked child is ready") != std::string::npos);

    REQUIRE(pool.refill());
    spec = shell("", 1);
    // A user namespace needs a pre-made one (its fd) in the pool.
    spec.user_namespace = nps::sandbox::UserNamespace{.host_uid = 100000, .host_gid = 100000, .count = 65536};
    auto userns = pool.spawn(spec, {});
    REQUIRE_FALSE(userns);
    CHECK(describe(userns.error()).find("need sandbox::spawn()") != std::string::npos);
}

TEST_CASE("a pooled spawn joins a pre-made user namespace after the task's network namespace" *
          doctest::test_suite("userns"))
{
    SpawnPool pool = make_pool(1);
    auto ns = nps::sandbox::UserNamespaceFd::create(1879048192, 1879048192, 65536);
    REQUIRE_MESSAGE(ns, (ns ? std::string() : describe(ns.error())));
    auto netns = nps::sandbox::LoopbackNetns::create();
    REQUIRE(netns);
    SandboxSpec spec = shell("", 1);
    spec.argv = {"/bin/sh", "-c", kPrintNamespaces};
    spec.user_namespace =
        nps::sandbox::UserNamespace{.host_uid = 1879048192, .host_gid = 1879048192, .count = 65536, .fd = ns->fd()};
    spec.netns_fd = netns->fd();
    Pipe out = make_pipe();
    spec.stdout_fd = out.write_end.get();
    auto worker = pool.spawn(spec, {});
    REQUIRE_MESSAGE(worker, (worker ? std::string() : describe(worker.error())));
    out.write_end.reset();
    const std::string text = read_all(out.read_end.get());
    REQUIRE(worker->child.wait());
    check_joined_namespaces(text, netns->fd());
}

TEST_CASE("parked children hold none of the caller's fds, and go with the pool")
{
    Pipe pipe = make_pipe();
    std::vector<std::string> dirs;
    {
        SpawnPool pool = make_pool(2);
        // The write end was open when the children were cloned; only ours may remain.
        pipe.write_end.reset();
        pollfd p{pipe.read_end.get(), POLLIN, 0};
        REQUIRE(::poll(&p, 1, 5000) == 1);
        CHECK(::read(pipe.read_end.get(), &p, 1) == 0);  // EOF: no parked child holds it
        if (has_cgroups()) {
            auto base_dirs = std::vector<std::string>{};
            if (!cgroup_base().unified_dir.empty())
                base_dirs.push_back(cgroup_base().unified_dir);
            for (const auto& h : cgroup_base().v1)
                base_dirs.push_back(h.dir);
            for (const auto& base : base_dirs)
                for (const auto& entry : std::filesystem::directory_iterator(base))
                    if (entry.path().filename().string().rfind("pool-test-" + std::to_string(::getpid()), 0) == 0)
                        dirs.push_back(entry.path());
            CHECK(!dirs.empty());
        }
    }
    for (const auto& dir : dirs)
        CHECK_FALSE_MESSAGE(std::filesystem::exists(dir), dir);
}

TEST_CASE("a parked child that died is skipped, not handed work")
{
    if (!has_cgroups()) {
        MESSAGE("no cgroups on this host: the parked child cannot be found to kill it");
        return;
    }
    SpawnPool pool = make_pool(2);
    // The first slot's child, found through its cgroup (the pool does not expose it).
    const auto& base = cgroup_base();
    const std::string dir = base.unified_dir.empty() ? base.v1.front().dir : base.unified_dir;
    std::string victim;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
        const std::string name = entry.path().filename().string();
        if (name.rfind("pool-test-" + std::to_string(::getpid()) + "-", 0) == 0 && name.back() == '0' &&
            name[name.size() - 2] == '-')
            victim = read_text(entry.path().string() + "/cgroup.procs");
    }
    REQUIRE(!victim.empty());
    REQUIRE(::kill(std::stoi(victim), SIGKILL) == 0);
    for (int i = 0; i < 500 && std::filesystem::exists("/proc/" + std::to_string(std::stoi(victim)) + "/ns"); ++i)
        ::usleep(1000);  // dead (a zombie keeps /proc/<pid> but loses its ns links)

    Pipe out = make_pipe();
    auto worker = pool.spawn(shell("echo ran", out.write_end.get()), {});
    REQUIRE_MESSAGE(worker.has_value(), (worker ? std::string() : describe(worker.error())));
    out.write_end.reset();
    CHECK(read_all(out.read_end.get()) == "ran\n");
    auto status = worker->child.wait();
    REQUIRE(status);
    CHECK(status->shell_status() == 0);
    CHECK(pool.ready() == 0);
}

TEST_CASE("a pool parking through the spawn server: its children are the caller's, and run workers as before")
{
    auto server = nps::sandbox::SpawnServer::start();
    REQUIRE_MESSAGE(server, (server ? std::string() : describe(server.error())));
    static int serial = 0;
    auto pool = SpawnPool::create({.cgroup_base = &cgroup_base(),
                                   .name_prefix = "pool-server-test-" + std::to_string(::getpid()) + "-" +
                                                  std::to_string(serial++) + "-",
                                   .size = 2,
                                   .server = &*server});
    REQUIRE(pool);
    REQUIRE(pool->refill());
    CHECK(pool->ready() == 2);
    // The parked children are this process's own, named as any parked child. A child names itself
    // once it runs, which may be just after refill() returned: wait for it, up to a second.
    auto count_parked = [&] {
        std::size_t parked = 0;
        for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
            const std::string name = entry.path().filename().string();
            if (name.find_first_not_of("0123456789") != std::string::npos || name == std::to_string(server->pid()))
                continue;
            const std::string status = read_text(entry.path().string() + "/status");
            if (status.find("\nPPid:\t" + std::to_string(::getpid()) + "\n") != std::string::npos &&
                status.rfind("Name:\tnps-pool\n", 0) == 0)
                ++parked;
        }
        return parked;
    };
    std::size_t parked = count_parked();
    for (int i = 0; i < 1000 && parked < 2; ++i) {
        ::usleep(1000);
        parked = count_parked();
    }
    CHECK(parked == 2);
    Pipe out = make_pipe();
    auto worker = pool->spawn(shell("echo pid=$$; cat /proc/self/status | grep -E '^(CapEff|Seccomp):'",
                                    out.write_end.get()),
                              {.pids_max = 9});
    REQUIRE_MESSAGE(worker.has_value(), (worker ? std::string() : describe(worker.error())));
    out.write_end.reset();
    const std::string text = read_all(out.read_end.get());
    auto status = worker->child.wait();
    REQUIRE(status);
    CHECK(status->shell_status() == 0);
    CHECK(text.find("pid=1\n") != std::string::npos);
    CHECK(text.find("CapEff:\t0000000000000000") != std::string::npos);
    CHECK(text.find("Seccomp:\t2") != std::string::npos);
    if (has_cgroups())
        for (const auto& dir : worker->cgroup.dirs())
            if (std::filesystem::exists(dir + "/pids.max"))
                CHECK(read_text(dir + "/pids.max") == "9\n");
    CHECK(pool->ready() == 1);

    // With the server gone, the pool parks copies of the caller instead.
    REQUIRE(::kill(server->pid(), SIGKILL) == 0);
    for (int i = 0; i < 500 && ::kill(server->pid(), 0) == 0 &&
                    std::filesystem::exists("/proc/" + std::to_string(server->pid()) + "/ns");
         ++i)
        ::usleep(1000);
    REQUIRE(pool->refill());
    CHECK(pool->ready() == 2);
}
