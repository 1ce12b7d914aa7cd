// SPDX-License-Identifier: Apache-2.0
// The HTTP API of the real daemon over loopback and its unix socket.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <map>
#include <set>
#include <thread>
#include <vector>

#include "nps/base/digest.hpp"
#include "nps/cgroup/mode.hpp"
#include "runner_process.hpp"

using nps::test::check_error;
using nps::test::http;
using nps::test::Reply;
using nps::test::RunnerOptions;
using nps::test::RunnerProcess;
using nps::test::task_frame;
using nps::test::TempDir;
using Json = nlohmann::json;

namespace {

const std::string kInbox = "urn:nps:agent:example.test:worker";
const std::string kRunnerA = "urn:nps:node:example.test:runner-a";
const std::string kRunnerB = "urn:nps:node:example.test:runner-b";

std::string inbox_url(const RunnerProcess& runner, const std::string& nid = kInbox)
{
    return runner.url() + "/v1/inbox/" + nps::net::url_encode(nid);
}

using Daemon = nps::test::StartedRunner;

}  // namespace

TEST_CASE("deposit, peek, claim, report, complete: the whole inbox cycle")
{
    Daemon d;
    auto& r = d.runner;
    auto deposit = http("POST", inbox_url(r), task_frame("task-cycle"), {{"Content-Type", "application/json"}});
    REQUIRE_MESSAGE(deposit.status == 201, deposit.raw);
    CHECK(deposit.body["task_id"] == "task-cycle");
    CHECK(deposit.body["nid"] == kInbox);
    CHECK(deposit.body["message_id"].is_string());
    CHECK(deposit.body["duplicate"] == false);
    std::string dedup = deposit.body["dedup_key"];
    CHECK(dedup.size() == 64);

    auto depth = http("GET", inbox_url(r) + "/depth");
    CHECK(depth.body["depth"] == 1);

    auto peek = http("GET", inbox_url(r) + "?batch=5");
    REQUIRE(peek.status == 200);
    REQUIRE(peek.body["count"] == 1);
    auto payload = nps::base64_decode(peek.body["messages"][0]["payload_b64"].get<std::string>());
    REQUIRE(payload);
    CHECK(Json::parse(*payload)["task_id"] == "task-cycle");

    auto claim = http("POST", inbox_url(r) + "/claims", Json{{"runner_nid", kRunnerA}, {"lease_seconds", 1}}.dump());
    REQUIRE_MESSAGE(claim.status == 200, claim.raw);
    CHECK(claim.body["outcome"] == "granted");
    CHECK(claim.body["task_id"] == "task-cycle");
    CHECK(claim.body["dedup_key"] == dedup);
    CHECK(claim.body["lease_seconds"] == 10);  // clamped up to the minimum
    CHECK(claim.body["task"]["task_id"] == "task-cycle");
    CHECK(claim.body["terminal_nodes"].empty());

    // A leased message is invisible to peek and to the next claim.
    CHECK(http("GET", inbox_url(r)).body["count"] == 0);
    CHECK(http("POST", inbox_url(r) + "/claims", Json{{"runner_nid", kRunnerB}, {"lease_seconds", 30}}.dump()).status ==
          204);

    for (const char* node : {"n0", "n1", "n2"}) {
        auto report = http("PATCH", r.url() + "/v1/tasks/task-cycle/nodes/" + node,
                           Json{{"dedup_key", dedup},
                                {"runner_nid", kRunnerA},
                                {"state", "COMPLETED"},
                                {"attempts", 1},
                                {"result", {{"node", node}}}}
                               .dump());
        REQUIRE_MESSAGE(report.status == 200, report.raw);
        CHECK(report.body["outcome"] == "recorded");
    }
    // Idempotent on (task_id, node_id, dedup_key).
    auto again = http("PATCH", r.url() + "/v1/tasks/task-cycle/nodes/n2",
                      Json{{"dedup_key", dedup}, {"state", "COMPLETED"}, {"attempts", 1}, {"result", {{"node", "n2"}}}}
                          .dump());
    CHECK(again.status == 200);
    CHECK(again.body["outcome"] == "duplicate");
    auto clash = http("PATCH", r.url() + "/v1/tasks/task-cycle/nodes/n2",
                      Json{{"dedup_key", dedup}, {"state", "FAILED"}, {"error_code", "NOP-DELEGATE-REJECTED"}}.dump());
    check_error(clash, 409, "NOP-TASK-ALREADY-COMPLETED");
    // A state that is not a node state is refused, named, before the store is touched.
    auto unknown = http("PATCH", r.url() + "/v1/tasks/task-cycle/nodes/n3",
                        Json{{"dedup_key", dedup}, {"state", "DONE"}}.dump());
    check_error(unknown, 400, "NWP-HTTP-PARAM-INVALID");
    CHECK_MESSAGE(unknown.raw.find("state 'DONE' is not a NOP node state") != std::string::npos, unknown.raw);

    auto done = http("POST", r.url() + "/v1/leases/task-cycle/complete",
                     Json{{"runner_nid", kRunnerA}, {"state", "COMPLETED"}, {"aggregate", {{"answer", 4}}}}.dump());
    REQUIRE_MESSAGE(done.status == 200, done.raw);

    auto task = http("GET", r.url() + "/v1/tasks/task-cycle");
    REQUIRE(task.status == 200);
    CHECK(task.body["state"] == "COMPLETED");
    CHECK(task.body["aggregate"] == Json{{"answer", 4}});
    CHECK(task.body["nodes"]["n1"]["state"] == "COMPLETED");
    CHECK(task.body["nodes"]["n1"]["result"] == Json{{"node", "n1"}});
    CHECK(task.body["lease"].is_null());
    CHECK(task.body["events"].size() >= 3);
    CHECK(task.body["events"][0]["event"] == "inbox:deposited");
    CHECK(http("GET", inbox_url(r) + "/depth").body["depth"] == 0);

    auto list = http("GET", r.url() + "/v1/tasks?state=completed&limit=10");
    REQUIRE(list.status == 200);
    CHECK(list.body["count"] == 1);
    CHECK(list.body["tasks"][0]["task_id"] == "task-cycle");
    CHECK(list.body["tasks"][0]["state"] == "COMPLETED");
    CHECK(http("GET", r.url() + "/v1/tasks?state=running").body["count"] == 0);
    auto bad_filter = http("GET", r.url() + "/v1/tasks?state=DONE");
    check_error(bad_filter, 400, "NWP-HTTP-PARAM-INVALID");
    CHECK_MESSAGE(bad_filter.raw.find("state 'DONE' is not one of PENDING") != std::string::npos, bad_filter.raw);

    // Pruning takes a finished state only; the task is still there after both refusals.
    auto bad_prune = http("DELETE", r.url() + "/v1/tasks?older_than_seconds=0&state=later");
    check_error(bad_prune, 400, "NWP-HTTP-PARAM-INVALID");
    CHECK_MESSAGE(bad_prune.raw.find("state 'later' is not a finished state") != std::string::npos, bad_prune.raw);
    check_error(http("DELETE", r.url() + "/v1/tasks?older_than_seconds=0&state=running"), 400,
                "NWP-HTTP-PARAM-INVALID");
    CHECK(http("GET", r.url() + "/v1/tasks/task-cycle").status == 200);
    CHECK(http("DELETE", r.url() + "/v1/tasks?older_than_seconds=3600&state=completed").body["removed"] == 0);
}

