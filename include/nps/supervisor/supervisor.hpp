// SPDX-License-Identifier: Apache-2.0
// Supervisor: starts sandboxed workers, speaks ndjson-v1 with them, enforces
// their lifecycle limits and reports one WorkerOutcome per worker, all on an
// EventLoop it shares with its owner (docs/supervisor.md).
//
// Per worker: an optional cgroup (when a CgroupBase is given) created beneath
// the runner's own — or, with a spawn pool, the cgroup of a parked sandbox
// child placed in it ahead of time (sandbox::SpawnPool, refilled by a thread
// of the supervisor's: docs/supervisor.md "Spawn pool"); stdin a socket
// carrying the DelegateFrame line (and later a cancel frame); stdout and stderr non-blocking pipes read as data arrives,
// stdout split into frames and log lines (worker_protocol.hpp), both streams'
// log output written to rotating files; its pidfd in the epoll set; its idle
// and max-runtime deadlines as loop timers. A breach kills the whole cgroup
// (or the sandbox's pid namespace) at once and the node fails with
// NOP-RUNTIME-IDLE-TIMEOUT / -MAX-RUNTIME. Cancellation is gentler: the
// cancel frame, then SIGTERM after stop_grace, then SIGKILL after another.
//
// At most max_concurrent workers run; later start()s wait in a FIFO queue
// (of at most max_queued), which is the back-pressure the claim loop reads
// through running() / queued() / has_capacity().
//
// A worker's process may be spawned ahead, *held* before its execve while
// what it waits for still runs (hold(); docs/supervisor.md "Workers held
// before their execve"): start() with the hold then only releases it, with
// the NPS_* variables of its DelegateFrame, and its timers run from there.
//
// Outcome callbacks run on the loop, never inside start() or cancel(); they
// may call start() and cancel() but must not destroy the Supervisor.
// Destroying it kills and reaps every worker and removes their cgroups
// without calling any callback.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "nps/base/clock.hpp"
#include "nps/base/limits.hpp"
#include "nps/base/result.hpp"
#include "nps/cgroup/delegation.hpp"
#include "nps/cgroup/worker_cgroup.hpp"
#include "nps/event/event_loop.hpp"
#include "nps/event/job_pool.hpp"
#include "nps/sandbox/spawn_server.hpp"
#include "nps/sandbox/spawner.hpp"
#include "nps/supervisor/lifecycle.hpp"
#include "nps/supervisor/worker_log.hpp"

namespace nps::config {
struct Config;
}

