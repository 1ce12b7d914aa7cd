// SPDX-License-Identifier: Apache-2.0
// NPS-Node-L3 conformance, claim cases (CR-0007 §8; Node-L3 suite v0.2),
// black-box: two real `nps-runner serve` processes sharing one runner.db,
// driven over HTTP on loopback.
//
//   TC-N3-Claim-01  concurrent claim by two runners: exactly one granted,
//                   the other NOP-CLAIM-CONFLICT (409)
//   TC-N3-Claim-02  an expired lease is reclaimable; a node already terminal
//                   under the dedup_key is reported terminal, not re-run
//   TC-N3-Claim-03  the owner's renewal before expiry extends the lease: no
//                   conflict for the owner, conflict for everyone else
#include <doctest/doctest.h>

#include <barrier>
#include <chrono>
#include <thread>

#include "nps/base/time_format.hpp"
#include "runner_process.hpp"

using nps::test::http;
using nps::test::Reply;
using nps::test::RunnerOptions;
using nps::test::RunnerProcess;
using nps::test::task_frame;
using nps::test::TempDir;
using Json = nlohmann::json;

namespace {

const std::string kInbox = "urn:nps:agent:example.test:l3";
const std::string kRunnerA = "urn:nps:node:example.test:runner-a";
const std::string kRunnerB = "urn:nps:node:example.test:runner-b";

// Two runner processes on one state directory (one runner.db).
struct TwoRunners {
    TempDir dir;
    RunnerProcess a;
    RunnerProcess b;
    TwoRunners()
        : a(RunnerOptions{.state_dir = dir.path()}), b(RunnerOptions{.state_dir = dir.path(), .unix_socket = false})
    {
        REQUIRE_MESSAGE(a.start(), a.log());
        REQUIRE_MESSAGE(b.start(), b.log());
    }
    static std::string inbox(const RunnerProcess& r) { return r.url() + "/v1/inbox/" + nps::net::url_encode(kInbox); }
};

std::string claim_body(const std::string& runner, int seconds, const std::string& task_id = "")
{
    Json body = {{"runner_nid", runner}, {"lease_seconds", seconds}};
    if (!task_id.empty())
        body["task_id"] = task_id;
    return body.dump();
}

std::int64_t expiry_ms(const Reply& reply)
{
    auto ms = nps::parse_rfc3339_ms(reply.body["lease_expiry"].get<std::string>());
    REQUIRE(ms.has_value());
    return *ms;
}

void sleep_until_ms(std::int64_t unix_ms)
{
    auto target = std::chrono::system_clock::time_point(std::chrono::milliseconds(unix_ms));
    std::this_thread::sleep_until(target);
}

}  // namespace

TEST_CASE("TC-N3-Claim-01: concurrent claims by two runner processes, exactly one granted")
{
    TwoRunners runners;
    constexpr int kRounds = 25;
    for (int round = 0; round < kRounds; ++round) {
        std::string task_id = "claim01-" + std::to_string(round);
        REQUIRE(http("POST", TwoRunners::inbox(runners.a), task_frame(task_id)).status == 201);
        Reply ra, rb;
        std::barrier start(2);
        std::thread ta([&] {
            start.arrive_and_wait();
            ra = http("POST", TwoRunners::inbox(runners.a) + "/claims", claim_body(kRunnerA, 60, task_id));
        });
        std::thread tb([&] {
            start.arrive_and_wait();
            rb = http("POST", TwoRunners::inbox(runners.b) + "/claims", claim_body(kRunnerB, 60, task_id));
        });
        ta.join();
        tb.join();
        INFO("round " << round << ": A " << ra.status << " " << ra.raw << " / B " << rb.status << " " << rb.raw);
        REQUIRE(((ra.status == 200) != (rb.status == 200)));
        const Reply& winner = ra.status == 200 ? ra : rb;
        const Reply& loser = ra.status == 200 ? rb : ra;
        CHECK(winner.body["outcome"] == "granted");
        CHECK(loser.status == 409);
        CHECK(loser.body["error"] == "NOP-CLAIM-CONFLICT");
        CHECK(loser.body["status"] == "NPS-CLIENT-CONFLICT");
        // The store agrees on the single owner.
        auto task = http("GET", runners.a.url() + "/v1/tasks/" + task_id);
        CHECK(task.body["lease"]["runner_nid"] == winner.body["runner_nid"]);
        CHECK(task.body["claims"] == 1);
    }
}