TEST_CASE("re-deposit is idempotent; the same task_id with another frame conflicts")
{
    Daemon d;
    auto url = inbox_url(d.runner);
    auto first = http("POST", url, task_frame("task-idem"));
    REQUIRE(first.status == 201);
    // Same frame, different whitespace and key order: still the same task.
    Json reordered = Json::parse(task_frame("task-idem"));
    auto second = http("POST", url, reordered.dump(2));
    CHECK(second.status == 200);
    CHECK(second.body["duplicate"] == true);
    CHECK(second.body["message_id"] == first.body["message_id"]);
    check_error(http("POST", url, task_frame("task-idem", 2)), 409, "NWP-TASK-ID-CONFLICT");
    CHECK(http("GET", url + "/depth").body["depth"] == 1);
}

TEST_CASE("racing deposits of the same tasks create each once; every other answer is its duplicate")
{
    // Eight clients deposit the same 30 tasks at once: the daemon commits
    // what arrives together as one group, so duplicates meet inside a group
    // as well as across groups.
    Daemon d;
    const auto url = inbox_url(d.runner);
    constexpr int kClients = 8, kTasks = 30;
    std::vector<std::vector<Reply>> replies(kClients);
    std::vector<std::thread> clients;
    for (int c = 0; c < kClients; ++c)
        clients.emplace_back([&, c] {
            for (int i = 0; i < kTasks; ++i)
                replies[c].push_back(http("POST", url, task_frame("race-" + std::to_string((i + c) % kTasks))));
        });
    for (auto& t : clients)
        t.join();
    std::map<std::string, int> created;
    std::map<std::string, std::set<std::string>> message_ids;
    for (const auto& per_client : replies)
        for (const auto& r : per_client) {
            REQUIRE_MESSAGE((r.status == 201 || r.status == 200), r.raw);
            const std::string task = r.body["task_id"];
            CHECK(r.body["duplicate"] == (r.status == 200));
            created[task] += r.status == 201 ? 1 : 0;
            message_ids[task].insert(r.body["message_id"].get<std::string>());
        }
    REQUIRE(created.size() == kTasks);
    for (const auto& [task, n] : created) {
        CHECK_MESSAGE(n == 1, task);
        CHECK_MESSAGE(message_ids[task].size() == 1, task);
    }
    CHECK(http("GET", url + "/depth").body["depth"] == kTasks);
    const std::string metrics = http("GET", d.runner.url() + "/metrics").raw;
    CHECK(metrics.find("nps_inbox_deposits_total " + std::to_string(kTasks) + "\n") != std::string::npos);
    CHECK(metrics.find("nps_inbox_deposits_duplicate_total " + std::to_string(kTasks * (kClients - 1)) + "\n") !=
          std::string::npos);
}

