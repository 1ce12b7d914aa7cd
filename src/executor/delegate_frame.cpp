// SPDX-License-Identifier: Apache-2.0
#include "delegate_frame.hpp"

#include "nps/base/time_format.hpp"

namespace nps::executor {

namespace {

// The engine hands over canonical JSON objects; anything else becomes {}.
nlohmann::json object_or_empty(const std::string& text)
{
    auto value = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    return value.is_object() ? value : nlohmann::json::object();
}

}  // namespace

nlohmann::json make_delegate_frame(const proto::TaskFrame& task, const nop::Attempt& attempt,
                                std::optional<std::int64_t> cgn_budget)
{
    using Json = nlohmann::json;
    Json frame = {
        {"frame", "0x41"},
        {"parent_task_id", task.task_id},
        {"subtask_id", attempt.subtask_id},
        {"node_id", attempt.node_id},
        {"target_agent_nid", attempt.agent},
        {"action", attempt.action},
        {"params", object_or_empty(attempt.params_json)},
        {"delegated_scope",
         {{"nodes", {attempt.node_id}}, {"actions", {attempt.action}}, {"max_token_budget", cgn_budget.value_or(0)}}},
        {"deadline_at", format_rfc3339_ms(attempt.deadline_at_ms)},
        {"idempotency_key", attempt.idempotency_key},
        {"priority", std::string(proto::to_string(task.priority))},
        {"delegate_depth", task.delegate_depth + 1},  // the SDKs' hop count: the worker is one further
    };
    if (!task.context_json.empty())
        frame["context"] = object_or_empty(task.context_json);
    return frame;
}

}  // namespace nps::executor
