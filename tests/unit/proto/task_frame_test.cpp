// SPDX-License-Identifier: Apache-2.0
// decode_task_frame on valid frames: field values, defaults, derived hashes.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <string>

#include "nps/base/digest.hpp"
#include "nps/proto/dedup.hpp"
#include "nps/proto/task_frame.hpp"

using namespace nps::proto;
using Json = nlohmann::ordered_json;

namespace {

const char* kMinimal = R"({
  "task_id": "task-1",
  "dag": {
    "nodes": [
      {"id": "fetch", "action": "nwp://api.example.com/products/query", "agent": "urn:nps:agent:ca.example.com:fetcher"},
      {"id": "analyze", "action": "nwp://ml.example.com/inference/invoke", "agent": "urn:nps:agent:ca.example.com:analyzer",
       "input_from": ["fetch"]}
    ],
    "edges": [{"from": "fetch", "to": "analyze"}]
  }
})";

TaskFrame decode_ok(std::string_view text)
{
    auto frame = decode_task_frame(text);
    REQUIRE_MESSAGE(frame.has_value(), (frame ? "" : frame.error().code + " " + frame.error().message));
    return std::move(frame).value();
}

}  // namespace

TEST_CASE("TaskFrame: minimal frame and spec defaults")
{
    const TaskFrame frame = decode_ok(kMinimal);
    CHECK(frame.task_id == "task-1");
    CHECK(frame.timeout_ms == 30000);
    CHECK(frame.max_retries == 2);
    CHECK(frame.priority == TaskPriority::normal);
    CHECK_FALSE(frame.callback_url);
    CHECK_FALSE(frame.callback_secret);
    CHECK_FALSE(frame.preflight);
    CHECK(frame.compensation_policy == CompensationPolicy::best_effort);
    CHECK(frame.result_ttl_seconds == 3600);
    CHECK(frame.context_json.empty());
    CHECK_FALSE(frame.request_id);
    CHECK_FALSE(frame.reply_to);
    CHECK(frame.aggregate == AggregateMode::merge);
    CHECK_FALSE(frame.aggregate_k);

    REQUIRE(frame.dag.nodes.size() == 2);
    const DagNode& analyze = frame.dag.nodes[1];
    CHECK(analyze.id == "analyze");
    CHECK(analyze.action == "nwp://ml.example.com/inference/invoke");
    CHECK(analyze.agent == "urn:nps:agent:ca.example.com:analyzer");
    CHECK(analyze.input_from == std::vector<std::string>{"fetch"});
    CHECK(analyze.input_mapping_json.empty());
    CHECK_FALSE(analyze.timeout_ms);
    CHECK_FALSE(analyze.retry_policy);
    CHECK_FALSE(analyze.condition);
    CHECK_FALSE(analyze.compensate_action);
    CHECK(analyze.compensate_params_mapping_json.empty());
    REQUIRE(frame.dag.edges.size() == 1);
    CHECK(frame.dag.edges[0].from == "fetch");
    CHECK(frame.dag.edges[0].to == "analyze");
}

TEST_CASE("TaskFrame: derived canonical form and hashes")
{
    const TaskFrame frame = decode_ok(kMinimal);
    CHECK(frame.canonical_dag_json ==
          R"({"edges":[{"from":"fetch","to":"analyze"}],"nodes":[{"action":"nwp://api.example.com/products/query",)"
          R"("agent":"urn:nps:agent:ca.example.com:fetcher","id":"fetch"},{"action":"nwp://ml.example.com/inference/invoke",)"
          R"("agent":"urn:nps:agent:ca.example.com:analyzer","id":"analyze","input_from":["fetch"]}]})");
    CHECK(frame.dag_hash == nps::sha256_hex(frame.canonical_dag_json));
    CHECK(frame.dedup_key == nps::sha256_hex(std::string("task-1") + '\0' + frame.dag_hash));
    CHECK(frame.dedup_key == dedup_key("task-1", frame.dag_hash));
    CHECK(frame.canonical_frame_hash.size() == 64);
}

