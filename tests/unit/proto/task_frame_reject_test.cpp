// SPDX-License-Identifier: Apache-2.0
// decode_task_frame: every rejection path, with its exact code and message.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "nps/proto/error_codes.hpp"
#include "nps/proto/task_frame.hpp"

using namespace nps::proto;
using Json = nlohmann::ordered_json;

namespace {

constexpr const char* kMalformed = "NWP-HTTP-FRAME-BODY-MALFORMED";
constexpr const char* kDagInvalid = "NOP-TASK-DAG-INVALID";
constexpr const char* kMapping = "NOP-INPUT-MAPPING-ERROR";
constexpr const char* kCallback = "NOP-CALLBACK-INVALID";

Json valid_frame()
{
    return Json::parse(R"({
      "task_id": "task-1",
      "dag": {
        "nodes": [
          {"id": "fetch", "action": "nwp://api.example.com/products/query", "agent": "urn:nps:agent:e:fetcher"},
          {"id": "analyze", "action": "nwp://ml.example.com/inference/invoke", "agent": "urn:nps:agent:e:analyzer",
           "input_from": ["fetch"]}
        ],
        "edges": [{"from": "fetch", "to": "analyze"}]
      }
    })");
}

// One change to the valid frame: set the value at a JSON pointer, or erase it.
struct Mutation {
    const char* pointer;
    std::optional<Json> value;  // nullopt: erase
    const char* code;
    std::string message;
};

nps::Error decode_error(const std::string& text)
{
    auto result = decode_task_frame(text);
    REQUIRE_MESSAGE(!result.has_value(), text);
    return result.error();
}

void check_mutation(const Mutation& m)
{
    Json frame = valid_frame();
    const Json::json_pointer pointer(m.pointer);
    if (m.value)
        frame[pointer] = *m.value;
    else
        frame[pointer.parent_pointer()].erase(pointer.back());
    CAPTURE(m.pointer);
    CAPTURE(m.message);
    const nps::Error error = decode_error(frame.dump());
    CHECK(error.code == m.code);
    CHECK(error.message == m.message);
    // Every code we emit has an NPS status.
    CHECK(lookup_error_code(error.code).has_value());
}

}  // namespace

TEST_CASE("TaskFrame rejects: not a JSON object")
{
    const struct {
        const char* text;
        const char* message;
    } cases[] = {
        {"", "TaskFrame: invalid JSON: The JSON document has an improper structure: missing or superfluous commas, braces, missing keys, etc."},
        {"[]", "TaskFrame: expected an object, got an array"},
        {"\"x\"", "TaskFrame: expected an object, got a string"},
        {R"({"task_id":"a","task_id":"b"})", "JSON document: duplicate object key 'task_id'"},
        // `frame` is left out of the frame hash but must still be unique (found by the fuzzer).
        {R"({"frame":"0x40","task_id":"a","frame":"urn:nps:x"})", "JSON document: duplicate object key 'frame'"},
    };
    for (const auto& c : cases) {
        CAPTURE(c.text);
        const nps::Error error = decode_error(c.text);
        CHECK(error.code == kMalformed);
        if (c.text[0] != '\0')
            CHECK(error.message == c.message);
    }
    CHECK(decode_error("{").code == kMalformed);
    CHECK(decode_error(std::string(40, '[') + std::string(40, ']')).code == kMalformed);
    Json deep = valid_frame();
    Json nested = 1;
    for (int i = 0; i < 32; ++i)
        nested = Json::array({nested});
    deep["extra"] = nested;  // 32 arrays below the frame object: depth 33
    const nps::Error error = decode_error(deep.dump());
    CHECK(error.code == kMalformed);
    CHECK(error.message.find("nesting deeper than 32") != std::string::npos);
}

