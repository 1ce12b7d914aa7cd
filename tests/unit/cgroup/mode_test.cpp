// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <string>

#include "nps/cgroup/mode.hpp"

using namespace nps::cgroup;

namespace {

constexpr const char* kHybridCgroup =
    "9:name=systemd:/\n"
    "8:pids:/\n"
    "6:freezer:/\n"
    "4:memory:/process_api/5e66\n"
    "2:cpuacct:/\n"
    "1:cpu:/\n"
    "0::/\n";
constexpr const char* kHybridMountinfo =
    "22 1 0:20 / /proc rw,nosuid - proc proc rw\n"
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    "33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n"
    "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    "37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer\n"
    "39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
    "40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

}  // namespace

TEST_CASE("pure cgroup v2 (systemd unit with a delegated subtree)")
{
    auto l = parse_cgroup_layout(
                 "0::/system.slice/nps-runner.service\n",
                 "25 20 0:22 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 "
                 "rw,nsdelegate,memory_recursiveprot\n")
                 .value();
    CHECK(l.mode == CgroupMode::unified);
    CHECK(l.unified_mount == "/sys/fs/cgroup");
    CHECK(l.unified_own_path == "/system.slice/nps-runner.service");
    CHECK(l.unified_own_dir == "/sys/fs/cgroup/system.slice/nps-runner.service");
    CHECK(l.v1.empty());
    CHECK(to_string(l.mode) == "unified");
}

TEST_CASE("this host's hybrid layout")
{
    auto l = parse_cgroup_layout(kHybridCgroup, kHybridMountinfo).value();
    CHECK(l.mode == CgroupMode::hybrid);
    CHECK(l.unified_own_dir == "/sys/fs/cgroup/unified");
    REQUIRE(l.v1_for("memory") != nullptr);
    CHECK(l.v1_for("memory")->own_dir == "/sys/fs/cgroup/memory/process_api/5e66");
    CHECK(l.v1_for("memory")->own_path == "/process_api/5e66");
    CHECK(l.v1_for("cpu")->own_dir == "/sys/fs/cgroup/cpu");
    CHECK(l.v1_for("cpuacct")->own_dir == "/sys/fs/cgroup/cpuacct");
    CHECK(l.v1_for("pids")->mount_point == "/sys/fs/cgroup/pids");
    CHECK(l.v1_for("freezer") != nullptr);
    CHECK(l.v1_for("blkio") == nullptr);  // in neither file's fixture
    CHECK(l.v1.size() == 5);              // name=systemd is not a controller
}

TEST_CASE("favordynmods is read per v1 hierarchy")
{
    auto plain = parse_cgroup_layout(kHybridCgroup, kHybridMountinfo).value();
    CHECK_FALSE(plain.v1_for("memory")->favordynmods);

    std::string fast = kHybridMountinfo;
    auto at = fast.find("cgroup rw,memory");
    fast.replace(at, std::string("cgroup rw,memory").size(), "cgroup rw,memory,favordynmods");
    auto l = parse_cgroup_layout(kHybridCgroup, fast).value();
    CHECK(l.v1_for("memory")->favordynmods);
    CHECK_FALSE(l.v1_for("pids")->favordynmods);
}

TEST_CASE("pure v1 with co-mounted cpu,cpuacct and a space in a mount point")
{
    auto l = parse_cgroup_layout(
                 "5:cpu,cpuacct:/user.slice\n4:memory:/user.slice/u\n3:pids:/user.slice/u\n"
                 "1:name=systemd:/user.slice/u\n",
                 "30 25 0:26 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n"
                 "31 25 0:27 / /sys/fs/cgroup/mem\\040ory rw - cgroup cgroup rw,memory\n"
                 "32 25 0:28 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n"
                 "33 25 0:29 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw,xattr,name=systemd\n")
                 .value();
    CHECK(l.mode == CgroupMode::legacy);
    CHECK(l.unified_mount.empty());
    REQUIRE(l.v1_for("cpuacct") != nullptr);
    CHECK(l.v1_for("cpu") == l.v1_for("cpuacct"));
    CHECK(l.v1_for("cpu")->own_dir == "/sys/fs/cgroup/cpu,cpuacct/user.slice");
    CHECK(l.v1_for("memory")->own_dir == "/sys/fs/cgroup/mem ory/user.slice/u");
    CHECK(l.v1.size() == 3);
}

TEST_CASE("a mount of another subtree is not ours; its root is stripped when it is")
{
    // Inside a cgroup namespace-less container that bind-mounts its own subtree.
    auto l = parse_cgroup_layout("0::/docker/abc/inner\n",
                                 "40 31 0:38 /docker/abc /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n")
                 .value();
    CHECK(l.unified_own_dir == "/sys/fs/cgroup/inner");
    auto other = parse_cgroup_layout("0::/elsewhere\n",
                                     "40 31 0:38 /docker/abc /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n")
                     .value();
    CHECK(other.mode == CgroupMode::none);
}

TEST_CASE("no cgroup mounts at all")
{
    auto l = parse_cgroup_layout("0::/\n", "22 1 0:20 / /proc rw - proc proc rw\n").value();
    CHECK(l.mode == CgroupMode::none);
    CHECK(l.v1.empty());
    CHECK(parse_cgroup_layout("", "").value().mode == CgroupMode::none);
}

TEST_CASE("malformed /proc/self/cgroup is an error")
{
    CHECK_FALSE(parse_cgroup_layout("garbage\n", kHybridMountinfo));
    CHECK_FALSE(parse_cgroup_layout("0::relative\n", kHybridMountinfo));
}
