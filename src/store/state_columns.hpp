// SPDX-License-Identifier: Apache-2.0
// Internal to store/: the state columns read back, by both stores. A column
// holds its state's spec spelling (proto/states.hpp); anything else means a
// damaged or foreign store, and reading the row throws std::runtime_error
// naming it, which the stores' guarded() turns into the operation's error.
// A row is never read as some default state.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "nps/proto/states.hpp"

namespace nps::store::detail {

// task_id may be empty (a row read without its id, e.g. a count by state).
proto::TaskState task_state_column(std::string_view text, std::string_view task_id);
proto::NodeState node_state_column(std::string_view text, std::string_view task_id, std::string_view node_id);

// A filter's state as its column's text (nullopt: any state), for binding.
std::optional<std::string> state_text(std::optional<proto::TaskState> state);

}  // namespace nps::store::detail