TEST_CASE("bad input gets the documented error body and changes nothing")
{
    Daemon d;
    auto& r = d.runner;
    auto url = inbox_url(r);
    check_error(http("POST", url, "{not json"), 400, "NWP-HTTP-FRAME-BODY-MALFORMED");
    check_error(http("POST", url, "[1,2]"), 400, "NWP-HTTP-FRAME-BODY-MALFORMED");
    check_error(http("POST", url, Json{{"task_id", 7}, {"dag", {{"nodes", Json::array()}}}}.dump()), 400,
                "NWP-HTTP-FRAME-BODY-MALFORMED");
    check_error(http("POST", url, task_frame("task-big", 33)), 400, "NOP-TASK-DAG-TOO-LARGE");
    Json cycle = Json::parse(task_frame("task-cycle", 2));
    cycle["dag"]["nodes"][0]["input_from"] = {"n1"};
    check_error(http("POST", url, cycle.dump()), 400, "NOP-TASK-DAG-CYCLE");
    check_error(http("POST", url, std::string(300 * 1024, ' ')), 413, "NWP-HTTP-BODY-TOO-LARGE");
    check_error(http("POST", url, std::string(2 * 1024 * 1024, ' ')), 413, "NWP-HTTP-BODY-TOO-LARGE");
    check_error(http("POST", url, task_frame("task-ct"), {{"Content-Type", "text/plain"}}), 400,
                "NWP-HTTP-CONTENT-TYPE-UNSUPPORTED");
    check_error(http("POST", url, task_frame("task-prio"), {{"X-Nps-Inbox-Priority", "high"}}), 400,
                "NWP-HTTP-PARAM-INVALID");
    check_error(http("POST", url, task_frame("task-ttl"), {{"X-Nps-Inbox-Ttl-Seconds", "0"}}), 400,
                "NWP-HTTP-PARAM-INVALID");
    check_error(http("POST", url, task_frame("task-delay"), {{"X-Nps-Inbox-Delay-Seconds", "-1"}}), 400,
                "NWP-HTTP-PARAM-INVALID");
    check_error(http("POST", url, task_frame("task-delay"),
                     {{"X-Nps-Inbox-Ttl-Seconds", "60"}, {"X-Nps-Inbox-Delay-Seconds", "60"}}),
                400, "NWP-HTTP-PARAM-INVALID");
    check_error(http("POST", r.url() + "/v1/inbox/not-a-nid", task_frame("task-nid")), 400, "NWP-HTTP-PARAM-INVALID");
    std::string deep(100, '[');
    check_error(http("POST", url + "/claims", "{\"a\":" + deep + std::string(100, ']') + "}"), 400,
                "NWP-HTTP-FRAME-BODY-MALFORMED");
    check_error(http("POST", url + "/claims", Json{{"runner_nid", kRunnerA}, {"lease_seconds", "ten"}}.dump()), 400,
                "NWP-HTTP-PARAM-INVALID");
    check_error(http("POST", url + "/claims", Json{{"runner_nid", kRunnerA}, {"lease_seconds", -5}}.dump()), 400,
                "NWP-HTTP-PARAM-INVALID");
    check_error(http("POST", url + "/claims", Json{{"lease_seconds", 30}}.dump()), 400, "NWP-HTTP-PARAM-INVALID");
    check_error(http("DELETE", url + "/abc"), 400, "NWP-HTTP-PARAM-INVALID");
    check_error(http("DELETE", url + "/999"), 404, "NWP-INBOX-MESSAGE-NOT-FOUND");
    check_error(http("GET", r.url() + "/v1/tasks/nope"), 404, "NOP-TASK-NOT-FOUND");
    check_error(http("GET", r.url() + "/v1/tasks?state=DONE"), 400, "NWP-HTTP-PARAM-INVALID");
    check_error(http("GET", r.url() + "/v1/nothing"), 404, "NWP-HTTP-NOT-FOUND");
    auto bad_method = http("PUT", url);
    check_error(bad_method, 405, "NWP-HTTP-METHOD-NOT-ALLOWED");
    CHECK(bad_method.headers["allow"] == "GET, POST");
    check_error(http("POST", r.url() + "/v1/leases/nope/renew", Json{{"runner_nid", kRunnerA}, {"lease_seconds", 30}}.dump()),
                404, "NOP-TASK-NOT-FOUND");
    check_error(http("PUT", r.url() + "/v1/ndp/announces/" + nps::net::url_encode(kInbox),
                     Json{{"activation_mode", "sometimes"}, {"spawn_spec_ref", "spawnspec:e30"}}.dump()),
                400, "NDP-ANNOUNCE-INVALID");

    // Nothing was stored, and the daemon is still healthy.
    CHECK(http("GET", url + "/depth").body["depth"] == 0);
    CHECK(http("GET", r.url() + "/v1/tasks").body["count"] == 0);
    CHECK(http("GET", r.url() + "/healthz").status == 200);
}

