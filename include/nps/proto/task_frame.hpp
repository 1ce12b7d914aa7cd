// SPDX-License-Identifier: Apache-2.0
// TaskFrame (NOP 0x40, NPS-5 §3.1) decoding and validation.
//
// decode_task_frame() parses untrusted JSON with simdjson, checks every field's
// type and range and every limit of §9.2, validates the DAG (dag.hpp), and
// computes the canonical hashes the store keys on. It never throws; on
// failure the Error carries the exact NOP code:
//   - not JSON / not an object / task-level field wrong → NWP-HTTP-FRAME-BODY-MALFORMED
//   - dag field errors, duplicate or unknown node ids, empty dag → NOP-TASK-DAG-INVALID
//   - more than 32 nodes → NOP-TASK-DAG-TOO-LARGE
//   - cycle → NOP-TASK-DAG-CYCLE (checked before the root/terminal check)
//   - callback_url not https / has user-info / no host / non-public IP literal,
//     callback_secret not 32 base64url bytes → NOP-CALLBACK-INVALID
// Unknown fields are ignored (forward compatibility). `frame` may be absent,
// 64, or the string "0x40".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nps/base/result.hpp"

namespace nps::proto {

enum class TaskPriority { low, normal, high };
enum class CompensationPolicy { best_effort, strict };
enum class Backoff { exponential, fixed, linear };

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

    // Derived at decode time.
    std::string canonical_dag_json;    // JCS form of `dag`
    std::string dag_hash;              // sha256 hex of canonical_dag_json
    std::string dedup_key;             // dedup.hpp
    std::string canonical_frame_hash;  // sha256 hex of the JCS form of the whole frame
};

Result<TaskFrame> decode_task_frame(std::string_view json_text);

// Identifier syntax we accept for task ids and node ids: 1..128 characters of
// [A-Za-z0-9._:-]. The spec asks for UUID v4 task ids, but the public vectors
// use ids like "task-1", so any such id is accepted (docs/protocol-choices.md).
bool is_valid_identifier(std::string_view id);

// NID syntax check (NIP §3, loosened for npsd's sub-NIDs): "urn:nps:" then
// 1..248 further characters of [A-Za-z0-9._:@-]. Runner NIDs in claims and
// inbox path segments use the same rule.
bool is_valid_nid(std::string_view nid);

std::string_view to_string(TaskPriority priority);

}  // namespace nps::proto
