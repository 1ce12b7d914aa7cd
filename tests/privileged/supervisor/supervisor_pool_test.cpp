// SPDX-License-Identifier: Apache-2.0
// The supervisor's spawn pool with real cgroups: workers start from parked
// children whose slot cgroup becomes theirs, the pool refills behind them,
// the direct spawn takes over when the pool is off or has nothing live, a
// worker's own bad spec stays its outcome, and destroying the supervisor
// removes the parked children and their slots. (The rest of the suite runs
// with the pool on, its default, in every "with cgroups" case.)
#include <doctest/doctest.h>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <thread>

#include "supervisor_fixture.hpp"

using namespace nps::supervisor;
using namespace nps::test;
using namespace std::chrono_literals;

namespace {

bool starts_with(const std::string& text, const std::string& head)
{
    return text.rfind(head, 0) == 0;
}

bool contains(const std::string& text, const std::string& part)
{
    return text.find(part) != std::string::npos;
}

std::vector<pid_t> parked_pids(const Harness& h)
{
    std::vector<pid_t> pids;
    for (const auto& dir : h.parked_slots())
        for (pid_t pid : cgroup_procs(dir))
            if (std::find(pids.begin(), pids.end(), pid) == pids.end())
                pids.push_back(pid);
    return pids;
}

std::string slot_head(const Harness& h)
{
    return h.prefix() + "-" + std::to_string(::getpid()) + "-p";
}

}  // namespace

TEST_CASE("pool: a worker starts from a parked child; the slot's cgroup is its cgroup; the pool refills")
{
    Harness h(Cgroups::host);
    if (!h.available())
        return;
    REQUIRE(h.wait_parked(kDefaultSpawnPool));
    CHECK(h.supervisor().spawn_stats().pool_size == kDefaultSpawnPool);
    CHECK(parked_pids(h).size() == kDefaultSpawnPool);
    CHECK(h.leftover_cgroups().empty());  // parked slots are the pool's, not leftovers

    auto id = h.start(sh_worker("echo started; exec sleep 4322"));
    // Running, and taken back by the loop (its spawn thread has handed it over).
    REQUIRE(h.run_until([&] { return process_running("sleep 4322") && h.supervisor().pid(id).has_value(); }));
    const auto name = h.supervisor().cgroup_name(id);
    REQUIRE(name);
    CHECK(starts_with(*name, slot_head(h)));
    // The host's view: the worker's process sits in that slot in every hierarchy.
    const pid_t pid = *h.supervisor().pid(id);
    const std::string cgroups = slurp("/proc/" + std::to_string(pid) + "/cgroup");
    INFO(cgroups);
    CHECK(contains(cgroups, "/" + *name + "\n"));
    // No longer the parked "nps-pool" copy of the runner: it executed its worker.
    CHECK(h.run_until([&] { return slurp("/proc/" + std::to_string(pid) + "/comm") == "sleep\n"; }));
    auto stats = h.supervisor().spawn_stats();
    CHECK(stats.pooled == 1);
    CHECK(stats.direct == 0);

    // Killed as any worker: its whole cgroup, which is then removed.
    h.supervisor().kill(id);
    auto o = h.wait(id);
    CHECK(o.killed_reason == KilledReason::shutdown);
    CHECK_FALSE(process_running("sleep 4322"));
    CHECK(h.run_until([&] {
        const auto dirs = h.all_cgroups();
        return std::none_of(dirs.begin(), dirs.end(), [&](const std::string& dir) { return contains(dir, "/" + *name); });
    }));
    // The refill thread parked another child behind it.
    CHECK(h.wait_parked(kDefaultSpawnPool));
    CHECK(h.no_cgroups_left());
}

TEST_CASE("pool: sequential workers all come from the pool, limits and OOM detection included")
{
    auto* base = host_cgroup_base();
    Harness h(Cgroups::host);
    if (!h.available())
        return;
    for (int i = 0; i < 3; ++i) {
        REQUIRE(h.wait_parked(kDefaultSpawnPool));
        auto o = h.wait(h.start(sh_worker("echo " + std::to_string(i))));
        CHECK(o.state == WorkerState::completed);
    }
    if (!base->enforced_by("memory").empty()) {
        REQUIRE(h.wait_parked(kDefaultSpawnPool));
        auto spec = sh_worker("x=$(head -c 200000000 /dev/zero | tr '\\0' x); echo survived");
        spec.limits.memory_bytes = 32 * 1024 * 1024;
        auto o = h.wait(h.start(std::move(spec)));
        CHECK(o.oom_killed);
        CHECK(o.killed_reason == KilledReason::oom);
    }
    auto stats = h.supervisor().spawn_stats();
    CHECK(stats.direct == 0);
    CHECK(stats.pooled == (base->enforced_by("memory").empty() ? 3u : 4u));
    CHECK(stats.refill_failures == 0);
    CHECK(h.no_cgroups_left());
}

