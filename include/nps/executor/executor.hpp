// SPDX-License-Identifier: Apache-2.0
// Executor: the part of `serve` that claims tasks from the configured inboxes
// and runs them (docs/executor.md).
//
//  - Claiming: whenever a deposit lands through this API, a task retires, or
//    every claim_interval_ms (deposits by other processes sharing
//    runner.db, leases that expired), it claims inbox heads, round-robin over
//    the inboxes, while fewer than max_tasks tasks run. The worker cap of
//    the supervisor is the back-pressure inside a task.
//  - Each claimed task becomes a TaskExecution (task_execution.hpp).
//  - Start-up recovery: leftovers of a dead predecessor are removed
//    (recovery.hpp), and tasks whose live lease names this runner are taken
//    back at once and resume after their terminal nodes.
//  - Shutdown: claiming stops; running tasks get
//    shutdown_grace_seconds to finish; then their workers are killed and their
//    leases released, so another runner resumes them without waiting for
//    the leases to expire.
// Everything runs on the loop's thread except wake() and cancelled().
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "nps/base/clock.hpp"
#include "nps/base/connection_pool.hpp"
#include "nps/cgroup/delegation.hpp"
#include "nps/event/event_loop.hpp"
#include "nps/event/job_pool.hpp"
#include "nps/executor/executor_metrics.hpp"
#include "nps/executor/executor_options.hpp"
#include "nps/sandbox/netns_pool.hpp"
#include "nps/sandbox/seccomp.hpp"
#include "nps/sandbox/userns.hpp"
#include "nps/spawn/resolver.hpp"
#include "nps/store/store.hpp"
#include "nps/store/store_pool.hpp"
#include "nps/supervisor/supervisor.hpp"

namespace nps::image {
class ImageStore;  // image_store.hpp
}

namespace nps::executor {

struct ExecutionContext;  // execution_context.hpp
class TaskExecution;      // task_execution.hpp
class WarmStart;          // warm_start.hpp

struct ExecutorParts {
    ExecutorOptions options;
    const Clock& clock;
    event::EventLoop& loop;
    store::Store& store;                        // the loop thread's connection
    store::StorePool& stores;                     // for the pool threads (announce lookups)
    const cgroup::CgroupBase* cgroups = nullptr;  // null: no worker cgroups
    sandbox::SpawnServer* spawn_server = nullptr;   // null: workers cloned from this process (supervisor.hpp)
    std::function<void()> recorded;             // a node or task state was recorded
};

class Executor {
public:
    static Result<std::unique_ptr<Executor>> create(const ExecutorParts& parts);
    ~Executor();
    Executor(const Executor&) = delete;
    Executor& operator=(const Executor&) = delete;

    // Recovery, then the first claims.
    void start();
    // Any thread: a deposit landed; look for work now.
    void wake();
    // Any thread: the task was cancelled in the store.
    void cancelled(const std::string& task_id);
    // A reload (config/reload.hpp) changed the claim or worker policy: takes
    // the new task and worker caps and worker policy, and claims again if the
    // caps grew.
    void policy_changed(const ClaimPolicy& claims, const WorkerPolicy& workers);
    // Stops claiming; calls `stopped` (from the loop) once no task runs.
    // A second call ends the grace at once.
    void begin_shutdown(std::function<void()> stopped);

    std::size_t running_tasks() const { return executions_.size(); }
    // Loop thread: why the claim loop does not run ("" when it runs, or when
    // there is no inbox to claim from: an API-only daemon), for GET /readyz.
    std::string not_ready_reason() const;
    // Any thread: the Prometheus text of the executor's metrics.
    std::string render_metrics() const
    {
        return metrics_.render() + supervisor::render_spawn_metrics(supervisor_->spawn_stats());
    }
    // Any thread: {"tasks_running", "workers_running", "max_tasks", "max_workers", "spawn_pool",
    // "user_namespace": {"enabled", "configured", "reason"}, "network": {"per_task", "pool_ready"}} for /healthz.
    nlohmann::json status() const;
    // Loop thread: the workers of the running tasks as a JSON array
    // (GET /v1/workers), by task id then node id.
    nlohmann::json workers() const;
    // The log directory of a node's running worker (GET …/log?follow=1).
    std::optional<std::string> running_log_dir(const std::string& task_id, const std::string& node_id) const;
    const supervisor::Supervisor& supervisor() const { return *supervisor_; }

private:
    explicit Executor(const ExecutorParts& parts);

    void claim_round();
    std::size_t configured_max_tasks() const;
    void arm_claim_timer();
    void check_default_limits() const;
    void prune_logs();
    void run_log_prune();
    void worker_logs_closed(const std::string& log_dir);
    void prune_logs_for_cap();
    void resume_own_leases();
    void execute(store::Lease lease);
    void retired(const std::string& task_id);
    void end_grace();

    ExecutorParts parts_;
    ExecutorMetrics metrics_;
    // Before the supervisor and the jobs: leases and namespaces they hold
    // point here.
    std::unique_ptr<sandbox::NetnsPool> netns_pool_;
    std::unique_ptr<sandbox::UsernsSlots> userns_;
    std::string userns_reason_;  // the mode in force and why (/healthz, the start-up log)
    std::unique_ptr<spawn::SpawnSpecResolver> resolver_;
    std::unique_ptr<ConnectionPool<image::ImageStore>> image_stores_;  // the launch threads'
    std::unique_ptr<supervisor::Supervisor> supervisor_;
    std::unique_ptr<event::JobPool> jobs_;
    std::shared_ptr<const sandbox::SeccompProgram> seccomp_;
    std::unique_ptr<ExecutionContext> context_;
    std::unique_ptr<WarmStart> warm_;  // destroyed after the supervisor (warm_start.hpp)
    std::map<std::string, std::unique_ptr<TaskExecution>> executions_;
    std::size_t max_tasks_ = 1;
    std::size_t next_inbox_ = 0;
    event::EventLoop::TimerId claim_timer_ = 0;
    event::EventLoop::TimerId grace_timer_ = 0;
    event::EventLoop::TimerId prune_timer_ = 0;
    // [workers] logs_max_bytes: the bytes of all worker logs as the last
    // prune found them plus those of workers ended since; above the cap a
    // prune runs (one at a time, at most one a second).
    std::uint64_t log_bytes_ = 0;
    bool log_prune_running_ = false;
    bool log_prune_again_ = false;
    event::EventLoop::TimerId log_cap_timer_ = 0;
    event::EventLoop::TimePoint last_log_prune_{};
    bool claiming_ = false;
    bool stopping_ = false;
    bool warm_idle_ = false;  // the warm worker's releases ended, after begin_shutdown()
    bool started_ = false;  // start() ran
    std::function<void()> stopped_;
};

}  // namespace nps::executor