TEST_CASE("TaskFrame rejects: task-level fields")
{
    const std::vector<Mutation> cases = {
        {"/frame", Json(65), kMalformed, "frame: must be an integer from 64 to 64, got 65"},
        {"/frame", Json("0x41"), kMalformed, "frame: expected 64 or \"0x40\", got '0x41'"},
        {"/frame", Json(true), kMalformed, "frame: expected an integer, got a boolean"},
        {"/task_id", std::nullopt, kMalformed, "task_id: required"},
        {"/task_id", Json(nullptr), kMalformed, "task_id: required"},
        {"/task_id", Json(7), kMalformed, "task_id: expected a string, got a number"},
        {"/task_id", Json(""), kMalformed,
         "task_id: invalid identifier '' (expected 1..128 characters of A-Z a-z 0-9 . _ : -)"},
        {"/task_id", Json("task 1"), kMalformed,
         "task_id: invalid identifier 'task 1' (expected 1..128 characters of A-Z a-z 0-9 . _ : -)"},
        {"/task_id", Json(std::string(129, 'a')), kMalformed,
         "task_id: invalid identifier '" + std::string(64, 'a') +
             "...' (expected 1..128 characters of A-Z a-z 0-9 . _ : -)"},
        {"/timeout_ms", Json(0), kMalformed, "timeout_ms: must be an integer from 1 to 3600000, got 0"},
        {"/timeout_ms", Json(3600001), kMalformed, "timeout_ms: must be an integer from 1 to 3600000, got 3600001"},
        {"/timeout_ms", Json(-5), kMalformed, "timeout_ms: must be an integer from 1 to 3600000, got -5"},
        {"/timeout_ms", Json(1000.5), kMalformed,
         "timeout_ms: must be an integer from 1 to 3600000, got a number with a fraction or exponent"},
        {"/timeout_ms", Json("1000"), kMalformed, "timeout_ms: expected an integer, got a string"},
        {"/max_retries", Json(256), kMalformed, "max_retries: must be an integer from 0 to 255, got 256"},
        {"/max_retries", Json(-1), kMalformed, "max_retries: must be an integer from 0 to 255, got -1"},
        {"/priority", Json("urgent"), kMalformed, "priority: expected \"low\", \"normal\" or \"high\", got 'urgent'"},
        {"/priority", Json(1), kMalformed, "priority: expected a string, got a number"},
        {"/preflight", Json("yes"), kMalformed, "preflight: expected a boolean, got a string"},
        {"/compensation_policy", Json("on_failure"), kMalformed,
         "compensation_policy: expected \"best_effort\", \"strict\" or \"none\", got 'on_failure'"},
        {"/reply_to", Json("orchestrator"), kMalformed,
         "reply_to: 'orchestrator' is not an NID (urn:nps:…) whose inbox can take the task's completion message"},
        {"/reply_to", Json(7), kMalformed, "reply_to: expected a string, got a number"},
        {"/delegate_depth", Json(-1), kMalformed, "delegate_depth: must be an integer from 0 to 255, got -1"},
        {"/delegate_depth", Json(2), "NOP-DELEGATE-CHAIN-TOO-DEEP",
         "delegate_depth: 2: the workers would be entity 4 of a delegation chain of at most 3"},
        {"/depth", Json(2), "NOP-DELEGATE-CHAIN-TOO-DEEP",
         "depth: 2: the workers would be entity 4 of a delegation chain of at most 3"},
        {"/result_ttl_seconds", Json(4294967296), kMalformed,
         "result_ttl_seconds: must be an integer from 0 to 4294967295, got 4294967296"},
        {"/context", Json::array(), kMalformed, "context: expected an object, got an array"},
        {"/context", Json{{"trace_id", "xyz"}}, kMalformed,
         "context.trace_id: expected 32 lowercase hex digits, not all zero, got 'xyz'"},
        {"/context", Json{{"trace_id", std::string(32, '0')}}, kMalformed,
         "context.trace_id: expected 32 lowercase hex digits, not all zero, got '" + std::string(32, '0') + "'"},
        {"/context", Json{{"span_id", "00F067AA0BA902B7"}}, kMalformed,
         "context.span_id: expected 16 lowercase hex digits, not all zero, got '00F067AA0BA902B7'"},
        {"/context", Json{{"trace_flags", 256}}, kMalformed,
         "context.trace_flags: must be an integer from 0 to 255, got 256"},
        {"/context", Json{{"baggage", "k=v"}}, kMalformed, "context.baggage: expected an object, got a string"},
        {"/context", Json{{"session_id", 1}}, kMalformed, "context.session_id: expected a string, got a number"},
        {"/request_id", Json("a/b"), kMalformed,
         "request_id: invalid identifier 'a/b' (expected 1..128 characters of A-Z a-z 0-9 . _ : -)"},
        {"/aggregate", Json("sum"), kMalformed,
         "aggregate: expected \"merge\", \"first\", \"all\", \"fastest_k\", \"weighted_first_k\" or "
         "\"merge_all\", got 'sum'"},
        {"/aggregate", Json("MERGE"), kMalformed,
         "aggregate: expected \"merge\", \"first\", \"all\", \"fastest_k\", \"weighted_first_k\" or "
         "\"merge_all\", got 'MERGE'"},
        {"/aggregate", Json(1), kMalformed, "aggregate: expected a string, got a number"},
        {"/aggregate_k", Json(2), kMalformed,
         "aggregate_k: only applies to aggregate \"fastest_k\" or \"weighted_first_k\", not \"merge\""},
    };
    for (const Mutation& m : cases)
        check_mutation(m);
}

