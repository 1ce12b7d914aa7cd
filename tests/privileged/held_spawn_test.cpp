// SPDX-License-Identifier: Apache-2.0
// A sandbox child held before its execve (SandboxSpec::hold_before_exec), on
// this host's real kernel, spawned directly and through a SpawnServer: it is
// set up completely (its seccomp filter loaded) but runs nothing of its
// program until released; the release appends environment entries; a
// dropped one is killed having run nothing; a malformed release leaves it
// held; a failed execve reads like spawn()'s; held children through the
// server have plan areas of their own and cannot starve other spawns.
#include <doctest/doctest.h>

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "nps/sandbox/spawn_server.hpp"
#include "sandbox_io.hpp"
#include "sandbox_rootfs.hpp"

namespace {

using namespace nps::test;
using nps::sandbox::Child;
using nps::sandbox::SandboxSpec;
using nps::sandbox::SpawnServer;

SpawnServer& server()
{
    static SpawnServer started = [] {
        auto s = SpawnServer::start();
        REQUIRE_MESSAGE(s.has_value(), (s ? std::string() : s.error().describe()));
        return std::move(*s);
    }();
    return started;
}

// A held child of `spec`, through the server or spawn().
Child spawn_held(SandboxSpec spec, bool through_server)
{
    spec.hold_before_exec = true;
    std::optional<Child> child;
    if (through_server) {
        auto attempt = server().try_spawn(spec);
        REQUIRE_MESSAGE(attempt.has_value(), (attempt ? std::string() : attempt.error().describe()));
        REQUIRE_MESSAGE(attempt->started.has_value(), attempt->missed);
        child.emplace(std::move(*attempt->started));
    } else {
        auto direct = nps::sandbox::spawn(spec);
        REQUIRE_MESSAGE(direct.has_value(), (direct ? std::string() : direct.error().describe()));
        child.emplace(std::move(*direct));
    }
    REQUIRE(child->held());
    return std::move(*child);
}

bool readable_within(int fd, int ms)
{
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, ms) == 1;
}

std::string status_line(pid_t pid, const std::string& key)
{
    std::istringstream in(read_text("/proc/" + std::to_string(pid) + "/status"));
    for (std::string line; std::getline(in, line);)
        if (line.rfind(key + ":", 0) == 0)
            return line;
    return {};
}

}  // namespace

TEST_CASE("a held child is set up but runs nothing until released, then execs with the release's environment")
{
    for (const bool through_server : {false, true}) {
        CAPTURE(through_server);
        Pipe out = make_pipe();
        SandboxSpec spec = shell("echo early=$EARLY late=$LATE other=$OTHER; echo done", out.write_end.get());
        spec.env.push_back("EARLY=1");
        Child child = spawn_held(spec, through_server);
        out.write_end.reset();
        // Everything but the execve is done: no privileges, its filter loaded.
        CHECK(status_line(child.pid(), "Seccomp") == "Seccomp:\t2");
        CHECK(status_line(child.pid(), "NoNewPrivs") == "NoNewPrivs:\t1");
        CHECK(status_line(child.pid(), "CapEff") == "CapEff:\t0000000000000000");
        CHECK(read_text("/proc/" + std::to_string(child.pid()) + "/comm") == "nps-held\n");
        CHECK_FALSE(readable_within(out.read_end.get(), 200));  // its program has not run

        REQUIRE(child.release({"LATE=2", "OTHER=a=b c"}));
        CHECK_FALSE(child.held());
        CHECK(read_all(out.read_end.get()) == "early=1 late=2 other=a=b c\ndone\n");
        auto status = child.wait();
        REQUIRE(status);
        CHECK(status->shell_status() == 0);
    }
}

TEST_CASE("a held child dropped is killed having run nothing")
{
    for (const bool through_server : {false, true}) {
        CAPTURE(through_server);
        Pipe out = make_pipe();
        pid_t pid = -1;
        {
            Child child = spawn_held(shell("echo ran", out.write_end.get()), through_server);
            pid = child.pid();
            REQUIRE(::kill(pid, 0) == 0);
        }
        out.write_end.reset();
        CHECK(read_all(out.read_end.get()).empty());
        // Reaped by the destructor: the pid is no longer ours.
        CHECK(status_line(pid, "PPid") != "PPid:\t" + std::to_string(::getpid()));
    }
}

TEST_CASE("a malformed release leaves the child held; a failed execve reads like spawn()'s")
{
    for (const bool through_server : {false, true}) {
        CAPTURE(through_server);
        SandboxSpec spec = shell("", 1);
        spec.argv = {"/bin/nope"};
        Child child = spawn_held(spec, through_server);

        auto refused = child.release({"NO_EQUALS_SIGN"});
        REQUIRE_FALSE(refused);
        CHECK(refused.error().describe().find("is not of the form NAME=VALUE") != std::string::npos);
        CHECK(child.held());
        refused = child.release({"A=" + std::string(nps::limits::kMaxReleaseEnvBytes, 'x')});
        REQUIRE_FALSE(refused);
        CHECK(refused.error().describe().find("at most") != std::string::npos);
        CHECK(child.held());
        refused = child.release(std::vector<std::string>(nps::limits::kMaxReleaseEnvEntries + 1, "A=1"));
        REQUIRE_FALSE(refused);
        CHECK(child.held());

        auto failed = child.release({"A=1"});
        REQUIRE_FALSE(failed);
        CHECK(failed.error().describe().find("Failed to execute '/bin/nope' in the sandbox: No such file or directory") !=
              std::string::npos);
        CHECK_FALSE(child.valid());  // reaped
    }
    Child plain;
    CHECK_FALSE(plain.release());
}

TEST_CASE("held children through the server take plan areas of their own and never make other spawns wait")
{
    std::vector<Child> held;
    for (;;) {
        SandboxSpec spec = shell("true", 1);
        spec.hold_before_exec = true;
        auto attempt = server().try_spawn(spec);
        REQUIRE_MESSAGE(attempt.has_value(), (attempt ? std::string() : attempt.error().describe()));
        if (!attempt->started) {
            CHECK(attempt->missed == "no plan area is free for a held child");
            break;
        }
        held.push_back(std::move(*attempt->started));
        REQUIRE(held.size() <= 8);
    }
    CHECK(held.size() == 8);
    // Ordinary spawns go on meanwhile, several at once.
    for (int i = 0; i < 6; ++i) {
        Pipe out = make_pipe();
        auto attempt = server().try_spawn(shell("echo ran", out.write_end.get()));
        REQUIRE_MESSAGE(attempt.has_value(), (attempt ? std::string() : attempt.error().describe()));
        REQUIRE_MESSAGE(attempt->started.has_value(), attempt->missed);
        out.write_end.reset();
        CHECK(read_all(out.read_end.get()) == "ran\n");
        REQUIRE(attempt->started->wait());
    }
    // A release gives its area back.
    Pipe out = make_pipe();
    REQUIRE(held.back().release());
    REQUIRE(held.back().wait());
    held.pop_back();
    SandboxSpec spec = shell("echo again", out.write_end.get());
    spec.hold_before_exec = true;
    auto attempt = server().try_spawn(spec);
    REQUIRE(attempt.has_value());
    REQUIRE_MESSAGE(attempt->started.has_value(), attempt->missed);
    out.write_end.reset();
    REQUIRE(attempt->started->release());
    CHECK(read_all(out.read_end.get()) == "again\n");
}
