// SPDX-License-Identifier: Apache-2.0
#include "progress_rules.hpp"

#include <type_traits>
#include <variant>

#include <nlohmann/json.hpp>

namespace nps::store::detail {

Result<std::string> checked_event_detail(const std::string& task_id, const std::string& name,
                                         const std::string& detail_json)
{
    if (name.empty())
        return internal_error("Failed to append an event to task '" + task_id + "': empty event name");
    std::string detail = detail_json.empty() ? std::string("{}") : detail_json;
    if (!nlohmann::json::accept(detail))
        return internal_error("Failed to append event '" + name + "' to task '" + task_id +
                              "': detail is not valid JSON");
    return detail;
}

std::string describe_progress_record(const ProgressRecord& record)
{
    return std::visit(
        [](const auto& r) -> std::string {
            using R = std::decay_t<decltype(r)>;
            if constexpr (std::is_same_v<R, ProgressEvent>)
                return "append event '" + r.name + "' to task '" + r.task_id + "'";
            else if constexpr (std::is_same_v<R, NodeResult>)
                return "record the result of node '" + r.node_id + "' of task '" + r.task_id + "'";
            else
                return "complete task '" + r.task_id + "' for '" + r.runner_nid + "'";
        },
        record);
}

}  // namespace nps::store::detail
