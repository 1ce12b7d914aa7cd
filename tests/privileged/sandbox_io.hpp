// SPDX-License-Identifier: Apache-2.0
// Test support for the sandbox tests: the host's cgroups, pipes to a
// sandboxed child's output, reading them and files to the end, and a
// busybox shell spec.
#pragma once

#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include "nps/base/unique_fd.hpp"
#include "nps/cgroup/delegation.hpp"
#include "nps/cgroup/mode.hpp"
#include "nps/sandbox/spawner.hpp"
#include "sandbox_rootfs.hpp"

namespace nps::test {

// This host's cgroup base, prepared once (mode none where it has none).
inline const cgroup::CgroupBase& cgroup_base()
{
    static const cgroup::CgroupBase base = [] {
        auto layout = cgroup::detect_cgroup_layout();
        REQUIRE_MESSAGE(layout.has_value(), (layout ? std::string() : layout.error().describe()));
        auto prepared = cgroup::prepare_cgroup_base(*layout);
        REQUIRE_MESSAGE(prepared.has_value(), (prepared ? std::string() : prepared.error().describe()));
        return *prepared;
    }();
    return base;
}

struct Pipe {
    UniqueFd read_end, write_end;
};

inline Pipe make_pipe()
{
    int fds[2];
    REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
    return {UniqueFd(fds[0]), UniqueFd(fds[1])};
}

// Everything until EOF.
inline std::string read_all(int fd)
{
    std::string out;
    char buffer[4096];
    for (ssize_t n; (n = ::read(fd, buffer, sizeof buffer)) > 0;)
        out.append(buffer, static_cast<std::size_t>(n));
    return out;
}

inline std::string read_text(const std::string& path)
{
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

// `/bin/sh -c script` in the busybox rootfs, its stdout on stdout_fd.
inline sandbox::SandboxSpec shell(const std::string& script, int stdout_fd)
{
    return {.rootfs = busybox_rootfs(), .argv = {"/bin/sh", "-c", script}, .env = {"PATH=/bin"}, .stdout_fd = stdout_fd};
}

// A worker printing its uid map, the owner of /bin/busybox and its network
// namespace, for check_joined_namespaces().
inline constexpr const char* kPrintNamespaces =
    "cat /proc/self/uid_map; stat -c %u /bin/busybox; readlink /proc/self/ns/net";

// What kPrintNamespaces printed shows the user namespace of host id
// 1879048192, the rootfs idmapped through it and the network namespace `netns_fd`.
inline void check_joined_namespaces(const std::string& text, int netns_fd)
{
    CHECK(text.find("1879048192") != std::string::npos);
    CHECK(text.find("\n0\n") != std::string::npos);  // busybox (owned by 0 on disk) shows as 0: idmapped
    char link[64] = {};
    REQUIRE(::readlink(("/proc/self/fd/" + std::to_string(netns_fd)).c_str(), link, sizeof link - 1) > 0);
    CHECK(text.find(link) != std::string::npos);
}

}  // namespace nps::test
