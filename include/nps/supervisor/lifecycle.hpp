// SPDX-License-Identifier: Apache-2.0
// Lifecycle limits of a worker (NPS-5 §8.3, CR-0007 §6) as a pure function,
// so the supervisor, the conformance vectors (nop.lifecycle.*) and the tests
// share one decision.
//
// evaluate_lifecycle() answers "what is this node now?" from the time since
// the worker started, the time since its last output byte, its limits and
// what the worker itself reported. The order is the SDK's and the vectors':
//   1. elapsed >= max_runtime       → FAILED, NOP-RUNTIME-MAX-RUNTIME
//   2. idle >= idle_timeout         → FAILED, NOP-RUNTIME-IDLE-TIMEOUT
//   3. the worker reported done     → COMPLETED
//   4. the worker reported failure  → FAILED (the worker's code; the
//                                      caller supplies it)
//   5. nothing reported             → still running
// so a breach beats a report that came too late, and max runtime beats idle.
// Limits compare with >= (the reference runner and the SDKs do; the vectors
// test only strict breaches). An absent limit never breaches.
#pragma once

#include <chrono>
#include <optional>
#include <string_view>

namespace nps::supervisor {

// Why a worker ended, as every terminal record carries it (DESIGN §3.3);
// `none` is JSON null.
enum class KilledReason {
    none,
    idle_timeout,
    max_runtime,
    oom,
    signal,
    exit_status,
    spawn_failed,
    shutdown,
};

// "idle_timeout", ...; "" for none.
std::string_view to_string(KilledReason reason);

struct LifecycleLimits {
    std::optional<std::chrono::milliseconds> idle_timeout;
    std::optional<std::chrono::milliseconds> max_runtime;
};

// Precedence (CR-0007 §6): the SpawnSpec's value, else the runner's policy.
// A SpawnSpec value of zero counts as not set (a spec cannot switch the
// operator's limit off); a policy of zero means "no limit".
LifecycleLimits resolve_limits(std::optional<std::chrono::milliseconds> spec_idle,
                               std::optional<std::chrono::milliseconds> spec_max,
                               std::chrono::milliseconds policy_idle, std::chrono::milliseconds policy_max);

enum class WorkerReport {
    running,  // no terminal report yet (the vectors' worker_terminal: null)
    done,     // a final result, or a plain command's exit 0
    failed,   // a final error, or a plain command's failure
};

struct LifecycleInput {
    std::chrono::nanoseconds elapsed{0};  // since the worker started
    std::chrono::nanoseconds idle{0};     // since its last byte on stdout/stderr (or its start)
    LifecycleLimits limits;
    WorkerReport report = WorkerReport::running;
};

enum class NodeVerdict { running, completed, failed };

struct LifecycleDecision {
    NodeVerdict verdict = NodeVerdict::running;
    // The code of a breach; empty otherwise (a failure report brings its own).
    std::string_view error_code;
    KilledReason killed_reason = KilledReason::none;  // idle_timeout / max_runtime on a breach

    bool breached() const { return killed_reason != KilledReason::none; }
};

LifecycleDecision evaluate_lifecycle(const LifecycleInput& input);

}  // namespace nps::supervisor
