// SPDX-License-Identifier: Apache-2.0
// The optional user namespace: the sandbox's root is an unprivileged host id.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "nps/sandbox/userns.hpp"

#include "sandbox_rootfs.hpp"
#include "text_contains.hpp"

using nps::test::run_sh;

namespace {

using nps::test::contains;

std::string host_user_ns()
{
    char link[64] = {};
    REQUIRE(::readlink("/proc/self/ns/user", link, sizeof link - 1) > 0);
    return link;
}

// This process's children, from /proc/self/task/*/children.
std::set<pid_t> children()
{
    std::set<pid_t> pids;
    for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
        std::ifstream in(task.path() / "children");
        for (pid_t pid; in >> pid;)
            pids.insert(pid);
    }
    return pids;
}

// The uid_map a process sees once it has joined the user namespace `fd`
// (read in a forked child, which is single-threaded as setns asks).
std::string uid_map_inside(int fd)
{
    int out[2];
    REQUIRE(::pipe(out) == 0);
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        ::close(out[0]);
        if (::setns(fd, CLONE_NEWUSER) != 0)
            ::_exit(2);
        const int map = ::open("/proc/self/uid_map", O_RDONLY);
        char text[256];
        const ssize_t n = map < 0 ? -1 : ::read(map, text, sizeof text);
        ::_exit(n > 0 && ::write(out[1], text, static_cast<std::size_t>(n)) == n ? 0 : 3);
    }
    ::close(out[1]);
    std::string text;
    char buffer[256];
    for (ssize_t n; (n = ::read(out[0], buffer, sizeof buffer)) > 0;)
        text.append(buffer, static_cast<std::size_t>(n));
    ::close(out[0]);
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    return text;
}

}  // namespace

TEST_CASE("a user namespace is made with its maps by a holder that is gone after, with this thread's signal mask kept")
{
    sigset_t blocked;
    ::sigemptyset(&blocked);
    ::sigaddset(&blocked, SIGUSR2);
    sigset_t before;
    REQUIRE(::pthread_sigmask(SIG_BLOCK, &blocked, &before) == 0);
    sigset_t expected;
    REQUIRE(::pthread_sigmask(SIG_SETMASK, nullptr, &expected) == 0);
    const auto children_before = children();

    auto ns = nps::sandbox::UserNamespaceFd::create(0x71230000, 0x71230000, 65536);
    REQUIRE_MESSAGE(ns.has_value(), ns.error().describe());

    sigset_t after;
    REQUIRE(::pthread_sigmask(SIG_SETMASK, &before, &after) == 0);
    CHECK(::sigismember(&after, SIGUSR2) == 1);
    CHECK(::sigismember(&after, SIGTERM) == ::sigismember(&expected, SIGTERM));
    CHECK(::sigismember(&after, SIGCHLD) == ::sigismember(&expected, SIGCHLD));
    // The holder was killed and reaped: no child of this process is left.
    CHECK(children() == children_before);
    // A namespace of its own, with the maps asked for.
    char link[64] = {};
    REQUIRE(::readlink(("/proc/self/fd/" + std::to_string(ns->fd())).c_str(), link, sizeof link - 1) > 0);
    CHECK(std::string(link) != host_user_ns());
    std::istringstream map(uid_map_inside(ns->fd()));
    std::uint64_t inside = 1, outside = 0, count = 0;
    map >> inside >> outside >> count;
    CHECK(inside == 0);
    CHECK(outside == 0x71230000);
    CHECK(count == 65536);
    // Ids onto the host's root are refused before anything is made.
    CHECK_FALSE(nps::sandbox::UserNamespaceFd::create(0, 0x71230000, 1).has_value());
}