TEST_CASE("TaskFrame rejects: dag and node fields")
{
    const std::string long_action = "nwp://x/" + std::string(2050, 'a');
    const std::vector<Mutation> cases = {
        {"/dag", std::nullopt, kDagInvalid, "dag: required"},
        {"/dag", Json::array(), kDagInvalid, "dag: expected an object, got an array"},
        {"/dag/nodes", std::nullopt, kDagInvalid, "dag.nodes: required"},
        {"/dag/nodes", Json::object(), kDagInvalid, "dag.nodes: expected an array, got an object"},
        {"/dag/nodes", Json::array(), kDagInvalid, "dag.nodes: the DAG has no nodes"},
        {"/dag/nodes/0", Json("fetch"), kDagInvalid, "dag.nodes[0]: expected an object, got a string"},
        {"/dag/nodes/0/id", std::nullopt, kDagInvalid, "dag.nodes[0].id: required"},
        {"/dag/nodes/0/id", Json(1), kDagInvalid, "dag.nodes[0].id: expected a string, got a number"},
        {"/dag/nodes/0/id", Json("a b"), kDagInvalid,
         "dag.nodes[0].id: invalid node id 'a b' (expected 1..128 characters of A-Z a-z 0-9 . _ : -)"},
        {"/dag/nodes/1/id", Json("fetch"), kDagInvalid,
         "dag.nodes[1].id: duplicate node id 'fetch' (first declared at dag.nodes[0])"},
        {"/dag/nodes/0/action", std::nullopt, kDagInvalid, "dag.nodes[0].action: required"},
        {"/dag/nodes/0/action", Json("https://api.example.com/q"), kDagInvalid,
         "dag.nodes[0].action: expected an nwp://host/node-path URL, got 'https://api.example.com/q'"},
        {"/dag/nodes/0/action", Json("nwp://api.example.com"), kDagInvalid,
         "dag.nodes[0].action: expected an nwp://host/node-path URL, got 'nwp://api.example.com'"},
        {"/dag/nodes/0/action", Json(long_action), kDagInvalid,
         "dag.nodes[0].action: longer than 2048 characters"},
        {"/dag/nodes/0/agent", std::nullopt, kDagInvalid, "dag.nodes[0].agent: required"},
        {"/dag/nodes/0/agent", Json("worker-1"), kDagInvalid,
         "dag.nodes[0].agent: invalid NID 'worker-1' (expected urn:nps:...)"},
        {"/dag/nodes/1/input_from", Json("fetch"), kDagInvalid,
         "dag.nodes[1].input_from: expected an array, got a string"},
        {"/dag/nodes/1/input_from", Json::array({1}), kDagInvalid,
         "dag.nodes[1].input_from[0]: expected a string, got a number"},
        {"/dag/nodes/1/input_from", Json::array({"ghost"}), kDagInvalid,
         "dag.nodes[1].input_from[0]: unknown node 'ghost'"},
        {"/dag/nodes/1/input_from", Json::array({"analyze"}), kDagInvalid,
         "dag.nodes[1].input_from[0]: node 'analyze' depends on itself"},
        {"/dag/nodes/1/input_from", Json::array({"fetch", "fetch"}), kDagInvalid,
         "dag.nodes[1].input_from[1]: duplicate dependency 'fetch'"},
        {"/dag/nodes/1/timeout_ms", Json(0), kDagInvalid,
         "dag.nodes[1].timeout_ms: must be an integer from 1 to 3600000, got 0"},
        {"/dag/nodes/1/timeout_ms", Json(3600001), kDagInvalid,
         "dag.nodes[1].timeout_ms: must be an integer from 1 to 3600000, got 3600001"},
        {"/dag/nodes/1/condition", Json(true), kDagInvalid, "dag.nodes[1].condition: expected a string, got a boolean"},
        {"/dag/nodes/1/condition", Json(std::string(513, 'x')), "NOP-CONDITION-EVAL-ERROR",
         "dag.nodes[1].condition: 513 characters, the limit is 512"},
        {"/dag/nodes/1/compensate_action", Json("nwp://x/y?undo"), kDagInvalid,
         "dag.nodes[1].compensate_action: expected an nwp://host/node-path URL, got 'nwp://x/y?undo'"},
        {"/dag/edges", Json::object(), kDagInvalid, "dag.edges: expected an array, got an object"},
        {"/dag/edges/0", Json::array(), kDagInvalid, "dag.edges[0]: expected an object, got an array"},
        {"/dag/edges/0/from", std::nullopt, kDagInvalid, "dag.edges[0].from: required"},
        {"/dag/edges/0/to", Json(3), kDagInvalid, "dag.edges[0].to: expected a string, got a number"},
        {"/dag/edges/0/from", Json("ghost"), kDagInvalid, "dag.edges[0].from: unknown node 'ghost'"},
        {"/dag/edges/0/to", Json("fetch"), kDagInvalid, "dag.edges[0]: self-loop on node 'fetch'"},
        {"/dag/edges/1", Json{{"from", "fetch"}, {"to", "analyze"}}, kDagInvalid,
         "dag.edges[1]: duplicate edge 'fetch' -> 'analyze'"},
        {"/dag/edges/1", Json{{"from", "analyze"}, {"to", "fetch"}}, "NOP-TASK-DAG-CYCLE",
         "dag: the dependencies form a cycle; nodes on or after it: 'analyze', 'fetch'"},
    };
    for (const Mutation& m : cases)
        check_mutation(m);
}

