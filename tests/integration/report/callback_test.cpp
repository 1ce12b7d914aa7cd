// SPDX-License-Identifier: Apache-2.0
// Task callbacks through the real Deliverer to a loopback HTTPS receiver
// with a test CA (callback_server.py verifies the signature itself): the
// body and signature, the redirect rule, the destination rules (a private
// address without the allowlist is never contacted), 3 attempts then
// abandon, and the task events.
#include <doctest/doctest.h>

#include "nps/net/host_resolver.hpp"
#include "report_fixture.hpp"

using namespace report_test;

namespace {

const std::string kSecret = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8";  // bytes 0…31

struct Env {
    Runner runner;
    nps::test::TestPki pki = nps::test::make_test_pki(runner.dir.path());
    CallbackServer receiver{runner.dir.path(), pki, kSecret};
    nps::net::StaticResolver dns;

    nps::report::DelivererOptions options(std::initializer_list<const char*> allow = {"127.0.0.1"})
    {
        auto o = quick_options(runner);
        o.ca_file = pki.ca_file;
        o.resolver = &dns;
        for (const char* entry : allow)
            o.callback_allow.push_back(*nps::proto::parse_destination_allow_entry(entry));
        return o;
    }

    std::unique_ptr<LoopDeliverer> start(nps::report::DelivererOptions o) { return start_deliverer(std::move(o)); }

    // A task with this callback that ran n0 COMPLETED, n1 FAILED and whose
    // saga compensated n0: the task ends FAILED.
    void failed_task(const std::string& task_id, const std::string& url, const std::string& secret = kSecret)
    {
        runner.deposit(task_id, frame(task_id, 2, url, secret));
        runner.claim(task_id);
        runner.record(task_id, "n0", NodeState::completed, R"({"charge_id":"c-1"})");
        runner.record(task_id, "n1", NodeState::failed, std::nullopt, "NOP-WORKER-FAILED");
        runner.record(task_id, "n0", NodeState::compensating);
        runner.record(task_id, "n0", NodeState::compensated);
        runner.complete(task_id, "FAILED", "NOP-WORKER-FAILED");
    }

    bool settled() { return runner.counts().backlog == 0; }
};

}  // namespace

TEST_CASE("callback: a signed POST with the saga's states, verified by the receiver; event callback:delivered")
{
    Env env;
    env.receiver.route("/hook", 200);
    auto deliverer = env.start(env.options());
    env.failed_task("task-cb", env.receiver.url("/hook"));
    deliverer->notify();
    REQUIRE(wait_until([&] { return env.settled(); }));
    CHECK(env.runner.counts().dead == 0);
    CHECK(env.runner.has_event("task-cb", "callback:delivered"));

    const auto requests = env.receiver.requests();
    REQUIRE(requests.size() == 1);
    const Json& r = requests[0];
    CHECK(r["method"] == "POST");
    CHECK(r["content_type"] == "application/json");
    CHECK(r["idempotency_key"] == env.runner.dedup_key("task-cb") + ":callback");
    CHECK(r["signature_valid"] == true);
    const Json body = Json::parse(r["body"].get<std::string>());
    CHECK(body == Json{{"task_id", "task-cb"},
                       {"state", "failed"},
                       {"error_code", "NOP-WORKER-FAILED"},
                       {"aggregate", nullptr},
                       {"nodes",
                        {{"n0", {{"state", "compensated"}, {"attempts", 1}, {"error_code", nullptr}}},
                         {"n1", {{"state", "failed"}, {"attempts", 1}, {"error_code", "NOP-WORKER-FAILED"}}}}}});
}

TEST_CASE("callback: without a callback_secret nothing is signed; a wrong secret fails the receiver's check")
{
    Env env;
    env.receiver.route("/hook", 200);
    auto deliverer = env.start(env.options());
    env.failed_task("unsigned", env.receiver.url("/hook"), "");
    env.failed_task("other-key", env.receiver.url("/hook"), "AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA");
    REQUIRE(wait_until([&] { return env.settled(); }));
    auto requests = env.receiver.requests();
    REQUIRE(requests.size() == 2);
    std::map<std::string, Json> by_task;
    for (const auto& r : requests)
        by_task[Json::parse(r["body"].get<std::string>())["task_id"]] = r;
    CHECK(by_task["unsigned"]["signature"].is_null());
    CHECK(by_task["unsigned"]["signature_valid"] == false);
    CHECK(by_task["other-key"]["signature"].get<std::string>().starts_with("sha256="));
    CHECK(by_task["other-key"]["signature_valid"] == false);
}

TEST_CASE("callback: 307/308 are followed with the same signed body; 302 is not followed and abandons")
{
    Env env;
    env.receiver.route("/hook", 200);
    env.receiver.route("/moved", 307, {{"Location", env.receiver.url("/hook")}});
    env.receiver.route("/found", 302, {{"Location", env.receiver.url("/hook")}});
    auto deliverer = env.start(env.options());
    env.failed_task("via-307", env.receiver.url("/moved"));
    REQUIRE(wait_until([&] { return env.settled(); }));
    env.failed_task("via-302", env.receiver.url("/found"));
    REQUIRE(wait_until([&] { return env.settled(); }));

    const auto requests = env.receiver.requests();
    REQUIRE(requests.size() == 3);  // /moved, /hook, /found — never /hook for the 302
    CHECK(requests[0]["path"] == "/moved");
    CHECK(requests[1]["path"] == "/hook");
    CHECK(requests[1]["method"] == "POST");
    CHECK(requests[1]["signature_valid"] == true);
    CHECK(requests[1]["body"] == requests[0]["body"]);
    CHECK(requests[2]["path"] == "/found");
    CHECK(env.runner.has_event("via-307", "callback:delivered"));
    CHECK(env.runner.has_event("via-302", "callback:abandoned"));
    auto dead = env.runner.store->dead_reports(0);
    REQUIRE(dead);
    REQUIRE(dead->size() == 1);
    CHECK(dead->front().tries == 1);  // abandoned at once
    CHECK(dead->front().last_error->find("HTTP 302") != std::string::npos);
}