TEST_CASE("claim rules: lease_seconds 0 is 10, any uint32 is clamped, the holder's claim renews its lease")
{
    Daemon d;
    auto& r = d.runner;
    const auto claim = [&](const Json& body) { return http("POST", inbox_url(r) + "/claims", body.dump()); };
    REQUIRE(http("POST", inbox_url(r), task_frame("task-rules")).status == 201);

    // Outside uint32 or not an integer: refused, nothing claimed.
    for (const Json& bad : {Json(4294967296ll), Json(1.5), Json("10"), Json(nullptr), Json(-1)})
        check_error(claim({{"runner_nid", kRunnerA}, {"lease_seconds", bad}, {"task_id", "task-rules"}}), 400,
                    "NWP-HTTP-PARAM-INVALID");
    CHECK(http("GET", inbox_url(r) + "/depth").body["depth"] == 1);

    auto first = claim({{"runner_nid", kRunnerA}, {"lease_seconds", 0}, {"task_id", "task-rules"}});
    REQUIRE_MESSAGE(first.status == 200, first.raw);
    CHECK(first.body["outcome"] == "granted");
    CHECK(first.body["lease_seconds"] == 10);  // 0 → the minimum
    CHECK(first.body["claims"] == 1);

    // Another runner: conflict. The holder again: renewed, granted, the
    // upper clamp, one claim still, a later expiry.
    check_error(claim({{"runner_nid", kRunnerB}, {"lease_seconds", 30}, {"task_id", "task-rules"}}), 409,
                "NOP-CLAIM-CONFLICT");
    auto again = claim({{"runner_nid", kRunnerA}, {"lease_seconds", 4294967295ll}, {"task_id", "task-rules"}});
    REQUIRE_MESSAGE(again.status == 200, again.raw);
    CHECK(again.body["outcome"] == "granted");
    CHECK(again.body["lease_seconds"] == 600);
    CHECK(again.body["claims"] == 1);
    CHECK(again.body["lease_expiry"].get<std::string>() > first.body["lease_expiry"].get<std::string>());
    auto task = http("GET", r.url() + "/v1/tasks/task-rules");
    CHECK(task.body["claims"] == 1);
    int grants = 0;
    for (const auto& e : task.body["events"])
        grants += e["event"] == "lease:granted";
    CHECK(grants == 1);

    // Renew takes the same rule.
    auto renew = http("POST", r.url() + "/v1/leases/task-rules/renew",
                      Json{{"runner_nid", kRunnerA}, {"lease_seconds", 0}}.dump());
    REQUIRE_MESSAGE(renew.status == 200, renew.raw);
    CHECK(renew.body["lease_seconds"] == 10);
}

