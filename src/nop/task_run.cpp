// SPDX-License-Identifier: Apache-2.0
// TaskRun: construction, the task's lifecycle (start, preflight, cancel,
// abandon, task timeout, end) and reporting. The forward run is in
// schedule.cpp, failure handling and the saga in saga.cpp.
#include "nps/nop/task_run.hpp"

#include <algorithm>
#include <set>
#include <utility>

#include "nps/base/ascii.hpp"
#include "nps/nop/aggregate.hpp"
#include "nps/nop/subtask_id.hpp"
#include "nps/proto/error_codes.hpp"
#include "task_run_state.hpp"

namespace nps::nop {

TaskRun::State::State(const proto::TaskFrame& frame, TaskHost& task_host, RunOptions run_options)
    : task(frame),
      host(task_host),
      options(std::move(run_options)),
      clock(options.clock != nullptr ? options.clock : &SystemClock::instance())
{
    // The decoder validated the DAG; this recomputes its shape. A frame built
    // by hand that does not validate fails at start() with the same error.
    auto shape = proto::validate_dag(task.dag);
    if (!shape) {
        invalid_dag = shape.error();
        return;
    }
    const std::size_t count = shape->topological_order.size();
    nodes.resize(count);
    for (std::size_t t = 0; t < count; ++t) {
        NodeRun& n = nodes[t];
        const auto found = std::find_if(task.dag.nodes.begin(), task.dag.nodes.end(),
                                        [&](const proto::DagNode& d) { return d.id == shape->topological_order[t]; });
        n.node = &*found;
        n.deps = shape->predecessors[t];
        n.sink = shape->successors[t].empty();
        // Predecessors come earlier in the order, so their ancestor sets are complete.
        std::set<std::size_t> ancestors;
        for (std::size_t p : n.deps) {
            ancestors.insert(p);
            ancestors.insert(nodes[p].ancestors.begin(), nodes[p].ancestors.end());
        }
        n.ancestors.assign(ancestors.begin(), ancestors.end());
        if (n.node->condition) {
            auto condition = Condition::parse(*n.node->condition);
            if (condition)
                n.condition = std::move(condition).value();
            else
                n.condition_error = condition.error();
        }
        n.policy = n.node->retry_policy.value_or(proto::RetryPolicy{});
        n.max_retries = n.policy.max_retries.value_or(task.max_retries);
        n.timeout = std::chrono::milliseconds(n.node->timeout_ms.value_or(task.timeout_ms));
        n.subtask_id = node_subtask_id(task.task_id, n.node->id);
        by_id.push_back(t);
    }
    std::sort(by_id.begin(), by_id.end(), [&](std::size_t a, std::size_t b) { return id(a) < id(b); });
}

std::optional<std::size_t> TaskRun::State::find(const std::string& node_id) const
{
    const auto it = std::lower_bound(by_id.begin(), by_id.end(), node_id,
                                     [&](std::size_t t, const std::string& key) { return id(t) < key; });
    if (it == by_id.end() || id(*it) != node_id)
        return std::nullopt;
    return *it;
}

void TaskRun::State::event(const std::string& name, const Json& detail)
{
    host.on_event(name, detail.dump(-1, ' ', false, Json::error_handler_t::replace));
}

void TaskRun::State::report(std::size_t i, proto::NodeState state)
{
    const NodeRun& n = nodes[i];
    NodeUpdate update{.node_id = id(i), .state = state, .attempts = n.attempts};
    const bool has_result = n.phase == NodePhase::completed || n.phase == NodePhase::compensating ||
                            n.phase == NodePhase::compensated || n.phase == NodePhase::compensation_failed;
    if (has_result)
        update.result_json = n.result_json;
    if (n.phase == NodePhase::failed || n.phase == NodePhase::cancelled || n.phase == NodePhase::compensation_failed) {
        update.error_code = n.error_code;
        update.error_message = n.error_message;
    }
    update.killed_reason = n.killed_reason;
    host.on_node(update);
}

// Prior states from an earlier claim (RunOptions::prior). Only settled
// states are taken over; RUNNING, PENDING and CANCELLED nodes run again.
void TaskRun::State::apply_prior()
{
    for (const NodeUpdate& prior : options.prior) {
        const auto i = find(prior.node_id);
        if (!i)
            continue;
        NodeRun& n = nodes[*i];
        using proto::NodeState;
        NodePhase settled = NodePhase::pending;
        switch (prior.state) {
        case NodeState::completed:
        case NodeState::compensating:
            settled = NodePhase::completed;  // an interrupted compensation is run again (compensations are idempotent)
            break;
        case NodeState::compensated: settled = NodePhase::compensated; break;
        case NodeState::compensation_failed: settled = NodePhase::compensation_failed; break;
        case NodeState::skipped: settled = NodePhase::skipped; break;
        case NodeState::failed: settled = NodePhase::failed; break;
        case NodeState::pending:
        case NodeState::running:
        case NodeState::cancelled: continue;
        }
        const bool keeps_result = settled == NodePhase::completed || settled == NodePhase::compensated ||
                                  settled == NodePhase::compensation_failed;
        if (keeps_result) {
            const auto result = prior.result_json ? parse_json(*prior.result_json) : std::nullopt;
            if (!result)
                continue;  // no usable result: run the node again
            n.result = *result;
            n.result_json = *prior.result_json;
        }
        n.phase = settled;
        n.attempts = prior.attempts;
        n.error_code = prior.error_code;
        n.error_message = prior.error_message;
        n.killed_reason = prior.killed_reason;
    }
}

void TaskRun::State::start()
{
    if (phase != Phase::idle)
        return;
    if (invalid_dag) {
        end_task(proto::TaskState::failed, invalid_dag->code, invalid_dag->message);
        return;
    }
    apply_prior();
    task_timer = host.start_timer(std::chrono::milliseconds(task.timeout_ms), [alive = alive, self = this] {
        if (*alive)
            self->task_timed_out();
    });
    if (!task.preflight) {
        begin_running();
        return;
    }
    // NPS-5 §3.5 item 3: distinct (agent, action) pairs, lexicographic, of
    // the nodes that may still run.
    std::set<std::pair<std::string, std::string>> pairs;
    for (const NodeRun& n : nodes)
        if (n.phase == NodePhase::pending)
            pairs.emplace(n.node->agent, n.node->action);
    std::vector<std::pair<std::string, std::string>> probes(pairs.begin(), pairs.end());
    phase = Phase::preflight;
    event("task:preflight", Json{{"probes", probes.size()}});
    host.preflight(probes);
}

void TaskRun::State::preflight_finished(std::optional<Error> rejection)
{
    if (phase != Phase::preflight)
        return;
    if (rejection) {
        end_task(proto::TaskState::failed, proto::code::kNopResourceInsufficient, rejection->message);
        return;
    }
    begin_running();
}

void TaskRun::State::begin_running()
{
    phase = Phase::running;
    event("task:running");
    // A node that failed under an earlier claim: the task fails; its saga
    // (possibly interrupted by the crash) runs again.
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        if (nodes[i].phase == NodePhase::failed) {
            fail_task(i);
            return;
        }
    }
    pump();
}

