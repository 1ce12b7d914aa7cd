// SPDX-License-Identifier: Apache-2.0
// Node reports through the real Deliverer to a real HTTP task store on
// loopback: an outage loses nothing, order per node holds, replays are
// harmless, a crashed deliverer's rows are taken over after their lease,
// refusals and old reports end as dead rows.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <thread>

#include "report_fixture.hpp"

using namespace report_test;

namespace {

std::unique_ptr<LoopDeliverer> start(nps::report::DelivererOptions options)
{
    return start_deliverer(std::move(options));
}

// The states each node's reports arrived with, first arrival of each
// Idempotency-Key only, in arrival order.
std::map<std::string, std::vector<std::string>> arrivals_by_node(const std::vector<Received>& received)
{
    std::map<std::string, std::vector<std::string>> out;
    std::set<std::string> seen;
    for (const auto& r : received) {
        const std::string key = r.headers.count("idempotency-key") ? r.headers.at("idempotency-key") : "";
        if (!seen.insert(key).second)
            continue;
        const Json body = Json::parse(r.body);
        out[body["node_id"].get<std::string>()].push_back(body["state"].get<std::string>());
    }
    return out;
}

nps::net::HttpResponse answer(int status, const std::string& body = "{}",
                              std::vector<std::pair<std::string, std::string>> headers = {})
{
    nps::net::HttpResponse response;
    response.status = status;
    response.body = body;
    response.headers = std::move(headers);
    return response;
}

}  // namespace

TEST_CASE("the task store is down while states are recorded: every report arrives later, in order, once per key")
{
    // Declared before the server whose handler uses them.
    std::set<std::string> answered;
    std::mutex answered_mutex;
    Runner runner;
    TaskStoreServer store;
    store.down();
    runner.deposit("task-1", frame("task-1", 3));
    runner.claim("task-1");

    auto options = quick_options(runner);
    options.task_store_url = store.url();
    options.task_store_token = "tok-123";
    auto deliverer = start(options);

    runner.record("task-1", "n0", NodeState::completed, R"({"charge_id":"c-1"})");
    deliverer->notify();
    runner.record("task-1", "n1", NodeState::failed, std::nullopt, "NOP-WORKER-FAILED");
    runner.record("task-1", "n0", NodeState::compensating);
    runner.record("task-1", "n2", NodeState::skipped);
    runner.record("task-1", "n0", NodeState::compensated);
    deliverer->notify();
    // The store is down: attempts fail and are retried, nothing is lost.
    REQUIRE(wait_until([&] { return runner.max_tries() >= 2; }));
    CHECK(runner.counts().backlog == 5);
    CHECK(store.received().empty());

    // Back, but the first answer for every key is lost (500 after recording
    // it): each report is sent again, which must be harmless.
    store.set_answer([&](const Received& r, std::size_t) {
        std::lock_guard lock(answered_mutex);
        const bool first = answered.insert(r.headers.count("idempotency-key") ? r.headers.at("idempotency-key") : "")
                               .second;
        return first ? answer(500, R"({"status":"NPS-SERVER-INTERNAL","error":"X","message":"lost"})")
                     : answer(200, R"({"outcome":"recorded"})");
    });
    store.up();
    REQUIRE(wait_until([&] { return runner.counts().backlog == 0; }));
    CHECK(runner.counts().dead == 0);

    const auto received = store.received();
    std::set<std::string> keys;
    std::map<std::string, std::string> body_of_key;
    for (const auto& r : received) {
        CHECK(r.method == "PATCH");
        CHECK(r.headers.at("content-type") == "application/json");
        CHECK(r.headers.at("authorization") == "Bearer tok-123");
        const std::string key = r.headers.at("idempotency-key");
        keys.insert(key);
        // A replay is the very same request.
        auto [it, inserted] = body_of_key.emplace(key, r.body);
        if (!inserted)
            CHECK(it->second == r.body);
    }
    CHECK(keys.size() == 5);
    CHECK(received.size() >= 10);  // every key at least twice
    const std::string dedup = runner.dedup_key("task-1");
    CHECK(keys.count(dedup + ":n0:COMPLETED") == 1);
    CHECK(keys.count(dedup + ":n0:COMPENSATED") == 1);

    const auto order = arrivals_by_node(received);
    CHECK(order.at("n0") == std::vector<std::string>{"COMPLETED", "COMPENSATING", "COMPENSATED"});
    CHECK(order.at("n1") == std::vector<std::string>{"FAILED"});
    CHECK(order.at("n2") == std::vector<std::string>{"SKIPPED"});

    // The body of one report, field by field.
    const auto first_n1 = std::find_if(received.begin(), received.end(), [](const Received& r) {
        return r.path == "/v1/tasks/task-1/nodes/n1";
    });
    REQUIRE(first_n1 != received.end());
    const Json body = Json::parse(first_n1->body);
    CHECK(body["task_id"] == "task-1");
    CHECK(body["node_id"] == "n1");
    CHECK(body["dedup_key"] == dedup);
    CHECK(body["state"] == "FAILED");
    CHECK(body["attempts"] == 1);
    CHECK(body["error"] == Json{{"code", "NOP-WORKER-FAILED"}, {"message", nullptr}});
    CHECK(body["result"].is_null());
    CHECK(body["killed_reason"].is_null());
    CHECK(body["runner_nid"] == kRunnerA);
    CHECK(body["reported_at"].is_string());
    // The deliverer's count is as of its last look, which follows the last
    // delivery by a moment.
    CHECK(wait_until([&] { return deliverer->backlog() == 0; }));
}

