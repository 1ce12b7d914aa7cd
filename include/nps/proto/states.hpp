// SPDX-License-Identifier: Apache-2.0
// Task and node states (NPS-5 §5, with the saga states of §3.5), as enums
// inside the runner and in the spec's spelling only at the wire and in the
// store: the one table each of those spellings comes from.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

// X(enumerator, wire spelling, terminal)
#define NPS_TASK_STATES(X) \
    X(pending, "PENDING", false) \
    X(running, "RUNNING", false) \
    X(completed, "COMPLETED", true) \
    X(failed, "FAILED", true) \
    X(cancelled, "CANCELLED", true)

#define NPS_NODE_STATES(X) \
    X(pending, "PENDING", false) \
    X(running, "RUNNING", false) \
    X(completed, "COMPLETED", true) \
    X(failed, "FAILED", true) \
    X(cancelled, "CANCELLED", true) \
    X(skipped, "SKIPPED", true) \
    X(compensating, "COMPENSATING", false) \
    X(compensated, "COMPENSATED", true) \
    X(compensation_failed, "COMPENSATION_FAILED", true)

namespace nps::proto {

enum class TaskState : std::uint8_t {
#define NPS_STATE_ENUMERATOR(name, text, terminal) name,
    NPS_TASK_STATES(NPS_STATE_ENUMERATOR)
};

enum class NodeState : std::uint8_t {
    NPS_NODE_STATES(NPS_STATE_ENUMERATOR)
#undef NPS_STATE_ENUMERATOR
};

// The spellings as constants (task_state_text::completed is "COMPLETED"),
// for the store's columns.
namespace task_state_text {
#define NPS_STATE_TEXT(name, text, terminal) inline constexpr char name[] = text;
NPS_TASK_STATES(NPS_STATE_TEXT)
#undef NPS_STATE_TEXT
}  // namespace task_state_text

// The spec's spelling ("COMPLETED").
std::string_view to_string(TaskState state);
std::string_view to_string(NodeState state);

// nullopt for anything that is not a state's exact spelling.
std::optional<TaskState> parse_task_state(std::string_view text);
std::optional<NodeState> parse_node_state(std::string_view text);

// A state no transition leaves (COMPENSATING is not: it ends COMPENSATED or
// COMPENSATION_FAILED).
bool is_terminal(TaskState state);
bool is_terminal(NodeState state);

}  // namespace nps::proto
