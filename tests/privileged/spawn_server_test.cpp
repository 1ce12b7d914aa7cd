// SPDX-License-Identifier: Apache-2.0
// sandbox::SpawnServer on this host's real kernel: a worker it clones is the
// same sandbox as one sandbox::spawn() starts, and the caller's own child
// (reaped by the caller, killed with its cgroup); its failures read like
// spawn()'s; the server holds none of the caller's fds; a server that is gone
// makes try_spawn() a miss, not an error; and it ends with its owner.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "nps/base/unique_fd.hpp"
#include "nps/cgroup/delegation.hpp"
#include "nps/cgroup/mode.hpp"
#include "nps/cgroup/worker_cgroup.hpp"
#include "nps/sandbox/loopback_netns.hpp"
#include "nps/sandbox/spawn_server.hpp"
#include "nps/sandbox/userns.hpp"
#include "sandbox_io.hpp"
#include "sandbox_rootfs.hpp"

namespace {

using namespace nps::test;
using nps::sandbox::SandboxSpec;
using nps::sandbox::SpawnServer;

SpawnServer start_server()
{
    auto server = SpawnServer::start();
    REQUIRE_MESSAGE(server.has_value(), (server ? std::string() : server.error().describe()));
    REQUIRE(server->pid() > 0);
    return std::move(*server);
}

// The value of a "Key:\tvalue" line of /proc/<pid>/status.
std::string status_field(pid_t pid, const std::string& key)
{
    std::istringstream in(read_text("/proc/" + std::to_string(pid) + "/status"));
    for (std::string line; std::getline(in, line);)
        if (line.rfind(key + ":\t", 0) == 0)
            return line.substr(key.size() + 2);
    return {};
}

// Reads until `marker` has come (or EOF).
std::string read_until(int fd, const std::string& marker)
{
    std::string out;
    char buffer[4096];
    for (ssize_t n; out.find(marker) == std::string::npos && (n = ::read(fd, buffer, sizeof buffer)) > 0;)
        out.append(buffer, static_cast<std::size_t>(n));
    return out;
}

// try_spawn() that must start the worker.
nps::sandbox::Child spawn_through(SpawnServer& server, const SandboxSpec& spec)
{
    auto attempt = server.try_spawn(spec);
    REQUIRE_MESSAGE(attempt.has_value(), (attempt ? std::string() : attempt.error().describe()));
    REQUIRE_MESSAGE(attempt->started.has_value(), attempt->missed);
    return std::move(*attempt->started);
}

}  // namespace

TEST_CASE("a worker the server clones is the caller's child, in the same sandbox as spawn()'s")
{
    SpawnServer server = start_server();
    Pipe out = make_pipe();
    nps::sandbox::Child worker = spawn_through(
        server, shell("echo pid=$$; hostname; grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status;"
                      "touch /x 2>/dev/null && echo rw || echo ro; readlink /proc/self/ns/net; echo done;"
                      "exec sleep 30",
                      out.write_end.get()));
    out.write_end.reset();
    const std::string text = read_until(out.read_end.get(), "done\n");
    // Its parent is this process, not the server: we hold it and reap it.
    CHECK(status_field(worker.pid(), "PPid") == std::to_string(::getpid()));
    REQUIRE(worker.kill(SIGKILL));
    auto status = worker.wait();
    REQUIRE(status);
    CHECK(status->shell_status() == 128 + SIGKILL);
    CHECK(text.find("pid=1\n") != std::string::npos);
    CHECK(text.find("nps-sandbox\n") != std::string::npos);
    CHECK(text.find("CapEff:\t0000000000000000") != std::string::npos);
    CHECK(text.find("NoNewPrivs:\t1") != std::string::npos);
    CHECK(text.find("Seccomp:\t2") != std::string::npos);
    CHECK(text.find("\nro\n") != std::string::npos);
    char host_net[64] = {};
    REQUIRE(::readlink("/proc/self/ns/net", host_net, sizeof host_net - 1) > 0);
    CHECK(text.find(host_net) == std::string::npos);  // a private network namespace
    // The exit status came to us: the server has no child left to reap.
    CHECK(::waitpid(server.pid(), nullptr, WNOHANG) == 0);
}