namespace nps::supervisor {

struct StreamEvent;
class RefilledPool;
using WorkerId = std::uint64_t;

struct WorkerSpec {
    // rootfs, argv, env, cwd, network (+ netns_fd), uid/gid, rlimits,
    // seccomp. The supervisor sets the stdio fds and the cgroup, and adds
    // the NPS_* variables to env.
    sandbox::SandboxSpec sandbox;
    cgroup::CgroupLimits limits;                          // used when the supervisor has a CgroupBase
    cgroup::Enforcement enforcement = cgroup::Enforcement::strict;
    // The SpawnSpec's limits; nullopt or zero: the supervisor's policy.
    std::optional<std::chrono::milliseconds> idle_timeout;
    std::optional<std::chrono::milliseconds> max_runtime;
    nlohmann::json delegate_frame;                        // the DelegateFrame (worker_protocol.hpp)
    std::uint32_t attempt = 1;                            // NPS_ATTEMPT, 1-based
    std::optional<std::int64_t> cgn_budget;               // NPS_CGN_BUDGET
};

enum class WorkerState { completed, failed, cancelled };
std::string_view to_string(WorkerState state);  // "COMPLETED", …

struct WorkerOutcome {
    WorkerId id = 0;
    WorkerState state = WorkerState::failed;
    std::string result_json;    // COMPLETED: the final frame's data (canonical) or {"exit_code":0}
    std::string error_code;     // FAILED / CANCELLED
    std::string error_message;
    bool retryable = false;
    KilledReason killed_reason = KilledReason::none;
    std::optional<int> exit_code;  // when the worker exited
    std::optional<int> signal;     // when a signal ended it
    std::string details_json;      // {"exit_code":N} or {"signal":N}; "{}" when never started
    bool oom_killed = false;
    std::uint64_t frames = 0;      // AlignStream frames accepted
    std::string log_dir;           // the worker's log directory ("" without logs)
    std::string stderr_tail;       // last kWorkerOutcomeTailBytes of its stderr log
    std::vector<std::string> warnings;  // cleanup trouble (cgroup removal, log errors)
    // Monotonic times of spawn and reaping (equal to `ended` when it never ran),
    // and wall-clock ones from the supervisor's Clock.
    event::EventLoop::TimePoint started{};
    event::EventLoop::TimePoint ended{};
    event::EventLoop::TimePoint killed{};  // when the runner sent SIGKILL; {} if it did not
    std::int64_t started_at_ms = 0;
    std::int64_t ended_at_ms = 0;
};

struct WorkerCallbacks {
    std::function<void(const WorkerOutcome&)> on_outcome;  // required; exactly once
    // Progress frames (is_final false): seq and canonical data.
    std::function<void(WorkerId, std::uint64_t seq, const std::string& data_json)> on_progress;
    // Optional: its process started (after any wait in the queue), with its pid.
    std::function<void(WorkerId, pid_t pid)> on_started;
};

enum class StopReason { cancelled, shutdown };

// One worker as `nps-runner ps` shows it (Supervisor::status).
struct WorkerStatus {
    std::string name;                  // its cgroup and log directory
    std::optional<pid_t> pid;          // unset while queued
    bool stopping = false;             // being stopped (cancel, a limit, shutdown)
    std::int64_t started_at_ms = 0;    // 0 while queued
    std::optional<std::uint64_t> memory_bytes;  // from its cgroup, when it has one with accounting
    std::optional<std::uint64_t> cpu_usec;
    cgroup::CgroupLimits limits;
    LifecycleLimits lifecycle;         // idle timeout and max runtime in force
};

enum class LogStream { out, err };

// [workers] spawn_pool's default: after a pause, four parked children cover
// the burst of a small DAG's nodes (a 3-node chain, or a fan-out of four);
// refills wait for the next pause (bench/RESULTS.md "dag").
inline constexpr std::size_t kDefaultSpawnPool = 4;

// The other defaults of [workers] (docs/configuration.md): running workers
// at once, a worker's runtime when its SpawnSpec sets none, and the time
// between a cancel's SIGTERM and SIGKILL.
inline constexpr std::size_t kDefaultMaxConcurrent = 8;
inline constexpr std::chrono::seconds kDefaultMaxRuntime{4 * 3600};
inline constexpr std::chrono::seconds kDefaultStopGrace{5};
// Threads that spawn workers off the loop: spawns on two of them overlap
// (one child's setup, another's cgroup placement).
inline constexpr std::size_t kSpawnThreads = 2;
// Processes held ahead at most (Supervisor::hold), whatever max_concurrent.
inline constexpr std::size_t kMaxHeld = 4;

// How workers were started, for /metrics and status.
struct SpawnStats {
    std::uint64_t pooled = 0;         // from a parked child of the spawn pool
    std::uint64_t server = 0;         // cloned by the spawn server (none parked, a user namespace)
    std::uint64_t direct = 0;         // by sandbox::spawn() (no server, or it is gone)
    std::uint64_t held = 0;           // a process held ahead, released (Supervisor::hold)
    // Time the spawn threads spent in those spawns (cgroup, clone, placement,
    // setup up to the exec; for a held one its release), microseconds.
    std::uint64_t pooled_us = 0;
    std::uint64_t server_us = 0;
    std::uint64_t direct_us = 0;
    std::uint64_t held_us = 0;
    std::uint64_t holds_unused = 0;   // held processes dropped, or not fit for their worker
    std::size_t pool_size = 0;        // 0: no pool
    std::size_t pool_ready = 0;       // children parked now
    std::uint64_t refill_failures = 0;
    std::string refill_error;         // the last one's description
};

// SpawnStats in the Prometheus text format (nps_worker_spawns_total, …).
std::string render_spawn_metrics(const SpawnStats& stats);

struct SupervisorOptions {
    std::size_t max_concurrent = kDefaultMaxConcurrent;
    std::size_t max_queued = limits::kMaxQueuedWorkers;
    std::chrono::milliseconds default_idle_timeout{0};                   // 0: none
    std::chrono::milliseconds default_max_runtime{kDefaultMaxRuntime};  // 0: none
    std::chrono::milliseconds stop_grace{kDefaultStopGrace};
    // Logs go to <log_root>/<worker name>/{stdout,stderr}.log; "" discards
    // worker output (it is still read, framed and counted as activity).
    std::string log_root;
    LogLimits log_limits;
    // Per-worker cgroups beneath this base; nullptr: none (rlimits only).
    const cgroup::CgroupBase* cgroup_base = nullptr;
    // Worker names (cgroups, log directories): <prefix>-<pid>-<id>. A spawn
    // pool's slots, whose cgroups become pooled workers', are
    // <prefix>-<pid>-p<n>.
    std::string name_prefix = "w";
    // Sandbox children kept parked in their cgroups, 0..limits::kSpawnPoolMaxSize;
    // 0: none. Used only with a cgroup_base, for workers without a user
    // namespace; others, and any worker when no parked child is ready, are
    // spawned directly.
    std::size_t spawn_pool = kDefaultSpawnPool;
    // The limits (and enforcement) the pool's slots get while parked: a
    // worker asking for exactly these writes no limit on its way
    // (sandbox::SpawnPoolOptions::park_limits). The executor gives its
    // defaults. nullopt: each worker's limits are written as it starts.
    std::optional<cgroup::CgroupLimits> pool_limits;
    cgroup::Enforcement pool_enforcement = cgroup::Enforcement::strict;
    // Workers the pool does not start are cloned by this spawn server (not
    // owned; it must outlive the Supervisor); nullptr, or a server that is
    // gone: by sandbox::spawn(), a copy of this process.
    sandbox::SpawnServer* spawn_server = nullptr;
    const Clock* clock = &SystemClock::instance();  // wall-clock stamps of outcomes
};

class Supervisor {
public:
    // Creates the log root if missing and raises this process's soft
    // RLIMIT_NOFILE to its hard limit (a running worker holds about six fds).
    static Result<std::unique_ptr<Supervisor>> create(event::EventLoop& loop, SupervisorOptions options);
    ~Supervisor();
    Supervisor(const Supervisor&) = delete;
    Supervisor& operator=(const Supervisor&) = delete;

