// SPDX-License-Identifier: Apache-2.0
// The deliverer on an event loop (issue 5): many reports at once through one
// deliverer on one loop thread, a hung task store that does not stall the
// loop, and a daemon without a thread of the deliverer's.
#include <doctest/doctest.h>

#include <dirent.h>

#include <atomic>
#include <fstream>
#include <set>
#include <sstream>

#include "report_fixture.hpp"
#include "runner_process.hpp"

using namespace report_test;

namespace {

nps::net::HttpResponse ok()
{
    nps::net::HttpResponse response;
    response.status = 200;
    response.body = R"({"outcome":"recorded"})";
    return response;
}

// Holds every request until released (or 30 s), counting them.
struct Gate {
    std::atomic<bool> hold{true};
    std::atomic<int> arrived{0};
    std::atomic<int> answered{0};
    std::atomic<int> current{0};
    std::atomic<int> most{0};

    nps::net::HttpResponse pass()
    {
        ++arrived;
        const int now = ++current;
        for (int seen = most.load(); now > seen && !most.compare_exchange_weak(seen, now);) {
        }
        for (int i = 0; i < 3000 && hold.load(); ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        --current;
        ++answered;
        return ok();
    }
};

// The threads of `pid` by name (/proc/<pid>/task/<tid>/comm).
std::multiset<std::string> thread_names(pid_t pid)
{
    std::multiset<std::string> names;
    const std::string dir = "/proc/" + std::to_string(pid) + "/task";
    DIR* tasks = ::opendir(dir.c_str());
    REQUIRE(tasks != nullptr);
    while (const dirent* entry = ::readdir(tasks)) {
        if (entry->d_name[0] == '.')
            continue;
        std::ifstream comm(dir + "/" + entry->d_name + "/comm");
        std::string name;
        std::getline(comm, name);
        names.insert(name);
    }
    ::closedir(tasks);
    return names;
}

}  // namespace

TEST_CASE("many reports are delivered concurrently by one deliverer on one loop thread")
{
    Gate gate;
    Runner runner;
    TaskStoreServer store;
    store.set_answer([&](const Received&, std::size_t) { return gate.pass(); });
    for (int i = 0; i < 40; ++i) {
        const std::string task = "task-" + std::to_string(i);
        runner.deposit(task, frame(task, 1));
        runner.record(task, "n0", NodeState::completed, "{}");
    }
    auto options = quick_options(runner);
    options.task_store_url = store.url();
    options.batch = 8;
    auto deliverer = start_deliverer(options);

    // Every slot holds a transfer at once, all on the loop's thread.
    REQUIRE(wait_until([&] { return gate.arrived.load() >= 8; }));
    CHECK(deliverer->in_flight() == 8);
    CHECK(gate.most.load() == 8);
    gate.hold.store(false);
    REQUIRE(wait_until([&] { return runner.counts().backlog == 0; }));
    CHECK(runner.counts().dead == 0);
    std::set<std::string> keys;
    for (const auto& r : store.received())
        CHECK(keys.insert(r.headers.at("idempotency-key")).second);
    CHECK(keys.size() == 40);
    CHECK(gate.most.load() <= 8);  // never more than the batch
}

TEST_CASE("a hung task store does not stall the loop: a timer on it runs while the transfer hangs")
{
    Gate gate;
    Runner runner;
    TaskStoreServer store;
    store.set_answer([&](const Received&, std::size_t) { return gate.pass(); });
    runner.deposit("task-1", frame("task-1", 1));
    runner.record("task-1", "n0", NodeState::completed, "{}");
    auto options = quick_options(runner);
    options.task_store_url = store.url();
    options.timeout = std::chrono::seconds(60);
    auto deliverer = start_deliverer(options);
    REQUIRE(wait_until([&] { return gate.arrived.load() == 1; }));

    std::atomic<bool> fired{false};
    deliverer->thread().call([&] {
        deliverer->thread().loop().add_timer_after(std::chrono::milliseconds(50), [&] { fired.store(true); });
    });
    REQUIRE(wait_until([&] { return fired.load(); }));
    CHECK(gate.answered.load() == 0);  // the transfer was still hanging
    CHECK(deliverer->in_flight() == 1);

    // stop() on the loop aborts it and gives the row back at once.
    deliverer->stop();
    CHECK(deliverer->in_flight() == 0);
    CHECK(runner.counts().backlog == 1);
    gate.hold.store(false);
    auto second = start_deliverer(options);
    REQUIRE(wait_until([&] { return runner.counts().backlog == 0; }));
}

TEST_CASE("the daemon delivers on its loop: no thread of the deliverer's, and SIGTERM ends it during a transfer")
{
    Gate gate;
    Runner runner;
    TaskStoreServer store;
    store.set_answer([&](const Received&, std::size_t) { return gate.pass(); });
    runner.deposit("task-1", frame("task-1", 1));
    runner.claim("task-1");

    nps::test::RunnerProcess daemon(nps::test::RunnerOptions{
        .state_dir = runner.dir.path(),
        .config_text = "[report]\ntask_store_url = \"" + store.url() + "\"\ntimeout_seconds = 60\n"});
    REQUIRE_MESSAGE(daemon.start(), daemon.log());
    runner.record("task-1", "n0", NodeState::completed, "{}");  // found by the daemon's periodic look
    REQUIRE(wait_until([&] { return gate.arrived.load() == 1; }));

    // While the PATCH hangs: the loop thread (main, "nps-runner") and the
    // named pools — the executor's launch threads, the API's job threads,
    // the spawn pool's refill thread (with cgroups), the supervisor's spawn
    // threads, the network namespace pool's (with per-task netns), the
    // retention sweep — nothing else; the
    // deliverer had a thread of its own, libmicrohttpd had some too.
    const auto names = thread_names(daemon.pid());
    CHECK(names.count("nps-runner") == 1);
    for (const std::string& name : names)
        CHECK_MESSAGE((name == "nps-runner" || name == "nps-launch" || name == "nps-api-jobs" || name == "nps-pool" ||
                        name == "nps-spawn" || name == "nps-netns" || name == "nps-retention"),
                      "unexpected thread '" << name << "'");

    CHECK(daemon.stop() == 0);
    gate.hold.store(false);
    CHECK(runner.counts().backlog == 1);  // given back, not lost
}

TEST_CASE("the daemon loads libcurl at its first call-out, not before: an idle runner does not pay for it")
{
    Runner runner;
    TaskStoreServer store;
    store.set_answer([](const Received&, std::size_t) { return ok(); });
    runner.deposit("task-1", frame("task-1", 1));
    runner.claim("task-1");
    nps::test::RunnerProcess daemon(nps::test::RunnerOptions{
        .state_dir = runner.dir.path(), .config_text = "[report]\ntask_store_url = \"" + store.url() + "\"\n"});
    REQUIRE_MESSAGE(daemon.start(), daemon.log());
    auto libcurl_mapped = [&] {
        std::ifstream maps("/proc/" + std::to_string(daemon.pid()) + "/maps");
        std::stringstream text;
        text << maps.rdbuf();
        return text.str().find("/libcurl.so") != std::string::npos;
    };
    // Up and answering, its deliverer polling: nothing to deliver yet.
    CHECK(nps::test::http("GET", daemon.url() + "/healthz").status == 200);
    CHECK_FALSE(libcurl_mapped());

    runner.record("task-1", "n0", NodeState::completed, "{}");
    REQUIRE(wait_until([&] { return runner.counts().backlog == 0; }));
    CHECK(store.received().size() == 1);
    CHECK(libcurl_mapped());
    CHECK(daemon.stop() == 0);
}