TEST_CASE("a worker the server clones joins the task's network and user namespaces" * doctest::test_suite("userns"))
{
    SpawnServer server = start_server();
    auto ns = nps::sandbox::UserNamespaceFd::create(1879048192, 1879048192, 65536);
    REQUIRE_MESSAGE(ns, (ns ? std::string() : ns.error().describe()));
    auto netns = nps::sandbox::LoopbackNetns::create();
    REQUIRE(netns);
    Pipe out = make_pipe();
    SandboxSpec spec = shell(kPrintNamespaces, out.write_end.get());
    spec.user_namespace =
        nps::sandbox::UserNamespace{.host_uid = 1879048192, .host_gid = 1879048192, .count = 65536, .fd = ns->fd()};
    spec.netns_fd = netns->fd();
    nps::sandbox::Child worker = spawn_through(server, spec);
    out.write_end.reset();
    const std::string text = read_all(out.read_end.get());
    REQUIRE(worker.wait());
    check_joined_namespaces(text, netns->fd());
}

TEST_CASE("a worker the server clones, or spawn() starts, is in its cgroup in every hierarchy before it runs")
{
    if (cgroup_base().mode == nps::cgroup::CgroupMode::none) {
        MESSAGE("no cgroups on this host: placement is not tested here");
        return;
    }
    SpawnServer server = start_server();
    // Both place the child in its v1 groups by the child itself (docs/cgroups.md).
    for (const bool through_server : {true, false}) {
        CAPTURE(through_server);
        auto cgroup = nps::cgroup::WorkerCgroup::create(
            cgroup_base(), {.name = "server-test-" + std::to_string(::getpid()) + (through_server ? "-s" : "-d"),
                            .limits = {.pids_max = 7}});
        REQUIRE_MESSAGE(cgroup, (cgroup ? std::string() : cgroup.error().describe()));
        Pipe out = make_pipe();
        // What the worker sees first thing: its own cgroup lines.
        SandboxSpec spec = shell("cat /proc/self/cgroup; echo done; exec sleep 30", out.write_end.get());
        spec.cgroup = &*cgroup;
        std::optional<nps::sandbox::Child> worker;
        if (through_server) {
            worker.emplace(spawn_through(server, spec));
        } else {
            auto direct = nps::sandbox::spawn(spec);
            REQUIRE_MESSAGE(direct, (direct ? std::string() : direct.error().describe()));
            worker.emplace(std::move(*direct));
        }
        out.write_end.reset();
        std::string text = read_until(out.read_end.get(), "done\n");
        REQUIRE(text.size() > 5);
        text.resize(text.size() - 5);
        const std::string pid = std::to_string(worker->pid());
        for (const auto& dir : cgroup->dirs())
            CHECK_MESSAGE(read_text(dir + "/cgroup.procs") == pid + "\n", dir);
        REQUIRE(cgroup->kill_all());
        auto status = worker->wait();
        REQUIRE(status);
        CHECK(status->shell_status() == 128 + SIGKILL);
        // Inside its cgroup namespace every hierarchy's path is its own root.
        std::istringstream lines(text);
        int seen = 0;
        for (std::string line; std::getline(lines, line); ++seen)
            CHECK_MESSAGE(line.substr(line.rfind(':')) == ":/", line);
        CHECK(seen > 0);
        REQUIRE(cgroup->remove());
    }
}

