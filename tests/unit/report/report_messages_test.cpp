// SPDX-License-Identifier: Apache-2.0
// What the deliverer sends and how it judges answers.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "nps/base/limits.hpp"
#include "nps/report/report_messages.hpp"

using namespace nps::report;
using nps::proto::NodeState;
using nps::proto::TaskState;
using nps::store::NodeResult;
using nps::store::ReportRow;
using nps::store::TaskEvent;
using nps::store::TaskRecord;
using Json = nlohmann::json;

namespace {

ReportRow failed_row()
{
    ReportRow row;
    row.task_id = "task 1/α";
    row.node_id = "fetch";
    row.dedup_key = "22089413c713f2f8405f8ae2b04e27241ef43b1567902ef3436cec58c2aac6fd";
    row.state = "FAILED";
    row.attempts = 3;
    row.error_code = "NOP-RUNTIME-IDLE-TIMEOUT";
    row.error_message = "no output for 30 s";
    row.killed_reason = "idle_timeout";
    row.runner_nid = "urn:nps:node:example.com:runner-a";
    row.recorded_at_ms = 1'700'000'000'123;
    return row;
}

}  // namespace

TEST_CASE("node report: URL, idempotency key and body")
{
    const ReportRow row = failed_row();
    CHECK(node_report_url("https://orch.example.com/v1/tasks", row.task_id, row.node_id) ==
          "https://orch.example.com/v1/tasks/task%201%2F%CE%B1/nodes/fetch");
    CHECK(node_report_idempotency_key(row) == row.dedup_key + ":fetch:FAILED");

    auto text = node_report_body(row);
    REQUIRE(text);
    const Json body = Json::parse(*text);
    CHECK(body == Json{{"task_id", "task 1/α"},
                       {"node_id", "fetch"},
                       {"dedup_key", row.dedup_key},
                       {"state", "FAILED"},
                       {"attempts", 3},
                       {"error", {{"code", "NOP-RUNTIME-IDLE-TIMEOUT"}, {"message", "no output for 30 s"}}},
                       {"result", nullptr},
                       {"killed_reason", "idle_timeout"},
                       {"runner_nid", "urn:nps:node:example.com:runner-a"},
                       {"reported_at", "2023-11-14T22:13:20.123Z"}});
    // Every replay of one report is the same bytes.
    CHECK(*node_report_body(row) == *text);
}

TEST_CASE("node report: result, nulls, long messages and a result that is not JSON")
{
    ReportRow row = failed_row();
    row.state = "COMPLETED";
    row.error_code.reset();
    row.killed_reason.reset();
    row.runner_nid.reset();
    row.result_json = R"({"answer":4,"list":[1,2]})";
    Json body = Json::parse(*node_report_body(row));
    CHECK(body["error"].is_null());
    CHECK(body["killed_reason"].is_null());
    CHECK(body["runner_nid"].is_null());
    CHECK(body["result"] == Json{{"answer", 4}, {"list", {1, 2}}});

    row.state = "FAILED";
    row.result_json.reset();
    row.error_code = "NOP-WORKER-FAILED";
    row.error_message = std::string(4095, 'x') + "é";  // 4097 bytes: the 2-byte é does not fit
    body = Json::parse(*node_report_body(row));
    CHECK(body["error"]["message"].get<std::string>() == std::string(4095, 'x'));
    row.error_message.reset();
    body = Json::parse(*node_report_body(row));
    CHECK(body["error"] == Json{{"code", "NOP-WORKER-FAILED"}, {"message", nullptr}});

    row.result_json = "{not json";
    auto refused = node_report_body(row);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().message.find("node 'fetch'") != std::string::npos);
}