void TaskRun::State::cancel(const std::string& reason)
{
    if (ended())
        return;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        NodeRun& n = nodes[i];
        const bool forward = n.phase == NodePhase::running || n.phase == NodePhase::retry_wait;
        if (!forward && n.phase != NodePhase::compensating)
            continue;
        stop_attempt(i);
        cancel_timer(n.retry_timer);
        n.error_code = kTaskCancelled;
        n.error_message = reason;
        // A cut-short attempt has no outcome, so no canonical event: the
        // store still learns the node's state.
        n.phase = forward ? NodePhase::cancelled : NodePhase::compensation_failed;
        report(i, forward ? proto::NodeState::cancelled : proto::NodeState::compensation_failed);
    }
    end_task(proto::TaskState::cancelled, kTaskCancelled, reason);
}

void TaskRun::State::abandon()
{
    if (ended())
        return;
    phase = Phase::abandoned;
    for (std::size_t i = 0; i < nodes.size(); ++i)
        if (nodes[i].in_flight)
            host.stop(id(i));
    cancel_all_timers();
}

// The task's own deadline: whatever is in flight ends now, as FAILED (a
// forward attempt, whose outcome this is) or COMPENSATION_FAILED. No saga
// follows: the deadline bounds compensation too.
void TaskRun::State::task_timed_out()
{
    task_timer = 0;
    if (phase == Phase::idle || ended())
        return;
    const std::string message = "the task exceeded its timeout_ms of " + std::to_string(task.timeout_ms) + " ms";
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        NodeRun& n = nodes[i];
        const bool forward = n.phase == NodePhase::running || n.phase == NodePhase::retry_wait;
        if (!forward && n.phase != NodePhase::compensating)
            continue;
        const bool was_in_flight = n.in_flight;
        stop_attempt(i);
        cancel_timer(n.retry_timer);
        n.error_code = kTaskTimeout;
        n.error_message = message;
        if (forward) {
            if (was_in_flight)
                event(id(i) + ":attempt:" + std::to_string(n.attempts),
                      Json{{"attempt", n.attempts}, {"outcome", "task_timeout"}, {"subtask_id", n.subtask_id}});
            n.phase = NodePhase::failed;
            report(i, proto::NodeState::failed);
            event(id(i) + ":failed", Json{{"attempts", n.attempts}, {"error_code", kTaskTimeout}, {"error_message", message}});
        } else {
            n.phase = NodePhase::compensation_failed;
            report(i, proto::NodeState::compensation_failed);
            event(id(i) + ":compensation_failed",
                  Json{{"attempts", n.comp_attempts}, {"error_code", kTaskTimeout}, {"error_message", message}});
        }
    }
    end_task(proto::TaskState::failed, kTaskTimeout, message);
}