TEST_CASE("TaskFrame rejects: retry_policy")
{
    const std::vector<Mutation> cases = {
        {"/dag/nodes/0/retry_policy", Json(3), kDagInvalid,
         "dag.nodes[0].retry_policy: expected an object, got a number"},
        {"/dag/nodes/0/retry_policy", Json{{"max_retries", 256}}, kDagInvalid,
         "dag.nodes[0].retry_policy.max_retries: must be an integer from 0 to 255, got 256"},
        {"/dag/nodes/0/retry_policy", Json{{"backoff", "random"}}, kDagInvalid,
         "dag.nodes[0].retry_policy.backoff: expected \"exponential\", \"fixed\" or \"linear\", got 'random'"},
        {"/dag/nodes/0/retry_policy", Json{{"initial_delay_ms", -1}}, kDagInvalid,
         "dag.nodes[0].retry_policy.initial_delay_ms: must be an integer from 0 to 4294967295, got -1"},
        {"/dag/nodes/0/retry_policy", Json{{"max_delay_ms", 4294967296}}, kDagInvalid,
         "dag.nodes[0].retry_policy.max_delay_ms: must be an integer from 0 to 4294967295, got 4294967296"},
        {"/dag/nodes/0/retry_policy", Json{{"retry_on", "NWP-NODE-UNAVAILABLE"}}, kDagInvalid,
         "dag.nodes[0].retry_policy.retry_on: expected an array, got a string"},
        {"/dag/nodes/0/retry_policy", Json{{"retry_on", Json::array({"bad code"})}}, kDagInvalid,
         "dag.nodes[0].retry_policy.retry_on[0]: invalid error code 'bad code'"},
        {"/dag/nodes/0/retry_policy", Json{{"retry_on", Json(std::vector<std::string>(65, "X"))}}, kDagInvalid,
         "dag.nodes[0].retry_policy.retry_on: more than 64 error codes"},
    };
    for (const Mutation& m : cases)
        check_mutation(m);
}