TEST_CASE("TaskFrame: hashes ignore key order, whitespace and the frame member")
{
    const TaskFrame base = decode_ok(kMinimal);
    Json j = Json::parse(kMinimal);

    Json with_frame = j;
    with_frame["frame"] = "0x40";
    const TaskFrame a = decode_ok(with_frame.dump(2));
    CHECK(a.canonical_frame_hash == base.canonical_frame_hash);
    CHECK(a.dag_hash == base.dag_hash);

    Json numeric_frame = j;
    numeric_frame["frame"] = 64;
    CHECK(decode_ok(numeric_frame.dump()).canonical_frame_hash == base.canonical_frame_hash);

    // Same content, keys reversed.
    Json reversed = Json::object();
    reversed["dag"] = Json::object();
    reversed["dag"]["edges"] = j["dag"]["edges"];
    reversed["dag"]["nodes"] = j["dag"]["nodes"];
    reversed["task_id"] = j["task_id"];
    const TaskFrame b = decode_ok(reversed.dump());
    CHECK(b.canonical_frame_hash == base.canonical_frame_hash);
    CHECK(b.dag_hash == base.dag_hash);
    CHECK(b.dedup_key == base.dedup_key);

    Json other_priority = j;
    other_priority["priority"] = "high";
    const TaskFrame c = decode_ok(other_priority.dump());
    CHECK(c.canonical_frame_hash != base.canonical_frame_hash);
    CHECK(c.dag_hash == base.dag_hash);

    Json other_task = j;
    other_task["task_id"] = "task-2";
    const TaskFrame d = decode_ok(other_task.dump());
    CHECK(d.dag_hash == base.dag_hash);
    CHECK(d.dedup_key != base.dedup_key);
}

TEST_CASE("TaskFrame: every field set")
{
    const char* text = R"({
      "frame": "0x40",
      "task_id": "9b2f1c1e-7c2a-4b8e-9f5d-2a1b3c4d5e6f",
      "timeout_ms": 3600000,
      "max_retries": 0,
      "priority": "high",
      "callback_url": "https://hooks.example.com/nps/cb",
      "callback_secret": "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
      "preflight": true,
      "compensation_policy": "strict",
      "result_ttl_seconds": 0,
      "context": {"session_id": "s-1", "trace_id": "4bf92f3577b34da6a3ce929d0e0e4736",
                  "span_id": "00f067aa0ba902b7", "trace_flags": 1, "baggage": {"k": "v"}, "custom": [1, "x"]},
      "request_id": "req-7",
      "reply_to": "urn:nps:agent:orchestrator.example:inbox",
      "delegate_depth": 1,
      "dag": {
        "nodes": [
          {"id": "reserve", "action": "nwp://shop.example.com/stock/invoke", "agent": "urn:nps:agent:shop:stock",
           "compensate_action": "nwp://shop.example.com/stock/release",
           "compensate_params_mapping": {"reservation_id": "$.reservation_id"}},
          {"id": "charge", "action": "nwp://pay.example.com/card/invoke", "agent": "urn:nps:agent:pay:card",
           "input_from": ["reserve"], "timeout_ms": 5000,
           "input_mapping": {"amount": "$.reserve.total.amount", "sources": ["$.reserve.a", "$.reserve.b"],
                             "currency_fixed": "$.reserve.c", "literal": 5, "flag": true, "none": null,
                             "obj": {"k": "not-a-path"}},
           "retry_policy": {"max_retries": 3, "backoff": "linear", "initial_delay_ms": 0, "max_delay_ms": 4294967295,
                            "retry_on": ["NWP-NODE-UNAVAILABLE", "NOP-DELEGATE-TIMEOUT"]},
           "condition": "$.reserve.ok == true"}
        ]
      }
    })";
    const TaskFrame frame = decode_ok(text);
    CHECK(frame.task_id == "9b2f1c1e-7c2a-4b8e-9f5d-2a1b3c4d5e6f");
    CHECK(frame.timeout_ms == 3600000);
    CHECK(frame.max_retries == 0);
    CHECK(frame.priority == TaskPriority::high);
    CHECK(to_string(frame.priority) == "high");
    CHECK(frame.callback_url == "https://hooks.example.com/nps/cb");
    CHECK(frame.callback_secret == std::string(43, 'A'));
    CHECK(frame.preflight);
    CHECK(frame.compensation_policy == CompensationPolicy::strict);
    CHECK(frame.result_ttl_seconds == 0);
    CHECK(frame.context_json ==
          R"({"baggage":{"k":"v"},"custom":[1,"x"],"session_id":"s-1","span_id":"00f067aa0ba902b7",)"
          R"("trace_flags":1,"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736"})");
    CHECK(frame.request_id == "req-7");
    CHECK(frame.reply_to == "urn:nps:agent:orchestrator.example:inbox");
    CHECK(frame.dag.edges.empty());

    REQUIRE(frame.dag.nodes.size() == 2);
    const DagNode& reserve = frame.dag.nodes[0];
    CHECK(reserve.compensate_action == "nwp://shop.example.com/stock/release");
    CHECK(reserve.compensate_params_mapping_json == R"({"reservation_id":"$.reservation_id"})");
    const DagNode& charge = frame.dag.nodes[1];
    CHECK(charge.timeout_ms == 5000u);
    CHECK(charge.input_mapping_json ==
          R"({"amount":"$.reserve.total.amount","currency_fixed":"$.reserve.c","flag":true,"literal":5,"none":null,)"
          R"("obj":{"k":"not-a-path"},"sources":["$.reserve.a","$.reserve.b"]})");
    REQUIRE(charge.retry_policy);
    CHECK(charge.retry_policy->max_retries == 3);
    CHECK(charge.retry_policy->backoff == Backoff::linear);
    CHECK(charge.retry_policy->initial_delay_ms == 0u);
    CHECK(charge.retry_policy->max_delay_ms == 4294967295u);
    CHECK(charge.retry_policy->retry_on == std::vector<std::string>{"NWP-NODE-UNAVAILABLE", "NOP-DELEGATE-TIMEOUT"});
    CHECK(charge.condition == "$.reserve.ok == true");
    CHECK(frame.delegate_depth == 1);
}