TEST_CASE("the server's spawn failures read like spawn()'s")
{
    SpawnServer server = start_server();
    SandboxSpec spec = shell("", 1);
    spec.argv = {"/bin/nope"};
    auto failed = server.try_spawn(spec);
    REQUIRE_FALSE(failed);
    CHECK(failed.error().describe().find("Failed to execute '/bin/nope' in the sandbox: No such file or directory") !=
          std::string::npos);
    spec = shell("", 1);
    spec.rootfs = "/nonexistent/rootfs";
    failed = server.try_spawn(spec);
    REQUIRE_FALSE(failed);
    CHECK(failed.error().describe().find("Failed to resolve the rootfs '/nonexistent/rootfs'") != std::string::npos);
    // The server is still there and serves the next one.
    Pipe out = make_pipe();
    nps::sandbox::Child worker = spawn_through(server, shell("echo ran", out.write_end.get()));
    out.write_end.reset();
    CHECK(read_all(out.read_end.get()) == "ran\n");
    REQUIRE(worker.wait());
}

TEST_CASE("the server holds none of the caller's fds")
{
    Pipe pipe = make_pipe();
    SpawnServer server = start_server();
    // One round trip: the server has closed what it inherited by then.
    {
        nps::sandbox::Child worker = spawn_through(server, shell("", 1));
        REQUIRE(worker.wait());
    }
    std::set<std::string> fds;
    for (const auto& entry : std::filesystem::directory_iterator("/proc/" + std::to_string(server.pid()) + "/fd"))
        fds.insert(entry.path().filename().string());
    // stdin, stdout, stderr and its socket.
    CHECK(fds.size() == 4);
    CHECK(fds.count("0") == 1);
    CHECK(read_text("/proc/" + std::to_string(server.pid()) + "/comm") == "nps-spawner\n");
    // The pipe's write end was open when the server was forked: only ours remains.
    pipe.write_end.reset();
    pollfd p{pipe.read_end.get(), POLLIN, 0};
    REQUIRE(::poll(&p, 1, 5000) == 1);
    CHECK(::read(pipe.read_end.get(), &p, 1) == 0);
}

TEST_CASE("a server that is gone is a miss, and the server ends with its owner")
{
    pid_t pid = -1;
    {
        SpawnServer server = start_server();
        pid = server.pid();
        REQUIRE(::kill(pid, 0) == 0);
    }
    // Reaped by its owner's destructor: no such process any more.
    CHECK(::kill(pid, 0) == -1);

    SpawnServer server = start_server();
    REQUIRE(::kill(server.pid(), SIGKILL) == 0);
    auto attempt = server.try_spawn(shell("", 1));
    REQUIRE_MESSAGE(attempt.has_value(), (attempt ? std::string() : attempt.error().describe()));
    CHECK_FALSE(attempt->started);
    CHECK(attempt->missed == "the spawn server is gone");
    CHECK(server.pid() == -1);
    // And stays one: no second request is sent.
    attempt = server.try_spawn(shell("", 1));
    REQUIRE(attempt.has_value());
    CHECK(attempt->missed == "the spawn server is gone");
}

TEST_CASE("spawns from several threads at once each get their own plan")
{
    SpawnServer server = start_server();
    constexpr int kThreads = 6, kEach = 5;  // more threads than plan areas: some wait for one
    std::vector<std::string> failures(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&server, &failures, t] {
            for (int i = 0; i < kEach; ++i) {
                const std::string word = "w" + std::to_string(t) + "-" + std::to_string(i);
                int fds[2];
                if (::pipe2(fds, O_CLOEXEC) != 0) {
                    failures[t] = "pipe2";
                    return;
                }
                nps::UniqueFd read_end(fds[0]), write_end(fds[1]);
                auto attempt = server.try_spawn(shell("echo " + word, write_end.get()));
                if (!attempt || !attempt->started) {
                    failures[t] = attempt ? attempt->missed : attempt.error().describe();
                    return;
                }
                write_end.reset();
                const std::string text = read_all(read_end.get());
                auto status = attempt->started->wait();
                if (text != word + "\n" || !status || status->shell_status() != 0) {
                    failures[t] = "worker " + word + " wrote '" + text + "'";
                    return;
                }
            }
        });
    for (auto& thread : threads)
        thread.join();
    for (const auto& failure : failures)
        CHECK_MESSAGE(failure.empty(), failure);
}