TEST_CASE("TaskFrame rejects: input_mapping and compensate_params_mapping")
{
    const std::vector<Mutation> cases = {
        {"/dag/nodes/1/input_mapping", Json("$.fetch"), kDagInvalid,
         "dag.nodes[1].input_mapping: expected an object, got a string"},
        {"/dag/nodes/1/input_mapping", Json{{"rows", "$"}}, kMapping,
         "dag.nodes[1].input_mapping.rows: expected a JSONPath starting with \"$.\", got '$'"},
        {"/dag/nodes/1/input_mapping", Json{{"rows", "$..rows"}}, kMapping,
         "dag.nodes[1].input_mapping.rows: empty segment in JSONPath '$..rows'"},
        {"/dag/nodes/1/input_mapping", Json{{"rows", "$.fetch."}}, kMapping,
         "dag.nodes[1].input_mapping.rows: empty segment in JSONPath '$.fetch.'"},
        {"/dag/nodes/1/input_mapping", Json{{"rows", "$.fetch.rows[0]"}}, kMapping,
         "dag.nodes[1].input_mapping.rows: unsupported JSONPath syntax in '$.fetch.rows[0]' (only $.a.b.c is supported)"},
        {"/dag/nodes/1/input_mapping", Json{{"rows", "$.a.b.c.d.e.f.g.h.i"}}, kMapping,
         "dag.nodes[1].input_mapping.rows: JSONPath '$.a.b.c.d.e.f.g.h.i' has 9 segments, the limit is 8"},
        {"/dag/nodes/1/input_mapping", Json{{"rows", {"$.fetch.a", "$fetch.b"}}}, kMapping,
         "dag.nodes[1].input_mapping.rows[1]: expected a JSONPath starting with \"$.\", got '$fetch.b'"},
        {"/dag/nodes/1/input_mapping", Json{{"", "$.fetch"}}, kMapping,
         "dag.nodes[1].input_mapping['']: parameter name is empty"},
        {"/dag/nodes/1/input_mapping", Json{{"a b", "$x"}}, kMapping,
         "dag.nodes[1].input_mapping['a b']: expected a JSONPath starting with \"$.\", got '$x'"},
        {"/dag/nodes/0/compensate_params_mapping", Json::array(), kDagInvalid,
         "dag.nodes[0].compensate_params_mapping: expected an object, got an array"},
        {"/dag/nodes/0/compensate_params_mapping", Json{{"charge_id", "$charge_id"}}, kMapping,
         "dag.nodes[0].compensate_params_mapping.charge_id: expected a JSONPath starting with \"$.\", got '$charge_id'"},
    };
    for (const Mutation& m : cases)
        check_mutation(m);
}

TEST_CASE("TaskFrame rejects: callback_url and callback_secret")
{
    const std::vector<Mutation> cases = {
        {"/callback_url", Json(5), kCallback, "callback_url: expected a string, got a number"},
        {"/callback_url", Json("http://hooks.example.com/cb"), kCallback,
         "callback_url: scheme must be https, got 'http'"},
        {"/callback_url", Json("https://u:p@hooks.example.com/cb"), kCallback,
         "callback_url: user-info in the URL is not allowed"},
        {"/callback_url", Json("https://192.168.1.20/cb"), kCallback,
         "callback_url: host '192.168.1.20' is not a public address"},
        {"/callback_url", Json("https://localhost:8443/cb"), kCallback, "callback_url: host 'localhost' is a loopback name"},
        {"/callback_url", Json("https:///cb"), kCallback, "callback_url: the URL has no host"},
        {"/callback_secret", Json(32), kCallback, "callback_secret: expected a string, got a number"},
        {"/callback_secret", Json("c2VjcmV0"), kCallback, "callback_secret: decodes to 6 bytes, expected 32"},
        {"/callback_secret", Json(std::string(42, 'A') + "+"), kCallback, "callback_secret: not valid base64url"},
    };
    for (const Mutation& m : cases)
        check_mutation(m);
}

TEST_CASE("TaskFrame rejects: 33 nodes is TOO-LARGE before any node field is read")
{
    Json frame = valid_frame();
    Json nodes = Json::array();
    for (int i = 0; i < 33; ++i)
        nodes.push_back(Json{{"id", i}});  // every node invalid: size is checked first
    frame["dag"]["nodes"] = nodes;
    frame["dag"]["edges"] = Json::array();
    const nps::Error error = decode_error(frame.dump());
    CHECK(error.code == "NOP-TASK-DAG-TOO-LARGE");
    CHECK(error.message == "dag.nodes: 33 nodes, the limit is 32");
}

TEST_CASE("TaskFrame rejects: check order between areas")
{
    // A malformed task field wins over a DAG error.
    Json both = valid_frame();
    both["priority"] = "urgent";
    both["dag"]["nodes"] = Json::array();
    CHECK(decode_error(both.dump()).code == kMalformed);
    // A DAG error wins over a callback error (the DAG is validated first, §3.5.1).
    Json dag_and_callback = valid_frame();
    dag_and_callback["callback_url"] = "http://x.example/cb";
    dag_and_callback["dag"]["edges"].push_back(Json{{"from", "analyze"}, {"to", "fetch"}});
    CHECK(decode_error(dag_and_callback.dump()).code == "NOP-TASK-DAG-CYCLE");
}