TEST_CASE("callback body: lowercase states, saga states, only the task's dedup_key")
{
    TaskRecord task;
    task.task_id = "t-1";
    task.state = TaskState::failed;
    task.error_code = "NOP-WORKER-FAILED";
    task.dedup_key = "dk";
    std::vector<NodeResult> nodes = {
        {.task_id = "t-1", .node_id = "charge", .dedup_key = "dk", .state = NodeState::compensated, .attempts = 1},
        {.task_id = "t-1", .node_id = "reserve", .dedup_key = "dk", .state = NodeState::compensation_failed, .attempts = 2,
         .error_code = "NOP-COMPENSATION-FAILED"},
        {.task_id = "t-1", .node_id = "ship", .dedup_key = "dk", .state = NodeState::failed, .attempts = 3,
         .error_code = "NOP-WORKER-FAILED"},
        {.task_id = "t-1", .node_id = "old", .dedup_key = "another-dag", .state = NodeState::completed, .attempts = 1},
    };
    const Json body = Json::parse(callback_body(task, nodes));
    CHECK(body == Json{{"task_id", "t-1"},
                       {"state", "failed"},
                       {"error_code", "NOP-WORKER-FAILED"},
                       {"aggregate", nullptr},
                       {"nodes",
                        {{"charge", {{"state", "compensated"}, {"attempts", 1}, {"error_code", nullptr}}},
                         {"reserve",
                          {{"state", "compensation_failed"}, {"attempts", 2}, {"error_code", "NOP-COMPENSATION-FAILED"}}},
                         {"ship", {{"state", "failed"}, {"attempts", 3}, {"error_code", "NOP-WORKER-FAILED"}}}}}});
    CHECK(callback_idempotency_key(task) == "dk:callback");

    task.state = TaskState::completed;
    task.error_code.reset();
    task.aggregate_json = R"({"answer":4})";
    const Json done = Json::parse(callback_body(task, {}));
    CHECK(done["state"] == "completed");
    CHECK(done["error_code"].is_null());
    CHECK(done["aggregate"] == Json{{"answer", 4}});
    CHECK(done["nodes"] == Json::object());
}

TEST_CASE("a completion message carries the task's end, its nodes and aggregate, and no null member")
{
    TaskRecord task;
    task.task_id = "t-9";
    task.dedup_key = "dk";
    task.state = TaskState::failed;
    task.error_code = "NOP-RUNTIME-IDLE-TIMEOUT";
    task.error_message = "node ship failed";
    task.created_at_ms = 1'764'748'800'000;  // 2025-12-03T08:00:00Z
    task.finished_at_ms = 1'764'748'801'500;
    const std::vector<NodeResult> nodes = {
        {.task_id = "t-9", .node_id = "ship", .dedup_key = "dk", .state = NodeState::failed, .attempts = 2,
         .error_code = "NOP-RUNTIME-IDLE-TIMEOUT", .killed_reason = "idle_timeout"},
        {.task_id = "t-9", .node_id = "stale", .dedup_key = "another-dag", .state = NodeState::completed, .attempts = 1},
    };
    const std::vector<TaskEvent> events = {{.seq = 1, .at_ms = task.created_at_ms, .name = "inbox:deposited"},
                                           {.seq = 2, .at_ms = task.created_at_ms + 250, .name = "lease:granted"},
                                           {.seq = 3, .at_ms = task.created_at_ms + 900, .name = "lease:reclaimed"}};
    const Json failed = Json::parse(completion_message_body(task, nodes, events));
    CHECK(failed == Json{{"task_id", "t-9"},
                         {"node_state", "FAILED"},
                         {"state", "failed"},
                         {"error_code", "NOP-RUNTIME-IDLE-TIMEOUT"},
                         {"error_message", "node ship failed"},
                         {"killed_reason", "idle_timeout"},
                         {"nodes",
                          {{"ship", {{"state", "failed"}, {"attempts", 2}, {"error_code", "NOP-RUNTIME-IDLE-TIMEOUT"}}}}},
                         {"created_at", "2025-12-03T08:00:00.000Z"},
                         {"started_at", "2025-12-03T08:00:00.250Z"},
                         {"finished_at", "2025-12-03T08:00:01.500Z"}});
    CHECK(completion_idempotency_key(task) == "dk:reply");

    task.state = TaskState::completed;
    task.error_code.reset();
    task.error_message.reset();
    task.aggregate_json = R"({"answer":4})";
    const Json done = Json::parse(completion_message_body(task, {}, {}));
    CHECK(done["node_state"] == "COMPLETED");
    CHECK(done["result"] == Json{{"answer", 4}});
    CHECK_FALSE(done.contains("error_code"));
    CHECK_FALSE(done.contains("error_message"));
    CHECK_FALSE(done.contains("killed_reason"));
    CHECK_FALSE(done.contains("started_at"));  // never claimed (cancelled in the inbox)
    CHECK(npsd_inbox_url("http://npsd:17433", "urn:nps:agent:o:inbox") ==
          "http://npsd:17433/v1/inbox/urn%3Anps%3Aagent%3Ao%3Ainbox");
}

