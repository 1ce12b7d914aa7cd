// SPDX-License-Identifier: Apache-2.0
// Supervisor: the queue, cancellation and teardown. Starting a worker is in
// worker_spawn.cpp, its I/O in worker_io.cpp, its end (timers, kills,
// reaping, the outcome) in worker_end.cpp.
#include "nps/supervisor/supervisor.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "refilled_pool.hpp"
#include "spawn_job.hpp"
#include "worker.hpp"

#include "nps/base/prometheus_text.hpp"
#include "nps/proto/error_codes.hpp"
#include "nps/proto/states.hpp"

namespace nps::supervisor {

namespace {

constexpr std::size_t kReadChunk = 64 * 1024;

Result<void> raise_fd_limit()
{
    rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) < 0)
        return system_error_errno("Failed to read RLIMIT_NOFILE");
    if (limit.rlim_cur >= limit.rlim_max)
        return {};
    limit.rlim_cur = limit.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &limit) < 0)
        return system_error_errno("Failed to raise RLIMIT_NOFILE to its hard limit");
    return {};
}

}  // namespace

std::string_view to_string(WorkerState state)
{
    switch (state) {
    case WorkerState::completed: return proto::to_string(proto::NodeState::completed);
    case WorkerState::failed: return proto::to_string(proto::NodeState::failed);
    case WorkerState::cancelled: return proto::to_string(proto::NodeState::cancelled);
    }
    return proto::to_string(proto::NodeState::failed);
}

Supervisor::Supervisor(event::EventLoop& loop, SupervisorOptions options)
    : loop_(loop), options_(std::move(options)), read_buffer_(kReadChunk, '\0')
{
}

Result<std::unique_ptr<Supervisor>> Supervisor::create(event::EventLoop& loop, SupervisorOptions options)
{
    if (options.max_concurrent == 0)
        return internal_error("Failed to create the supervisor: max_concurrent must be at least 1");
    if (options.log_limits.max_bytes == 0)
        return internal_error("Failed to create the supervisor: log_max_bytes must be at least 1");
    if (!options.clock)
        options.clock = &SystemClock::instance();
    if (!options.log_root.empty()) {
        std::error_code ec;
        std::filesystem::create_directories(options.log_root, ec);
        if (ec)
            return system_error("Failed to create the worker log directory '" + options.log_root + "'", ec.value());
    }
    if (options.spawn_pool > limits::kSpawnPoolMaxSize)
        return internal_error("Failed to create the supervisor: spawn_pool must be at most " +
                              std::to_string(limits::kSpawnPoolMaxSize));
    NPS_TRY_VOID(raise_fd_limit());
    std::unique_ptr<Supervisor> supervisor(new Supervisor(loop, std::move(options)));
    const SupervisorOptions& o = supervisor->options_;
    if (o.cgroup_base && o.spawn_pool > 0) {
        // Slots are <prefix>-<pid>-p<n>: never a worker's <prefix>-<pid>-<id>,
        // and crash recovery knows the shape (src/daemon/recovery.cpp).
        supervisor->pool_ = NPS_TRY(RefilledPool::start(
            {.cgroup_base = o.cgroup_base,
             .name_prefix = o.name_prefix + "-" + std::to_string(::getpid()) + "-p",
             .size = o.spawn_pool,
             .server = o.spawn_server,
             .park_limits = o.pool_limits,
             .park_enforcement = o.pool_enforcement}));
    }
    supervisor->spawn_jobs_ = NPS_TRY(event::JobPool::create(loop, kSpawnThreads, "nps-spawn"));
    return supervisor;
}

