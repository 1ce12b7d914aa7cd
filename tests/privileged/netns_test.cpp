// SPDX-License-Identifier: Apache-2.0
// Network::none through the shared LoopbackNetns: every sandbox given its fd
// sits in the same namespace, not the host's, with loopback up.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <string>

#include "nps/base/unique_fd.hpp"
#include "nps/sandbox/loopback_netns.hpp"
#include "nps/sandbox/spawner.hpp"
#include "sandbox_rootfs.hpp"

namespace {

// Runs `script` under busybox sh in a sandbox and returns its stdout.
std::string sandbox_output(const std::string& script, int netns_fd)
{
    int fds[2];
    REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
    nps::UniqueFd read_end(fds[0]), write_end(fds[1]);
    nps::sandbox::SandboxSpec spec{.rootfs = nps::test::busybox_rootfs(),
                                   .argv = {"/bin/sh", "-c", script},
                                   .env = {"PATH=/bin"},
                                   .netns_fd = netns_fd,
                                   .stdout_fd = write_end.get()};
    auto child = nps::sandbox::spawn(spec);
    REQUIRE_MESSAGE(child.has_value(), (child ? std::string() : child.error().describe()));
    write_end.reset();
    std::string out;
    char buffer[4096];
    for (ssize_t n; (n = ::read(read_end.get(), buffer, sizeof buffer)) > 0;)
        out.append(buffer, static_cast<std::size_t>(n));
    auto status = child->wait();
    REQUIRE(status);
    CHECK(status->shell_status() == 0);
    return out;
}

std::string host_netns()
{
    char link[64] = {};
    REQUIRE(::readlink("/proc/self/ns/net", link, sizeof link - 1) > 0);
    return std::string(link) + "\n";
}

}  // namespace

TEST_CASE("sandboxes given the shared loopback namespace share it, apart from the host")
{
    auto netns = nps::sandbox::LoopbackNetns::create();
    REQUIRE_MESSAGE(netns.has_value(), (netns ? std::string() : netns.error().describe()));
    const std::string script = "readlink /proc/self/ns/net";
    std::string first = sandbox_output(script, netns->fd());
    std::string second = sandbox_output(script, netns->fd());
    CHECK(first.rfind("net:[", 0) == 0);
    CHECK(first == second);
    CHECK(first != host_netns());

    // Without the fd each sandbox gets a namespace of its own.
    std::string own = sandbox_output(script, -1);
    CHECK(own != first);
    CHECK(own != host_netns());
}

TEST_CASE("the shared namespace has only loopback, and it is up")
{
    auto netns = nps::sandbox::LoopbackNetns::create();
    REQUIRE(netns);
    std::string out = sandbox_output("ip -o link show | cut -d: -f2 | tr -d ' '; ip -o link show lo", netns->fd());
    CHECK(out.rfind("lo\n", 0) == 0);
    CHECK(out.find("UP") != std::string::npos);
    CHECK(out.find("eth") == std::string::npos);
}
