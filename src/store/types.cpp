// SPDX-License-Identifier: Apache-2.0
// Names and predicates of the store's plain records.
#include <string_view>

#include "nps/base/limits.hpp"
#include "nps/proto/states.hpp"
#include "nps/store/store.hpp"
#include "nps/store/types.hpp"

namespace nps::store {

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