TEST_CASE("TC-N3-Claim-02: an expired lease is reclaimed; terminal nodes are not re-run")
{
    TwoRunners runners;
    const std::string task_id = "claim02";
    REQUIRE(http("POST", TwoRunners::inbox(runners.a), task_frame(task_id)).status == 201);
    auto first = http("POST", TwoRunners::inbox(runners.a) + "/claims", claim_body(kRunnerA, 10));
    REQUIRE_MESSAGE(first.status == 200, first.raw);
    CHECK(first.body["outcome"] == "granted");
    const std::string dedup = first.body["dedup_key"];

    // Runner A finishes node n0, then "crashes" (stops renewing).
    auto report = http("PATCH", runners.a.url() + "/v1/tasks/" + task_id + "/nodes/n0",
                       Json{{"dedup_key", dedup}, {"runner_nid", kRunnerA}, {"state", "COMPLETED"},
                            {"attempts", 1}, {"result", {{"value", 2}}}}
                           .dump());
    REQUIRE_MESSAGE(report.status == 200, report.raw);

    // While the lease is live, B conflicts.
    auto early = http("POST", TwoRunners::inbox(runners.b) + "/claims", claim_body(kRunnerB, 10, task_id));
    CHECK(early.status == 409);
    CHECK(early.body["error"] == "NOP-CLAIM-CONFLICT");

    sleep_until_ms(expiry_ms(first) + 50);
    auto second = http("POST", TwoRunners::inbox(runners.b) + "/claims", claim_body(kRunnerB, 30));
    REQUIRE_MESSAGE(second.status == 200, second.raw);
    CHECK(second.body["outcome"] == "reclaimed");
    CHECK(second.body["task_id"] == task_id);
    CHECK(second.body["dedup_key"] == dedup);
    CHECK(second.body["claims"] == 2);
    // The reclaiming runner is told n0 is terminal: it resumes at n1.
    CHECK(second.body["terminal_nodes"] == Json{{"n0", "COMPLETED"}});

    // The old owner is fenced off: no renewal, no report, no completion.
    auto renew = http("POST", runners.a.url() + "/v1/leases/" + task_id + "/renew",
                      Json{{"runner_nid", kRunnerA}, {"lease_seconds", 30}}.dump());
    CHECK(renew.status == 409);
    CHECK(renew.body["error"] == "NOP-CLAIM-CONFLICT");
    auto stale = http("PATCH", runners.a.url() + "/v1/tasks/" + task_id + "/nodes/n1",
                      Json{{"dedup_key", dedup}, {"runner_nid", kRunnerA}, {"state", "COMPLETED"}}.dump());
    CHECK(stale.status == 409);
    auto stale_done = http("POST", runners.a.url() + "/v1/leases/" + task_id + "/complete",
                           Json{{"runner_nid", kRunnerA}, {"state", "COMPLETED"}}.dump());
    CHECK(stale_done.status == 409);

    // Re-reporting the terminal node is a harmless duplicate; B finishes the rest.
    auto dup = http("PATCH", runners.b.url() + "/v1/tasks/" + task_id + "/nodes/n0",
                    Json{{"dedup_key", dedup}, {"runner_nid", kRunnerB}, {"state", "COMPLETED"},
                         {"attempts", 1}, {"result", {{"value", 2}}}}
                        .dump());
    CHECK(dup.body["outcome"] == "duplicate");
    for (const char* node : {"n1", "n2"})
        CHECK(http("PATCH", runners.b.url() + "/v1/tasks/" + task_id + "/nodes/" + node,
                   Json{{"dedup_key", dedup}, {"runner_nid", kRunnerB}, {"state", "COMPLETED"}, {"attempts", 1}}.dump())
                  .status == 200);
    CHECK(http("POST", runners.b.url() + "/v1/leases/" + task_id + "/complete",
               Json{{"runner_nid", kRunnerB}, {"state", "COMPLETED"}}.dump())
              .status == 200);
    auto task = http("GET", runners.a.url() + "/v1/tasks/" + task_id);
    CHECK(task.body["state"] == "COMPLETED");
    CHECK(task.body["nodes"]["n0"]["attempts"] == 1);
    CHECK(task.body["nodes"]["n0"]["runner_nid"] == kRunnerA);  // recorded once, by A
}

TEST_CASE("TC-N3-Claim-03: the owner renews before expiry; no conflict")
{
    TwoRunners runners;
    const std::string task_id = "claim03";
    REQUIRE(http("POST", TwoRunners::inbox(runners.a), task_frame(task_id)).status == 201);
    auto claim = http("POST", TwoRunners::inbox(runners.a) + "/claims", claim_body(kRunnerA, 10));
    REQUIRE(claim.status == 200);
    const std::int64_t original_expiry = expiry_ms(claim);

    std::this_thread::sleep_for(std::chrono::seconds(5));
    auto renew = http("POST", runners.a.url() + "/v1/leases/" + task_id + "/renew",
                      Json{{"runner_nid", kRunnerA}, {"lease_seconds", 10}}.dump());
    REQUIRE_MESSAGE(renew.status == 200, renew.raw);
    const std::int64_t renewed_expiry = expiry_ms(renew);
    CHECK(renewed_expiry > original_expiry);  // now + 10 s, not the old expiry + 10 s

    // A non-owner cannot renew.
    auto foreign = http("POST", runners.b.url() + "/v1/leases/" + task_id + "/renew",
                        Json{{"runner_nid", kRunnerB}, {"lease_seconds", 10}}.dump());
    CHECK(foreign.status == 409);

    // Past the ORIGINAL expiry the renewed lease still holds.
    sleep_until_ms(original_expiry + 200);
    auto other = http("POST", TwoRunners::inbox(runners.b) + "/claims", claim_body(kRunnerB, 10, task_id));
    CHECK(other.status == 409);
    CHECK(other.body["error"] == "NOP-CLAIM-CONFLICT");
    auto again = http("POST", runners.b.url() + "/v1/leases/" + task_id + "/renew",
                      Json{{"runner_nid", kRunnerA}, {"lease_seconds", 10}}.dump());
    CHECK(again.status == 200);

    // Release hands the task back at once: the next claim is a fresh grant.
    auto release = http("DELETE", runners.a.url() + "/v1/leases/" + task_id + "?runner_nid=" +
                                      nps::net::url_encode(kRunnerA));
    CHECK(release.status == 204);
    auto next = http("POST", TwoRunners::inbox(runners.b) + "/claims", claim_body(kRunnerB, 10));
    REQUIRE(next.status == 200);
    CHECK(next.body["outcome"] == "granted");
}