TEST_CASE("TaskFrame: retry_policy defaults and null optional fields")
{
    Json j = Json::parse(kMinimal);
    j["dag"]["nodes"][0]["retry_policy"] = Json::object();
    j["dag"]["nodes"][1]["input_from"] = nullptr;
    j["dag"]["nodes"][1]["condition"] = nullptr;
    j["dag"]["edges"] = nullptr;
    j["priority"] = nullptr;
    j["callback_url"] = nullptr;
    j["context"] = nullptr;
    const TaskFrame frame = decode_ok(j.dump());
    REQUIRE(frame.dag.nodes[0].retry_policy);
    const RetryPolicy& policy = *frame.dag.nodes[0].retry_policy;
    CHECK_FALSE(policy.max_retries);
    CHECK(policy.backoff == Backoff::exponential);
    CHECK(policy.initial_delay_ms == 1000u);
    CHECK(policy.max_delay_ms == 30000u);
    CHECK_FALSE(policy.retry_on);
    CHECK(frame.dag.nodes[1].input_from.empty());
    CHECK_FALSE(frame.dag.nodes[1].condition);
    CHECK(frame.priority == TaskPriority::normal);
    CHECK_FALSE(frame.callback_url);
}

TEST_CASE("TaskFrame: limits at their edge are accepted")
{
    Json j = Json::parse(kMinimal);
    j["dag"]["nodes"][0]["condition"] = std::string(512, 'x');
    std::string wide;
    for (int i = 0; i < 512; ++i)
        wide += "\u00e9";  // 512 characters, 1024 bytes
    j["dag"]["nodes"][1]["condition"] = wide;
    j["dag"]["nodes"][1]["input_mapping"] = {{"p", "$.a.b.c.d.e.f.g.h"}};
    j["task_id"] = std::string(128, 't');
    j["max_retries"] = 255;
    j["result_ttl_seconds"] = 4294967295u;
    CHECK(decode_task_frame(j.dump()).has_value());
}

