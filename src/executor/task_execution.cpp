// SPDX-License-Identifier: Apache-2.0
#include "task_execution.hpp"

#include <unistd.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "delegate_frame.hpp"
#include "nps/base/log.hpp"
#include "nps/base/time_format.hpp"
#include "nps/image/image_store.hpp"
#include "nps/proto/error_codes.hpp"
#include "nps/proto/runtime_failure.hpp"
#include "warm_start.hpp"
#include "worker_spec.hpp"

namespace nps::executor {

namespace {

// Progress events: at most one a second per node, their data kept up to 4 KiB
// (docs/api.md "Progress").
constexpr std::chrono::seconds kProgressInterval{1};
constexpr std::size_t kMaxProgressEventBytes = 4096;

// Retryable only when the error is a runtime failure that says so
// (proto/runtime_failure.hpp).
nop::AttemptOutcome failure(const Error& error)
{
    return {.status = nop::AttemptStatus::failure,
            .error_code = error.code.empty() ? proto::code::kNpsServerInternal : error.code,
            .error_message = error.describe(),
            .retryable = error.retryable};
}

nop::AttemptOutcome from_worker(const supervisor::WorkerOutcome& o)
{
    nop::AttemptOutcome out;
    out.killed_reason = std::string(supervisor::to_string(o.killed_reason));
    if (o.state == supervisor::WorkerState::completed) {
        out.status = nop::AttemptStatus::success;
        out.result_json = o.result_json;
        return out;
    }
    out.status = nop::AttemptStatus::failure;
    out.error_code = o.error_code;
    out.error_message = o.error_message;
    out.retryable = o.state == supervisor::WorkerState::failed && o.retryable;
    return out;
}

// Mapped params above this size are left out of the worker event.
constexpr std::size_t kEventParamsMaxBytes = 16 * 1024;

// The worker's end (docs/executor.md "Events"): its state, exit, and its
// timeline on the wall clock (dispatched: its rootfs and limits being
// prepared; started: its process spawned; ended), merged with what the
// attempt was given (`attempt_detail`: attempt, compensation, params, image,
// limits).
std::string worker_event_detail(const supervisor::WorkerOutcome& o, std::int64_t dispatched_at_ms,
                                const nlohmann::json& attempt_detail)
{
    nlohmann::json detail = attempt_detail;
    detail.update({
        {"state", std::string(supervisor::to_string(o.state))},
        {"duration_ms", std::chrono::duration_cast<std::chrono::milliseconds>(o.ended - o.started).count()},
        {"dispatched_at_ms", dispatched_at_ms},
        {"started_at_ms", o.started_at_ms},
        {"ended_at_ms", o.ended_at_ms},
    });
    if (!o.error_code.empty())
        detail["error_code"] = o.error_code;
    if (o.killed_reason != supervisor::KilledReason::none)
        detail["killed_reason"] = std::string(supervisor::to_string(o.killed_reason));
    if (o.exit_code)
        detail["exit_code"] = *o.exit_code;
    if (o.signal)
        detail["signal"] = *o.signal;
    if (!o.log_dir.empty())
        detail["log_dir"] = o.log_dir;
    return detail.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// A worker's limits in force, as GET /v1/workers and the worker event show them.
nlohmann::json worker_limits_json(const supervisor::WorkerStatus& status)
{
    using Json = nlohmann::json;
    const auto number = [](const auto& value) { return value ? Json(*value) : Json(nullptr); };
    const auto seconds = [](const std::optional<std::chrono::milliseconds>& d) {
        return d && d->count() > 0 ? Json(d->count() / 1000.0) : Json(nullptr);
    };
    return {{"memory_bytes", number(status.limits.memory_bytes)},
            {"cpu_millicores", number(status.limits.cpu_millicores)},
            {"pids", number(status.limits.pids_max)},
            {"idle_timeout_seconds", seconds(status.lifecycle.idle_timeout)},
            {"max_runtime_seconds", seconds(status.lifecycle.max_runtime)}};
}

// What an attempt was given, for its worker event.
nlohmann::json attempt_detail(const nop::Attempt& attempt, const std::string& image)
{
    nlohmann::json detail = {{"attempt", attempt.number}, {"compensation", attempt.compensation}, {"image", image}};
    if (attempt.params_json.size() > kEventParamsMaxBytes)
        detail["params_truncated"] = true;
    else
        detail["params"] = nlohmann::json::parse(attempt.params_json, nullptr, /*allow_exceptions=*/false);
    return detail;
}

}  // namespace

struct TaskExecution::Slot {
    nop::Attempt attempt;
    std::uint64_t serial = 0;
    std::optional<supervisor::WorkerId> worker;
    std::unique_ptr<PreparedWorker> prepared;  // held while the worker runs
    bool stop_requested = false;
    event::EventLoop::TimePoint dispatched{};
    std::int64_t dispatched_at_ms = 0;  // the same, on the wall clock (ctx_.clock)
    nlohmann::json detail;              // for its worker event: attempt_detail(), limits once started
    // Progress frames become "<node>:progress" events, one per
    // kProgressInterval at most: the newest frame not yet written waits
    // here for the timer (or the attempt's end).
    std::optional<std::pair<std::uint64_t, std::string>> progress_pending;
    event::EventLoop::TimePoint progress_written{};
    event::EventLoop::TimerId progress_timer = 0;
};

TaskExecution::TaskExecution(ExecutionContext& context, store::Lease lease, proto::TaskFrame task, Retired retired)
    : ctx_(context), lease_(std::move(lease)), task_(std::move(task)), retired_(std::move(retired))
{
}

TaskExecution::~TaskExecution()
{
    *alive_ = false;
    ctx_.loop.cancel_timer(renew_timer_);
    ctx_.loop.cancel_timer(write_timer_);
    ctx_.loop.cancel_timer(record_timer_);
    for (auto id : timers_)
        ctx_.loop.cancel_timer(id);
}

void TaskExecution::describe_workers(nlohmann::json& into, std::int64_t now_ms) const
{
    using Json = nlohmann::json;
    const auto optional_number = [](const auto& value) { return value ? Json(*value) : Json(nullptr); };
    for (const auto& [node_id, slot] : slots_) {
        if (!slot->worker)
            continue;
        auto status = ctx_.supervisor.status(*slot->worker);
        if (!status)
            continue;
        into.push_back({
            {"task_id", task_id()},
            {"node_id", node_id},
            {"attempt", slot->attempt.number},
            {"compensation", slot->attempt.compensation},
            {"agent", slot->attempt.agent},
            {"image", slot->prepared ? Json(slot->prepared->resolution.spec.image) : Json(nullptr)},
            {"worker", status->name},
            {"pid", optional_number(status->pid)},
            {"state", !status->pid ? "queued" : status->stopping ? "stopping" : "running"},
            {"started_at", status->started_at_ms ? Json(format_rfc3339_ms(status->started_at_ms)) : Json(nullptr)},
            {"uptime_seconds", status->started_at_ms ? Json((now_ms - status->started_at_ms) / 1000.0) : Json(nullptr)},
            {"memory_bytes", optional_number(status->memory_bytes)},
            {"cpu_seconds", status->cpu_usec ? Json(static_cast<double>(*status->cpu_usec) / 1e6) : Json(nullptr)},
            {"limits", worker_limits_json(*status)},
        });
    }
}

std::optional<std::string> TaskExecution::running_log_dir(const std::string& node_id) const
{
    const auto it = slots_.find(node_id);
    if (it == slots_.end() || !it->second->worker)
        return std::nullopt;
    const auto status = ctx_.supervisor.status(*it->second->worker);
    if (!status || !status->pid || ctx_.supervisor.options().log_root.empty())
        return std::nullopt;
    return ctx_.supervisor.options().log_root + "/" + status->name;
}

void TaskExecution::start()
{
    nop::RunOptions options{.mode = ctx_.options.claims.conformance ? nop::Mode::conformance : nop::Mode::production,
                            .max_parallel = ctx_.supervisor.options().max_concurrent,
                            .clock = &ctx_.clock};
    if (auto prior = ctx_.store.node_results(task_id()); prior) {
        for (const auto& r : *prior) {
            if (r.dedup_key != lease_.dedup_key || !proto::is_terminal(r.state))
                continue;
            options.prior.push_back({.node_id = r.node_id,
                                     .state = r.state,
                                     .attempts = r.attempts,
                                     .error_code = r.error_code,
                                     .error_message = r.error_message,
                                     .result_json = r.result_json,
                                     .killed_reason = r.killed_reason});
        }
    } else {
        log::warning("task " + task_id() + ": " + prior.error().describe() + "; running every node",
                     {.task_id = task_id()});
    }
    if (!options.prior.empty())
        log::info("task " + task_id() + ": resuming after " + std::to_string(options.prior.size()) +
                  " node(s) an earlier claim finished", {.task_id = task_id()});
    run_ = std::make_unique<nop::TaskRun>(task_, *this, std::move(options));
    // claimed_ is a little after the claim was asked for: the margin covers it.
    lease_sure_until_ = claimed_ + std::chrono::seconds(ctx_.options.claims.lease_seconds);
    renew_timer_ = ctx_.loop.add_timer_after(std::chrono::milliseconds(ctx_.options.claims.lease_seconds * 1000 / 3),
                                             [this] { renew_lease(); });
    run_->start();
}

// --- attempts ------------------------------------------------------------------

void TaskExecution::dispatch(const nop::Attempt& attempt)
{
    write_node_records_now();
    auto slot = std::make_unique<Slot>();
    slot->attempt = attempt;
    slot->serial = next_serial_++;
    slot->dispatched = event::EventLoop::now();
    slot->dispatched_at_ms = ctx_.clock.now_ms();
    const std::uint64_t serial = slot->serial;
    slots_[attempt.node_id] = std::move(slot);
    ++outstanding_;
    ++ctx_.metrics.workers_running;

    if (first_agent_.empty())
        first_agent_ = attempt.agent;

    if (auto ahead = take_ahead(attempt.agent)) {
        launch_ahead(attempt, serial, std::move(ahead));
    } else if (auto warm = netns_ || !ctx_.warm ? std::nullopt : ctx_.warm->take(attempt.agent)) {
        // The task's first worker: one kept warm since the previous task
        // (its process is in the namespace it came with).
        launch_warm(attempt.node_id, serial, std::move(*warm));
    } else {
        auto prepared = std::make_shared<std::optional<Prepared>>();
        ctx_.jobs.submit(
            [prepared, launch = ctx_.launch, agent = attempt.agent, name = next_worker_name(),
             policy = ctx_.options.workers, userns = ctx_.userns] {
                *prepared = prepare_worker(launch, agent, name, policy, userns);
            },
            [this, node = attempt.node_id, serial, prepared] { prepared_for(node, serial, std::move(**prepared)); });
    }
}

void TaskExecution::prepared_for(const std::string& node_id, std::uint64_t serial, Prepared prepared,
                                 std::optional<supervisor::WorkerId> held)
{
    if (!prepared) {
        finish_attempt(node_id, serial, failure(prepared.error()));
        return;
    }
    launch(node_id, serial, std::move(*prepared), held);
}

TaskExecution::Slot* TaskExecution::slot_of(const std::string& node_id, std::uint64_t serial)
{
    const auto it = slots_.find(node_id);
    return it != slots_.end() && it->second->serial == serial ? it->second.get() : nullptr;
}

Result<supervisor::WorkerSpec> TaskExecution::worker_spec(const PreparedWorker& prepared)
{
    // The task's own loopback-only network namespace, taken at its first
    // worker and given up when the execution retires (after its last worker).
    if (!netns_) {
        auto netns = ctx_.netns_pool->take();
        if (!netns)
            return proto::runtime_failure(proto::RuntimeFailure::sandbox_unavailable,
                                          "Failed to make the network namespace of task '" + task_id() +
                                              "': " + netns.error().describe());
        netns_.emplace(std::move(*netns));
    }
    return worker_spec_for(ctx_, prepared, netns_->fd());
}

void TaskExecution::launch(const std::string& node_id, std::uint64_t serial, std::unique_ptr<PreparedWorker> prepared,
                           std::optional<supervisor::WorkerId> held)
{
    auto it = slots_.find(node_id);
    if (it == slots_.end() || it->second->serial != serial || abandoned_ || it->second->stop_requested) {
        if (held)
            drop_held(*held, std::move(prepared));
        finish_attempt(
            node_id, serial,
            failure(protocol_error(proto::code::kNopTaskCancelled, "stopped before the worker started")));
        return;
    }
    Slot& slot = *it->second;
    auto made = worker_spec(*prepared);
    if (!made) {
        if (held)
            drop_held(*held, std::move(prepared));
        finish_attempt(node_id, serial, failure(made.error()));
        return;
    }
    supervisor::WorkerSpec worker = std::move(*made);
    const spawn::SpawnSpec& spec = prepared->resolution.spec;
    worker.delegate_frame = make_delegate_frame(task_, slot.attempt, spec.cgn_budget);
    worker.attempt = slot.attempt.number;
    slot.detail = attempt_detail(slot.attempt, spec.image);

    supervisor::WorkerCallbacks callbacks{
        .on_outcome =
             [this, node_id, serial](const supervisor::WorkerOutcome& outcome) {
                 log_worker_end(node_id, serial, outcome);
                 count_worker(node_id, serial, outcome);
                 if (ctx_.worker_logs_closed && !outcome.log_dir.empty())
                     ctx_.worker_logs_closed(outcome.log_dir);
                 flush_progress(node_id, serial);
                 if (!abandoned_) {
                     const Slot* mine = slot_of(node_id, serial);
                     on_event(node_id + ":worker",
                              worker_event_detail(outcome, mine ? mine->dispatched_at_ms : 0,
                                                  mine ? mine->detail : nlohmann::json::object()));
                 }
                 finish_attempt(node_id, serial, from_worker(outcome));
             },
         .on_progress = [this, node_id, serial](supervisor::WorkerId, std::uint64_t seq,
                                                const std::string& data_json) {
             progress(node_id, serial, seq, data_json);
         },
         .on_started = [this, node_id, serial](supervisor::WorkerId started, pid_t pid) {
             log_worker_start(node_id, serial, pid);
             Slot* mine = slot_of(node_id, serial);
             if (const auto status = ctx_.supervisor.status(started); status && mine)
                 mine->detail["limits"] = worker_limits_json(*status);
         }};
    // With a held process the supervisor drops it itself if unfit (or if it refuses the worker).
    auto id = held ? ctx_.supervisor.start(std::move(worker), std::move(callbacks), *held)
                   : ctx_.supervisor.start(std::move(worker), std::move(callbacks));
    if (!id) {
        finish_attempt(
            node_id, serial,
            failure(proto::runtime_failure(proto::RuntimeFailure::sandbox_unavailable,
                                           "Failed to start the worker of node '" + node_id +
                                               "': " + id.error().describe())));
        return;
    }
    slot.worker = *id;
    slot.prepared = std::move(prepared);
}

// Worker starts and ends are logged here, once each (the loop owner's
// log; docs/executor.md "Logs"): a start names the attempt (a retry when
// above 1), an end its state and why.
void TaskExecution::log_worker_start(const std::string& node_id, std::uint64_t serial, pid_t pid) const
{
    const auto it = slots_.find(node_id);
    if (it == slots_.end() || it->second->serial != serial || !it->second->worker)
        return;
    const Slot& slot = *it->second;
    const auto status = ctx_.supervisor.status(*slot.worker);
    const std::string name = status ? status->name : std::string();
    const std::string& agent = slot.attempt.agent;
    std::string what = slot.attempt.compensation ? "compensation worker " : "worker ";
    what += name + " started, pid " + std::to_string(pid);
    if (slot.attempt.number > 1)
        what += ", retry " + std::to_string(slot.attempt.number - 1) + " (attempt " +
                std::to_string(slot.attempt.number) + ")";
    log::info("task " + task_id() + ": node " + node_id + ": " + what + ", agent " + agent,
              {.task_id = task_id(), .node_id = node_id, .worker = name, .agent = agent});
}

void TaskExecution::log_worker_end(const std::string& node_id, std::uint64_t serial,
                                   const supervisor::WorkerOutcome& o) const
{
    const auto it = slots_.find(node_id);
    if (it == slots_.end() || it->second->serial != serial)
        return;
    const Slot& slot = *it->second;
    const auto status = slot.worker ? ctx_.supervisor.status(*slot.worker) : std::nullopt;
    const std::string name = o.log_dir.empty() ? (status ? status->name : std::string())
                                               : o.log_dir.substr(o.log_dir.rfind('/') + 1);
    std::string what = "worker " + name + " ended " + std::string(supervisor::to_string(o.state));
    if (!o.error_code.empty())
        what += " " + o.error_code;
    if (o.killed_reason != supervisor::KilledReason::none)
        what += " (killed: " + std::string(supervisor::to_string(o.killed_reason)) + ")";
    else if (o.exit_code)
        what += " (exit status " + std::to_string(*o.exit_code) + ")";
    else if (o.signal)
        what += " (signal " + std::to_string(*o.signal) + ")";
    what += " after " +
            std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(o.ended - o.started).count()) + " ms";
    const log::Context context{.task_id = task_id(), .node_id = node_id, .worker = name, .agent = slot.attempt.agent};
    const std::string line = "task " + task_id() + ": node " + node_id + ": " + what;
    if (o.state == supervisor::WorkerState::completed)
        log::info(line, context);
    else
        log::notice(line, context);
}

void TaskExecution::progress(const std::string& node_id, std::uint64_t serial, std::uint64_t seq,
                             const std::string& data_json)
{
    auto it = slots_.find(node_id);
    if (it == slots_.end() || it->second->serial != serial || abandoned_)
        return;
    Slot& slot = *it->second;
    slot.progress_pending.emplace(seq, data_json);
    if (slot.progress_timer)
        return;  // the newest frame goes out when it fires
    const auto due = slot.progress_written + kProgressInterval;
    if (event::EventLoop::now() >= due)
        return flush_progress(node_id, serial);
    slot.progress_timer = ctx_.loop.add_timer(due, [this, node_id, serial] {
        if (auto found = slots_.find(node_id); found != slots_.end() && found->second->serial == serial)
            found->second->progress_timer = 0;
        flush_progress(node_id, serial);
    });
}

void TaskExecution::flush_progress(const std::string& node_id, std::uint64_t serial)
{
    auto it = slots_.find(node_id);
    if (it == slots_.end() || it->second->serial != serial)
        return;
    Slot& slot = *it->second;
    ctx_.loop.cancel_timer(std::exchange(slot.progress_timer, 0));
    if (!slot.progress_pending || abandoned_)
        return;
    auto [seq, data] = *std::exchange(slot.progress_pending, std::nullopt);
    slot.progress_written = event::EventLoop::now();
    nlohmann::json detail = {{"attempt", slot.attempt.number}, {"seq", seq}};
    if (data.size() <= kMaxProgressEventBytes)
        detail["data"] = nlohmann::json::parse(data, nullptr, /*allow_exceptions=*/false);
    if (detail["data"].is_discarded() || data.size() > kMaxProgressEventBytes) {
        detail["data"] = nullptr;
        detail["data_bytes"] = data.size();  // too big to keep in the event log
    }
    on_event(node_id + ":progress", detail.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

void TaskExecution::count_worker(const std::string& node_id, std::uint64_t serial,
                                 const supervisor::WorkerOutcome& outcome)
{
    ExecutorMetrics& m = ctx_.metrics;
    auto it = slots_.find(node_id);
    if (it != slots_.end() && it->second->serial == serial && outcome.started > it->second->dispatched &&
        outcome.ended > outcome.started)
        m.start.observe(static_cast<std::uint64_t>(
            std::chrono::duration_cast<std::chrono::microseconds>(outcome.started - it->second->dispatched).count()));
    if (outcome.killed_reason == supervisor::KilledReason::idle_timeout)
        ++m.timeouts_idle;
    else if (outcome.killed_reason == supervisor::KilledReason::max_runtime)
        ++m.timeouts_max_runtime;
    if (outcome.oom_killed)
        ++m.oom_kills;
}

void TaskExecution::finish_attempt(const std::string& node_id, std::uint64_t serial, nop::AttemptOutcome outcome)
{
    --outstanding_;
    --ctx_.metrics.workers_running;
    std::unique_ptr<Slot> slot;
    if (auto it = slots_.find(node_id); it != slots_.end() && it->second->serial == serial) {
        slot = std::move(it->second);
        slots_.erase(it);
    }
    if (slot)
        ctx_.loop.cancel_timer(slot->progress_timer);
    if (slot && slot->prepared) {
        // Unmounting and removing the worker's directories takes a few ms:
        // off the loop, so the next node does not wait for it.
        auto released = std::make_shared<std::optional<Result<void>>>();
        ctx_.jobs.submit(
            [released, prepared = std::shared_ptr<PreparedWorker>(std::move(slot->prepared))] {
                *released = prepared->release();
            },
            [released, where = "task " + task_id() + " node " + node_id] {
                if (*released && !**released)
                    log::warning(where + ": " + (*released)->error().describe());
            });
    }
    if (slot && run_ && !ended_)
        run_->attempt_finished(node_id, outcome);
    maybe_retire();
}

void TaskExecution::stop(const std::string& node_id)
{
    auto it = slots_.find(node_id);
    if (it == slots_.end())
        return;
    it->second->stop_requested = true;
    if (it->second->worker)
        ctx_.supervisor.cancel(*it->second->worker, supervisor::StopReason::cancelled);
}

void TaskExecution::stop_all(bool at_once)
{
    for (auto& [node, slot] : slots_) {
        slot->stop_requested = true;
        if (!slot->worker)
            continue;
        if (at_once)
            ctx_.supervisor.kill(*slot->worker);
        else
            ctx_.supervisor.cancel(*slot->worker, supervisor::StopReason::shutdown);
    }
}

void TaskExecution::preflight(const std::vector<std::pair<std::string, std::string>>& probes)
{
    ++outstanding_;
    auto rejection = std::make_shared<std::optional<Error>>();
    ctx_.jobs.submit(
        [rejection, probes, launch = ctx_.launch, policy = ctx_.options.workers] {
            for (const auto& [agent, action] : probes) {
                auto resolution = resolve_agent_spec(launch, agent, policy);
                Result<void> ready = resolution ? Result<void>() : Result<void>(resolution.error());
                if (ready) {
                    auto images = borrow_image_store(launch);
                    ready = images ? ensure_image(launch, **images, resolution->spec.image)
                                   : Result<void>(images.error());
                }
                if (!ready) {
                    *rejection = protocol_error(proto::code::kNopResourceInsufficient,
                                                "Preflight of agent '" + agent + "' for '" + action +
                                                    "': " + ready.error().describe());
                    return;
                }
            }
        },
        [this, rejection] {
            --outstanding_;
            if (run_ && !ended_)
                run_->preflight_finished(*rejection);
            maybe_retire();
        });
}

nop::TaskHost::TimerId TaskExecution::start_timer(std::chrono::milliseconds delay, std::function<void()> fire)
{
    auto key = std::make_shared<TimerId>(0);
    *key = ctx_.loop.add_timer_after(delay, [this, key, fire = std::move(fire)] {
        timers_.erase(*key);
        fire();
    });
    timers_.insert(*key);
    return *key;
}

void TaskExecution::cancel_timer(TimerId id)
{
    timers_.erase(id);
    ctx_.loop.cancel_timer(id);
}

}  // namespace nps::executor
