// SPDX-License-Identifier: Apache-2.0
// A node failing for good, and the saga that follows (NPS-5 §3.1.6, §3.5.4).
#include <algorithm>

#include "nps/nop/input_mapping.hpp"
#include "nps/nop/subtask_id.hpp"
#include "nps/proto/error_codes.hpp"
#include "task_run_state.hpp"

namespace nps::nop {

void TaskRun::State::fail_node(std::size_t i, const Error& error, std::optional<std::string> killed_reason)
{
    NodeRun& n = nodes[i];
    n.phase = NodePhase::failed;
    n.error_code = error.code;
    n.error_message = error.message;
    n.killed_reason = std::move(killed_reason);
    report(i, proto::NodeState::failed);
    event(id(i) + ":failed",
          Json{{"attempts", n.attempts}, {"error_code", error.code}, {"error_message", error.message}});
    fail_task(i);
}

// Node i failed for good: the task fails with its error. Running siblings
// are stopped (CANCELLED, no canonical event: they have no outcome), nothing
// new is dispatched, and the saga compensates i's completed transitive
// ancestors, most recent first.
void TaskRun::State::fail_task(std::size_t i)
{
    phase = Phase::saga;
    task_error = protocol_error(nodes[i].error_code.value_or(proto::code::kNopDelegateRejected),
                                nodes[i].error_message.value_or(""));
    for (std::size_t j = 0; j < nodes.size(); ++j) {
        NodeRun& n = nodes[j];
        if (j == i || (n.phase != NodePhase::running && n.phase != NodePhase::retry_wait))
            continue;
        stop_attempt(j);
        cancel_timer(n.retry_timer);
        n.phase = NodePhase::cancelled;
        n.error_code.reset();
        n.error_message = "stopped because node '" + id(i) + "' failed";
        report(j, proto::NodeState::cancelled);
    }

    std::vector<std::size_t> candidates;
    const auto& ancestors = nodes[i].ancestors;
    for (auto it = ancestors.rbegin(); it != ancestors.rend(); ++it)
        if (nodes[*it].phase == NodePhase::completed)
            candidates.push_back(*it);

    if (task.compensation_policy == proto::CompensationPolicy::strict) {
        std::string missing;
        for (std::size_t c : candidates) {
            if (!nodes[c].node->compensate_action)
                missing += (missing.empty() ? "'" : ", '") + id(c) + "'";
        }
        if (!missing.empty()) {
            end_task(proto::TaskState::failed, proto::code::kNopCompensationNotSupported,
                     "strict compensation after node '" + id(i) + "' failed (" + task_error.code +
                         "): completed node(s) " + missing + " have no compensate_action");
            return;
        }
    } else if (task.compensation_policy == proto::CompensationPolicy::none) {
        candidates.clear();
    } else {
        std::erase_if(candidates, [&](std::size_t c) { return !nodes[c].node->compensate_action; });
    }
    saga = std::move(candidates);
    saga_pos = 0;
    saga_next();
}

// Compensations run one at a time, in both modes, so the order is the same.
void TaskRun::State::saga_next()
{
    while (phase == Phase::saga) {
        if (saga_pos == saga.size()) {
            end_task(proto::TaskState::failed, task_error.code, task_error.message);
            return;
        }
        const std::size_t j = saga[saga_pos];
        NodeRun& n = nodes[j];
        n.phase = NodePhase::compensating;
        n.comp_attempts = 0;
        n.killed_reason.reset();
        report(j, proto::NodeState::compensating);
        event(id(j) + ":compensating", Json{{"subtask_id", compensation_subtask_id(task.task_id, id(j))}});
        Result<std::string> params = std::string("{}");
        if (!n.node->compensate_params_mapping_json.empty()) {
            auto mapped = apply_mapping(n.node->compensate_params_mapping_json, n.result, "compensate_params_mapping");
            params = mapped ? canonical_json(*mapped) : Result<std::string>(mapped.error());
        }
        if (!params) {
            const Error& error = params.error();
            compensation_failed(j, error.code.empty() ? proto::code::kNopInputMappingError : error.code, error.message);
            continue;  // best_effort goes on; strict has ended the task
        }
        n.comp_params_json = std::move(params).value();
        dispatch_compensation(j);
        return;
    }
}

void TaskRun::State::dispatch_compensation(std::size_t j)
{
    NodeRun& n = nodes[j];
    ++n.comp_attempts;
    n.in_flight = true;
    n.retry_due = false;
    const Attempt attempt{
        .node_id = id(j),
        .agent = n.node->agent,
        .action = *n.node->compensate_action,
        .number = n.comp_attempts,
        .params_json = n.comp_params_json,
        .subtask_id = compensation_subtask_id(task.task_id, id(j)),
        .idempotency_key = task.task_id + ":" + id(j) + ":compensate",
        .compensation = true,
        .timeout = n.timeout,
        .deadline_at_ms = clock->now_ms() + n.timeout.count(),
    };
    arm_deadline(j);
    host.dispatch(attempt);
}

// Compensations retry under the node's own retry rules (NPS-5 §3.5.4 "MAY be
// retried per that node's retry_policy"), without canonical events of their
// own: the transcript shows compensating, then compensated or
// compensation_failed.
void TaskRun::State::take_compensation_outcome(std::size_t j, const AttemptOutcome& outcome)
{
    NodeRun& n = nodes[j];
    if (!outcome.killed_reason.empty())
        n.killed_reason = outcome.killed_reason;
    if (outcome.status == AttemptStatus::success) {
        n.phase = NodePhase::compensated;
        report(j, proto::NodeState::compensated);
        event(id(j) + ":compensated", Json{{"attempts", n.comp_attempts}});
        ++saga_pos;
        saga_next();
        return;
    }
    if (should_retry(n, n.comp_attempts, outcome)) {
        wait_to_retry(j, n.comp_attempts);
        return;
    }
    compensation_failed(j, outcome.error_code.empty() ? proto::code::kNopDelegateRejected : outcome.error_code,
                        outcome.error_message);
    saga_next();
}

// best_effort: recorded, the saga goes on. strict: the first failure ends
// the task with NOP-COMPENSATION-FAILED; the remaining candidates stay
// COMPLETED.
void TaskRun::State::compensation_failed(std::size_t j, const std::string& code, const std::string& message)
{
    NodeRun& n = nodes[j];
    n.phase = NodePhase::compensation_failed;
    n.error_code = code;
    n.error_message = message;
    report(j, proto::NodeState::compensation_failed);
    event(id(j) + ":compensation_failed",
          Json{{"attempts", n.comp_attempts}, {"error_code", code}, {"error_message", message}});
    if (task.compensation_policy == proto::CompensationPolicy::strict) {
        end_task(proto::TaskState::failed, proto::code::kNopCompensationFailed,
                 "compensation of node '" + id(j) + "' failed (" + code + (message.empty() ? "" : ": " + message) +
                     ") after node failure " + task_error.code);
        return;
    }
    ++saga_pos;
}

}  // namespace nps::nop