    // Checks the spec (the DelegateFrame, argv, rootfs) and queues the
    // worker; it starts in a later loop round when a slot is free. An error
    // means the spec was refused (or the queue is full) and no callback will
    // come. A failure to start (cgroup, sandbox) comes as an outcome with
    // killed_reason spawn_failed.
    Result<WorkerId> start(WorkerSpec spec, WorkerCallbacks callbacks);

    // Spawns the process of a worker of `spec` ahead — its cgroup, sandbox,
    // mounts and seccomp filter — held before its execve (with the
    // environment spec gives, without the NPS_* variables). Returns the id
    // the worker will have, or nullopt when nothing is held: while running,
    // queued and held workers together fill max_concurrent (a held process
    // never takes a running worker's place), or kMaxHeld are held. No
    // callback comes for it; give it to start() or drop_held().
    std::optional<WorkerId> hold(const WorkerSpec& spec);
    // start() of the worker held as `held`: its process is released when
    // the worker's turn comes (max_concurrent holds for it too). Unless
    // spec.sandbox, limits and enforcement are what hold() was given and the
    // hold succeeded, the held process is dropped and the worker spawned as
    // start() spawns. An unknown `held` is ignored.
    Result<WorkerId> start(WorkerSpec spec, WorkerCallbacks callbacks, WorkerId held);
    // Kills and reaps a held process not given to start(), and removes its
    // cgroup, off the loop; `gone` (optional) then runs on the loop.
    void drop_held(WorkerId held, std::function<void()> gone = {});
    // Processes held now, those of workers start() queued included.
    std::size_t held() const { return held_.size(); }

    // Stops a queued or running worker (see above). Unknown or finished ids,
    // and workers already stopping or settled, are left alone.
    void cancel(WorkerId id, StopReason reason = StopReason::cancelled);
    // Kills a queued or running worker at once, its whole cgroup, with no
    // cancel frame and no grace (a lost lease: NPS-5 §8.1 fencing). Its
    // outcome comes as for cancel(id, StopReason::shutdown).
    void kill(WorkerId id);
    // cancel(shutdown) for every worker.
    void shutdown();

    // Takes the policy part of `policy` (max_concurrent, the default idle
    // and max-runtime limits, stop_grace, log_limits) — a configuration
    // reload. Workers already start()ed, queued ones included, keep the
    // lifecycle limits they were given; a raised max_concurrent starts
    // queued workers at once, a lowered one lets running workers finish. The other fields of `policy` are ignored.
    void update_policy(const SupervisorOptions& policy);

    std::size_t running() const { return running_; }
    std::size_t queued() const { return queue_.size(); }
    bool has_capacity() const { return running_ + queue_.size() < options_.max_concurrent; }
    const SupervisorOptions& options() const { return options_; }

