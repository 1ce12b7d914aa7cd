// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <fstream>

#include "nps/cgroup/delegation.hpp"
#include "temp_dir.hpp"

using namespace nps::cgroup;

namespace {

CgroupLayout v1_layout(CgroupMode mode)
{
    CgroupLayout l;
    l.mode = mode;
    if (mode == CgroupMode::hybrid) {
        l.unified_mount = "/u";
        l.unified_own_path = "/";
        l.unified_own_dir = "/u";
    }
    for (const char* c : {"memory", "cpu", "cpuacct", "pids", "freezer", "blkio"})
        l.v1.push_back({{c}, std::string("/v1/") + c, "/me", std::string("/v1/") + c + "/me"});
    return l;
}

}  // namespace

TEST_CASE("hybrid uses v1 only for limits; legacy also for accounting and freezing")
{
    auto h = prepare_cgroup_base(v1_layout(CgroupMode::hybrid)).value();
    CHECK(h.unified_dir == "/u");
    CHECK(h.unified_controllers.empty());
    CHECK(h.v1.size() == 3);
    CHECK(*h.v1_dir("memory") == "/v1/memory/me");
    CHECK(h.v1_dir("freezer") == nullptr);

    auto l = prepare_cgroup_base(v1_layout(CgroupMode::legacy)).value();
    CHECK(l.unified_dir.empty());
    CHECK(l.v1.size() == 5);
    CHECK(*l.v1_dir("freezer") == "/v1/freezer/me");
    CHECK(l.v1_dir("blkio") == nullptr);
}

TEST_CASE("unified: an already delegating cgroup is used as it is")
{
    nps::test::TempDir dir("nps-deleg");
    std::ofstream(dir / "cgroup.controllers") << "cpuset cpu io memory pids\n";
    std::ofstream(dir / "cgroup.subtree_control") << "cpu memory pids\n";
    CgroupLayout l;
    l.mode = CgroupMode::unified;
    l.unified_mount = dir.path();
    l.unified_own_path = "/svc";
    l.unified_own_dir = dir.path();
    auto b = prepare_cgroup_base(l).value();
    CHECK(b.unified_dir == dir.path());
    CHECK(b.unified_has("memory"));
    CHECK(b.unified_has("pids"));
    CHECK_FALSE(b.unified_has("io"));
    CHECK_FALSE(std::filesystem::exists(dir / "runner"));  // nothing moved
}

TEST_CASE("none prepares nothing")
{
    auto b = prepare_cgroup_base(CgroupLayout{}).value();
    CHECK(b.mode == CgroupMode::none);
    CHECK(b.unified_dir.empty());
    CHECK(b.v1.empty());
}