Supervisor::~Supervisor()
{
    // Spawns in flight finish first; their completions are dropped, and with
    // them the children and cgroups they made (worker_spawn.cpp).
    spawn_jobs_.reset();
    held_.clear();  // ~Child kills and reaps each held process, ~WorkerCgroup removes its cgroup
    loop_.cancel_timer(pump_timer_);
    for (auto timer : pending_)
        loop_.cancel_timer(timer);
    for (auto& [id, worker] : workers_) {
        if (worker->cgroup)
            (void)worker->cgroup->kill_all();
    }
    // The refill thread stops before the releases below could wake it (no
    // child is parked only to be killed); pooled workers, already killed,
    // would die with it anyway (PR_SET_PDEATHSIG). Parked children go too.
    pool_.reset();
    for (auto& [id, worker] : workers_)
        release(*worker);  // ~Child kills and reaps what is left
    workers_.clear();
    queue_.clear();
}

Supervisor::Worker* Supervisor::find(WorkerId id)
{
    auto it = workers_.find(id);
    return it == workers_.end() ? nullptr : it->second.get();
}

Result<WorkerId> Supervisor::start(WorkerSpec spec, WorkerCallbacks callbacks)
{
    return enqueue(std::move(spec), std::move(callbacks), std::nullopt);
}

std::string Supervisor::worker_name(WorkerId id) const
{
    return options_.name_prefix + "-" + std::to_string(::getpid()) + "-" + std::to_string(id);
}

Result<WorkerId> Supervisor::enqueue(WorkerSpec spec, WorkerCallbacks callbacks, std::optional<WorkerId> held)
{
    if (!callbacks.on_outcome)
        return internal_error("Failed to start a worker: no outcome callback");
    if (spec.sandbox.argv.empty() || spec.sandbox.argv.front().empty())
        return internal_error("Failed to start a worker: no program given");
    if (spec.sandbox.rootfs.empty())
        return internal_error("Failed to start a worker: no rootfs given");
    if (queue_.size() >= options_.max_queued)
        return internal_error("Failed to start a worker: " + std::to_string(queue_.size()) +
                              " workers are already waiting for a slot");
    DelegateLine delegate = NPS_TRY(encode_delegate_frame(spec.delegate_frame));
    const WorkerId id = held.value_or(next_id_++);
    std::string name = worker_name(id);
    const LifecycleLimits limits = resolve_limits(spec.idle_timeout, spec.max_runtime, options_.default_idle_timeout,
                                                  options_.default_max_runtime);
    queue_.push_back(std::make_unique<Worker>(id, std::move(name), std::move(spec), std::move(delegate),
                                              std::move(callbacks), limits));
    schedule_pump();
    return id;
}

void Supervisor::schedule_pump()
{
    if (pump_timer_ != 0 || queue_.empty())
        return;
    pump_timer_ = loop_.defer([this] {
        pump_timer_ = 0;
        pump();
    });
}

void Supervisor::pump()
{
    while (running_ < options_.max_concurrent && !queue_.empty()) {
        std::unique_ptr<Worker> worker = std::move(queue_.front());
        queue_.pop_front();
        launch(std::move(worker));
    }
}

void Supervisor::kill(WorkerId id)
{
    Worker* w = find(id);
    if (!w || (!w->child.valid() && !w->spawning)) {  // queued (or unknown): it never ran
        cancel(id, StopReason::shutdown);
        return;
    }
    if (w->spawning) {  // killed once its child exists (on_spawned)
        if (!w->stop_reason)
            w->stop_reason = StopReason::shutdown;
        return;
    }
    if (w->settlement || w->killed || w->exited)
        return;
    if (!w->stop_reason)
        w->stop_reason = StopReason::shutdown;
    kill_now(*w);
}

