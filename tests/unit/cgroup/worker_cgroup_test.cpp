// SPDX-License-Identifier: Apache-2.0
// WorkerCgroup against a plain directory standing in for cgroupfs: the
// refusal of unenforceable limits and cleanup on every path need no root.
#include <doctest/doctest.h>

#include <filesystem>

#include "nps/cgroup/worker_cgroup.hpp"
#include "temp_dir.hpp"

using namespace nps::cgroup;

namespace {

CgroupBase fake_base(const nps::test::TempDir& dir)
{
    CgroupBase base;
    base.mode = CgroupMode::unified;
    base.unified_dir = dir.path();  // no controllers delegated
    return base;
}

}  // namespace

TEST_CASE("a limit the host cannot enforce is refused, and nothing is left")
{
    nps::test::TempDir dir("nps-cgroup");
    auto g = WorkerCgroup::create(fake_base(dir), {.name = "w1", .limits = {.memory_bytes = 1 << 20}});
    REQUIRE_FALSE(g);
    CHECK(g.error().describe() ==
          "Cannot enforce the memory limit: no memory cgroup controller is available. To enforce it, enable the "
          "memory controller (cgroup_enable=memory on the kernel command line, e.g. /boot/cmdline.txt on a "
          "Raspberry Pi) and delegate it to the runner's cgroup (systemd: Delegate=yes); to run without it, set "
          "[sandbox] allow_unenforced_limits = true, or workers.default_memory = 0 if no SpawnSpec asks for one");
    CHECK_FALSE(std::filesystem::exists(dir / "w1"));
}

TEST_CASE("allow_unenforced skips and lists what it cannot enforce")
{
    nps::test::TempDir dir("nps-cgroup");
    std::string w = dir / "w2";
    {
        auto g = WorkerCgroup::create(fake_base(dir),
                                      {.name = "w2",
                                       .limits = {.memory_bytes = 1 << 20, .cpu_millicores = 500, .pids_max = 5},
                                       .enforcement = Enforcement::allow_unenforced});
        REQUIRE(g);
        CHECK(g->unenforced() == std::vector<std::string>{"memory", "cpu", "pids"});
        CHECK(g->dir_fd() >= 0);
        CHECK(std::filesystem::is_directory(w));
    }
    CHECK_FALSE(std::filesystem::exists(w));  // the destructor removed it
}

TEST_CASE("no cgroups at all: limits refused unless allowed")
{
    CgroupBase none;
    auto refused = WorkerCgroup::create(none, {.name = "w", .limits = {.pids_max = 5}});
    REQUIRE_FALSE(refused);
    CHECK(refused.error().describe().find("Cannot enforce resource limits: this host has no usable cgroups. To "
                                          "enforce them, mount cgroups") == 0);
    CHECK(refused.error().describe().find("to run without them, set [sandbox] allow_unenforced_limits = true") !=
          std::string::npos);
    auto g = WorkerCgroup::create(none, {.name = "w", .limits = {.pids_max = 5},
                                         .enforcement = Enforcement::allow_unenforced});
    REQUIRE(g);
    CHECK(g->dir_fd() == -1);
    CHECK(g->dirs().empty());
    CHECK(g->unenforced() == std::vector<std::string>{"pids"});
}

TEST_CASE("names that could leave the base are refused; existing groups are not adopted")
{
    nps::test::TempDir dir("nps-cgroup");
    for (const char* bad : {"", ".", "..", "a/b", "../x", "x y"})
        CHECK_FALSE(WorkerCgroup::create(fake_base(dir), {.name = bad}));
    std::filesystem::create_directory(dir / "taken");
    auto g = WorkerCgroup::create(fake_base(dir), {.name = "taken"});
    REQUIRE_FALSE(g);
    CHECK(g.error().describe() == "Failed to create cgroup '" + (dir / "taken") + "': File exists");
    CHECK(std::filesystem::is_directory(dir / "taken"));  // someone else's: left alone
}

TEST_CASE("a CPU quota below the kernel floor is refused")
{
    nps::test::TempDir dir("nps-cgroup");
    auto g = WorkerCgroup::create(fake_base(dir), {.name = "w", .limits = {.cpu_millicores = 5}});
    REQUIRE_FALSE(g);
    CHECK(g.error().describe() == "CPU limit 5m is below the kernel's minimum of 10m");
    CHECK_FALSE(std::filesystem::exists(dir / "w"));
    CHECK_FALSE(validate_limits({.cpu_millicores = 1'000'000'001}));
    CHECK_FALSE(validate_limits({.memory_bytes = 0}));
    CHECK_FALSE(validate_limits({.pids_max = 0}));
    CHECK(validate_limits({.memory_bytes = 64 << 20, .cpu_millicores = 10, .pids_max = 1}));
}