TEST_CASE("run --userns: root inside is a slot of the host ids from 0x70000000, in a user namespace of its own" *
          doctest::test_suite("userns"))
{
    auto r = run_sh("id -u; id -g; cat /proc/self/uid_map /proc/self/gid_map; readlink /proc/self/ns/user; "
                    "grep CapEff /proc/self/status; stat -c %u /; stat -c %u /tmp; touch /tmp/ok && echo tmp-writable",
                    {"--userns"});
    REQUIRE_MESSAGE(r.exit_status == 0, r.err);
    std::istringstream out(r.out);
    std::string uid, gid;
    out >> uid >> gid;
    CHECK(uid == "0");
    CHECK(gid == "0");
    unsigned inside = 1, outside = 0, count = 0;
    out >> inside >> outside >> count;
    CHECK(inside == 0);
    // Changed on purpose (issue 14): the default range moved from 100000
    // (where /etc/subuid hands out ranges) to 0x70000000, one 65536-id slot
    // per concurrent sandbox.
    CHECK(outside >= 1879048192u);
    CHECK((outside - 1879048192u) % 65536 == 0);
    CHECK(count == 65536);
    CHECK(contains(r.out, "user:["));
    CHECK(!contains(r.out, host_user_ns()));
    CHECK(contains(r.out, "CapEff:\t0000000000000000"));
    // Changed on purpose (issue 14): the rootfs is idmapped, so the host's
    // root's files are root's inside (they showed as 65534, unmapped); /tmp is
    // the sandbox root's.
    CHECK(contains(r.out, "0000000000\n0\n0\n"));
    CHECK(contains(r.out, "tmp-writable"));
}

TEST_CASE("run --userns --user: a non-root id inside, with limits and the usual refusals" * doctest::test_suite("userns"))
{
    auto r = run_sh("id -u; id -g; mount -t tmpfs none /tmp 2>&1; echo mount=$?; touch /x 2>&1; echo root=$?",
                    {"--userns", "--user", "1000:1001", "--memory", "64Mi", "--pids", "32"});
    REQUIRE_MESSAGE(r.exit_status == 0, r.err);
    CHECK(r.out.rfind("1000\n1001\n", 0) == 0);
    CHECK(!contains(r.out, "mount=0"));
    CHECK(!contains(r.out, "root=0"));
}

TEST_CASE("a user namespace mapping onto the host's root is refused by the configuration")
{
    nps::test::TempDir dir("nps-userns");
    nps::test::write_file(dir.file("root.toml"), "[sandbox]\nuserns_first_host_id = 0\n");
    auto zero = run_sh("echo ran", {"--userns", "--config", dir.file("root.toml")});
    CHECK(zero.exit_status == 2);
    CHECK(contains(zero.err, "userns_first_host_id: must be between 1"));
    CHECK(!contains(zero.out, "ran"));
}

TEST_CASE("a user namespace too small for the worker's --user is refused" * doctest::test_suite("userns"))
{
    nps::test::TempDir dir("nps-userns");
    nps::test::write_file(dir.file("small.toml"), "[sandbox]\nuserns_id_count = 10\n");
    auto small = run_sh("echo ran", {"--userns", "--user", "1000", "--config", dir.file("small.toml")});
    CHECK(small.exit_status == 125);
    CHECK(contains(small.err, "lie outside its user namespace's 10 mapped ids"));
    CHECK(!contains(small.out, "ran"));
}

TEST_CASE("run --userns where the kernel cannot idmap the rootfs fails naming why, and runs nothing")
{
    const std::string why_not = nps::test::user_namespace_unavailable_reason();
    if (why_not.empty())
        return;  // the kernel can: the "userns" suite covers it (the opposite case)
    auto r = run_sh("echo ran", {"--userns"});
    CHECK(r.exit_status == 125);
    CHECK(contains(r.err, "sandbox.user_namespace is on, but"));
    CHECK(contains(r.err, "cannot be mounted here"));
    CHECK(contains(r.err, "MOUNT_ATTR_IDMAP"));
    CHECK(!contains(r.out, "ran"));
}

TEST_CASE("run: the user namespace is the default where the kernel allows it, --no-userns turns it off")
{
    const bool allowed = nps::test::user_namespace_unavailable_reason().empty();
    auto r = run_sh("cat /proc/self/uid_map");
    REQUIRE_MESSAGE(r.exit_status == 0, r.err);
    std::istringstream out(r.out);
    unsigned inside = 1, outside = 0, count = 0;
    out >> inside >> outside >> count;
    CHECK(inside == 0);
    if (allowed) {
        CHECK(outside >= 1879048192u);
        CHECK(count == 65536);
    } else {
        CHECK(outside == 0);  // auto: off here, the host's identity map
        CHECK(count == 4294967295u);
    }

    auto off = run_sh("cat /proc/self/uid_map", {"--no-userns"});
    REQUIRE_MESSAGE(off.exit_status == 0, off.err);
    CHECK(contains(off.out, "4294967295"));  // the host's identity map
}