TEST_CASE("TaskFrame rejects: aggregate_k out of range or with another mode")
{
    const std::vector<Mutation> cases = {
        {"/aggregate_k", Json(33), kMalformed, "aggregate_k: must be an integer from 0 to 32, got 33"},
        {"/aggregate_k", Json(-1), kMalformed, "aggregate_k: must be an integer from 0 to 32, got -1"},
        {"/aggregate_k", Json(1.5), kMalformed,
         "aggregate_k: must be an integer from 0 to 32, got a number with a fraction or exponent"},
        {"/aggregate_k", Json("2"), kMalformed, "aggregate_k: expected an integer, got a string"},
    };
    for (Mutation m : cases) {
        Json frame = valid_frame();
        frame["aggregate"] = "fastest_k";
        frame[Json::json_pointer(m.pointer)] = *m.value;
        CAPTURE(m.pointer);
        const nps::Error error = decode_error(frame.dump());
        CHECK(error.code == m.code);
        CHECK(error.message == m.message);
    }
    Json all = valid_frame();
    all["aggregate"] = "all";
    all["aggregate_k"] = 1;
    const nps::Error error = decode_error(all.dump());
    CHECK(error.code == kMalformed);
    CHECK(error.message == "aggregate_k: only applies to aggregate \"fastest_k\" or \"weighted_first_k\", not \"all\"");
}

TEST_CASE("TaskFrame rejects: a key that is no field, naming it and the expected spelling")
{
    const std::string frame_keys =
        "frame, task_id, dag, timeout_ms, max_retries, priority, callback_url, preflight, compensation_policy, "
        "callback_secret, result_ttl_seconds, context, request_id, reply_to, delegate_depth, depth, aggregate, "
        "aggregate_k";
    const std::string node_keys = "id, action, agent, input_from, input_mapping, timeout_ms, retry_policy, "
                                  "condition, compensate_action, compensate_params_mapping";
    const std::vector<Mutation> cases = {
        // The camelCase spellings the TypeScript SDK's interfaces invite.
        {"/dag/nodes/1/inputFrom", Json::array({"fetch"}), kDagInvalid,
         "dag.nodes[1].inputFrom: unknown key; did you mean \"input_from\"?"},
        {"/dag/nodes/0/timeoutMs", Json(5000), kDagInvalid,
         "dag.nodes[0].timeoutMs: unknown key; did you mean \"timeout_ms\"?"},
        {"/dag/nodes/0/retryPolicy", Json::object(), kDagInvalid,
         "dag.nodes[0].retryPolicy: unknown key; did you mean \"retry_policy\"?"},
        {"/dag/nodes/0/retry_policy", Json{{"maxRetries", 1}}, kDagInvalid,
         "dag.nodes[0].retry_policy.maxRetries: unknown key; did you mean \"max_retries\"?"},
        {"/timeoutMs", Json(1000), kMalformed, "timeoutMs: unknown key; did you mean \"timeout_ms\"?"},
        {"/Task_ID", Json("x"), kMalformed, "Task_ID: unknown key; did you mean \"task_id\"?"},
        // No near spelling: the keys there are.
        {"/future_field", Json(true), kMalformed, "future_field: unknown key (expected one of: " + frame_keys + ")"},
        {"/dag/nodes/0/min_required", Json(1), kDagInvalid,
         "dag.nodes[0].min_required: unknown key (expected one of: " + node_keys + ")"},
        {"/dag/edges/0/weight", Json(1), kDagInvalid,
         "dag.edges[0].weight: unknown key (expected one of: from, to)"},
        {"/dag/meta", Json::object(), kDagInvalid, "dag.meta: unknown key (expected one of: nodes, edges)"},
        // A null value is still a key that is not a field.
        {"/dag/nodes/0/inputMapping", Json(nullptr), kDagInvalid,
         "dag.nodes[0].inputMapping: unknown key; did you mean \"input_mapping\"?"},
    };
    for (const Mutation& m : cases)
        check_mutation(m);

    // Both names of the hop count at once is ambiguous.
    Json both = valid_frame();
    both["delegate_depth"] = 0;
    both["depth"] = 0;
    CHECK(decode_error(both.dump()).message == "depth: give delegate_depth or its older name depth, not both");
}