void Supervisor::cancel(WorkerId id, StopReason reason)
{
    for (auto it = queue_.begin(); it != queue_.end(); ++it) {
        if ((*it)->id != id)
            continue;
        std::shared_ptr<Worker> w(std::move(*it));
        queue_.erase(it);
        drop_held(id);  // the process held for it, if any
        // It never ran: its outcome needs no reaping, but still comes from
        // the loop, not from inside cancel().
        const auto timer = std::make_shared<event::EventLoop::TimerId>(0);
        *timer = loop_.defer([this, w, reason, timer] {
            std::erase(pending_, *timer);
            if (reason == StopReason::shutdown)
                w->settlement = runtime_settlement(proto::RuntimeFailure::shutdown,
                                                   "the runner shut down before the worker started",
                                                   KilledReason::shutdown);
            else
                w->settlement = Settlement{.state = WorkerState::cancelled,
                                           .error_code = proto::code::kNopTaskCancelled,
                                           .error_message = "cancelled before the worker started"};
            w->exited = true;
            WorkerOutcome outcome = build_outcome(*w, std::nullopt);
            w->callbacks.on_outcome(outcome);
        });
        pending_.push_back(*timer);
        return;
    }
    Worker* w = find(id);
    if (!w || w->settlement || w->stop_reason || w->killed || w->exited)
        return;
    w->stop_reason = reason;
    if (w->spawning)
        return;  // killed once its child exists (on_spawned): it has done nothing yet
    // The node's fate is now the stop: a limit that passes while the worker
    // winds down does not turn it into a timeout.
    loop_.cancel_timer(std::exchange(w->idle_timer, 0));
    loop_.cancel_timer(std::exchange(w->max_timer, 0));
    send_stdin(*w, encode_cancel_frame(w->delegate));
    w->stop_stage = StopStage::frame_sent;
    w->stop_timer = loop_.add_timer_after(options_.stop_grace, [this, w] { on_stop_step(*w); });
}

void Supervisor::update_policy(const SupervisorOptions& policy)
{
    options_.max_concurrent = std::max<std::size_t>(policy.max_concurrent, 1);
    options_.default_idle_timeout = policy.default_idle_timeout;
    options_.default_max_runtime = policy.default_max_runtime;
    options_.stop_grace = policy.stop_grace;
    if (policy.log_limits.max_bytes > 0)
        options_.log_limits = policy.log_limits;
    schedule_pump();
}

void Supervisor::shutdown()
{
    std::vector<WorkerId> ids;
    for (const auto& w : queue_)
        ids.push_back(w->id);
    for (const auto& [id, w] : workers_)
        ids.push_back(id);
    for (WorkerId id : ids)
        cancel(id, StopReason::shutdown);
}

std::optional<std::string> Supervisor::log_tail(WorkerId id, LogStream stream, std::size_t max_bytes) const
{
    auto it = workers_.find(id);
    if (it == workers_.end()) {
        for (const auto& w : queue_)
            if (w->id == id)
                return std::string();
        return std::nullopt;
    }
    const RotatingLog& log = stream == LogStream::out ? it->second->out_log : it->second->err_log;
    if (!log.enabled())
        return std::string();
    auto tail = read_log_tail(log.path(), max_bytes);
    return tail ? *tail : std::string();
}

std::optional<pid_t> Supervisor::pid(WorkerId id) const
{
    auto it = workers_.find(id);
    if (it == workers_.end() || !it->second->child.valid())
        return std::nullopt;
    return it->second->child.pid();
}

std::optional<WorkerStatus> Supervisor::status(WorkerId id) const
{
    const Worker* w = nullptr;
    if (auto it = workers_.find(id); it != workers_.end())
        w = it->second.get();
    for (const auto& queued : queue_)
        if (!w && queued->id == id)
            w = queued.get();
    if (!w)
        return std::nullopt;
    WorkerStatus s{.name = w->name,
                   .stopping = w->stop_stage != StopStage::none || w->killed,
                   .started_at_ms = w->started_at_ms,
                   .limits = w->spec.limits,
                   .lifecycle = w->limits};
    if (w->child.valid())
        s.pid = w->child.pid();
    if (w->cgroup) {
        if (auto bytes = w->cgroup->memory_usage_bytes())
            s.memory_bytes = *bytes;
        if (auto usec = w->cgroup->cpu_usage_usec())
            s.cpu_usec = *usec;
    }
    return s;
}

