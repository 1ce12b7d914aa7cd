// SPDX-License-Identifier: Apache-2.0
// Workers held before their execve (Supervisor::hold), with real sandboxed
// busybox workers, cloned by a spawn server or spawned directly, with and
// without cgroups: start() with the hold releases it with the DelegateFrame's
// NPS_* variables and runs its timers from there; a hold that does not fit
// its worker is dropped and the worker spawned as usual; drop_held(),
// cancelling a queued worker and destroying the supervisor leave no process
// or cgroup behind; a hold never takes a runnable worker's place.
#include <doctest/doctest.h>

#include <filesystem>
#include <optional>

#include <nlohmann/json.hpp>

#include "nps/sandbox/spawn_server.hpp"
#include "supervisor_fixture.hpp"

using namespace nps::supervisor;
using namespace nps::test;
using namespace std::chrono_literals;
using Json = nlohmann::json;

namespace {

bool contains(const std::string& text, const std::string& part)
{
    return text.find(part) != std::string::npos;
}

// Runs the loop for `period`.
void idle(Harness& h, std::chrono::milliseconds period)
{
    const auto until = nps::event::EventLoop::now() + period;
    (void)h.run_until([&] { return nps::event::EventLoop::now() >= until; });
}

nps::sandbox::SpawnServer& spawn_server()
{
    static nps::sandbox::SpawnServer server = [] {
        auto started = nps::sandbox::SpawnServer::start();
        REQUIRE_MESSAGE(started, (started ? std::string() : started.error().describe()));
        return std::move(*started);
    }();
    return server;
}

// The four ways a held worker can be made: with or without cgroups, cloned
// by a spawn server or spawned directly. No spawn pool (a hold never uses it).
#define HELD_MODES(mode, through_server)                                                        \
    Cgroups mode = Cgroups::none;                                                                \
    bool through_server = false;                                                                 \
    SUBCASE("direct, without cgroups") {}                                                        \
    SUBCASE("direct, with cgroups") { mode = Cgroups::host; }                                    \
    SUBCASE("server, without cgroups") { through_server = true; }                                \
    SUBCASE("server, with cgroups")                                                              \
    {                                                                                            \
        mode = Cgroups::host;                                                                    \
        through_server = true;                                                                   \
    }

std::function<void(SupervisorOptions&)> options(bool through_server, std::size_t max_concurrent = 8)
{
    return [=](SupervisorOptions& o) {
        o.spawn_pool = 0;
        o.spawn_server = through_server ? &spawn_server() : nullptr;
        o.max_concurrent = max_concurrent;
    };
}

}  // namespace

TEST_CASE("a held worker is released by start() with its NPS_* variables, its timers running from the release")
{
    HELD_MODES(mode, through_server);
    Harness h(mode, options(through_server));
    if (!h.available())
        return;
    WorkerSpec spec = sh_worker(
        "read -r frame; echo \"env $NPS_TASK_ID $NPS_NODE_ID $NPS_ATTEMPT $NPS_DEADLINE_AT $EXTRA\"; sleep 0.3; "
        "echo '{\"seq\":0,\"is_final\":true,\"data\":{\"answer\":4}}'");
    spec.sandbox.env.push_back("EXTRA=x");
    spec.sandbox.env.push_back("NPS_NODE_ID=stale");  // the frame's wins, as for any worker
    spec.max_runtime = 1s;
    const std::optional<WorkerId> held = h.supervisor().hold(spec);
    REQUIRE(held);
    CHECK(h.supervisor().held() == 1);
    // Held for longer than its max runtime: nothing of it ran, no limit ran out.
    idle(h, 1500ms);
    const std::string log_dir = h.log_root() + "/" + h.prefix() + "-" + std::to_string(::getpid()) + "-" +
                                std::to_string(*held);
    CHECK_FALSE(std::filesystem::exists(log_dir + "/stdout.log"));
    if (mode == Cgroups::host)
        CHECK(h.leftover_cgroups().size() >= 1);  // its cgroup exists, with the process in it

    const auto before = nps::event::EventLoop::now();
    const WorkerId id = h.start(spec, held);
    CHECK(id == *held);
    const WorkerOutcome o = h.wait(id);
    CHECK(h.supervisor().held() == 0);
    CHECK(o.state == WorkerState::completed);
    CHECK(o.result_json == R"({"answer":4})");
    CHECK(o.started >= before);
    CHECK(o.log_dir == log_dir);
    const Json frame = test_delegate_frame();
    CHECK(contains(slurp(o.log_dir + "/stdout.log"),
                   "env task-1 n1 1 " + frame["deadline_at"].get<std::string>() + " x\n"));
    const SpawnStats stats = h.supervisor().spawn_stats();
    CHECK(stats.held == 1);
    CHECK(stats.server == 0);
    CHECK(stats.direct == 0);
    CHECK(stats.holds_unused == 0);
    CHECK(contains(render_spawn_metrics(stats), "nps_worker_spawns_total{path=\"held\"} 1\n"));
    CHECK(h.no_cgroups_left());
}

