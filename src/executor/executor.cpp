// SPDX-License-Identifier: Apache-2.0
#include "nps/executor/executor.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <set>

#include <nlohmann/json.hpp>

#include "nps/base/limits.hpp"
#include "nps/base/log.hpp"
#include "nps/executor/recovery.hpp"
#include "nps/proto/error_codes.hpp"
#include "nps/proto/task_frame.hpp"
#include "nps/sandbox/userns.hpp"
#include "nps/spawn/quantity.hpp"
#include "execution_context.hpp"
#include "task_execution.hpp"
#include "warm_start.hpp"

namespace nps::executor {

namespace {

// Blocking preparations at once: resolutions, pulls, unpacks, mounts.
constexpr std::size_t kLaunchThreads = 2;
// How often finished workers' logs are checked against their retention.
constexpr int kLogPruneIntervalMs = 10 * 60 * 1000;
// Prunes for [workers] logs_max_bytes, started by workers' ends, at most this often.
constexpr int kLogCapPruneMinIntervalMs = 1000;

cgroup::Enforcement enforcement(const ExecutorOptions& options)
{
    return options.allow_unenforced_limits ? cgroup::Enforcement::allow_unenforced : cgroup::Enforcement::strict;
}

}  // namespace

Executor::Executor(const ExecutorParts& parts) : parts_(parts) {}

Executor::~Executor()
{
    parts_.loop.cancel_timer(claim_timer_);
    parts_.loop.cancel_timer(grace_timer_);
    parts_.loop.cancel_timer(prune_timer_);
    parts_.loop.cancel_timer(log_cap_timer_);
    // Executions first (they hold workers and jobs), then the supervisor
    // kills what is left (a warm worker's held process included, before its
    // rootfs is released), then the pool joins its threads.
    executions_.clear();
    supervisor_.reset();
    warm_.reset();
    jobs_.reset();
}

Result<std::unique_ptr<Executor>> Executor::create(const ExecutorParts& parts)
{
    std::unique_ptr<Executor> e(new Executor(parts));
    const ExecutorOptions& options = e->parts_.options;

    store::StorePool& stores = parts.stores;
    e->resolver_ = std::make_unique<spawn::SpawnSpecResolver>(
        options.resolver, parts.clock, [&stores](const std::string& nid) -> Result<store::Announce> {
            return NPS_TRY(stores.acquire())->resolve_announce(nid);
        });

    auto supervision = supervisor_options(options.workers);
    supervision.log_root = options.state_dir + "/logs";
    supervision.cgroup_base = parts.cgroups;
    supervision.spawn_server = parts.spawn_server;
    // What a worker of a SpawnSpec without limits gets: set on the pool's
    // parked slots ahead.
    supervision.pool_limits = worker_limits(spawn::SpawnSpec{}, options.workers);
    supervision.pool_enforcement = enforcement(options);
    supervision.clock = &parts.clock;
    e->supervisor_ = NPS_TRY(supervisor::Supervisor::create(parts.loop, std::move(supervision)));
    e->image_stores_ = std::make_unique<ImageStorePool>(
        [state_dir = options.state_dir] { return image::ImageStore::open({.state_dir = state_dir}); },
        kLaunchThreads);
    e->jobs_ = NPS_TRY(event::JobPool::create(parts.loop, kLaunchThreads, "nps-launch"));

    // A loopback-only network namespace per task (the SpawnSpec has no
    // network field: workers reach nothing but their own task's), made
    // ahead of the tasks.
    auto netns = sandbox::NetnsPool::start(limits::kNetnsPoolSize);
    if (!netns)
        return Error{netns.error().code, "Failed to prepare the workers' network namespaces: " + netns.error().message,
                     netns.error().sys_errno};
    e->netns_pool_ = std::move(*netns);
    // The user namespace: probed once, here (sandbox.user_namespace), where
    // the image layers and the workers' directories are.
    auto userns = sandbox::decide_user_namespace(
        options.user_namespace,
        sandbox::userns_slots_options(options.userns_first_host_id, options.userns_id_count, sandbox::kUsernsLockDir),
        options.state_dir + "/workers", sandbox::RootfsKind::overlay);
    if (!userns)
        return userns.error();
    e->userns_ = std::move(userns->slots);
    e->userns_reason_ = userns->reason;
    if (!options.seccomp_allow.empty())
        e->seccomp_ = NPS_TRY(sandbox::SeccompProgram::compile(options.seccomp_allow));

    e->context_.reset(new ExecutionContext{
        .options = options,
        .clock = parts.clock,
        .loop = parts.loop,
        .store = parts.store,
        .supervisor = *e->supervisor_,
        .jobs = *e->jobs_,
        .launch = {.options = options, .resolver = *e->resolver_, .images = *e->image_stores_},
        .netns_pool = e->netns_pool_.get(),
        .userns = e->userns_.get(),
        .seccomp = e->seccomp_.get(),
        .enforcement = enforcement(options),
        .metrics = e->metrics_,
        .recorded = parts.recorded,
        .worker_logs_closed = [raw = e.get()](const std::string& dir) { raw->worker_logs_closed(dir); },
    });
    e->warm_ = std::make_unique<WarmStart>(*e->context_);
    e->context_->warm = e->warm_.get();
    e->max_tasks_ = e->configured_max_tasks();
    return e;
}

std::size_t Executor::configured_max_tasks() const
{
    const ExecutorOptions& options = parts_.options;
    return std::max<std::size_t>(options.claims.max_tasks ? options.claims.max_tasks : options.workers.max_concurrent,
                                 1);
}

void Executor::policy_changed(const ClaimPolicy& claims, const WorkerPolicy& workers)
{
    parts_.options.claims = claims;
    parts_.options.workers = workers;
    max_tasks_ = configured_max_tasks();
    supervisor_->update_policy(supervisor_options(workers));
    warm_->drop();  // made under the old policy (its limits, hold_ahead)
    prune_logs_for_cap();  // a lowered workers.logs_max_bytes holds at once
    claim_round();
}

nlohmann::json Executor::status() const
{
    const auto spawns = supervisor_->spawn_stats();
    return {{"tasks_running", metrics_.tasks_running.load()},
            {"workers_running", metrics_.workers_running.load()},
            {"max_tasks", max_tasks_},
            {"max_workers", parts_.options.workers.max_concurrent},
            {"spawn_pool", {{"size", spawns.pool_size}, {"ready", spawns.pool_ready}}},
            {"user_namespace",
             {{"enabled", userns_ != nullptr},
              {"configured", sandbox::to_string(parts_.options.user_namespace)},
              {"reason", userns_reason_}}},
            {"network", {{"per_task", true}, {"pool_ready", netns_pool_->ready()}}}};
}

nlohmann::json Executor::workers() const
{
    nlohmann::json workers = nlohmann::json::array();
    const std::int64_t now = parts_.clock.now_ms();
    for (const auto& [task_id, execution] : executions_)
        execution->describe_workers(workers, now);
    return workers;
}

std::optional<std::string> Executor::running_log_dir(const std::string& task_id, const std::string& node_id) const
{
    const auto it = executions_.find(task_id);
    return it != executions_.end() ? it->second->running_log_dir(node_id) : std::nullopt;
}

std::string Executor::not_ready_reason() const
{
    if (!started_)
        return "the executor has not started (recovery is running)";
    if (stopping_)
        return "the runner is shutting down: it claims no more tasks";
    return "";
}

void Executor::start()
{
    log::notice(std::string("sandbox: user namespace ") + (userns_ ? "on" : "off") + " (" + userns_reason_ +
                "); a loopback-only network namespace per task");
    auto report = remove_stale_workers(parts_.options.state_dir, parts_.cgroups);
    if (report.worker_dirs || report.cgroups || report.killed)
        log::notice("recovery: removed " + std::to_string(report.worker_dirs) + " worker dir(s) and " +
                    std::to_string(report.cgroups) + " cgroup(s) a dead runner left, killing " +
                    std::to_string(report.killed) + " leftover process(es)");
    for (const auto& problem : report.problems)
        log::warning("recovery: " + problem);
    check_default_limits();
    prune_logs();
    started_ = true;
    if (parts_.options.inboxes.empty()) {
        log::info("executor: no inbox to claim from (give --inbox NID or runner.inboxes); serving the API only");
        return;
    }
    resume_own_leases();
    claim_round();
    arm_claim_timer();
}

void Executor::resume_own_leases()
{
    const ExecutorOptions& options = parts_.options;
    auto tasks = parts_.store.list_tasks({.state = proto::TaskState::running, .limit = limits::kMaxTaskListLimit});
    if (!tasks) {
        log::warning("recovery: " + tasks.error().describe());
        return;
    }
    for (const auto& task : *tasks) {
        if (task.lease_owner != options.runner_nid)
            continue;
        // Our own live lease from before a crash: give it back and take it
        // again at once, so the task resumes now instead of when it expires.
        if (auto released = parts_.store.release(task.task_id, options.runner_nid); !released)
            continue;  // it expired meanwhile: the claim loop gets it like any other
        if (std::find(options.inboxes.begin(), options.inboxes.end(), task.nid) == options.inboxes.end())
            continue;
        auto lease = parts_.store.claim({.nid = task.nid,
                                         .runner_nid = options.runner_nid,
                                         .lease_seconds = options.claims.lease_seconds,
                                         .task_id = task.task_id});
        if (lease && *lease) {
            log::notice("recovery: resuming task " + task.task_id + " this runner held before it restarted");
            execute(std::move(**lease));
        }
    }
}

void Executor::arm_claim_timer()
{
    claim_timer_ = parts_.loop.add_timer_after(std::chrono::milliseconds(parts_.options.claims.claim_interval_ms),
                                               [this] {
                                                   claim_timer_ = 0;
                                                   claim_round();
                                                   if (!stopping_)
                                                       arm_claim_timer();
                                               });
}

// Said once at start rather than only in each worker's failure: a default
// limit this host cannot enforce fails every worker that does not set its own
// (unless sandbox.allow_unenforced_limits).
void Executor::check_default_limits() const
{
    const WorkerPolicy& w = parts_.options.workers;
    const bool allowed = parts_.options.allow_unenforced_limits;
    for (auto [controller, value] : {std::pair{"memory", w.default_memory_bytes}, std::pair{"cpu", w.default_cpu_millicores},
                                     std::pair{"pids", w.default_pids}}) {
        if (value == 0 || (parts_.cgroups && !parts_.cgroups->enforced_by(controller).empty()))
            continue;
        const std::string why = parts_.cgroups ? std::string("no ") + controller + " cgroup controller is available"
                                               : std::string("this runner has no usable cgroups");
        if (allowed)
            log::warning("workers: the default " + std::string(controller) + " limit (workers.default_" + controller +
                         ") is not enforced: " + why + "; workers run without it (sandbox.allow_unenforced_limits)");
        else
            log::error("workers: " + cgroup::unenforceable_limit(parts_.cgroups ? controller : "limits", why).message +
                       " — until then every worker fails to start");
    }
}

// Finished workers' logs older than [workers] log_retention_hours go, and
// while all logs together exceed [workers] logs_max_bytes the least recently
// written finished ones go too; on a pool thread (a large logs/ takes a
// while to walk); running workers' logs stay whatever their age and size.
void Executor::prune_logs()
{
    prune_timer_ = parts_.loop.add_timer_after(std::chrono::milliseconds(kLogPruneIntervalMs), [this] {
        prune_timer_ = 0;
        prune_logs();
    });
    run_log_prune();
}

void Executor::worker_logs_closed(const std::string& log_dir)
{
    const std::uint64_t cap = parts_.options.workers.logs_max_bytes;
    if (cap == 0 || stopping_)
        return;
    // A few stat calls: the directory holds 2 × (log_keep + 1) files at most.
    log_bytes_ += supervisor::worker_log_bytes(log_dir);
    prune_logs_for_cap();
}

void Executor::prune_logs_for_cap()
{
    const std::uint64_t cap = parts_.options.workers.logs_max_bytes;
    if (cap == 0 || log_bytes_ <= cap || log_cap_timer_ != 0 || stopping_)
        return;
    const auto next = last_log_prune_ + std::chrono::milliseconds(kLogCapPruneMinIntervalMs);
    if (event::EventLoop::now() >= next) {
        run_log_prune();
        return;
    }
    log_cap_timer_ = parts_.loop.add_timer(next, [this] {
        log_cap_timer_ = 0;
        if (log_bytes_ > parts_.options.workers.logs_max_bytes)
            run_log_prune();
    });
}

void Executor::run_log_prune()
{
    const std::uint32_t hours = parts_.options.workers.log_retention_hours;
    const std::uint64_t cap = parts_.options.workers.logs_max_bytes;
    if ((hours == 0 && cap == 0) || stopping_)
        return;
    if (log_prune_running_) {
        log_prune_again_ = true;
        return;
    }
    log_prune_running_ = true;
    last_log_prune_ = event::EventLoop::now();
    const auto now = std::chrono::system_clock::now();
    supervisor::LogPruneOptions options{
        .cutoff = hours == 0 ? std::chrono::system_clock::time_point::min() : now - std::chrono::hours(hours),
        .max_total_bytes = cap,
        // File times come from the kernel's coarse clock: a margin, so a
        // worker started just after the snapshot below is never taken for
        // a finished one.
        .running_as_of = now - std::chrono::seconds(1),
        .max_removals = limits::kWorkerLogPruneBatch,
    };
    auto names = supervisor_->running_names();
    auto running = std::make_shared<const std::set<std::string>>(names.begin(), names.end());
    auto report = std::make_shared<supervisor::LogPruneReport>();
    jobs_->submit(
        [root = supervisor_->options().log_root, options, running, report] {
            *report = supervisor::prune_worker_logs(root, *running, options);
        },
        [this, report, hours, cap] {
            log_prune_running_ = false;
            log_bytes_ = report->kept_bytes;
            const std::size_t for_age = report->removed - report->removed_for_cap;
            if (for_age > 0)
                log::info("logs: pruned " + std::to_string(for_age) + " finished worker log director" +
                          (for_age == 1 ? "y" : "ies") + " older than " + std::to_string(hours) + " h");
            if (report->removed_for_cap > 0)
                log::info("logs: pruned " + std::to_string(report->removed_for_cap) +
                          " finished worker log director" + (report->removed_for_cap == 1 ? "y" : "ies") +
                          ", oldest first, to keep all worker logs under workers.logs_max_bytes = " +
                          spawn::format_memory_quantity(static_cast<std::int64_t>(cap)) + " (" +
                          std::to_string(report->kept_bytes) + " bytes left)");
            for (const auto& problem : report->problems)
                log::warning("logs: " + problem);
            // Again when asked meanwhile, or when logs too recent to tell
            // from a starting worker's kept it above the cap.
            if (log_prune_again_ || report->spared_recent) {
                log_prune_again_ = false;
                prune_logs_for_cap();
            }
        });
}

void Executor::wake()
{
    jobs_->post([this] { claim_round(); });
}

void Executor::cancelled(const std::string& task_id)
{
    // Counted here, whoever ran the task: a cancelled execution writes no
    // end of its own (the store has it already), and a task cancelled
    // while pending was never ours to run.
    metrics_.count_task(proto::TaskState::cancelled);
    jobs_->post([this, task_id] {
        if (auto it = executions_.find(task_id); it != executions_.end())
            it->second->cancelled_elsewhere();
    });
}

void Executor::claim_round()
{
    const ExecutorOptions& options = parts_.options;
    if (stopping_ || claiming_ || options.inboxes.empty())
        return;
    claiming_ = true;  // execute() may retire a task at once and ask again
    std::size_t idle_inboxes = 0;
    while (executions_.size() < max_tasks_ && idle_inboxes < options.inboxes.size()) {
        const std::string& nid = options.inboxes[next_inbox_ % options.inboxes.size()];
        next_inbox_ = (next_inbox_ + 1) % options.inboxes.size();
        // Our own executions are normally under our live lease, which no
        // head claim takes; one whose lease was lost (lapsed, released) is
        // still winding down and must not be claimed back into a second
        // execution beside it: another runner may take it meanwhile.
        std::vector<std::int64_t> running;
        running.reserve(executions_.size());
        for (const auto& [id, execution] : executions_)
            running.push_back(execution->message_id());
        auto lease = parts_.store.claim({.nid = nid,
                                         .runner_nid = options.runner_nid,
                                         .lease_seconds = options.claims.lease_seconds,
                                         .passing_over = std::move(running)});
        if (!lease) {
            log::warning("executor: claim from " + nid + ": " + lease.error().describe());
            ++idle_inboxes;
            continue;
        }
        if (!*lease) {
            ++idle_inboxes;
            continue;
        }
        idle_inboxes = 0;
        execute(std::move(**lease));
    }
    claiming_ = false;
}

void Executor::execute(store::Lease lease)
{
    auto task = proto::decode_task_frame(lease.message.payload);
    if (!task) {
        // Validated at the door; a frame that no longer decodes (a newer
        // runner's extension?) fails rather than looping through claims.
        store::TaskOutcome outcome{.state = proto::TaskState::failed,
                                   .error_code =
                                       task.error().code.empty() ? proto::code::kNopTaskDagInvalid : task.error().code,
                                   .error_message = task.error().describe()};
        if (auto done = parts_.store.complete(lease.task_id, lease.runner_nid, outcome); !done)
            log::warning("task " + lease.task_id + ": " + done.error().describe());
        return;
    }
    const std::string task_id = lease.task_id;
    if (executions_.contains(task_id)) {
        // Not claimable while ours runs (claim_round passes over it): a
        // store that ignored that would have us run the task twice here.
        log::error("task " + task_id + ": claimed again while its earlier execution still runs; left to its lease");
        return;
    }
    ++(lease.outcome == store::ClaimOutcome::reclaimed ? metrics_.claims_reclaimed : metrics_.claims_granted);
    log::info("task " + task_id + ": " + store::to_string(lease.outcome) + " (claim " + std::to_string(lease.claims) +
              "), " + std::to_string(task->dag.nodes.size()) + " node(s)");
    auto execution = std::make_unique<TaskExecution>(*context_, std::move(lease), std::move(*task),
                                                     [this](const std::string& id) { retired(id); });
    TaskExecution& started = *execution;
    executions_[task_id] = std::move(execution);
    metrics_.tasks_running = static_cast<std::int64_t>(executions_.size());
    metrics_.leases_live = metrics_.tasks_running.load();
    started.start();
}

void Executor::retired(const std::string& task_id)
{
    executions_.erase(task_id);
    metrics_.tasks_running = static_cast<std::int64_t>(executions_.size());
    metrics_.leases_live = metrics_.tasks_running.load();
    if (stopping_) {
        if (executions_.empty()) {
            parts_.loop.cancel_timer(std::exchange(grace_timer_, 0));
            if (warm_idle_ && stopped_)
                std::exchange(stopped_, nullptr)();
        }
        return;
    }
    claim_round();
}

void Executor::begin_shutdown(std::function<void()> stopped)
{
    if (stopping_) {
        end_grace();
        return;
    }
    stopping_ = true;
    stopped_ = std::move(stopped);
    parts_.loop.cancel_timer(std::exchange(claim_timer_, 0));
    // Its process killed and its rootfs released before the executor goes.
    warm_->shut_down([this] {
        warm_idle_ = true;
        if (executions_.empty() && stopped_)
            std::exchange(stopped_, nullptr)();
    });
    if (executions_.empty())
        return;
    log::info("executor: waiting up to " + std::to_string(parts_.options.claims.shutdown_grace_seconds) + " s for " +
              std::to_string(executions_.size()) + " running task(s)");
    grace_timer_ = parts_.loop.add_timer_after(std::chrono::seconds(parts_.options.claims.shutdown_grace_seconds),
                                               [this] {
                                                   grace_timer_ = 0;
                                                   end_grace();
                                               });
}

void Executor::end_grace()
{
    parts_.loop.cancel_timer(std::exchange(grace_timer_, 0));
    std::vector<TaskExecution*> running;
    for (auto& [id, execution] : executions_)
        running.push_back(execution.get());
    if (!running.empty())
        log::notice("executor: stopping " + std::to_string(running.size()) + " task(s) still running");
    for (auto* execution : running)
        execution->shut_down();
}

}  // namespace nps::executor