TEST_CASE("identifiers and NIDs")
{
    for (const char* id : {"task-1", "n_0", "analyze_a", "a.b:c-d", "9b2f1c1e-7c2a-4b8e-9f5d-2a1b3c4d5e6f"})
        CHECK_MESSAGE(is_valid_identifier(id), id);
    for (const char* id : {"", "a b", "a/b", "a@b", "é"})
        CHECK_FALSE_MESSAGE(is_valid_identifier(id), id);
    CHECK(is_valid_identifier(std::string(128, 'a')));
    CHECK_FALSE(is_valid_identifier(std::string(129, 'a')));

    for (const char* nid : {"urn:nps:agent:ca.example.com:fetcher", "urn:nps:host:0123456789abcdef:agent:runner-1",
                            "urn:nps:node:a@b", "urn:nps:agent:example.com:my_agent"})
        CHECK_MESSAGE(is_valid_nid(nid), nid);
    for (const char* nid : {"urn:nps:", "agent:x", "URN:NPS:agent:x", "urn:nps:agent x", "urn:nps:a/b"})
        CHECK_FALSE_MESSAGE(is_valid_nid(nid), nid);
    CHECK(is_valid_nid("urn:nps:" + std::string(248, 'a')));
    CHECK_FALSE(is_valid_nid("urn:nps:" + std::string(249, 'a')));

    CHECK(to_string(TaskPriority::low) == "low");
    CHECK(to_string(TaskPriority::normal) == "normal");
    CHECK(to_string(CompensationPolicy::best_effort) == "best_effort");
    CHECK(to_string(Backoff::fixed) == "fixed");
}

TEST_CASE("TaskFrame: the aggregate extension fields")
{
    const struct {
        const char* name;
        AggregateMode mode;
    } modes[] = {
        {"merge", AggregateMode::merge},         {"first", AggregateMode::first},
        {"all", AggregateMode::all},             {"fastest_k", AggregateMode::fastest_k},
        {"weighted_first_k", AggregateMode::weighted_first_k}, {"merge_all", AggregateMode::merge_all},
    };
    for (const auto& m : modes) {
        Json j = Json::parse(kMinimal);
        j["aggregate"] = m.name;
        const TaskFrame frame = decode_ok(j.dump());
        CHECK(frame.aggregate == m.mode);
        CHECK(to_string(frame.aggregate) == m.name);
        CHECK_FALSE(frame.aggregate_k);
    }

    Json k = Json::parse(kMinimal);
    k["aggregate"] = "weighted_first_k";
    k["aggregate_k"] = 32;
    CHECK(decode_ok(k.dump()).aggregate_k == 32u);
    k["aggregate"] = "fastest_k";
    k["aggregate_k"] = 1;
    CHECK(decode_ok(k.dump()).aggregate_k == 1u);
    // 0 means "all", as SyncFrame's min_required.
    k["aggregate_k"] = 0;
    CHECK_FALSE(decode_ok(k.dump()).aggregate_k);
    // null is absent, like every optional field.
    k["aggregate"] = nullptr;
    k["aggregate_k"] = nullptr;
    const TaskFrame nulls = decode_ok(k.dump());
    CHECK(nulls.aggregate == AggregateMode::merge);
    CHECK_FALSE(nulls.aggregate_k);
}

TEST_CASE("TaskFrame: the frames the official SDKs send decode (their keys, nulls and defaults)")
{
    const char* dag = R"({"nodes": [{"id": "a", "action": "nwp://x.example/a", "agent": "urn:nps:agent:x:a"}],
                          "edges": []})";
    // Python: TaskFrame.to_dict always has these, delegate_depth 0.
    Json python = {{"task_id", "py-1"},      {"dag", Json::parse(dag)}, {"timeout_ms", 30000},
                   {"max_retries", 2},       {"priority", "normal"},    {"preflight", false},
                   {"delegate_depth", 0}};
    const TaskFrame p = decode_ok(python.dump());
    CHECK(p.delegate_depth == 0);
    CHECK(p.compensation_policy == CompensationPolicy::best_effort);
    // TypeScript alpha.15: explicit nulls, `depth`, compensation "none".
    Json ts = {{"task_id", "ts-1"},         {"dag", Json::parse(dag)},   {"timeout_ms", nullptr},
               {"callback_url", nullptr},   {"context", nullptr},        {"priority", nullptr},
               {"depth", nullptr},          {"compensation_policy", "none"}, {"result_ttl_seconds", 3600}};
    const TaskFrame t = decode_ok(ts.dump());
    CHECK(t.timeout_ms == 30000);
    CHECK(t.compensation_policy == CompensationPolicy::none);
    CHECK(to_string(t.compensation_policy) == "none");
    ts["depth"] = 1;
    CHECK(decode_ok(ts.dump()).delegate_depth == 1);
}
