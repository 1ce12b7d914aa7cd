// SPDX-License-Identifier: Apache-2.0
// What the deliverer sends and how it judges the answers (docs/reporting.md).
// Pure functions, no I/O.
//
// Node report: PATCH {task_store_url}/{task_id}/nodes/{node_id} with
//   {"task_id","node_id","dedup_key","state","attempts",
//    "error":{"code","message"}|null,"result":<json>|null,
//    "killed_reason":…|null,"runner_nid":…|null,"reported_at":"<RFC 3339>"}
// (reported_at = when the runner recorded the state, so every replay of one
// report is byte-identical), headers Content-Type: application/json and
// Idempotency-Key: <dedup_key>:<node_id>:<state>.
//
// Task callback: POST callback_url with
//   {"task_id","state":<lowercase>,"error_code":…|null,"aggregate":<json>|null,
//    "nodes":{"<id>":{"state":<lowercase>,"attempts":n,"error_code":…|null}}}
// with every node recorded under the task's dedup_key, saga states included
// (NPS-5 §2.7.6), and Idempotency-Key: <dedup_key>:callback.
//
// Completion message (proto/completion_message.hpp): POST
// {npsd_url}/v1/inbox/{reply_to}, or a notice in our own inbox, with
//   {"task_id","node_state":<terminal state>,"state":<lowercase>,
//    "error_code","error_message","killed_reason","result":<the aggregate>,
//    "nodes":{…as in the callback},"created_at","started_at","finished_at"}
// members without a value left out (as the reference runner does), and
// Idempotency-Key: <dedup_key>:reply. started_at is the first claim's time
// (from the event log); killed_reason is that of the failed node whose code
// the task carries.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nps/base/result.hpp"
#include "nps/store/types.hpp"

namespace nps::report {

// The PATCH URL: the base (no trailing '/') + "/" + task_id + "/nodes/" +
// node_id, both percent-encoded.
std::string node_report_url(const std::string& task_store_url, const std::string& task_id,
                            const std::string& node_id);
std::string node_report_idempotency_key(const store::ReportRow& row);
// The body; an error when the recorded result is not JSON (the row cannot be
// reported faithfully). Strings longer than the receiving API accepts (error
// message 4096 bytes) are cut at a UTF-8 boundary.
Result<std::string> node_report_body(const store::ReportRow& row);

// The callback body from the task record and its node records.
std::string callback_body(const store::TaskRecord& task, const std::vector<store::NodeResult>& nodes);
std::string callback_idempotency_key(const store::TaskRecord& task);

std::string completion_message_body(const store::TaskRecord& task, const std::vector<store::NodeResult>& nodes,
                                    const std::vector<store::TaskEvent>& events);
std::string completion_idempotency_key(const store::TaskRecord& task);
// {npsd_url}/v1/inbox/{nid}, the NID percent-encoded.
std::string npsd_inbox_url(const std::string& npsd_url, const std::string& nid);

enum class Verdict {
    delivered,  // 2xx
    retry,      // worth another attempt later
    refused,    // the receiver will not take it: give up now
};

// A task store's answer: 2xx delivered; 408 425 429 and 5xx retry; any other
// 4xx refused; anything else (1xx, 3xx: not followed) retry.
Verdict judge_task_store_status(long status);
// A callback receiver's answer: 2xx delivered; 408 425 429 and 5xx retry;
// other 4xx and 3xx (a redirect not followed) refused; anything else retry.
Verdict judge_callback_status(long status);

// "HTTP 404 NOP-TASK-NOT-FOUND: Task 'x' does not exist" from an answer in
// the API's error shape, else "HTTP 404: <start of the body>".
std::string describe_answer(long status, std::string_view body);

// The delay before attempt failures + 1: initial · 2^(failures − 1), capped at
// max_ms (failures ≥ 1).
std::int64_t backoff_ms(std::uint32_t failures, std::int64_t initial_ms, std::int64_t max_ms);
// A Retry-After value (delta-seconds or an HTTP date) as a delay from now_ms,
// capped at limits::kMaxReportRetryAfterSeconds; nullopt when malformed.
std::optional<std::int64_t> parse_retry_after_ms(std::string_view value, std::int64_t now_ms);

}  // namespace nps::report
