// SPDX-License-Identifier: Apache-2.0
// One nps-runner (the real binary) as the task store of another runner's
// deliverer: the PATCH endpoint takes exactly the body the deliverer sends,
// answers replays idempotently, follows the saga, and refuses a task it does
// not know (NOP-TASK-NOT-FOUND: a permanent refusal, the row is dead).
#include <doctest/doctest.h>

#include "nps/report/report_messages.hpp"
#include "report_fixture.hpp"
#include "runner_process.hpp"

using namespace report_test;
using nps::test::http;
using nps::test::RunnerOptions;
using nps::test::RunnerProcess;

namespace {

struct TaskStoreDaemon {
    nps::test::TempDir dir{"nps-report-store"};
    RunnerProcess runner{RunnerOptions{.state_dir = dir.path()}};
    TaskStoreDaemon() { REQUIRE_MESSAGE(runner.start(), runner.log()); }

    // Deposits the frame there; returns its {dag_hash, dedup_key}.
    std::pair<std::string, std::string> deposit(const std::string& task_id, const std::string& frame_text)
    {
        auto reply = http("POST", runner.url() + "/v1/inbox/" + nps::net::url_encode(kInbox), frame_text);
        REQUIRE_MESSAGE(reply.status == 201, reply.raw);
        auto task = http("GET", runner.url() + "/v1/tasks/" + task_id);
        REQUIRE(task.status == 200);
        return {task.body["dag_hash"], task.body["dedup_key"]};
    }

    Json task(const std::string& task_id)
    {
        auto reply = http("GET", runner.url() + "/v1/tasks/" + task_id);
        REQUIRE_MESSAGE(reply.status == 200, reply.raw);
        return reply.body;
    }
};

std::unique_ptr<LoopDeliverer> start(nps::report::DelivererOptions options)
{
    return start_deliverer(std::move(options));
}

}  // namespace

TEST_CASE("an nps-runner daemon is the task store of another runner's deliverer")
{
    TaskStoreDaemon store;
    Runner runner;
    const std::string text = frame("task-remote", 3);
    const auto [dag_hash, dedup_key] = store.deposit("task-remote", text);
    // The executing runner holds the same TaskFrame (e.g. claimed through the
    // store's claims endpoint); its dedup_key is the same.
    runner.deposit("task-remote", text, dag_hash, dedup_key);
    runner.claim("task-remote");

    auto options = quick_options(runner);
    options.task_store_url = store.runner.url() + "/v1/tasks";
    options.task_store_token = store.runner.token();
    auto deliverer = start(options);
    runner.record("task-remote", "n0", NodeState::completed, R"({"charge_id":"c-1"})");
    runner.record("task-remote", "n1", NodeState::failed, std::nullopt, "NOP-WORKER-FAILED");
    runner.record("task-remote", "n0", NodeState::compensating);
    runner.record("task-remote", "n0", NodeState::compensated);
    runner.record("task-remote", "n2", NodeState::skipped);
    deliverer->notify();
    REQUIRE(wait_until([&] { return runner.counts().backlog == 0; }));
    CHECK(runner.counts().dead == 0);

    const Json task = store.task("task-remote");
    const Json& nodes = task["nodes"];
    CHECK(nodes["n0"]["state"] == "COMPENSATED");
    CHECK(nodes["n0"]["result"] == Json{{"charge_id", "c-1"}});  // kept through the saga
    CHECK(nodes["n0"]["runner_nid"] == kRunnerA);
    CHECK(nodes["n1"]["state"] == "FAILED");
    CHECK(nodes["n1"]["error_code"] == "NOP-WORKER-FAILED");
    CHECK(nodes["n1"]["attempts"] == 1);
    CHECK(nodes["n2"]["state"] == "SKIPPED");

    // Replays of reports already recorded are answered 200 and change nothing,
    // the saga's earlier states included.
    auto sent = runner.store->node_results("task-remote");
    REQUIRE(sent);
    for (const char* state : {"COMPLETED", "COMPENSATING", "COMPENSATED"}) {
        nps::store::ReportRow row{.task_id = "task-remote", .node_id = "n0", .dedup_key = dedup_key,
                                  .state = state, .attempts = 1, .result_json = R"({"charge_id":"c-1"})",
                                  .runner_nid = std::string(kRunnerA)};
        auto body = nps::report::node_report_body(row);
        REQUIRE(body);
        auto replay = http("PATCH", store.runner.url() + "/v1/tasks/task-remote/nodes/n0", *body,
                           {{"Idempotency-Key", nps::report::node_report_idempotency_key(row)}});
        CHECK_MESSAGE(replay.status == 200, replay.raw);
        CHECK(replay.body["outcome"] == "duplicate");
    }
    CHECK(store.task("task-remote")["nodes"]["n0"]["state"] == "COMPENSATED");

    // A conflicting terminal report is refused; so is a body naming another node.
    nps::store::ReportRow clash{.task_id = "task-remote", .node_id = "n2", .dedup_key = dedup_key,
                                .state = "COMPLETED", .result_json = "{}"};
    auto refused = http("PATCH", store.runner.url() + "/v1/tasks/task-remote/nodes/n2",
                        *nps::report::node_report_body(clash));
    nps::test::check_error(refused, 409, "NOP-TASK-ALREADY-COMPLETED");
    auto wrong_path = http("PATCH", store.runner.url() + "/v1/tasks/task-remote/nodes/n1",
                           *nps::report::node_report_body(clash));
    nps::test::check_error(wrong_path, 400, "NWP-HTTP-PARAM-INVALID");
}

TEST_CASE("a task the task store does not know: NOP-TASK-NOT-FOUND, the row is dead")
{
    TaskStoreDaemon store;
    Runner runner;
    runner.deposit("task-unknown-there", frame("task-unknown-there", 1));
    auto options = quick_options(runner);
    options.task_store_url = store.runner.url() + "/v1/tasks";
    options.task_store_token = store.runner.token();
    auto deliverer = start(options);
    runner.record("task-unknown-there", "n0", NodeState::completed, "{}");
    deliverer->notify();
    REQUIRE(wait_until([&] { return runner.counts().dead == 1; }));
    CHECK(runner.counts().backlog == 0);
    auto dead = runner.store->dead_reports(0);
    REQUIRE(dead);
    REQUIRE(dead->size() == 1);
    CHECK(dead->front().last_error->find("HTTP 404 NOP-TASK-NOT-FOUND") != std::string::npos);
    CHECK(runner.has_event("task-unknown-there", "report:abandoned"));

    // The daemon counts the outbox in /metrics (its own outbox holds nothing dead).
    auto metrics = http("GET", store.runner.url() + "/metrics");
    REQUIRE(metrics.status == 200);
    CHECK(metrics.raw.find("nps_report_backlog ") != std::string::npos);
    CHECK(metrics.raw.find("nps_report_dead 0") != std::string::npos);
}
