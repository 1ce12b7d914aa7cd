// SPDX-License-Identifier: Apache-2.0
// Completion messages (docs/reporting.md "Completion messages"): when a task
// whose TaskFrame names `reply_to` ends, the runner deposits one of these
// into that NID's inbox — the reference runner's way of reporting, which an
// npsd inbox or ours carries as an ordinary message. The runner builds them
// (report/report_messages.hpp); the inbox route takes them from other
// runners and stores them as notices beside the tasks.
//
// The message is a JSON object with at least
//   "task_id":    the task it reports (identifier syntax, task_frame.hpp)
//   "node_state": "COMPLETED" | "FAILED" | "CANCELLED"
// and no "dag" member (that would make it a TaskFrame). Every other member
// (error_code, result, finished_at, the reference runner's exit_code,
// killed_reason, log_path, …) is carried as it is.
#pragma once

#include <string>
#include <string_view>

#include "nps/base/result.hpp"

namespace nps::proto {

struct CompletionMessage {
    std::string task_id;
    std::string node_state;
};

// True when `json_text` is a JSON object with a "node_state" member and no
// "dag" member: the route then decodes it as a completion message rather than
// a TaskFrame. Never throws; invalid JSON is false.
bool looks_like_completion_message(std::string_view json_text);

// Checks the fields above; a failure is NWP-HTTP-FRAME-BODY-MALFORMED naming
// the field. Duplicate keys, over-deep nesting and invalid UTF-8 are refused
// as in a TaskFrame.
Result<CompletionMessage> decode_completion_message(std::string_view json_text);

}  // namespace nps::proto