TEST_CASE("a held process that does not fit its worker is dropped, and the worker spawned as usual")
{
    HELD_MODES(mode, through_server);
    Harness h(mode, options(through_server));
    if (!h.available())
        return;
    WorkerSpec spec = sh_worker("echo held");
    const auto held = h.supervisor().hold(spec);
    REQUIRE(held);
    WorkerSpec other = sh_worker("echo other");
    const WorkerId id = h.start(other, held);
    const WorkerOutcome o = h.wait(id);
    CHECK(o.state == WorkerState::completed);
    CHECK(slurp(o.log_dir + "/stdout.log") == "other\n");
    CHECK(h.run_until([&] { return h.supervisor().held() == 0 && h.leftover_cgroups().empty(); }));
    const SpawnStats stats = h.supervisor().spawn_stats();
    CHECK(stats.held == 0);
    CHECK(stats.holds_unused == 1);
    CHECK(stats.server + stats.direct == 1);

    // A worker refused by start() (no outcome callback) does not keep the hold either.
    const auto again = h.supervisor().hold(spec);
    REQUIRE(again);
    CHECK_FALSE(h.supervisor().start(spec, WorkerCallbacks{}, *again));
    CHECK(h.run_until([&] { return h.supervisor().held() == 0 && h.leftover_cgroups().empty(); }));
}

TEST_CASE("drop_held, a cancelled queued worker and the supervisor's end leave no held process or cgroup")
{
    HELD_MODES(mode, through_server);
    Harness h(mode, options(through_server, 2));
    if (!h.available())
        return;
    // A hold never takes a runnable worker's place: two fill max_concurrent.
    const auto first = h.supervisor().hold(sh_worker("echo 1"));
    const auto second = h.supervisor().hold(sh_worker("echo 2"));
    REQUIRE(first);
    REQUIRE(second);
    CHECK_FALSE(h.supervisor().hold(sh_worker("echo 3")));
    bool gone = false;
    h.supervisor().drop_held(*first, [&] { gone = true; });
    CHECK(h.run_until([&] { return gone; }));
    h.supervisor().drop_held(*second);
    CHECK(h.run_until([&] { return h.supervisor().held() == 0 && h.leftover_cgroups().empty(); }));
    CHECK(h.supervisor().spawn_stats().holds_unused == 2);

    // Queued behind max_concurrent, then cancelled: its hold goes too.
    const auto held = h.supervisor().hold(sh_worker("echo held"));
    REQUIRE(held);
    const WorkerId a = h.start(sh_worker("exec sleep 30"));
    const WorkerId b = h.start(sh_worker("exec sleep 30"));
    h.run_until([&] { return h.supervisor().running() == 2; });
    const WorkerId queued = h.start(sh_worker("echo held"), held);
    CHECK(h.supervisor().queued() == 1);
    h.supervisor().cancel(queued);
    CHECK(h.wait(queued).state == WorkerState::cancelled);
    CHECK(h.run_until([&] { return h.supervisor().held() == 0; }));
    h.supervisor().kill(a);
    h.supervisor().kill(b);
    h.wait(a);
    h.wait(b);
    CHECK(h.run_until([&] { return h.leftover_cgroups().empty(); }));

    // Destroyed with a process held: killed, its cgroup removed.
    REQUIRE(h.supervisor().hold(sh_worker("echo never")));
    idle(h, 300ms);
    h.destroy_supervisor();
    CHECK(h.leftover_cgroups().empty());
}

TEST_CASE("a hold that failed is spawned afresh; an execve failing at its release is the worker's spawn failure")
{
    HELD_MODES(mode, through_server);
    Harness h(mode, options(through_server));
    if (!h.available())
        return;
    WorkerSpec nowhere = sh_worker("echo never");
    nowhere.sandbox.rootfs = "/nonexistent/rootfs";
    const auto failed_hold = h.supervisor().hold(nowhere);
    REQUIRE(failed_hold);  // the spawn fails on its thread, not here
    const WorkerOutcome o = h.wait(h.start(nowhere, failed_hold));
    INFO("the outcome's error: " << o.error_message);
    CHECK(o.killed_reason == KilledReason::spawn_failed);
    CHECK(contains(o.error_message, "Failed to resolve the rootfs '/nonexistent/rootfs'"));
    CHECK(h.supervisor().spawn_stats().holds_unused == 1);

    WorkerSpec missing = sh_worker("");
    missing.sandbox.argv = {"/bin/no-such-program"};
    const auto held = h.supervisor().hold(missing);
    REQUIRE(held);
    const WorkerOutcome m = h.wait(h.start(missing, held));
    CHECK(m.killed_reason == KilledReason::spawn_failed);
    CHECK(contains(m.error_message, "Failed to execute '/bin/no-such-program' in the sandbox"));
    CHECK(h.supervisor().spawn_stats().held == 0);  // a release that failed counts on no path
    CHECK(h.run_until([&] { return h.supervisor().held() == 0 && h.leftover_cgroups().empty(); }));
}
