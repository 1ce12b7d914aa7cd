// SPDX-License-Identifier: Apache-2.0
// Identifier and NID syntax, and enum names (nps/proto/task_frame.hpp).
#include "nps/base/limits.hpp"
#include "nps/proto/task_frame.hpp"

namespace nps::proto {

namespace {

bool is_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

constexpr std::string_view kNidPrefix = "urn:nps:";

}  // namespace

bool is_valid_identifier(std::string_view id)
{
    if (id.empty() || id.size() > limits::kMaxIdChars)
        return false;
    for (char c : id)
        if (!is_alnum(c) && c != '.' && c != '_' && c != ':' && c != '-')
            return false;
    return true;
}

bool is_valid_nid(std::string_view nid)
{
    if (nid.size() <= kNidPrefix.size() || nid.size() > limits::kMaxNidChars || !nid.starts_with(kNidPrefix))
        return false;
    for (char c : nid.substr(kNidPrefix.size()))
        if (!is_alnum(c) && c != '.' && c != '_' && c != ':' && c != '@' && c != '-')
            return false;
    return true;
}

std::string_view to_string(TaskPriority priority)
{
    switch (priority) {
    case TaskPriority::low: return "low";
    case TaskPriority::normal: return "normal";
    case TaskPriority::high: return "high";
    }
    return "normal";
}

std::string_view to_string(CompensationPolicy policy)
{
    switch (policy) {
    case CompensationPolicy::best_effort: return "best_effort";
    case CompensationPolicy::strict: return "strict";
    case CompensationPolicy::none: return "none";
    }
    return "best_effort";
}

std::string_view to_string(Backoff backoff)
{
    switch (backoff) {
    case Backoff::exponential: return "exponential";
    case Backoff::fixed: return "fixed";
    case Backoff::linear: return "linear";
    }
    return "exponential";
}

std::string_view to_string(AggregateMode mode)
{
    switch (mode) {
    case AggregateMode::merge: return "merge";
    case AggregateMode::first: return "first";
    case AggregateMode::all: return "all";
    case AggregateMode::fastest_k: return "fastest_k";
    case AggregateMode::weighted_first_k: return "weighted_first_k";
    case AggregateMode::merge_all: return "merge_all";
    }
    return "merge";
}

}  // namespace nps::proto