std::vector<std::string> Supervisor::running_names() const
{
    std::vector<std::string> names;
    names.reserve(workers_.size());
    for (const auto& [id, worker] : workers_)
        names.push_back(worker->name);
    return names;
}

std::optional<std::string> Supervisor::cgroup_name(WorkerId id) const
{
    auto it = workers_.find(id);
    if (it == workers_.end() || !it->second->child.valid())
        return std::nullopt;
    const auto& cgroup = it->second->cgroup;
    if (!cgroup || cgroup->dirs().empty())
        return std::string();
    return std::filesystem::path(cgroup->dirs().front()).filename().string();
}

SpawnStats Supervisor::spawn_stats() const
{
    SpawnStats stats{.pooled = spawned_pooled_.load(std::memory_order_relaxed),
                     .server = spawned_server_.load(std::memory_order_relaxed),
                     .direct = spawned_direct_.load(std::memory_order_relaxed),
                     .held = spawned_held_.load(std::memory_order_relaxed),
                     .pooled_us = pooled_us_.load(std::memory_order_relaxed),
                     .server_us = server_us_.load(std::memory_order_relaxed),
                     .direct_us = direct_us_.load(std::memory_order_relaxed),
                     .held_us = held_us_.load(std::memory_order_relaxed),
                     .holds_unused = holds_unused_.load(std::memory_order_relaxed)};
    if (pool_) {
        stats.pool_size = pool_->size();
        stats.pool_ready = pool_->ready();
        stats.refill_failures = pool_->refill_failures();
        stats.refill_error = pool_->last_error();
    }
    return stats;
}

std::string render_spawn_metrics(const SpawnStats& stats)
{
    using prometheus::label;
    using prometheus::Type;
    std::string out;
    prometheus::family(out, "nps_worker_spawns_total", Type::counter,
                       "Workers started, by path: from a parked child of the spawn pool, cloned by the spawn "
                       "server, directly, or released from a process held ahead.");
    prometheus::sample(out, "nps_worker_spawns_total", label("path", "pool"), stats.pooled);
    prometheus::sample(out, "nps_worker_spawns_total", label("path", "server"), stats.server);
    prometheus::sample(out, "nps_worker_spawns_total", label("path", "direct"), stats.direct);
    prometheus::sample(out, "nps_worker_spawns_total", label("path", "held"), stats.held);
    const auto seconds = [](std::uint64_t us) { return static_cast<double>(us) / 1e6; };
    prometheus::family(out, "nps_worker_spawn_seconds_total", Type::counter,
                       "Time spent starting workers (up to their exec), by path.");
    prometheus::sample(out, "nps_worker_spawn_seconds_total", label("path", "pool"), seconds(stats.pooled_us));
    prometheus::sample(out, "nps_worker_spawn_seconds_total", label("path", "server"), seconds(stats.server_us));
    prometheus::sample(out, "nps_worker_spawn_seconds_total", label("path", "direct"), seconds(stats.direct_us));
    prometheus::sample(out, "nps_worker_spawn_seconds_total", label("path", "held"), seconds(stats.held_us));
    prometheus::metric(out, "nps_worker_holds_unused_total", Type::counter,
                       "Processes held ahead for a worker that did not use them.", stats.holds_unused);
    prometheus::metric(out, "nps_spawn_pool_ready", Type::gauge, "Sandbox children parked in the spawn pool now.",
                       stats.pool_ready);
    prometheus::metric(out, "nps_spawn_pool_size", Type::gauge,
                       "Sandbox children the spawn pool keeps parked (0: no pool).", stats.pool_size);
    prometheus::metric(out, "nps_spawn_pool_refill_failures_total", Type::counter,
                       "Failed attempts to park a child in the spawn pool.", stats.refill_failures);
    return out;
}

}  // namespace nps::supervisor
