// SPDX-License-Identifier: Apache-2.0
#include "nps/proto/states.hpp"

namespace nps::proto {

namespace {

struct StateRow {
    std::string_view text;
    bool terminal;
};

#define NPS_STATE_ROW(name, text, terminal) {text, terminal},
constexpr StateRow kTaskStateRows[] = {NPS_TASK_STATES(NPS_STATE_ROW)};
constexpr StateRow kNodeStateRows[] = {NPS_NODE_STATES(NPS_STATE_ROW)};
#undef NPS_STATE_ROW

template <class State, std::size_t N>
std::optional<State> parse(const StateRow (&rows)[N], std::string_view text)
{
    for (std::size_t i = 0; i < N; ++i)
        if (rows[i].text == text)
            return static_cast<State>(i);
    return std::nullopt;
}

}  // namespace

std::string_view to_string(TaskState state) { return kTaskStateRows[static_cast<std::size_t>(state)].text; }
std::string_view to_string(NodeState state) { return kNodeStateRows[static_cast<std::size_t>(state)].text; }

std::optional<TaskState> parse_task_state(std::string_view text) { return parse<TaskState>(kTaskStateRows, text); }
std::optional<NodeState> parse_node_state(std::string_view text) { return parse<NodeState>(kNodeStateRows, text); }

bool is_terminal(TaskState state) { return kTaskStateRows[static_cast<std::size_t>(state)].terminal; }
bool is_terminal(NodeState state) { return kNodeStateRows[static_cast<std::size_t>(state)].terminal; }

}  // namespace nps::proto
