// SPDX-License-Identifier: Apache-2.0
// The NDP registry's sequence and freshness rules (NPS-4 §7.4 rules 3 and 5;
// vectors/ndp/registry_consistency_vectors.json) through
// PUT /v1/ndp/announces/{nid} of a real daemon (issue 17 item 10): a
// retransmission is dropped, graph_seq never rolls back, other content
// under an accepted graph_seq is a conflict, an announce already past its
// ttl is stale; every refusal leaves the registry as it was.
#include <doctest/doctest.h>

#include "nps/base/time_format.hpp"
#include "runner_process.hpp"

#include <chrono>
#include <thread>

using nps::test::check_error;
using nps::test::http;
using Json = nlohmann::json;

namespace {

const std::string kSequencedAgent = "urn:nps:agent:seq.test:fetch";

std::int64_t now_ms()
{
    using namespace std::chrono;
    return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

Json announce(std::uint64_t graph_seq, const std::string& ref, std::int64_t timestamp_ms)
{
    return {{"nid", kSequencedAgent},
            {"activation_mode", "ephemeral"},
            {"spawn_spec_ref", ref},
            {"ttl", 300},
            {"graph_seq", graph_seq},
            {"timestamp", nps::format_rfc3339_ms(timestamp_ms)}};
}

nps::test::Reply put(const nps::test::RunnerProcess& r, const Json& body)
{
    return http("PUT", r.url() + "/v1/ndp/announces/" + kSequencedAgent, body.dump());
}

std::string resolved_ref(const nps::test::RunnerProcess& r)
{
    auto reply = http("GET", r.url() + "/v1/ndp/resolve?nid=" + kSequencedAgent);
    REQUIRE_MESSAGE(reply.status == 200, reply.raw);
    return reply.body["spawn_spec_ref"];
}

}  // namespace

TEST_CASE("graph_seq: a retransmission is dropped, a rollback and a same-sequence change are refused")
{
    nps::test::StartedRunner d;
    auto& r = d.runner;
    const std::int64_t t = now_ms() - 1000;
    const Json first = announce(5, "https://specs.example.com/v5.json", t);

    auto accepted = put(r, first);
    REQUIRE_MESSAGE(accepted.status == 200, accepted.raw);
    CHECK(accepted.body["decision"] == "accepted");
    CHECK(accepted.body["status"] == "registered");

    // The same bytes again: a duplicate, nothing written.
    auto again = put(r, first);
    REQUIRE_MESSAGE(again.status == 200, again.raw);
    CHECK(again.body["decision"] == "duplicate");
    CHECK(again.body["status"] == "duplicate");

    // Lower graph_seq: 400 NDP-GRAPH-SEQ-ROLLBACK; an announce without one is 0, also below.
    check_error(put(r, announce(4, "https://specs.example.com/v4.json", t + 10)), 400, "NDP-GRAPH-SEQ-ROLLBACK");
    Json unsequenced = first;
    unsequenced.erase("graph_seq");
    unsequenced["spawn_spec_ref"] = "https://specs.example.com/none.json";
    check_error(put(r, unsequenced), 400, "NDP-GRAPH-SEQ-ROLLBACK");
    // Same graph_seq, other content: 409 NDP-ANNOUNCE-CONFLICT.
    check_error(put(r, announce(5, "https://specs.example.com/other.json", t)), 409, "NDP-ANNOUNCE-CONFLICT");
    CHECK(resolved_ref(r) == "https://specs.example.com/v5.json");

    // A higher graph_seq replaces it.
    auto next = put(r, announce(6, "https://specs.example.com/v6.json", t + 20));
    REQUIRE_MESSAGE(next.status == 200, next.raw);
    CHECK(next.body["decision"] == "accepted");
    CHECK(resolved_ref(r) == "https://specs.example.com/v6.json");

    // Going offline (ttl 0) keeps the fence: a later announce below it is still a rollback.
    Json offline = announce(7, "https://specs.example.com/v6.json", t + 30);
    offline["ttl"] = 0;
    auto gone = put(r, offline);
    REQUIRE_MESSAGE(gone.status == 200, gone.raw);
    CHECK(gone.body["status"] == "offline");
    check_error(http("GET", r.url() + "/v1/ndp/resolve?nid=" + kSequencedAgent), 404, "NDP-RESOLVE-NOT-FOUND");
    check_error(put(r, announce(6, "https://specs.example.com/v6.json", t + 40)), 400, "NDP-GRAPH-SEQ-ROLLBACK");
    auto back = put(r, announce(8, "https://specs.example.com/v8.json", t + 50));
    REQUIRE_MESSAGE(back.status == 200, back.raw);
    CHECK(resolved_ref(r) == "https://specs.example.com/v8.json");

    // A wrongly typed graph_seq is an invalid announce.
    Json bad = first;
    bad["graph_seq"] = "9";
    check_error(put(r, bad), 400, "NDP-ANNOUNCE-INVALID");
    bad["graph_seq"] = -1;
    check_error(put(r, bad), 400, "NDP-ANNOUNCE-INVALID");
    CHECK(resolved_ref(r) == "https://specs.example.com/v8.json");
}

TEST_CASE("an announce past its timestamp plus ttl is stale on arrival; a fresh one expires at timestamp plus ttl")
{
    nps::test::StartedRunner d;
    auto& r = d.runner;
    Json old = announce(1, "https://specs.example.com/old.json", now_ms() - 301'000);
    check_error(put(r, old), 404, "NDP-ANNOUNCE-STALE");
    check_error(http("GET", r.url() + "/v1/ndp/resolve?nid=" + kSequencedAgent), 404, "NDP-RESOLVE-NOT-FOUND");

    // Fresh for about two more seconds: resolvable now, stale after.
    Json brief = announce(2, "https://specs.example.com/brief.json", now_ms() - 298'000);
    auto ok = put(r, brief);
    REQUIRE_MESSAGE(ok.status == 200, ok.raw);
    CHECK(resolved_ref(r) == "https://specs.example.com/brief.json");
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));
    check_error(http("GET", r.url() + "/v1/ndp/resolve?nid=" + kSequencedAgent), 404, "NDP-RESOLVE-STALE");
}

TEST_CASE("announces without graph_seq to a NID that never had one replace each other, as before")
{
    nps::test::StartedRunner d;
    auto& r = d.runner;
    for (const char* ref : {"https://specs.example.com/a.json", "https://specs.example.com/b.json"}) {
        auto reply = http("PUT", r.url() + "/v1/ndp/announces/" + kSequencedAgent,
                          Json{{"spawn_spec_ref", ref}, {"ttl", 300}}.dump());
        REQUIRE_MESSAGE(reply.status == 200, reply.raw);
        CHECK(reply.body["decision"] == "accepted");
        CHECK(resolved_ref(r) == ref);
    }
    // The first sequenced announce then fences the NID.
    auto seq = put(r, announce(3, "https://specs.example.com/c.json", now_ms()));
    REQUIRE_MESSAGE(seq.status == 200, seq.raw);
    Json unsequenced{{"spawn_spec_ref", "https://specs.example.com/d.json"}, {"ttl", 300}};
    check_error(http("PUT", r.url() + "/v1/ndp/announces/" + kSequencedAgent, unsequenced.dump()), 400,
                "NDP-GRAPH-SEQ-ROLLBACK");
    CHECK(resolved_ref(r) == "https://specs.example.com/c.json");
}