TEST_CASE("pool: a worker's own bad spec is its outcome, with no second try by a direct spawn")
{
    Harness h(Cgroups::host);
    if (!h.available())
        return;
    REQUIRE(h.wait_parked(kDefaultSpawnPool));
    auto spec = sh_worker("");
    spec.sandbox.argv = {"/bin/no-such-program"};
    auto o = h.wait(h.start(std::move(spec)));
    CHECK(o.state == WorkerState::failed);
    CHECK(o.killed_reason == KilledReason::spawn_failed);
    CHECK(contains(o.error_message, "Failed to execute '/bin/no-such-program'"));
    auto stats = h.supervisor().spawn_stats();
    CHECK(stats.pooled == 0);
    CHECK(stats.direct == 0);
    CHECK(h.no_cgroups_left());
}

TEST_CASE("pool: spawn_pool = 0 spawns every worker directly, in its own <prefix>-<pid>-<id> cgroup")
{
    Harness h(Cgroups::host, [](SupervisorOptions& o) { o.spawn_pool = 0; });
    if (!h.available())
        return;
    auto id = h.start(sh_worker("exec sleep 4323"));
    // Running, and taken back by the loop (its spawn thread has handed it over).
    REQUIRE(h.run_until([&] { return process_running("sleep 4323") && h.supervisor().pid(id).has_value(); }));
    CHECK(*h.supervisor().cgroup_name(id) == h.prefix() + "-" + std::to_string(::getpid()) + "-" + std::to_string(id));
    h.supervisor().kill(id);
    h.wait(id);
    CHECK(h.wait(h.start(sh_worker("true"))).state == WorkerState::completed);
    auto stats = h.supervisor().spawn_stats();
    CHECK(stats.pool_size == 0);
    CHECK(stats.pooled == 0);
    CHECK(stats.direct == 2);
    CHECK(h.run_until([&] { return h.all_cgroups().empty(); }));  // no slot was ever made
}

TEST_CASE("pool: with no live parked child the worker is spawned directly, and the pool refills")
{
    Harness h(Cgroups::host, [](SupervisorOptions& o) { o.spawn_pool = 1; });
    if (!h.available())
        return;
    REQUIRE(h.wait_parked(1));
    // The refill thread sleeps until the next spawn: the dead child stays
    // in the pool until that spawn skips it.
    const auto parked = parked_pids(h);
    REQUIRE(parked.size() == 1);
    REQUIRE(::kill(parked.front(), SIGKILL) == 0);
    REQUIRE(h.run_until([&] { return h.parked_slots().empty(); }));

    auto id = h.start(sh_worker("exec sleep 4324"));
    // Running, and taken back by the loop (its spawn thread has handed it over).
    REQUIRE(h.run_until([&] { return process_running("sleep 4324") && h.supervisor().pid(id).has_value(); }));
    CHECK_FALSE(starts_with(*h.supervisor().cgroup_name(id), slot_head(h)));
    auto stats = h.supervisor().spawn_stats();
    CHECK(stats.pooled == 0);
    CHECK(stats.direct == 1);
    h.supervisor().kill(id);
    h.wait(id);
    CHECK(h.wait_parked(1));
    // The dead child's slot is gone; the new one is parked.
    CHECK(h.no_cgroups_left());
    const auto now = parked_pids(h);
    REQUIRE(now.size() == 1);
    CHECK(now.front() != parked.front());
}

TEST_CASE("pool: destroying the supervisor kills the parked children and removes their slots")
{
    Harness h(Cgroups::host, [](SupervisorOptions& o) { o.spawn_pool = 3; });
    if (!h.available())
        return;
    REQUIRE(h.wait_parked(3));
    const auto parked = parked_pids(h);
    CHECK(parked.size() == 3);
    CHECK_FALSE(h.parked_slots().empty());
    h.destroy_supervisor();
    for (pid_t pid : parked)
        CHECK(::kill(pid, 0) < 0);  // killed and reaped
    CHECK(h.all_cgroups().empty());
}

TEST_CASE("pool: a spawn_pool above the limit is refused")
{
    auto loop = nps::event::EventLoop::create();
    REQUIRE(loop);
    SupervisorOptions options;
    options.spawn_pool = nps::limits::kSpawnPoolMaxSize + 1;
    auto made = Supervisor::create(**loop, options);
    REQUIRE_FALSE(made);
    CHECK(contains(made.error().message, "spawn_pool"));
}
