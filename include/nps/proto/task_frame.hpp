// SPDX-License-Identifier: Apache-2.0
// TaskFrame (NOP 0x40, NPS-5 §3.1) decoding and validation.
//
// decode_task_frame() parses untrusted JSON with simdjson, checks every field's
// type and range and every limit of §9.2, validates the DAG (dag.hpp), and
// computes the canonical hashes the store keys on. It never throws; on
// failure the Error carries the exact NOP code and a message naming the field
// ("dag.nodes[2].input_from[0]: unknown node 'fetch'"). Checks run in this
// order, and the first failure wins:
//   1. not JSON, not an object, a duplicate key, nesting deeper than
//      limits::kMaxJsonDepth → NWP-HTTP-FRAME-BODY-MALFORMED
//   2. a key that is not a TaskFrame field (the camelCase `timeoutMs` too:
//      the message names the expected spelling), task-level fields (frame,
//      task_id, timeout_ms, max_retries, priority, preflight,
//      compensation_policy, result_ttl_seconds, context, request_id, and the
//      extensions aggregate / aggregate_k) wrong, a reply_to that is not an
//      NID → NWP-HTTP-FRAME-BODY-MALFORMED; delegate_depth (the SDKs' non-spec
//      hop count) ≥ 3 → NOP-DELEGATE-CHAIN-TOO-DEEP
//   3. dag missing / not an object, empty dag, node or edge field wrong,
//      duplicate or unknown node ids, a key that is not a field of the dag,
//      a node, an edge or a retry_policy → NOP-TASK-DAG-INVALID;
//      more than 32 nodes → NOP-TASK-DAG-TOO-LARGE (before any node field);
//      condition longer than 512 characters → NOP-CONDITION-EVAL-ERROR;
//      an input_mapping / compensate_params_mapping path outside the
//      supported JSONPath subset ("$." + at most 8 segments) →
//      NOP-INPUT-MAPPING-ERROR (a mapping that is not an object is
//      NOP-TASK-DAG-INVALID);
//      cycle → NOP-TASK-DAG-CYCLE (before the root/terminal check)
//   4. callback_url not https / has user-info / no host / localhost /
//      non-public IP literal, callback_secret not 32 base64url bytes →
//      NOP-CALLBACK-INVALID (callback_policy.hpp, callback_signature.hpp)
// No member is ignored: an unknown key is an error naming it (a misspelt
// field must not silently become its default); `context.custom` and
// `context.baggage` hold anything. An optional field set to JSON null counts
// as absent. `frame` may be absent, 64, or the string "0x40".
// The caller bounds the input size (the inbox and HTTP body limits).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nps/base/result.hpp"

namespace nps::proto {

enum class TaskPriority { low, normal, high };
// The inbox priority a deposit gets when it names none: low -10, normal 0, high 10.
int inbox_priority(TaskPriority priority);
// none: a failure compensates nothing (the TypeScript SDK's default, "none").
enum class CompensationPolicy { best_effort, strict, none };
enum class Backoff { exponential, fixed, linear };
// How the task's result is built from its completed terminal nodes (the
// NPS-5 §3.3.2 SyncFrame modes, applied to the whole task; nop/aggregate.hpp).
enum class AggregateMode { merge, first, all, fastest_k, weighted_first_k, merge_all };

struct RetryPolicy {
    std::optional<std::uint8_t> max_retries;  // absent → the task's max_retries
    Backoff backoff = Backoff::exponential;
    std::uint32_t initial_delay_ms = 1000;
    std::uint32_t max_delay_ms = 30000;
    std::optional<std::vector<std::string>> retry_on;  // absent → retry every retryable failure
};

struct DagNode {
    std::string id;
    std::string action;  // nwp:// URL
    std::string agent;   // worker NID
    std::vector<std::string> input_from;
    std::string input_mapping_json;  // canonical JSON object text, empty if absent
    std::optional<std::uint32_t> timeout_ms;
    std::optional<RetryPolicy> retry_policy;
    std::optional<std::string> condition;
    std::optional<std::string> compensate_action;
    std::string compensate_params_mapping_json;  // canonical JSON object text, empty if absent
};

struct DagEdge {
    std::string from;
    std::string to;
};

struct Dag {
    std::vector<DagNode> nodes;
    std::vector<DagEdge> edges;
};

struct TaskFrame {
    std::string task_id;
    Dag dag;
    std::uint32_t timeout_ms = 30000;
    std::uint8_t max_retries = 2;  // spec default (§3.1)
    TaskPriority priority = TaskPriority::normal;
    std::optional<std::string> callback_url;
    std::optional<std::string> callback_secret;
    bool preflight = false;
    CompensationPolicy compensation_policy = CompensationPolicy::best_effort;
    std::uint32_t result_ttl_seconds = 3600;
    std::string context_json;  // canonical JSON object text, empty if absent
    std::optional<std::string> request_id;
    // The NID whose inbox gets a completion message when the task ends
    // (the reference runner's reporting; docs/reporting.md).
    std::optional<std::string> reply_to;
    // The SDKs' non-spec hop count (0 on a root TaskFrame; digest §9.16):
    // the DelegateFrames carry it + 1.
    std::uint8_t delegate_depth = 0;
    // Extension fields (not in NPS-5 §3.1; docs/protocol-choices.md):
    // `aggregate` is one of the six mode names; `aggregate_k` (1..32, only
    // with fastest_k / weighted_first_k; 0 means "all", as SyncFrame's
    // min_required) is K. Absent K: every completed terminal node.
    AggregateMode aggregate = AggregateMode::merge;
    std::optional<std::uint32_t> aggregate_k;

    // Derived at decode time.
    std::string canonical_dag_json;    // JCS form of `dag`, unknown members included
    std::string dag_hash;              // sha256 hex of canonical_dag_json
    std::string dedup_key;             // dedup.hpp
    // sha256 hex of the JCS form of the whole frame without its `frame`
    // member (transport framing: absent, 64 and "0x40" give the same hash).
    std::string canonical_frame_hash;
};

Result<TaskFrame> decode_task_frame(std::string_view json_text);

// Identifier syntax we accept for task ids, node ids and request ids:
// 1..128 characters of [A-Za-z0-9._:-] and '_' (the vectors use node ids like
// "analyze_a" and "n_0"). The spec asks for UUID v4 task ids, but the public
// vectors use ids like "task-1", so any such id is accepted
// (docs/protocol-choices.md).
bool is_valid_identifier(std::string_view id);

// NID syntax check (NIP §3, loosened for npsd's sub-NIDs): "urn:nps:" then
// 1..248 further characters of [A-Za-z0-9._:@-] (underscore included). Runner NIDs in claims and
// inbox path segments use the same rule.
bool is_valid_nid(std::string_view nid);

std::string_view to_string(TaskPriority priority);
std::string_view to_string(CompensationPolicy policy);
std::string_view to_string(Backoff backoff);
std::string_view to_string(AggregateMode mode);

}  // namespace nps::proto