TEST_CASE("priority then FIFO, and TTL expiry")
{
    Daemon d;
    auto url = inbox_url(d.runner);
    REQUIRE(http("POST", url, task_frame("t-low"), {{"X-Nps-Inbox-Priority", "-1"}}).status == 201);
    REQUIRE(http("POST", url, task_frame("t-first")).status == 201);
    REQUIRE(http("POST", url, task_frame("t-second")).status == 201);
    REQUIRE(http("POST", url, task_frame("t-high"), {{"X-Nps-Inbox-Priority", "5"}}).status == 201);
    REQUIRE(http("POST", url, task_frame("t-short"), {{"X-Nps-Inbox-Ttl-Seconds", "1"}}).status == 201);
    std::this_thread::sleep_for(std::chrono::milliseconds(2100));  // t-short expires; the sweeper runs every second
    std::vector<std::string> order;
    for (;;) {
        auto claim = http("POST", url + "/claims", Json{{"runner_nid", kRunnerA}, {"lease_seconds", 60}}.dump());
        if (claim.status == 204)
            break;
        REQUIRE(claim.status == 200);
        order.push_back(claim.body["task_id"]);
    }
    CHECK(order == std::vector<std::string>{"t-high", "t-first", "t-second", "t-low"});
    auto expired = http("GET", d.runner.url() + "/v1/tasks/t-short");
    CHECK(expired.body["state"] == "FAILED");
    CHECK(expired.body["error_code"] == "NOP-TASK-TIMEOUT");
}

TEST_CASE("a delayed deposit waits for its delay unless a claim names it")
{
    Daemon d;
    auto url = inbox_url(d.runner);
    REQUIRE(http("POST", url, task_frame("t-held"), {{"X-Nps-Inbox-Delay-Seconds", "1"}}).status == 201);
    REQUIRE(http("POST", url, task_frame("t-later"), {{"X-Nps-Inbox-Delay-Seconds", "600"}}).status == 201);
    CHECK(http("GET", url).body["count"] == 0);
    CHECK(http("POST", url + "/claims", Json{{"runner_nid", kRunnerA}, {"lease_seconds", 60}}.dump()).status == 204);
    auto named = http("POST", url + "/claims",
                      Json{{"runner_nid", kRunnerA}, {"lease_seconds", 60}, {"task_id", "t-later"}}.dump());
    CHECK(named.status == 200);
    CHECK(named.body["outcome"] == "granted");
    std::this_thread::sleep_for(std::chrono::milliseconds(1100));
    auto head = http("POST", url + "/claims", Json{{"runner_nid", kRunnerA}, {"lease_seconds", 60}}.dump());
    CHECK(head.status == 200);
    CHECK(head.body["task_id"] == "t-held");
}

