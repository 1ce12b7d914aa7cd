// SPDX-License-Identifier: Apache-2.0
// Names and predicates of the store's plain records.
#include <algorithm>
#include <array>
#include <string_view>

#include "nps/base/limits.hpp"
#include "nps/store/store.hpp"
#include "nps/store/types.hpp"

namespace nps::store {

namespace {

constexpr std::array<std::string_view, 9> kNodeStates = {
    "PENDING", "RUNNING", "COMPLETED", "FAILED", "CANCELLED", "SKIPPED",
    "COMPENSATING", "COMPENSATED", "COMPENSATION_FAILED",
};
constexpr std::array<std::string_view, 6> kTerminalNodeStates = {
    "COMPLETED", "FAILED", "CANCELLED", "SKIPPED", "COMPENSATED", "COMPENSATION_FAILED",
};

template <std::size_t N>
bool contains(const std::array<std::string_view, N>& set, const std::string& value)
{
    return std::find(set.begin(), set.end(), value) != set.end();
}

}  // namespace

bool is_terminal_task_state(const std::string& state)
{
    return state == kTaskCompleted || state == kTaskFailed || state == kTaskCancelled;
}

bool is_valid_node_state(const std::string& state)
{
    return contains(kNodeStates, state);
}

bool is_terminal_node_state(const std::string& state)
{
    return contains(kTerminalNodeStates, state);
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
