// SPDX-License-Identifier: Apache-2.0
// What several client verbs (submit, invoke, task wait) share: the inbox to
// deposit into when none is named, and waiting for a task's end.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "nps/cli/args.hpp"
#include "nps/cli/client.hpp"

namespace nps::cli {

// The inbox for a deposit without --to: the daemon's, when it claims from
// exactly one (GET /healthz "inboxes"), else the first runner.inboxes entry
// of the configuration (--config). The error says what to pass.
Result<std::string> default_inbox(const ParsedArgs& args, const ApiClient& client);

// GET /v1/tasks/ID. A task whose results expired (404
// NOP-TASK-RESULT-EXPIRED) comes back as the summary that answer carries:
// state, error code and times, with "results_expired": true.
Result<nlohmann::json> fetch_task(const ApiClient& client, const std::string& task_id);

bool is_terminal_state(const std::string& state);

// GET /v1/tasks/ID/nodes/NODE/log with the verb's --stream and --bytes.
std::string node_log_path(const ParsedArgs& args, const std::string& task_id, const std::string& node);
// Fetches that log once and prints its text (--json: the API's JSON).
int print_node_log(const ApiClient& client, const ParsedArgs& args, const std::string& path);

// DELETE path_prefix + url_encode(id) for each id, printing "<id> removed"
// or the error (with `json`: [{id, removed, error?, message?}]): exit 0
// when all went, 1 otherwise (task rm, announce rm).
int remove_each(const ApiClient& client, const std::vector<std::string>& ids, const std::string& path_prefix,
                bool json);

// Polls the task (5 ms doubling to 200 ms) until it is terminal: the task,
// or nullopt when `timeout` passed first.
Result<std::optional<nlohmann::json>> wait_for_task(const ApiClient& client, const std::string& task_id,
                                                    std::chrono::duration<double> timeout);

}  // namespace nps::cli