TEST_CASE("a long-poll peek does not block other requests and wakes on deposit")
{
    Daemon d;
    auto url = inbox_url(d.runner);
    std::atomic<bool> poll_done{false};
    Reply poll;
    std::thread poller([&] {
        poll = http("GET", url + "?wait=20");
        poll_done = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    // Other requests are served while the poll waits.
    for (int i = 0; i < 5; ++i)
        CHECK(http("GET", d.runner.url() + "/healthz").status == 200);
    CHECK_FALSE(poll_done.load());
    REQUIRE(http("POST", url, task_frame("t-wake")).status == 201);
    poller.join();
    CHECK(poll.status == 200);
    CHECK(poll.body["count"] == 1);
    CHECK(poll.body["messages"][0]["task_id"] == "t-wake");
}

TEST_CASE("announce and resolve through the local NDP registry")
{
    Daemon d;
    std::string agent = "urn:nps:agent:example.test:adder";
    auto put = http("PUT", d.runner.url() + "/v1/ndp/announces/" + nps::net::url_encode(agent),
                    Json{{"nid", agent}, {"activation_mode", "ephemeral"}, {"spawn_spec_ref", "spawnspec:e30"}}.dump());
    REQUIRE_MESSAGE(put.status == 200, put.raw);
    auto resolved = http("GET", d.runner.url() + "/v1/ndp/resolve?nid=" + nps::net::url_encode(agent));
    REQUIRE(resolved.status == 200);
    CHECK(resolved.body["spawn_spec_ref"] == "spawnspec:e30");
    check_error(http("GET", d.runner.url() + "/v1/ndp/resolve?nid=" + nps::net::url_encode(agent + "x")), 404,
                "NDP-RESOLVE-NOT-FOUND");
    auto offline = http("PUT", d.runner.url() + "/v1/ndp/announces/" + nps::net::url_encode(agent),
                        Json{{"spawn_spec_ref", "spawnspec:e30"}, {"ttl", 0}}.dump());
    CHECK(offline.body["status"] == "offline");
    check_error(http("GET", d.runner.url() + "/v1/ndp/resolve?nid=" + nps::net::url_encode(agent)), 404,
                "NDP-RESOLVE-NOT-FOUND");
}

TEST_CASE("announce rm: DELETE /v1/ndp/announces/{nid} removes the agent; an unknown one is NDP-RESOLVE-NOT-FOUND")
{
    Daemon d;
    const std::string agent = "urn:nps:agent:example.test:leaving";
    const std::string url = d.runner.url() + "/v1/ndp/announces/" + nps::net::url_encode(agent);
    REQUIRE(http("PUT", url, Json{{"spawn_spec_ref", "spawnspec:e30"}}.dump()).status == 200);
    auto removed = http("DELETE", url);
    REQUIRE_MESSAGE(removed.status == 200, removed.raw);
    CHECK(removed.body["removed"] == true);
    check_error(http("GET", d.runner.url() + "/v1/ndp/resolve?nid=" + nps::net::url_encode(agent)), 404,
                "NDP-RESOLVE-NOT-FOUND");
    CHECK(http("GET", d.runner.url() + "/v1/ndp/announces").body["announces"].empty());
    check_error(http("DELETE", url), 404, "NDP-RESOLVE-NOT-FOUND");
    // It can be announced again afterwards.
    CHECK(http("PUT", url, Json{{"spawn_spec_ref", "spawnspec:e30"}}.dump()).status == 200);
}

TEST_CASE("GET /v1/workers lists nothing on a daemon that runs nothing")
{
    Daemon d;
    auto workers = http("GET", d.runner.url() + "/v1/workers");
    REQUIRE_MESSAGE(workers.status == 200, workers.raw);
    CHECK(workers.body["count"] == 0);
    CHECK(workers.body["workers"] == Json::array());
    check_error(http("POST", d.runner.url() + "/v1/workers", "{}"), 405, "NWP-HTTP-METHOD-NOT-ALLOWED");
}

TEST_CASE("the unix socket serves the same API with its file mode")
{
    Daemon d;
    struct stat st{};
    REQUIRE(::stat(d.runner.socket_path().c_str(), &st) == 0);
    CHECK(S_ISSOCK(st.st_mode));
    CHECK((st.st_mode & 0777) == 0660);
    auto health = http("GET", "http://localhost/healthz", std::nullopt, {}, d.runner.socket_path());
    CHECK(health.status == 200);
    CHECK(health.body["status"] == "ok");
    auto deposit = http("POST", "http://localhost/v1/inbox/" + nps::net::url_encode(kInbox), task_frame("t-unix"), {},
                        d.runner.socket_path());
    CHECK(deposit.status == 201);
    CHECK(http("GET", d.runner.url() + "/v1/tasks/t-unix").status == 200);
}

TEST_CASE("healthz reports the cgroup mode the daemon detected and where each limit is enforced")
{
    Daemon d;
    auto health = http("GET", d.runner.url() + "/healthz");
    REQUIRE(health.status == 200);
    auto layout = nps::cgroup::detect_cgroup_layout();
    REQUIRE(layout);
    const auto& cgroup = health.body["cgroup"];
    CHECK(cgroup["mode"] == std::string(nps::cgroup::to_string(layout->mode)));
    for (const char* controller : {"memory", "cpu", "pids"}) {
        REQUIRE(cgroup["limits"].contains(controller));
        const auto& by = cgroup["limits"][controller];
        CHECK((by.is_null() || by == "v1" || by == "v2"));
        // A v1 backend is named only where a v1 hierarchy carries the controller.
        if (by == "v1")
            CHECK(layout->v1_for(controller) != nullptr);
    }
    if (cgroup.contains("problem"))
        CHECK(cgroup["problem"].get<std::string>().find("Failed") != std::string::npos);
}

TEST_CASE("metrics are Prometheus text and count what happened")
{
    Daemon d;
    REQUIRE(http("POST", inbox_url(d.runner), task_frame("t-metrics")).status == 201);
    http("POST", inbox_url(d.runner) + "/claims", Json{{"runner_nid", kRunnerA}, {"lease_seconds", 30}}.dump());
    auto metrics = http("GET", d.runner.url() + "/metrics");
    REQUIRE(metrics.status == 200);
    CHECK(metrics.headers["content-type"].find("text/plain") == 0);
    CHECK(metrics.raw.find("nps_inbox_deposits_total 1\n") != std::string::npos);
    CHECK(metrics.raw.find("nps_claims_total{outcome=\"granted\"} 1\n") != std::string::npos);
    CHECK(metrics.raw.find("# TYPE nps_http_requests_total counter") != std::string::npos);
}

TEST_CASE("metrics: cancelled tasks are counted; build, process and store figures are exported")
{
    Daemon d;
    REQUIRE(http("POST", inbox_url(d.runner), task_frame("t-cancel-1")).status == 201);
    REQUIRE(http("POST", inbox_url(d.runner), task_frame("t-cancel-2")).status == 201);
    REQUIRE(http("POST", d.runner.url() + "/v1/tasks/t-cancel-1/cancel").status == 200);
    REQUIRE(http("POST", d.runner.url() + "/v1/inbox/" + nps::net::url_encode(kInbox) + "/task/t-cancel-2/cancel")
                .status == 200);
    auto metrics = http("GET", d.runner.url() + "/metrics");
    REQUIRE(metrics.status == 200);
    const std::string& m = metrics.raw;
    CHECK_MESSAGE(m.find("nps_task_outcomes_total{state=\"cancelled\"} 2\n") != std::string::npos, m);
    CHECK(m.find("nps_runner_build_info{version=\"") != std::string::npos);
    const auto value_of = [&m](const std::string& name) {
        auto at = m.find("\n" + name + " ");
        return at == std::string::npos ? -1.0 : std::stod(m.substr(at + name.size() + 2));
    };
    CHECK(value_of("process_resident_memory_bytes") > 1e6);
    CHECK(value_of("process_open_fds") > 3);
    CHECK(value_of("process_cpu_seconds_total") >= 0);
    CHECK(value_of("process_start_time_seconds") > 1.7e9);
    CHECK(value_of("nps_store_bytes") > 4096);
    CHECK(m.find("# TYPE nps_task_duration_seconds histogram") != std::string::npos);
    CHECK(m.find("nps_task_duration_seconds_bucket{le=\"+Inf\"} 0\n") != std::string::npos);
}

TEST_CASE("bearer token on TCP; the unix socket is trusted; non-loopback needs a token")
{
    const std::string token = "0123456789abcdef0123";
    Daemon d("[api]\ntoken = \"" + token + "\"\n");
    check_error(http("GET", d.runner.url() + "/v1/tasks"), 401, "NWP-HTTP-UNAUTHENTICATED");
    check_error(http("GET", d.runner.url() + "/v1/tasks", std::nullopt, {{"Authorization", "Bearer wrong"}}), 401,
                "NWP-HTTP-UNAUTHENTICATED");
    CHECK(http("GET", d.runner.url() + "/v1/tasks", std::nullopt, {{"Authorization", "Bearer " + token}}).status == 200);
    CHECK(http("GET", d.runner.url() + "/healthz").status == 200);
    CHECK(http("GET", "http://localhost/v1/tasks", std::nullopt, {}, d.runner.socket_path()).status == 200);

    TempDir dir;
    RunnerProcess open_to_all(RunnerOptions{.state_dir = dir.path(), .listen = "0.0.0.0:0"});
    CHECK_FALSE(open_to_all.start());
    CHECK(open_to_all.log().find("without a bearer token") != std::string::npos);
}

TEST_CASE("a configuration error names the key and stops startup")
{
    TempDir dir;
    RunnerProcess runner(RunnerOptions{.state_dir = dir.path(), .config_text = "[inbox]\nmax_dept = 5\n"});
    CHECK_FALSE(runner.start());
    CHECK(runner.log().find("inbox.max_dept: unknown key") != std::string::npos);
}

TEST_CASE("SIGTERM stops the daemon cleanly and data survives a restart")
{
    TempDir dir;
    {
        RunnerProcess runner(RunnerOptions{.state_dir = dir.path()});
        REQUIRE(runner.start());
        REQUIRE(http("POST", inbox_url(runner), task_frame("t-restart")).status == 201);
        CHECK(runner.stop() == 0);
    }
    RunnerProcess runner(RunnerOptions{.state_dir = dir.path()});
    REQUIRE(runner.start());
    CHECK(http("GET", runner.url() + "/v1/tasks/t-restart").body["state"] == "PENDING");
}

TEST_CASE("the NID allowlist and the inbox depth cap")
{
    Daemon d("[api]\nallowed_nids = [\"" + kInbox + "\"]\n[inbox]\nmax_depth = 2\n");
    auto other = d.runner.url() + "/v1/inbox/" + nps::net::url_encode("urn:nps:agent:example.test:other");
    check_error(http("POST", other, task_frame("t-other")), 404, "NWP-INBOX-NOT-FOUND");
    check_error(http("GET", other), 404, "NWP-INBOX-NOT-FOUND");
    REQUIRE(http("POST", inbox_url(d.runner), task_frame("t-1")).status == 201);
    REQUIRE(http("POST", inbox_url(d.runner), task_frame("t-2")).status == 201);
    check_error(http("POST", inbox_url(d.runner), task_frame("t-3")), 429, "NWP-RATE-LIMIT-INBOX-FULL");
    CHECK(http("GET", d.runner.url() + "/v1/tasks/t-3").status == 404);
}
