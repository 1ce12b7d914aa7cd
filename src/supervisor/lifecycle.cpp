// SPDX-License-Identifier: Apache-2.0
#include "nps/supervisor/lifecycle.hpp"

#include "nps/proto/runtime_failure.hpp"

namespace nps::supervisor {

std::string_view to_string(KilledReason reason)
{
    switch (reason) {
    case KilledReason::none: return "";
    case KilledReason::idle_timeout: return "idle_timeout";
    case KilledReason::max_runtime: return "max_runtime";
    case KilledReason::oom: return "oom";
    case KilledReason::signal: return "signal";
    case KilledReason::exit_status: return "exit_status";
    case KilledReason::spawn_failed: return "spawn_failed";
    case KilledReason::shutdown: return "shutdown";
    }
    return "";
}

LifecycleLimits resolve_limits(std::optional<std::chrono::milliseconds> spec_idle,
                               std::optional<std::chrono::milliseconds> spec_max,
                               std::chrono::milliseconds policy_idle, std::chrono::milliseconds policy_max)
{
    auto pick = [](std::optional<std::chrono::milliseconds> spec,
                   std::chrono::milliseconds policy) -> std::optional<std::chrono::milliseconds> {
        // A SpawnSpec's zero is "not set": a spec cannot switch the
        // operator's limit off.
        if (spec && spec->count() > 0)
            return spec;
        if (policy.count() > 0)
            return policy;
        return std::nullopt;
    };
    return {.idle_timeout = pick(spec_idle, policy_idle), .max_runtime = pick(spec_max, policy_max)};
}

LifecycleDecision evaluate_lifecycle(const LifecycleInput& input)
{
    const auto& limits = input.limits;
    if (limits.max_runtime && input.elapsed >= *limits.max_runtime)
        return {NodeVerdict::failed, proto::describe(proto::RuntimeFailure::max_runtime).code,
                KilledReason::max_runtime};
    if (limits.idle_timeout && input.idle >= *limits.idle_timeout)
        return {NodeVerdict::failed, proto::describe(proto::RuntimeFailure::idle_timeout).code,
                KilledReason::idle_timeout};
    switch (input.report) {
    case WorkerReport::done: return {NodeVerdict::completed, {}, KilledReason::none};
    case WorkerReport::failed: return {NodeVerdict::failed, {}, KilledReason::none};
    case WorkerReport::running: break;
    }
    return {};
}

}  // namespace nps::supervisor