TEST_CASE("callback: a redirect to a destination the rules refuse is not followed")
{
    Env env;
    env.receiver.route("/moved", 308, {{"Location", "https://10.255.255.1/elsewhere"}});
    auto deliverer = env.start(env.options());
    env.failed_task("bad-redirect", env.receiver.url("/moved"));
    REQUIRE(wait_until([&] { return env.settled(); }));
    CHECK(env.runner.has_event("bad-redirect", "callback:abandoned"));
    const auto dead = *env.runner.store->dead_reports(0);
    REQUIRE(dead.size() == 1);
    CHECK(dead[0].tries == 3);
    CHECK(dead[0].last_error->find("redirect") != std::string::npos);
    CHECK(env.receiver.requests().size() == 3);  // /moved on each attempt, never the target
}

TEST_CASE("callback: a private address without the allowlist is never contacted and is abandoned")
{
    Env env;
    env.receiver.route("/hook", 200);
    auto deliverer = env.start(env.options({}));
    // An IP literal the static rules refuse: abandoned at once.
    env.failed_task("private-literal", env.receiver.url("/hook"));
    // A name that resolves to loopback: refused at every attempt (DNS may
    // change), abandoned after 3.
    env.dns.add("hooks.example.test", {"127.0.0.1"});
    env.failed_task("private-name", env.receiver.url("/hook", "hooks.example.test"));
    REQUIRE(wait_until([&] { return env.settled(); }));

    CHECK(env.receiver.requests().empty());
    CHECK(env.runner.has_event("private-literal", "callback:abandoned"));
    CHECK(env.runner.has_event("private-name", "callback:abandoned"));
    auto events = *env.runner.store->events("private-literal");
    const auto abandoned = std::find_if(events.begin(), events.end(),
                                        [](const auto& e) { return e.name == "callback:abandoned"; });
    REQUIRE(abandoned != events.end());
    const Json detail = Json::parse(abandoned->detail_json);
    CHECK(detail["attempts"] == 1);
    CHECK(detail["url"] == env.receiver.url("/hook"));
    CHECK(detail["error"].get<std::string>().find("callback_url") != std::string::npos);

    std::map<std::string, nps::store::ReportRow> dead;
    const auto rows = *env.runner.store->dead_reports(0);
    for (const auto& row : rows)
        dead[row.task_id] = row;
    CHECK(dead["private-literal"].tries == 1);
    CHECK(dead["private-name"].tries == 3);
    CHECK(env.runner.counts().dead == 2);
}

TEST_CASE("callback: 3 failed attempts, then abandoned")
{
    Env env;
    env.receiver.route("/hook", 503);
    auto deliverer = env.start(env.options());
    env.failed_task("flaky", env.receiver.url("/hook"));
    REQUIRE(wait_until([&] { return env.settled(); }));
    CHECK(env.receiver.requests().size() == 3);
    CHECK(env.runner.has_event("flaky", "callback:abandoned"));
    CHECK_FALSE(env.runner.has_event("flaky", "callback:delivered"));
    const auto dead = *env.runner.store->dead_reports(0);
    REQUIRE(dead.size() == 1);
    CHECK(dead[0].last_error->find("gave up after 3 attempts") != std::string::npos);
}

TEST_CASE("callback: a certificate from another CA is a failed attempt")
{
    Env env;
    env.receiver.route("/hook", 200);
    auto options = env.options();
    options.ca_file = env.pki.other_ca_file;
    auto deliverer = env.start(options);
    env.failed_task("untrusted", env.receiver.url("/hook"));
    REQUIRE(wait_until([&] { return env.settled(); }));
    CHECK(env.runner.has_event("untrusted", "callback:abandoned"));
    CHECK(env.receiver.requests().empty());  // the handshake fails before any request
}

TEST_CASE("callback: a host name is resolved off the loop; delivered pinned when every answer is allowed, refused when one is not")
{
    Env env;
    env.receiver.route("/hook", 200);
    env.dns.add("specs.example.test", {"127.0.0.1"});              // in the test certificate
    env.dns.add("mixed.example.test", {"127.0.0.1", "10.0.0.7"});  // one answer private, not allowlisted
    auto deliverer = env.start(env.options());                     // allows 127.0.0.1 only
    env.failed_task("by-name", env.receiver.url("/hook", "specs.example.test"));
    env.failed_task("mixed", env.receiver.url("/hook", "mixed.example.test"));
    REQUIRE(wait_until([&] { return env.settled(); }));

    CHECK(env.runner.has_event("by-name", "callback:delivered"));
    CHECK(env.runner.has_event("mixed", "callback:abandoned"));
    const auto requests = env.receiver.requests();
    REQUIRE(requests.size() == 1);  // the mixed name was never contacted
    CHECK(requests[0]["signature_valid"] == true);
    const auto dead = *env.runner.store->dead_reports(0);
    REQUIRE(dead.size() == 1);
    CHECK(dead[0].task_id == "mixed");
    CHECK(dead[0].tries == 3);  // DNS may change: retried, then abandoned
    REQUIRE(dead[0].last_error);
    CHECK(dead[0].last_error->find("callback_url") != std::string::npos);
    CHECK(dead[0].last_error->find("10.0.0.7") != std::string::npos);
}
