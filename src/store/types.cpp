// SPDX-License-Identifier: Apache-2.0
// Names and predicates of the store's plain records.
#include <string_view>

#include "nps/base/limits.hpp"
#include "nps/proto/states.hpp"
#include "nps/store/store.hpp"
#include "nps/store/types.hpp"

namespace nps::store {

// The store's spellings of the task states (types.hpp) are the one table's.
static_assert(std::string_view(kTaskPending) == proto::task_state_text::pending);
static_assert(std::string_view(kTaskRunning) == proto::task_state_text::running);
static_assert(std::string_view(kTaskCompleted) == proto::task_state_text::completed);
static_assert(std::string_view(kTaskFailed) == proto::task_state_text::failed);
static_assert(std::string_view(kTaskCancelled) == proto::task_state_text::cancelled);

bool is_terminal_task_state(const std::string& state)
{
    const auto parsed = proto::parse_task_state(state);
    return parsed && proto::is_terminal(*parsed);
}

bool is_valid_node_state(const std::string& state)
{
    return proto::parse_node_state(state).has_value();
}

bool is_terminal_node_state(const std::string& state)
{
    const auto parsed = proto::parse_node_state(state);
    return parsed && proto::is_terminal(*parsed);
}

const char* to_string(ClaimOutcome outcome)
{
    switch (outcome) {
    case ClaimOutcome::granted:
        return "granted";
    case ClaimOutcome::reclaimed:
        return "reclaimed";
    }
    return "granted";
}

const char* to_string(RecordOutcome outcome)
{
    switch (outcome) {
    case RecordOutcome::recorded:
        return "recorded";
    case RecordOutcome::duplicate:
        return "duplicate";
    }
    return "recorded";
}

const char* to_string(ReportKind kind)
{
    switch (kind) {
    case ReportKind::node:
        return "node";
    case ReportKind::callback:
        return "callback";
    case ReportKind::reply:
        return "reply";
    }
    return "node";
}

std::uint32_t clamp_lease_seconds(std::uint32_t requested)
{
    return std::clamp(requested, limits::kMinLeaseSeconds, limits::kMaxLeaseSeconds);
}

}  // namespace nps::store
