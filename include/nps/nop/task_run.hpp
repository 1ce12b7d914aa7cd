// SPDX-License-Identifier: Apache-2.0
// TaskRun: the NPS-5 §3.5 portable orchestrator for one TaskFrame, as a state
// machine with no I/O of its own. Everything it does to the world goes through
// a TaskHost: dispatching an attempt of a node to a worker, stopping one,
// preflight probes, timers, and reporting canonical events, node states and
// the task's end. The daemon's host runs sandboxed workers and writes the
// store; the vector runner's host replays scripted attempts.
//
// Semantics (docs/dag-engine.md has the full account and every choice made
// where the spec is silent):
//  - The DAG was validated when the TaskFrame was decoded; the order is Kahn's
//    with the lexicographically smallest ready node id first.
//  - Mode::conformance runs one attempt at a time, in that order. Mode::
//    production dispatches every ready node at once, up to max_parallel, and
//    reaches the same terminal states, mapped params, aggregate, compensation
//    set and retry counts (events may interleave differently).
//  - A node becomes runnable when all its dependencies are terminal. Its
//    condition (CEL subset) is evaluated once, against the results of its
//    completed predecessors: false → SKIPPED, an error →
//    NOP-CONDITION-EVAL-ERROR (not retried, attempts 0). Then input_mapping
//    (JSONPath subset): an error or a null/missing value →
//    NOP-INPUT-MAPPING-ERROR (not retried, attempts 0). A skipped
//    dependency satisfies the dependant but contributes no result.
//  - Retries: up to max_retries more attempts (the node's retry_policy, else
//    the task's) when the outcome is retryable and retry_on (if given)
//    contains its code; the delay follows the backoff (attempt n: fixed =
//    initial, linear = initial·n, exponential = initial·2^(n−1), capped at
//    max_delay) through a host timer. Every attempt has the same subtask_id
//    and idempotency_key.
//  - Each attempt has a deadline: the node's timeout_ms, else the task's
//    timeout_ms; the engine arms a host timer for it and, on expiry, stops the
//    attempt and treats it as NOP-DELEGATE-TIMEOUT (retryable). The task's
//    timeout_ms from start() bounds the whole run: NOP-TASK-TIMEOUT.
//  - A node that fails for good fails the task; running siblings are stopped
//    and nothing new is dispatched; then the saga compensates the node's
//    transitive completed ancestors in reverse topological order (best_effort
//    or strict, NPS-5 §3.5.4), each compensation being an Attempt with
//    compensation = true.
//  - cancel() wins the terminal race: running attempts are stopped, nothing
//    more is dispatched (no compensation), the task ends CANCELLED with
//    NOP-TASK-CANCELLED.
//  - The aggregate is computed over COMPLETED terminal (sink) nodes only, in
//    topological order; none → no aggregate.
//  - Events and node states: "<node>:attempt:<n>" is reported together with
//    that attempt's outcome (success, failure, its deadline or the task's),
//    just before "<node>:retrying|completed|failed"; an attempt cut short by
//    cancel() or abandon() has no outcome and no event. on_node() reports
//    RUNNING at every dispatch, and CANCELLED for nodes stopped by cancel()
//    or by another node's failure (these have no canonical event).
//
// Threading and re-entrancy: single-threaded. Host methods are called from
// TaskRun's methods; the host must not call back into TaskRun from inside a
// host method (deliver outcomes and timer expiries later, e.g. from its event
// loop), nor destroy the TaskRun there. After on_task_end() or abandon(),
// TaskRun calls no host method except stop() and cancel_timer(), and ignores
// further input. Destroying a TaskRun cancels its timers and nothing else.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nps/base/clock.hpp"
#include "nps/base/result.hpp"
#include "nps/proto/states.hpp"
#include "nps/proto/task_frame.hpp"

