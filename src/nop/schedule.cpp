// SPDX-License-Identifier: Apache-2.0
// The forward run: choosing the next node, conditions and mappings,
// dispatching attempts, taking their outcomes, retries and deadlines.
#include <algorithm>

#include "nps/nop/backoff.hpp"
#include "nps/nop/input_mapping.hpp"
#include "nps/proto/error_codes.hpp"
#include "nps/proto/runtime_failure.hpp"
#include "task_run_state.hpp"

namespace nps::nop {

namespace {

bool settled_for_dependants(NodePhase phase)
{
    return phase == NodePhase::completed || phase == NodePhase::skipped;
}

// Errors from the engine's own helpers carry no protocol code; the node's
// failure still needs one.
Error with_code(Error error, const char* fallback)
{
    if (error.code.empty())
        error.code = fallback;
    return error;
}

}  // namespace

std::size_t TaskRun::State::active_count() const
{
    return static_cast<std::size_t>(std::count_if(nodes.begin(), nodes.end(), [](const NodeRun& n) {
        return n.phase == NodePhase::running || n.phase == NodePhase::retry_wait;
    }));
}

// Kahn's algorithm with the smallest ready id first: of the pending nodes
// whose dependencies are all settled, the one with the smallest id.
std::optional<std::size_t> TaskRun::State::next_ready() const
{
    for (std::size_t t : by_id) {
        const NodeRun& n = nodes[t];
        if (n.phase != NodePhase::pending)
            continue;
        if (std::all_of(n.deps.begin(), n.deps.end(),
                        [&](std::size_t d) { return settled_for_dependants(nodes[d].phase); }))
            return t;
    }
    return std::nullopt;
}

// Conformance mode takes one node at a time (conditions and skips included),
// which reproduces the portable order exactly; production mode keeps up to
// max_parallel nodes active. A node waiting to retry keeps its slot.
void TaskRun::State::pump()
{
    start_ready();
    anticipate();
}

// Production mode only: conformance mode runs one node at a time in the
// portable order, with nothing prepared ahead. A node with a condition is
// hinted too (it usually runs); one of a compensation is not. Two levels
// are hinted: the nodes whose dependencies all run or are done, then the
// nodes behind those — a worker's preparation takes longer than a short
// node runs, so the one after next must start before the next one runs.
void TaskRun::State::anticipate()
{
    if (phase != Phase::running || options.mode == Mode::conformance)
        return;
    const auto under_way = [&](std::size_t d) {
        return nodes[d].phase == NodePhase::running || settled_for_dependants(nodes[d].phase);
    };
    const auto next = [&](const NodeRun& n) { return std::all_of(n.deps.begin(), n.deps.end(), under_way); };
    const auto hint = [&](const auto& soon) {
        for (std::size_t t : by_id) {
            NodeRun& n = nodes[t];
            if (n.phase == NodePhase::pending && !n.anticipated && !n.node->agent.empty() && soon(n)) {
                n.anticipated = true;
                host.anticipate(n.node->agent);
            }
        }
    };
    hint(next);
    hint([&](const NodeRun& n) {
        return std::all_of(n.deps.begin(), n.deps.end(), [&](std::size_t d) {
            return under_way(d) || (nodes[d].phase == NodePhase::pending && next(nodes[d]));
        });
    });
}

void TaskRun::State::start_ready()
{
    while (phase == Phase::running) {
        if (std::all_of(nodes.begin(), nodes.end(), [](const NodeRun& n) { return settled_for_dependants(n.phase); })) {
            complete();
            return;
        }
        const std::size_t limit =
            options.mode == Mode::conformance ? 1 : std::max<std::size_t>(options.max_parallel, 1);
        const std::size_t active = active_count();
        if (active >= limit)
            return;
        const auto next = next_ready();
        if (!next) {
            if (active > 0)
                return;
            // Only prior states (a dependency COMPENSATED or
            // COMPENSATION_FAILED under an earlier claim) can block a node.
            for (std::size_t t : by_id) {
                if (nodes[t].phase != NodePhase::pending)
                    continue;
                for (std::size_t d : nodes[t].deps) {
                    if (!settled_for_dependants(nodes[d].phase)) {
                        end_task(proto::TaskState::failed, proto::code::kNopSyncDependencyFailed,
                                 "node '" + id(t) + "' cannot run: its dependency '" + id(d) +
                                     "' did not complete under an earlier claim");
                        return;
                    }
                }
            }
            end_task(proto::TaskState::failed, std::nullopt, "internal error: no node can run");
            return;
        }
        start_node(*next);
    }
}

// The results a node's condition and mapping may read: its completed
// transitive ancestors (all settled before it runs, so the snapshot is the
// same in every mode and every interleaving).
Snapshot TaskRun::State::snapshot_for(std::size_t i) const
{
    Snapshot snapshot;
    for (std::size_t a : nodes[i].ancestors)
        if (nodes[a].phase == NodePhase::completed)
            snapshot.emplace(id(a), nodes[a].result);
    return snapshot;
}

void TaskRun::State::start_node(std::size_t i)
{
    NodeRun& n = nodes[i];
    const Snapshot snapshot = snapshot_for(i);
    if (n.condition_error) {
        fail_node(i, *n.condition_error);
        return;
    }
    if (n.condition) {
        const auto run = n.condition->evaluate(snapshot);
        if (!run) {
            fail_node(i, with_code(run.error(), proto::code::kNopConditionEvalError));
            return;
        }
        if (!*run) {
            n.phase = NodePhase::skipped;
            report(i, proto::NodeState::skipped);
            event(id(i) + ":skipped");
            return;
        }
    }
    Result<Json> params = Json::object();
    if (!n.node->input_mapping_json.empty()) {
        params = apply_mapping(n.node->input_mapping_json, mapping_root(snapshot), "input_mapping");
    } else {
        std::vector<std::string> dependencies;
        for (std::size_t d : n.deps)
            dependencies.push_back(id(d));
        params = default_params(dependencies, snapshot);
    }
    if (!params) {
        fail_node(i, with_code(params.error(), proto::code::kNopInputMappingError));
        return;
    }
    auto text = canonical_json(*params);
    if (!text) {
        fail_node(i, with_code(text.error(), proto::code::kNopInputMappingError));
        return;
    }
    n.params_json = std::move(text).value();
    dispatch(i);
}

void TaskRun::State::dispatch(std::size_t i)
{
    NodeRun& n = nodes[i];
    ++n.attempts;
    n.phase = NodePhase::running;
    n.in_flight = true;
    n.retry_due = false;
    report(i, proto::NodeState::running);
    const Attempt attempt{
        .node_id = id(i),
        .agent = n.node->agent,
        .action = n.node->action,
        .number = n.attempts,
        .params_json = n.params_json,
        .subtask_id = n.subtask_id,
        .idempotency_key = task.task_id + ":" + id(i),
        .compensation = false,
        .timeout = n.timeout,
        .deadline_at_ms = clock->now_ms() + n.timeout.count(),
    };
    arm_deadline(i);
    host.dispatch(attempt);
}

void TaskRun::State::arm_deadline(std::size_t i)
{
    NodeRun& n = nodes[i];
    const std::uint64_t gen = ++n.deadline_gen;
    n.deadline_timer = host.start_timer(n.timeout, [alive = alive, self = this, i, gen] {
        if (*alive)
            self->deadline_expired(i, gen);
    });
}

// Stops the node's in-flight attempt: its attempt_finished() is still owed
// and will be dropped when it comes.
void TaskRun::State::stop_attempt(std::size_t i)
{
    NodeRun& n = nodes[i];
    if (!n.in_flight)
        return;
    n.in_flight = false;
    ++n.stale;
    cancel_timer(n.deadline_timer);
    host.stop(id(i));
}

void TaskRun::State::deadline_expired(std::size_t i, std::uint64_t gen)
{
    NodeRun& n = nodes[i];
    if (gen != n.deadline_gen || !n.in_flight || ended())
        return;
    n.deadline_timer = 0;
    const bool compensation = n.phase == NodePhase::compensating;
    const std::uint32_t number = compensation ? n.comp_attempts : n.attempts;
    stop_attempt(i);
    const AttemptOutcome timeout{
        .status = AttemptStatus::failure,
        .error_code = proto::describe(proto::RuntimeFailure::deadline).code,
        .error_message = std::string(compensation ? "compensation attempt " : "attempt ") + std::to_string(number) +
                         " of node '" + id(i) + "' exceeded its deadline of " + std::to_string(n.timeout.count()) +
                         " ms",
        .retryable = proto::describe(proto::RuntimeFailure::deadline).retryable,
    };
    if (compensation)
        take_compensation_outcome(i, timeout);
    else
        take_outcome(i, timeout, "timeout");
}

void TaskRun::State::attempt_finished(const std::string& node_id, const AttemptOutcome& outcome)
{
    if (phase == Phase::idle || ended())
        return;
    const auto i = find(node_id);
    if (!i)
        return;
    NodeRun& n = nodes[*i];
    if (n.stale > 0) {
        // Attempts of one node never overlap (the next waits for this
        // report), so the first report owed is the stopped attempt's.
        --n.stale;
        maybe_redispatch(*i);
        return;
    }
    if (!n.in_flight)
        return;
    n.in_flight = false;
    cancel_timer(n.deadline_timer);
    if (n.phase == NodePhase::compensating)
        take_compensation_outcome(*i, outcome);
    else
        take_outcome(*i, outcome, outcome.status == AttemptStatus::success ? "success" : "failure");
}

bool TaskRun::State::should_retry(const NodeRun& n, std::uint32_t attempts_done, const AttemptOutcome& outcome) const
{
    if (!outcome.retryable || attempts_done >= 1u + n.max_retries)
        return false;
    if (!n.policy.retry_on)
        return true;
    const auto& codes = *n.policy.retry_on;
    return std::find(codes.begin(), codes.end(), outcome.error_code) != codes.end();
}

// The canonical "<node>:attempt:<n>" event is reported here, with the
// attempt's outcome (docs/dag-engine.md): an attempt cut short by cancel()
// has none and is not in the transcript.
void TaskRun::State::take_outcome(std::size_t i, const AttemptOutcome& outcome, const char* how)
{
    NodeRun& n = nodes[i];
    event(id(i) + ":attempt:" + std::to_string(n.attempts),
          Json{{"attempt", n.attempts}, {"outcome", how}, {"subtask_id", n.subtask_id}});
    if (!outcome.killed_reason.empty())
        n.killed_reason = outcome.killed_reason;
    else
        n.killed_reason.reset();

    if (outcome.status == AttemptStatus::success) {
        auto result = parse_json(outcome.result_json);
        if (!result) {
            fail_node(
                i,
                protocol_error(proto::code::kNopStreamFrameInvalid, "the result of node '" + id(i) + "' is not JSON"),
                n.killed_reason);
            return;
        }
        n.result = std::move(result).value();
        n.result_json = outcome.result_json;
        n.error_code.reset();
        n.error_message.reset();
        n.completed_seq = ++completions;
        n.phase = NodePhase::completed;
        report(i, proto::NodeState::completed);
        event(id(i) + ":completed", Json{{"attempts", n.attempts}});
        pump();
        return;
    }

    if (should_retry(n, n.attempts, outcome)) {
        n.error_code = outcome.error_code;
        n.error_message = outcome.error_message;
        const auto delay = backoff_delay(n.policy, n.attempts);
        event(id(i) + ":retrying", Json{{"attempt", n.attempts},
                                        {"delay_ms", delay.count()},
                                        {"error_code", outcome.error_code},
                                        {"error_message", outcome.error_message}});
        n.phase = NodePhase::retry_wait;
        wait_to_retry(i, n.attempts);
        return;
    }
    fail_node(i,
              protocol_error(outcome.error_code.empty() ? proto::code::kNopDelegateRejected : outcome.error_code,
                             outcome.error_message),
              n.killed_reason);
}

// Backoff through a host timer, in both modes (a delay of 0 still goes
// through the host's loop, never inside a host call).
void TaskRun::State::wait_to_retry(std::size_t i, std::uint32_t attempts_done)
{
    NodeRun& n = nodes[i];
    const std::uint64_t gen = ++n.retry_gen;
    n.retry_due = false;
    n.retry_timer = host.start_timer(backoff_delay(n.policy, attempts_done), [alive = alive, self = this, i, gen] {
        if (*alive)
            self->retry_expired(i, gen);
    });
}

void TaskRun::State::retry_expired(std::size_t i, std::uint64_t gen)
{
    NodeRun& n = nodes[i];
    if (gen != n.retry_gen || ended())
        return;
    n.retry_timer = 0;
    n.retry_due = true;
    maybe_redispatch(i);
}

// The next attempt goes out once the backoff elapsed and a stopped
// (timed-out) attempt has reported, so one node never has two workers.
void TaskRun::State::maybe_redispatch(std::size_t i)
{
    NodeRun& n = nodes[i];
    if (!n.retry_due || n.stale > 0 || n.in_flight)
        return;
    if (n.phase == NodePhase::retry_wait && phase == Phase::running)
        dispatch(i);
    else if (n.phase == NodePhase::compensating && phase == Phase::saga)
        dispatch_compensation(i);
}

}  // namespace nps::nop