TEST_CASE("judging answers")
{
    for (long s : {200L, 201L, 204L}) {
        CHECK(judge_task_store_status(s) == Verdict::delivered);
        CHECK(judge_callback_status(s) == Verdict::delivered);
    }
    for (long s : {408L, 425L, 429L, 500L, 502L, 503L, 599L}) {
        CHECK(judge_task_store_status(s) == Verdict::retry);
        CHECK(judge_callback_status(s) == Verdict::retry);
    }
    for (long s : {400L, 401L, 403L, 404L, 409L, 413L, 422L}) {
        CHECK(judge_task_store_status(s) == Verdict::refused);
        CHECK(judge_callback_status(s) == Verdict::refused);
    }
    for (long s : {301L, 302L, 303L, 307L}) {
        CHECK(judge_task_store_status(s) == Verdict::retry);  // an operator can fix the URL; nothing is lost
        CHECK(judge_callback_status(s) == Verdict::refused);  // not followed: the receiver will say it again
    }
    CHECK(judge_task_store_status(100) == Verdict::retry);
}

TEST_CASE("describe_answer quotes the API's error body, else the start of the body")
{
    CHECK(describe_answer(404, R"({"status":"NPS-CLIENT-NOT-FOUND","error":"NOP-TASK-NOT-FOUND","message":"Task 'x' does not exist"})") ==
          "HTTP 404 NOP-TASK-NOT-FOUND: Task 'x' does not exist");
    CHECK(describe_answer(400, "bad\nrequest") == "HTTP 400: bad request");
    CHECK(describe_answer(503, "") == "HTTP 503");
    CHECK(describe_answer(500, std::string(1000, 'z')).size() < 320);
}

TEST_CASE("backoff doubles from the initial delay up to the ceiling")
{
    CHECK(backoff_ms(1, 1000, 60'000) == 1000);
    CHECK(backoff_ms(2, 1000, 60'000) == 2000);
    CHECK(backoff_ms(3, 1000, 60'000) == 4000);
    CHECK(backoff_ms(7, 1000, 60'000) == 60'000);
    CHECK(backoff_ms(4'000'000'000u, 1000, 60'000) == 60'000);
    CHECK(backoff_ms(1, 0, 60'000) == 1);
}

TEST_CASE("Retry-After: seconds or an HTTP date, capped")
{
    const std::int64_t now = 1'445'412'480'000;  // Wed, 21 Oct 2015 07:28:00 GMT
    CHECK(parse_retry_after_ms("120", now) == 120'000);
    CHECK(parse_retry_after_ms(" 0 ", now) == 0);
    CHECK(parse_retry_after_ms("Wed, 21 Oct 2015 07:28:30 GMT", now) == 30'000);
    CHECK(parse_retry_after_ms("Wed, 21 Oct 2015 07:27:00 GMT", now) == 0);  // in the past: now
    const std::int64_t cap = nps::limits::kMaxReportRetryAfterSeconds * 1000;
    CHECK(parse_retry_after_ms("999999", now) == cap);
    CHECK(parse_retry_after_ms("99999999999999999999", now) == cap);
    CHECK_FALSE(parse_retry_after_ms("", now));
    CHECK_FALSE(parse_retry_after_ms("-5", now));
    CHECK_FALSE(parse_retry_after_ms("soon", now));
}
