// SPDX-License-Identifier: Apache-2.0
// How a worker ends: its limits (timers evaluated with evaluate_lifecycle),
// the settlement of its node (final frame, breach, protocol violation), the
// stop sequence, the kill, the reaping, and the one outcome.
#include <signal.h>
#include <string.h>

#include "nps/base/log.hpp"
#include "nps/proto/error_codes.hpp"
#include "nps/supervisor/supervisor.hpp"
#include "refilled_pool.hpp"
#include "worker.hpp"

namespace nps::supervisor {

namespace {

std::string millis(std::chrono::milliseconds d)
{
    const auto ms = d.count();
    if (ms % 1000 == 0)
        return std::to_string(ms / 1000) + " s";
    return std::to_string(ms) + " ms";
}

std::string signal_name(int sig)
{
    const char* abbrev = ::sigabbrev_np(sig);
    return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

}  // namespace

Settlement runtime_settlement(proto::RuntimeFailure failure, std::string message, KilledReason reason)
{
    const proto::RuntimeFailureInfo info = proto::describe(failure);
    return {.error_code = info.code,
            .error_message = std::move(message),
            .retryable = info.retryable,
            .killed_reason = reason};
}

LifecycleInput Supervisor::lifecycle_now(const Worker& w, WorkerReport report) const
{
    const auto now = event::EventLoop::now();
    return {.elapsed = now - w.started, .idle = now - w.last_activity, .limits = w.limits, .report = report};
}

void Supervisor::arm_idle_timer(Worker& w)
{
    if (!w.limits.idle_timeout)
        return;
    // Armed for the last activity + the limit; reads only move last_activity,
    // and the timer, when it fires early by that measure, re-arms itself. So
    // output costs no timer system call.
    w.idle_timer = loop_.add_timer(w.last_activity + *w.limits.idle_timeout, [this, &w] { on_idle_timer(w); });
}

void Supervisor::on_idle_timer(Worker& w)
{
    w.idle_timer = 0;
    if (w.settlement || w.stop_reason || w.exited)
        return;
    const LifecycleDecision decision = evaluate_lifecycle(lifecycle_now(w, WorkerReport::running));
    if (decision.breached())
        settle_breach(w, decision);
    else
        arm_idle_timer(w);
}

void Supervisor::on_max_runtime(Worker& w)
{
    w.max_timer = 0;
    if (w.settlement || w.stop_reason || w.exited)
        return;
    const LifecycleDecision decision = evaluate_lifecycle(lifecycle_now(w, WorkerReport::running));
    if (decision.breached())
        settle_breach(w, decision);
}

void Supervisor::settle_breach(Worker& w, const LifecycleDecision& decision)
{
    if (decision.killed_reason == KilledReason::max_runtime)
        w.settlement = runtime_settlement(proto::RuntimeFailure::max_runtime,
                                          "the worker ran longer than its maximum runtime of " +
                                              millis(*w.limits.max_runtime),
                                          decision.killed_reason);
    else
        w.settlement = runtime_settlement(proto::RuntimeFailure::idle_timeout,
                                          "the worker wrote nothing to stdout or stderr for its idle timeout of " +
                                              millis(*w.limits.idle_timeout),
                                          decision.killed_reason);
    kill_now(w);
}

void Supervisor::settle_violation(Worker& w, const Error& error)
{
    w.settlement = runtime_settlement(proto::RuntimeFailure::protocol_violation, "protocol violation: " + error.message);
    w.settlement->error_code = error.code;  // the violation's own code
    kill_now(w);
}

void Supervisor::settle_final(Worker& w, const StreamEvent& event)
{
    const bool done = event.kind == StreamEvent::Kind::final_data;
    const LifecycleDecision decision =
        evaluate_lifecycle(lifecycle_now(w, done ? WorkerReport::done : WorkerReport::failed));
    if (decision.breached() && !w.stop_reason) {
        settle_breach(w, decision);  // the answer came too late
        return;
    }
    Settlement s;
    if (done) {
        s.state = WorkerState::completed;
        s.result_json = event.data_json;
    } else {
        s.state = w.stop_reason == StopReason::cancelled ? WorkerState::cancelled : WorkerState::failed;
        s.error_code = event.error.code;
        s.error_message = event.error.message;
        s.retryable = event.error.retryable;
    }
    w.settlement = std::move(s);
    if (w.exited)
        return;
    // The answer is in; the worker gets stop_grace to exit on its own, with
    // EOF on stdin as the hint, before the group is killed.
    loop_.cancel_timer(std::exchange(w.idle_timer, 0));
    loop_.cancel_timer(std::exchange(w.max_timer, 0));
    loop_.cancel_timer(std::exchange(w.stop_timer, 0));
    close_stdin(w);
    w.stop_timer = loop_.add_timer_after(options_.stop_grace, [this, &w] {
        w.stop_timer = 0;
        kill_now(w);
    });
}

void Supervisor::on_stop_step(Worker& w)
{
    w.stop_timer = 0;
    if (w.exited || w.killed)
        return;
    if (w.stop_stage == StopStage::frame_sent) {
        // To the worker's first process only, as `docker stop` does. Being
        // its pid namespace's init, it gets SIGTERM only if it handles it.
        if (auto sent = w.child.kill(SIGTERM); !sent)
            w.warnings.push_back(sent.error().describe());
        w.stop_stage = StopStage::term_sent;
        w.stop_timer = loop_.add_timer_after(options_.stop_grace, [this, &w] { on_stop_step(w); });
        return;
    }
    w.stop_stage = StopStage::kill_sent;
    kill_now(w);
}

void Supervisor::kill_now(Worker& w)
{
    loop_.cancel_timer(std::exchange(w.idle_timer, 0));
    loop_.cancel_timer(std::exchange(w.max_timer, 0));
    loop_.cancel_timer(std::exchange(w.stop_timer, 0));
    if (w.killed || w.exited)
        return;
    w.killed = true;
    w.killed_at = event::EventLoop::now();
    // The whole group at once (no fork can outrun cgroup.kill); the pidfd
    // kill also covers a worker without a cgroup, whose pid namespace dies
    // with its first process. Reaping happens when the pidfd says so.
    if (w.cgroup) {
        if (auto killed = w.cgroup->kill_all(); !killed)
            w.warnings.push_back(killed.error().describe());
    }
    if (auto killed = w.child.kill(SIGKILL); !killed)
        w.warnings.push_back(killed.error().describe());
}

void Supervisor::on_exit(Worker& w)
{
    loop_.remove_fd(w.child.pidfd());
    w.exited = true;
    loop_.cancel_timer(std::exchange(w.idle_timer, 0));
    loop_.cancel_timer(std::exchange(w.max_timer, 0));
    loop_.cancel_timer(std::exchange(w.stop_timer, 0));
    // Nothing of the worker outlives its first process: the kernel has
    // killed the rest of its pid namespace; the cgroup kill is for the
    // record (and for processes that left the namespace, which cannot happen
    // with our seccomp filter, but costs one write).
    if (w.cgroup) {
        if (auto killed = w.cgroup->kill_all(); !killed)
            w.warnings.push_back(killed.error().describe());
    }
    auto status = w.child.wait();
    drain(w, LogStream::out);
    drain(w, LogStream::err);
    std::optional<sandbox::ExitStatus> exit;
    if (status)
        exit = *status;
    else
        w.warnings.push_back(status.error().describe());
    WorkerOutcome outcome = build_outcome(w, exit);
    release(w);
    outcome.warnings = std::move(w.warnings);
    finish(w.id, std::move(outcome));
}

WorkerOutcome Supervisor::build_outcome(Worker& w, const std::optional<sandbox::ExitStatus>& status)
{
    WorkerOutcome o;
    o.id = w.id;
    o.ended = event::EventLoop::now();
    o.started = w.started != event::EventLoop::TimePoint{} ? w.started : o.ended;
    o.ended_at_ms = options_.clock->now_ms();
    o.started_at_ms = w.started_at_ms ? w.started_at_ms : o.ended_at_ms;
    o.killed = w.killed_at;
    o.frames = w.decoder.frames();
    o.details_json = "{}";
    if (status && status->exited) {
        o.exit_code = status->code;
        o.details_json = "{\"exit_code\":" + std::to_string(status->code) + "}";
    } else if (status) {
        o.signal = status->signal;
        o.details_json = "{\"signal\":" + std::to_string(status->signal) + "}";
    }
    if (w.cgroup) {
        auto oom = w.cgroup->oom_killed();
        o.oom_killed = oom && *oom;
    }

    Settlement s;
    if (w.settlement) {
        s = *w.settlement;
    } else if (w.stop_reason == StopReason::shutdown) {
        s = runtime_settlement(proto::RuntimeFailure::shutdown, "the runner shut down while the worker ran",
                               KilledReason::shutdown);
    } else if (w.stop_reason == StopReason::cancelled) {
        const bool forced = w.stop_stage == StopStage::term_sent || w.stop_stage == StopStage::kill_sent;
        s = {.state = WorkerState::cancelled,
             .error_code = proto::code::kNopTaskCancelled,
             .error_message = forced ? "cancelled; the worker did not stop on the cancel frame and was signalled"
                                     : "cancelled; the worker exited without a final frame",
             .killed_reason = forced ? KilledReason::signal : KilledReason::none};
    } else if (!status) {
        s = runtime_settlement(proto::RuntimeFailure::status_unknown, "the worker's exit status is unknown");
    } else {
        // The worker ended on its own. A plain command's exit is its report.
        const bool clean = status->exited && status->code == 0;
        const LifecycleDecision d =
            evaluate_lifecycle(lifecycle_now(w, clean ? WorkerReport::done : WorkerReport::failed));
        if (d.breached()) {
            const bool max_runtime = d.killed_reason == KilledReason::max_runtime;
            s = runtime_settlement(
                max_runtime ? proto::RuntimeFailure::max_runtime : proto::RuntimeFailure::idle_timeout,
                std::string("the worker ended after its ") + (max_runtime ? "maximum runtime" : "idle timeout"),
                d.killed_reason);
        } else if (clean && o.frames == 0) {
            s = {.state = WorkerState::completed, .result_json = "{\"exit_code\":0}"};
        } else if (clean) {
            s = runtime_settlement(proto::RuntimeFailure::no_final_frame,
                                   "the worker exited with status 0 after " + std::to_string(o.frames) +
                                       " frame(s) but no final frame");
        } else if (o.oom_killed) {
            s = runtime_settlement(
                proto::RuntimeFailure::out_of_memory,
                "the kernel's OOM killer killed a process of the worker: it reached its memory limit",
                KilledReason::oom);
        } else if (status->exited) {
            s = runtime_settlement(proto::RuntimeFailure::exit_status,
                                   "the worker exited with status " + std::to_string(status->code),
                                   KilledReason::exit_status);
        } else {
            s = runtime_settlement(proto::RuntimeFailure::killed_by_signal,
                                   "the worker was killed by " + signal_name(status->signal), KilledReason::signal);
        }
    }
    o.state = s.state;
    o.result_json = std::move(s.result_json);
    o.error_code = std::move(s.error_code);
    o.error_message = std::move(s.error_message);
    o.retryable = s.retryable;
    o.killed_reason = s.killed_reason;

    if (!options_.log_root.empty() && w.started != event::EventLoop::TimePoint{}) {
        o.log_dir = options_.log_root + "/" + w.name;
        w.err_log.close();
        if (auto tail = read_log_tail(w.err_log.path(), limits::kWorkerOutcomeTailBytes); tail)
            o.stderr_tail = std::move(*tail);
        else
            w.warnings.push_back(tail.error().describe());
    }
    for (const RotatingLog* log : {&w.out_log, &w.err_log}) {
        if (log->error())
            w.warnings.push_back(log->error()->describe());
    }
    return o;  // the caller adds the warnings after release()
}

void Supervisor::release(Worker& w)
{
    loop_.cancel_timer(std::exchange(w.idle_timer, 0));
    loop_.cancel_timer(std::exchange(w.max_timer, 0));
    loop_.cancel_timer(std::exchange(w.stop_timer, 0));
    for (UniqueFd* fd : {&w.in, &w.out, &w.err}) {
        if (*fd) {
            loop_.remove_fd(fd->get());
            fd->reset();
        }
    }
    if (w.child.valid())
        loop_.remove_fd(w.child.pidfd());
    w.child = sandbox::Child();  // a child still there is killed and reaped
    w.out_log.close();
    w.err_log.close();
    // The rest goes off the loop, in one job on a spawn thread (the other
    // stays free for the next worker's release): the mount namespace's
    // last reference, whose teardown runs in the closing thread
    // (worker_spawn.cpp, keep_mount_namespace), then the cgroup, whose
    // rmdirs (one per hierarchy) need not delay the outcome and which is
    // retried for up to a second while still busy (WorkerCgroup::remove).
    // A failure is logged: the outcome has been delivered by then. Only
    // with no cgroup work of ours left for this worker may the pool refill
    // (see RefilledPool::wake()).
    if (spawn_jobs_ && (w.mount_ns || w.cgroup)) {
        std::shared_ptr<cgroup::WorkerCgroup> group;
        if (w.cgroup)
            group = std::make_shared<cgroup::WorkerCgroup>(std::move(*w.cgroup));
        w.cgroup.reset();
        spawn_jobs_->submit(
            [ns = std::make_shared<UniqueFd>(std::move(w.mount_ns)), group, name = w.name] {
                ns->reset();
                if (auto removed = group ? group->remove() : Result<void>{}; !removed)
                    log::warning("worker " + name + ": " + removed.error().describe());
            },
            [this] {
                if (pool_)
                    pool_->wake();
            });
        return;
    }
    w.mount_ns.reset();
    if (w.cgroup) {
        if (auto removed = w.cgroup->remove(); !removed)
            w.warnings.push_back(removed.error().describe());
        w.cgroup.reset();
    }
    if (pool_)
        pool_->wake();
}

void Supervisor::finish(WorkerId id, WorkerOutcome outcome)
{
    auto it = workers_.find(id);
    if (it == workers_.end())
        return;
    // The record goes before the callback, which sees a supervisor without
    // it (running(), has_capacity()); the callable is moved out first.
    auto on_outcome = std::move(it->second->callbacks.on_outcome);
    workers_.erase(it);
    --running_;
    on_outcome(outcome);
    schedule_pump();
}

}  // namespace nps::supervisor