    // The last `max_bytes` of a known worker's log; nullopt for an unknown id.
    // (After the outcome, read_log_tail() on outcome.log_dir + "/stdout.log".)
    std::optional<std::string> log_tail(WorkerId id, LogStream stream, std::size_t max_bytes) const;
    // The pid of a running worker (in this pid namespace), for tests and
    // diagnostics; nullopt otherwise.
    std::optional<pid_t> pid(WorkerId id) const;
    // A queued or running worker's status; nullopt for an unknown or
    // finished id. Reads its cgroup's usage files.
    std::optional<WorkerStatus> status(WorkerId id) const;
    // The names (log directories, cgroups) of the running workers.
    std::vector<std::string> running_names() const;
    // The name of a running worker's cgroup ("" without one): its own, or
    // the pool slot's it was started in.
    std::optional<std::string> cgroup_name(WorkerId id) const;

    // Safe from any thread (the counters are atomic, the pool locks).
    SpawnStats spawn_stats() const;

    struct Worker;  // src/supervisor/worker.hpp

private:
    class StdoutSink;

    Supervisor(event::EventLoop& loop, SupervisorOptions options);

    Worker* find(WorkerId id);
    void schedule_pump();
    void pump();
    // worker_spawn.cpp
    struct SpawnJob;
    struct Held;
    // <name_prefix>-<pid>-<id>: its cgroup's and log directory's name.
    std::string worker_name(WorkerId id) const;
    void launch(std::unique_ptr<Worker> worker);
    // A spawn of its own for `w`; `replaced` (a failed hold of the same
    // name) is dropped on the spawn thread first.
    void spawn_fresh(Worker& w, std::shared_ptr<SpawnJob> replaced = {});
    void fail_launch(Worker& w, const Error& error);
    Result<std::shared_ptr<SpawnJob>> prepare_spawn(const WorkerSpec& spec, std::string name,
                                                    std::vector<std::string> env);
    void spawn_process(SpawnJob& job);  // on a spawn thread
    void on_spawned(WorkerId id, SpawnJob& job);
    // worker_held.cpp
    Result<WorkerId> enqueue(WorkerSpec spec, WorkerCallbacks callbacks, std::optional<WorkerId> held);
    void submit_spawn(Worker& w, std::shared_ptr<SpawnJob> job, std::shared_ptr<SpawnJob> replaced = {});
    void on_held_spawned(WorkerId id);
    void launch_held(Worker& w);
    void release_held(WorkerId id);
    void finish_drop(WorkerId id, std::function<void()> gone);
    void discard(std::shared_ptr<SpawnJob> job, std::function<void()> gone);
    // worker_io.cpp
    Result<void> register_io(Worker& w);
    void send_stdin(Worker& w, std::string bytes);
    void on_stdin(Worker& w);
    void close_stdin(Worker& w);
    void on_output(Worker& w, LogStream stream);
    void drain(Worker& w, LogStream stream);
    void handle_candidate(Worker& w, std::string_view line);
    void handle_oversized(Worker& w);
    // worker_end.cpp
    LifecycleInput lifecycle_now(const Worker& w, WorkerReport report) const;
    void arm_idle_timer(Worker& w);
    void on_idle_timer(Worker& w);
    void on_max_runtime(Worker& w);
    void on_stop_step(Worker& w);
    void settle_final(Worker& w, const StreamEvent& event);
    void settle_violation(Worker& w, const Error& error);
    void settle_breach(Worker& w, const LifecycleDecision& decision);
    void kill_now(Worker& w);
    void on_exit(Worker& w);
    WorkerOutcome build_outcome(Worker& w, const std::optional<sandbox::ExitStatus>& status);
    void release(Worker& w);
    void finish(WorkerId id, WorkerOutcome outcome);

    event::EventLoop& loop_;
    SupervisorOptions options_;
    std::unordered_map<WorkerId, std::unique_ptr<Worker>> workers_;  // running, by id
    std::deque<std::unique_ptr<Worker>> queue_;
    std::size_t running_ = 0;
    WorkerId next_id_ = 1;
    event::EventLoop::TimerId pump_timer_ = 0;
    std::vector<event::EventLoop::TimerId> pending_;  // deferred outcomes of workers that never ran
    std::string read_buffer_;
    std::atomic<std::uint64_t> spawned_pooled_{0}, spawned_server_{0}, spawned_direct_{0}, spawned_held_{0};
    std::atomic<std::uint64_t> pooled_us_{0}, server_us_{0}, direct_us_{0}, held_us_{0};
    std::atomic<std::uint64_t> holds_unused_{0};
    std::unordered_map<WorkerId, std::unique_ptr<Held>> held_;  // processes held ahead, not started yet
    // The spawn pool and its refill thread; nullptr without one.
    std::unique_ptr<RefilledPool> pool_;
    // The threads spawns run on (worker_spawn.cpp).
    std::unique_ptr<event::JobPool> spawn_jobs_;
};

}  // namespace nps::supervisor
