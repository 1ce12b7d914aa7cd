// SPDX-License-Identifier: Apache-2.0
// Internal: the state behind TaskRun, shared by task_run.cpp (lifecycle and
// reporting), schedule.cpp (dispatch, outcomes, retries, deadlines) and
// saga.cpp (failure handling and compensation).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nps/nop/condition.hpp"
#include "nps/nop/json_value.hpp"
#include "nps/nop/task_run.hpp"
#include "nps/proto/dag.hpp"
#include "nps/proto/error_codes.hpp"
#include "nps/proto/states.hpp"

namespace nps::nop {

// A node's progress. There is no RETRYING state in the store (NPS-5 §5):
// retry_wait is reported as RUNNING.
enum class NodePhase {
    pending,
    running,      // an attempt is in flight
    retry_wait,   // waiting for the backoff (or a stopped attempt's report) before the next attempt
    completed,
    skipped,
    failed,
    cancelled,
    compensating, // its compensation is in flight or waiting to retry
    compensated,
    compensation_failed,
};

struct NodeRun {
    const proto::DagNode* node = nullptr;  // into State::task.dag.nodes
    std::vector<std::size_t> deps;         // topological indexes of direct dependencies
    std::vector<std::size_t> ancestors;    // topological indexes of transitive ancestors, ascending
    bool sink = false;
    std::optional<Condition> condition;
    std::optional<Error> condition_error;  // the condition did not parse
    proto::RetryPolicy policy;             // the node's, else the defaults
    std::uint32_t max_retries = 0;         // policy.max_retries, else the task's
    std::chrono::milliseconds timeout{0};  // node timeout_ms, else the task's
    std::string subtask_id;

    NodePhase phase = NodePhase::pending;
    std::uint32_t attempts = 0;       // forward attempts dispatched
    std::uint32_t comp_attempts = 0;  // compensation attempts dispatched
    std::string params_json;          // forward params, computed once
    std::string comp_params_json;
    Json result;
    std::string result_json;
    std::uint64_t completed_seq = 0;
    bool in_flight = false;  // an attempt (forward or compensation) awaits its outcome
    bool anticipated = false;  // TaskHost::anticipate was told of it
    std::uint32_t stale = 0; // stopped attempts whose attempt_finished() is still owed
    bool retry_due = false;  // the backoff elapsed; dispatch once stale == 0
    TaskHost::TimerId deadline_timer = 0;
    TaskHost::TimerId retry_timer = 0;
    std::uint64_t deadline_gen = 0;
    std::uint64_t retry_gen = 0;
    std::optional<std::string> error_code;
    std::optional<std::string> error_message;
    std::optional<std::string> killed_reason;
};

struct TaskRun::State {
    enum class Phase { idle, preflight, running, saga, ended, abandoned };

    State(const proto::TaskFrame& frame, TaskHost& task_host, RunOptions run_options);

    proto::TaskFrame task;
    TaskHost& host;
    RunOptions options;
    const Clock* clock;
    // Timer callbacks hold a copy; false once the State is gone.
    std::shared_ptr<bool> alive = std::make_shared<bool>(true);

    Phase phase = Phase::idle;
    std::vector<NodeRun> nodes;    // in the portable topological order
    std::vector<std::size_t> by_id;  // topological indexes sorted by node id
    std::optional<Error> invalid_dag;
    TaskHost::TimerId task_timer = 0;
    std::uint64_t completions = 0;
    std::vector<std::size_t> saga;  // compensation candidates, most recent first
    std::size_t saga_pos = 0;
    Error task_error;               // the failure the saga runs for

    // task_run.cpp: lifecycle and reporting.
    void start();
    void begin_running();
    void apply_prior();
    void preflight_finished(std::optional<Error> rejection);
    void cancel(const std::string& reason);
    void abandon();
    void task_timed_out();
    void end_task(proto::TaskState state, std::optional<std::string> code, std::optional<std::string> message,
                  std::optional<std::string> aggregate_json = std::nullopt);
    void complete();
    void cancel_all_timers();
    void cancel_timer(TaskHost::TimerId& id);
    void event(const std::string& name, const Json& detail = Json::object());
    void report(std::size_t i, proto::NodeState state);
    std::optional<std::size_t> find(const std::string& node_id) const;
    const std::string& id(std::size_t i) const { return nodes[i].node->id; }
    bool ended() const { return phase == Phase::ended || phase == Phase::abandoned; }

    // schedule.cpp: the forward run.
    void pump();
    // pump()'s work: starts the nodes that may run now.
    void start_ready();
    // Hints the host (TaskHost::anticipate) at each pending node whose
    // dependencies are all running or settled, then at each whose
    // dependencies are those or running or settled; once per node.
    void anticipate();
    std::size_t active_count() const;
    std::optional<std::size_t> next_ready() const;
    void start_node(std::size_t i);
    Snapshot snapshot_for(std::size_t i) const;
    void dispatch(std::size_t i);
    void arm_deadline(std::size_t i);
    void deadline_expired(std::size_t i, std::uint64_t gen);
    void retry_expired(std::size_t i, std::uint64_t gen);
    void attempt_finished(const std::string& node_id, const AttemptOutcome& outcome);
    void take_outcome(std::size_t i, const AttemptOutcome& outcome, const char* how);
    bool should_retry(const NodeRun& n, std::uint32_t attempts_done, const AttemptOutcome& outcome) const;
    void wait_to_retry(std::size_t i, std::uint32_t attempts_done);
    void maybe_redispatch(std::size_t i);
    void stop_attempt(std::size_t i);

    // saga.cpp: failure and compensation.
    void fail_node(std::size_t i, const Error& error, std::optional<std::string> killed_reason = std::nullopt);
    void fail_task(std::size_t i);
    void saga_next();
    void dispatch_compensation(std::size_t j);
    void take_compensation_outcome(std::size_t j, const AttemptOutcome& outcome);
    void compensation_failed(std::size_t j, const std::string& code, const std::string& message);
};

inline constexpr const char* kTaskCancelled = proto::code::kNopTaskCancelled;
inline constexpr const char* kTaskTimeout = proto::code::kNopTaskTimeout;

}  // namespace nps::nop