namespace nps::nop {

enum class Mode { conformance, production };

// One attempt of one node (or one node's compensation) for the host to run.
struct Attempt {
    std::string node_id;
    std::string agent;            // worker NID (DagNode::agent)
    std::string action;           // the node's action, or its compensate_action
    std::uint32_t number = 1;     // 1-based attempt number of this node (or of its compensation)
    std::string params_json;      // canonical JSON object: mapped params (input_mapping /
                                  // compensate_params_mapping); "{}" when there is none
    std::string subtask_id;       // stable for the node across attempts and reclaims
    std::string idempotency_key;  // stable across attempts; "<task_id>:<node_id>:compensate" for compensations
    bool compensation = false;
    std::chrono::milliseconds timeout{0};  // the attempt's deadline from dispatch (engine enforces it too)
    std::int64_t deadline_at_ms = 0;       // wall-clock form of that deadline, for the DelegateFrame
};

enum class AttemptStatus { success, failure };

struct AttemptOutcome {
    AttemptStatus status = AttemptStatus::failure;
    std::string result_json;      // success: the node result (a JSON value, normally an object)
    std::string error_code;       // failure: NOP/NPS code
    std::string error_message;
    bool retryable = false;
    std::string killed_reason;    // from the supervisor ("" = none); recorded, not interpreted
};

// A node's state changed (spelled for the store and the wire by
// proto::to_string).
struct NodeUpdate {
    std::string node_id;
    proto::NodeState state = proto::NodeState::pending;
    std::uint32_t attempts = 0;   // attempts dispatched so far (compensations not counted)
    std::optional<std::string> error_code;
    std::optional<std::string> error_message;
    std::optional<std::string> result_json;   // COMPLETED (and kept through the saga states)
    std::optional<std::string> killed_reason;
};

struct TaskEnd {
    proto::TaskState state = proto::TaskState::failed;  // completed, failed or cancelled
    std::optional<std::string> error_code;
    std::optional<std::string> error_message;
    std::optional<std::string> aggregate_json;
};

class TaskHost {
public:
    using TimerId = std::uint64_t;  // never 0

    virtual ~TaskHost() = default;

    // Runs the attempt; the host later calls TaskRun::attempt_finished() for
    // it exactly once (also after stop(): then with whatever outcome it got).
    virtual void dispatch(const Attempt& attempt) = 0;
    // A hint: a node of `agent` may be dispatched soon (every dependency of
    // it is running or done, or is itself such a node), so the host may
    // prepare a worker for it ahead. Given once per node, the nearer
    // nodes first; no answer is owed, and no dispatch may follow (a
    // dependency fails, a condition skips the node).
    virtual void anticipate(const std::string& agent) { (void)agent; }
    // Stops the running attempt of node_id (or its compensation), if any.
    virtual void stop(const std::string& node_id) = 0;
    // Probes the distinct (agent, action) pairs, in the given (lexicographic)
    // order; the host later calls TaskRun::preflight_finished().
    virtual void preflight(const std::vector<std::pair<std::string, std::string>>& probes) = 0;
    // Calls `fire` once after `delay`, later, from the host's loop.
    virtual TimerId start_timer(std::chrono::milliseconds delay, std::function<void()> fire) = 0;
    virtual void cancel_timer(TimerId id) = 0;

    // A canonical event (NPS-5 §3.5 item 4): "task:preflight", "task:running",
    // "<node>:attempt:<n>", "<node>:retrying", "<node>:completed", …,
    // "task:completed|failed|cancelled". detail_json is a JSON object text.
    virtual void on_event(const std::string& name, const std::string& detail_json) = 0;
    virtual void on_node(const NodeUpdate& update) = 0;
    // Exactly once, last.
    virtual void on_task_end(const TaskEnd& end) = 0;
};

struct RunOptions {
    Mode mode = Mode::production;
    std::size_t max_parallel = 8;          // production: attempts in flight at once (≥ 1)
    // Nodes already terminal from an earlier claim of this task (NPS-5 §8.1:
    // a reclaiming runner skips them and resumes at the first non-terminal
    // node). Their results feed conditions, mappings and the aggregate.
    std::vector<NodeUpdate> prior{};
    const Clock* clock = nullptr;          // wall clock for deadline_at_ms; null: the system clock
};

class TaskRun {
public:
    TaskRun(const proto::TaskFrame& task, TaskHost& host, RunOptions options);
    ~TaskRun();
    TaskRun(const TaskRun&) = delete;
    TaskRun& operator=(const TaskRun&) = delete;

    // Preflight (if asked), then "task:running" and the first dispatches.
    void start();
    void attempt_finished(const std::string& node_id, const AttemptOutcome& outcome);
    // nullopt: every probe accepted; else the rejection (the task fails with
    // NOP-RESOURCE-INSUFFICIENT, its message naming the agent and reason).
    void preflight_finished(std::optional<Error> rejection);
    // Cancellation wins the terminal race (no-op once ended).
    void cancel(std::string reason = "cancelled");
    // The host lost the right to run this task (lease lost): stop every
    // attempt and timer, report nothing more.
    void abandon();

    bool ended() const;

private:
    struct State;
    std::unique_ptr<State> s_;
};

}  // namespace nps::nop
