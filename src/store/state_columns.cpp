// SPDX-License-Identifier: Apache-2.0
#include "state_columns.hpp"

#include <stdexcept>

namespace nps::store::detail {

proto::TaskState task_state_column(std::string_view text, std::string_view task_id)
{
    if (const auto state = proto::parse_task_state(text))
        return *state;
    const std::string task = task_id.empty() ? std::string("a task") : "task '" + std::string(task_id) + "'";
    throw std::runtime_error(task + " has the state '" + std::string(text) +
                             "', which is not a task state (a damaged store?)");
}

proto::NodeState node_state_column(std::string_view text, std::string_view task_id, std::string_view node_id)
{
    if (const auto state = proto::parse_node_state(text))
        return *state;
    throw std::runtime_error("node '" + std::string(node_id) + "' of task '" + std::string(task_id) +
                             "' has the state '" + std::string(text) + "', which is not a node state (a damaged store?)");
}

std::optional<std::string> state_text(std::optional<proto::TaskState> state)
{
    if (!state)
        return std::nullopt;
    return std::string(proto::to_string(*state));
}

}  // namespace nps::store::detail
