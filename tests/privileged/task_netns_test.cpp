// SPDX-License-Identifier: Apache-2.0
// The daemon's network namespace per task (sandbox::NetnsPool): sandboxes in
// different tasks' namespaces neither see nor reach each other's loopback
// listeners, sandboxes of one task do (the control), and namespaces given
// up leave no fd behind.
#include <doctest/doctest.h>

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <optional>
#include <string>

#include "nps/base/unique_fd.hpp"
#include "nps/sandbox/netns_pool.hpp"
#include "nps/sandbox/spawner.hpp"
#include "nps/sandbox/userns.hpp"
#include "sandbox_rootfs.hpp"

namespace {

struct Running {
    nps::sandbox::Child child;
    nps::UniqueFd stdin_write, stdout_read;
};

// `script` under busybox sh in the namespace `netns_fd`, in the user namespace `userns`.
Running start(const std::string& script, int netns_fd, const nps::sandbox::UserNamespace* userns)
{
    int in[2], out[2];
    REQUIRE(::pipe2(in, O_CLOEXEC) == 0);
    REQUIRE(::pipe2(out, O_CLOEXEC) == 0);
    nps::UniqueFd in_read(in[0]), in_write(in[1]), out_read(out[0]), out_write(out[1]);
    nps::sandbox::SandboxSpec spec{.rootfs = nps::test::busybox_rootfs(),
                                   .argv = {"/bin/sh", "-c", script},
                                   .env = {"PATH=/bin"},
                                   .netns_fd = netns_fd,
                                   .stdin_fd = in_read.get(),
                                   .stdout_fd = out_write.get()};
    if (userns)
        spec.user_namespace = *userns;
    auto child = nps::sandbox::spawn(spec);
    REQUIRE_MESSAGE(child.has_value(), (child ? std::string() : child.error().describe()));
    return {std::move(*child), std::move(in_write), std::move(out_read)};
}

std::string read_line(int fd)
{
    std::string line;
    char c;
    while (::read(fd, &c, 1) == 1 && c != '\n')
        line += c;
    return line;
}

std::string finish(Running& r)
{
    r.stdin_write.reset();
    std::string out;
    char buffer[4096];
    for (ssize_t n; (n = ::read(r.stdout_read.get(), buffer, sizeof buffer)) > 0;)
        out.append(buffer, static_cast<std::size_t>(n));
    REQUIRE(r.child.wait());
    return out;
}

std::size_t open_fds()
{
    std::size_t n = 0;
    DIR* dir = ::opendir("/proc/self/fd");
    REQUIRE(dir);
    while (::readdir(dir))
        ++n;
    ::closedir(dir);
    return n;
}

// 5555 = 0x15B3 in /proc/net/tcp{,6}; busybox nc listens on TCP (IPv6, dual-stack).
constexpr const char* kListener =
    "nc -l -p 5555 </dev/null >/dev/null & until cat /proc/net/tcp /proc/net/tcp6 | grep -q ':15B3 '; do :; done; echo listening; read x";
constexpr const char* kProbe =
    "echo seen=$(cat /proc/net/tcp /proc/net/tcp6 | grep -c ':15B3 '); echo | nc 127.0.0.1 5555 >/dev/null 2>&1; echo connect=$?";

}  // namespace

// Two tasks' namespaces from one pool: a listener in task A's, probes from
// task B's and (the control) from task A's, all in `user` when not null.
static void check_tasks_apart(const nps::sandbox::UserNamespace* user)
{
    auto pool = nps::sandbox::NetnsPool::start(2);
    REQUIRE(pool);
    auto task_a = (*pool)->take();
    auto task_b = (*pool)->take();
    REQUIRE(task_a);
    REQUIRE(task_b);

    Running listener = start(kListener, task_a->fd(), user);
    REQUIRE(read_line(listener.stdout_read.get()) == "listening");

    Running other = start(kProbe, task_b->fd(), user);
    const std::string apart = finish(other);
    CHECK(apart.find("seen=0") != std::string::npos);
    CHECK(apart.find("connect=0") == std::string::npos);

    // The control: a second worker of task A sees and reaches the listener.
    Running same = start(kProbe, task_a->fd(), user);
    const std::string shared = finish(same);
    // (a connection may linger as TIME_WAIT: one or more lines)
    CHECK(shared.find("seen=") != std::string::npos);
    CHECK(shared.find("seen=0") == std::string::npos);
    CHECK(shared.find("connect=0") != std::string::npos);
    finish(listener);
}

TEST_CASE("two tasks' namespaces: no shared listener, no shared /proc/net; one task's workers share (control)")
{
    check_tasks_apart(nullptr);
}

TEST_CASE("two tasks' namespaces stay apart for workers in user namespaces too" * doctest::test_suite("userns"))
{
    auto ns = nps::sandbox::UserNamespaceFd::create(1879048192 + 65536 * 7, 1879048192 + 65536 * 7, 65536);
    REQUIRE_MESSAGE(ns, (ns ? std::string() : ns.error().describe()));
    const nps::sandbox::UserNamespace userns{
        .host_uid = 1879048192 + 65536 * 7, .host_gid = 1879048192 + 65536 * 7, .count = 65536, .fd = ns->fd()};
    check_tasks_apart(&userns);
}

TEST_CASE("namespaces taken and given up leave no fd behind over thousands of tasks")
{
    auto pool = nps::sandbox::NetnsPool::start(4);
    REQUIRE(pool);
    { auto warm = (*pool)->take(); }
    const std::size_t before = open_fds();
    for (int i = 0; i < 2000; ++i) {
        auto netns = (*pool)->take();
        REQUIRE(netns);
    }
    // The pool keeps at most its size parked; everything taken was closed.
    CHECK(open_fds() <= before + 4);
    CHECK((*pool)->taken() >= 2001);
}