void TaskRun::State::complete()
{
    std::vector<SinkResult> sinks;
    for (const NodeRun& n : nodes)
        if (n.sink && n.phase == NodePhase::completed)
            sinks.push_back(SinkResult{.node_id = n.node->id, .result = n.result, .completed_seq = n.completed_seq});
    std::optional<std::string> aggregate_json;
    if (const auto value = aggregate_results(task.aggregate, task.aggregate_k, sinks)) {
        auto text = canonical_json(*value);
        if (!text) {
            end_task(proto::TaskState::failed, std::nullopt, "Failed to build the task aggregate: " + text.error().message);
            return;
        }
        aggregate_json = std::move(text).value();
    }
    end_task(proto::TaskState::completed, std::nullopt, std::nullopt, std::move(aggregate_json));
}

void TaskRun::State::end_task(proto::TaskState state, std::optional<std::string> code,
                              std::optional<std::string> message, std::optional<std::string> aggregate_json)
{
    cancel_all_timers();
    phase = Phase::ended;
    Json detail = Json::object();
    if (code)
        detail["error_code"] = *code;
    if (message)
        detail["error_message"] = *message;
    event("task:" + ascii_lower(proto::to_string(state)), detail);
    host.on_task_end(TaskEnd{.state = state,
                             .error_code = std::move(code),
                             .error_message = std::move(message),
                             .aggregate_json = std::move(aggregate_json)});
}

void TaskRun::State::cancel_timer(TaskHost::TimerId& timer)
{
    if (timer != 0)
        host.cancel_timer(timer);
    timer = 0;
}

void TaskRun::State::cancel_all_timers()
{
    cancel_timer(task_timer);
    for (NodeRun& n : nodes) {
        cancel_timer(n.deadline_timer);
        cancel_timer(n.retry_timer);
    }
}

TaskRun::TaskRun(const proto::TaskFrame& task, TaskHost& host, RunOptions options)
    : s_(std::make_unique<State>(task, host, std::move(options)))
{
}

// A TaskRun dropped before it ended leaves its attempts to the host (it may
// be shutting down) but takes its timers back, and timers that fire anyway
// find it gone.
TaskRun::~TaskRun()
{
    *s_->alive = false;
    if (!s_->ended())
        s_->cancel_all_timers();
}

void TaskRun::start()
{
    s_->start();
}

void TaskRun::attempt_finished(const std::string& node_id, const AttemptOutcome& outcome)
{
    s_->attempt_finished(node_id, outcome);
}

void TaskRun::preflight_finished(std::optional<Error> rejection)
{
    s_->preflight_finished(std::move(rejection));
}

void TaskRun::cancel(std::string reason)
{
    s_->cancel(reason);
}

void TaskRun::abandon()
{
    s_->abandon();
}

bool TaskRun::ended() const
{
    return s_->ended();
}

}  // namespace nps::nop