TEST_CASE("a crashed deliverer's rows are delivered by another after their lease, never before")
{
    Runner runner;
    TaskStoreServer store;
    runner.deposit("task-1", frame("task-1", 2));
    runner.record("task-1", "n0", NodeState::completed, "{}");
    runner.record("task-1", "n1", NodeState::completed, "{}");

    // What a deliverer that died mid-delivery leaves: rows leased to it.
    auto crashed = runner.store->claim_reports({.owner = "crashed:1:0", .lease_ms = 1500, .max_rows = 16});
    REQUIRE(crashed);
    REQUIRE(crashed->size() == 2);
    const std::int64_t lease_until = crashed->front().lease_until_ms;

    auto options = quick_options(runner);
    options.task_store_url = store.url();
    auto deliverer = start(options);  // its own Store on the same file
    deliverer->notify();
    REQUIRE(wait_until([&] { return runner.counts().backlog == 0; }));
    const auto received = store.received();
    REQUIRE(received.size() == 2);
    for (const auto& r : received)
        CHECK(r.at_ms >= lease_until);
}

TEST_CASE("a deliverer stopped mid-delivery gives its rows back; another delivers them")
{
    std::atomic<bool> hold{true};
    std::atomic<int> arrived{0};
    Runner runner;
    TaskStoreServer store;
    store.set_answer([&](const Received&, std::size_t) {
        ++arrived;
        for (int i = 0; i < 3000 && hold.load(); ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        return answer(200);
    });
    runner.deposit("task-1", frame("task-1", 2));
    runner.record("task-1", "n0", NodeState::completed, "{}");
    runner.record("task-1", "n1", NodeState::failed, std::nullopt, "NOP-WORKER-FAILED");

    auto options = quick_options(runner);
    options.task_store_url = store.url();
    options.timeout = std::chrono::seconds(60);  // the lease outlives this test unless given back
    auto first = start(options);
    REQUIRE(wait_until([&] { return arrived.load() >= 1; }));
    first.reset();  // the transfer is cancelled, the rows released
    hold.store(false);
    CHECK(runner.counts().backlog == 2);

    store.set_answer(nullptr);
    auto second = start(options);
    REQUIRE(wait_until([&] { return runner.counts().backlog == 0; }));
    CHECK(runner.counts().dead == 0);
}

TEST_CASE("a 4xx refusal makes the row dead at once, with an event; other nodes go on")
{
    Runner runner;
    TaskStoreServer store;
    store.set_answer([](const Received& r, std::size_t) {
        if (r.path.ends_with("/n0"))
            return answer(404, R"({"status":"NPS-CLIENT-NOT-FOUND","error":"NOP-TASK-NOT-FOUND","message":"Task 'task-1' does not exist"})");
        return answer(200);
    });
    runner.deposit("task-1", frame("task-1", 2));
    runner.record("task-1", "n0", NodeState::completed, "{}");
    runner.record("task-1", "n1", NodeState::completed, "{}");
    auto options = quick_options(runner);
    options.task_store_url = store.url();
    auto deliverer = start(options);
    REQUIRE(wait_until([&] { return runner.counts().backlog == 0; }));
    CHECK(runner.counts().dead == 1);
    REQUIRE(wait_until([&] { return deliverer->dead() == 1; }));
    auto dead = runner.store->dead_reports(0);
    REQUIRE(dead);
    REQUIRE(dead->size() == 1);
    CHECK(dead->front().node_id == "n0");
    CHECK(dead->front().tries == 1);
    REQUIRE(dead->front().last_error);
    CHECK(dead->front().last_error->find("HTTP 404 NOP-TASK-NOT-FOUND") != std::string::npos);
    CHECK(runner.has_event("task-1", "report:abandoned"));
    CHECK(store.received().size() == 2);  // n0 once, n1 once
}

TEST_CASE("a report still failing at max age is given up; Retry-After is honoured")
{
    Runner runner;
    TaskStoreServer store;
    store.set_answer([](const Received&, std::size_t index) {
        if (index == 0)
            return answer(429, "{}", {{"Retry-After", "1"}});
        return answer(503);
    });
    runner.deposit("task-1", frame("task-1", 1));
    runner.record("task-1", "n0", NodeState::completed, "{}");
    auto options = quick_options(runner);
    options.task_store_url = store.url();
    options.max_age = std::chrono::milliseconds(1500);
    auto deliverer = start(options);
    REQUIRE(wait_until([&] { return runner.counts().dead == 1; }));
    const auto received = store.received();
    REQUIRE(received.size() >= 2);
    CHECK(received[1].at_ms - received[0].at_ms >= 1000);  // not before the Retry-After
    auto dead = runner.store->dead_reports(0);
    REQUIRE(dead);
    REQUIRE(dead->size() == 1);
    REQUIRE(dead->front().last_error);
    CHECK(dead->front().last_error->find("gave up after") != std::string::npos);
    CHECK(dead->front().last_error->find("HTTP 503") != std::string::npos);
}

TEST_CASE("without a task store, node rows are done at once and nothing is sent")
{
    Runner runner;
    runner.deposit("task-1", frame("task-1", 2));
    runner.record("task-1", "n0", NodeState::completed, "{}");
    auto deliverer = start(quick_options(runner));
    REQUIRE(wait_until([&] { return runner.counts().backlog == 0; }));
    runner.record("task-1", "n1", NodeState::failed, std::nullopt, "NOP-WORKER-FAILED");
    deliverer->notify();
    REQUIRE(wait_until([&] { return runner.counts().backlog == 0; }));
    CHECK(runner.counts().dead == 0);
}

TEST_CASE("two deliverers on one runner.db send each report once")
{
    Runner runner;
    TaskStoreServer store;
    runner.deposit("task-1", frame("task-1", 1));
    for (int i = 0; i < 40; ++i) {
        const std::string task = "task-many-" + std::to_string(i);
        runner.deposit(task, frame(task, 1));
        runner.record(task, "n0", NodeState::completed, "{}");
    }
    auto options = quick_options(runner);
    options.task_store_url = store.url();
    options.batch = 3;
    auto a = start(options);
    auto b = start(options);
    REQUIRE(wait_until([&] { return runner.counts().backlog == 0; }));
    std::set<std::string> keys;
    for (const auto& r : store.received())
        CHECK(keys.insert(r.headers.at("idempotency-key")).second);
    CHECK(keys.size() == 40);
}
