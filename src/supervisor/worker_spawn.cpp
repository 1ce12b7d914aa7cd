// SPDX-License-Identifier: Apache-2.0
// Starting a worker's process, off the event loop. A spawn blocks until the
// child has exec'd (its cgroups made, its v1 placement — which may wait for
// an RCU grace period —, the child's mounts and setup): milliseconds the
// loop would otherwise spend waiting rather than serving deposits, claims
// and other workers' output (bench/RESULTS.md "throughput"). So launch()
// prepares the worker's pipes and sandbox on the loop, spawn_process() runs
// on one of the spawn threads, and on_spawned() takes the child back on the
// loop and starts its I/O. Meanwhile the worker is `spawning`: it holds its
// slot; a cancel or kill is remembered and applied once the child exists.
#include <errno.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>

#include "refilled_pool.hpp"
#include "spawn_job.hpp"
#include "worker.hpp"

namespace nps::supervisor {

namespace {

Result<Pipe> make_pipe(const char* what)
{
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) < 0)
        return system_error_errno(std::string("Failed to create the worker's ") + what + " pipe");
    Pipe p{UniqueFd(fds[0]), UniqueFd(fds[1])};
    if (::fcntl(p.read_end.get(), F_SETFL, O_NONBLOCK) < 0)
        return system_error_errno(std::string("Failed to make the worker's ") + what + " pipe non-blocking");
    return p;
}

// The kernel refused the worker for want of a resource that may free up:
// RuntimeFailure::spawn_transient (retryable), else spawn_refused.
bool transient(int err)
{
    return err == EAGAIN || err == ENOMEM || err == EMFILE || err == ENFILE || err == ENOSPC || err == EBUSY;
}

}  // namespace

void Supervisor::launch(std::unique_ptr<Worker> owned)
{
    Worker& w = *owned;
    workers_.emplace(w.id, std::move(owned));
    ++running_;
    if (held_.count(w.id))
        launch_held(w);
    else
        spawn_fresh(w);
}

void Supervisor::spawn_fresh(Worker& w, std::shared_ptr<SpawnJob> replaced)
{
    auto job = prepare_spawn(w.spec, w.name, w.environment());
    if (!job) {
        w.spawning = false;
        fail_launch(w, job.error());
        return;
    }
    submit_spawn(w, std::move(*job), std::move(replaced));
}

void Supervisor::submit_spawn(Worker& w, std::shared_ptr<SpawnJob> job, std::shared_ptr<SpawnJob> replaced)
{
    w.spawning = true;
    // The replaced job's process and cgroup, which carry the worker's name,
    // go first, on the spawn thread: killing, reaping and rmdir are not
    // the loop's to wait for. Discarded, not just let go: the loop may
    // still hold the job a moment (the callback that replaced it).
    spawn_jobs_->submit(
        [this, job, replaced = std::move(replaced)]() mutable {
            if (replaced)
                replaced->discard();
            replaced.reset();
            spawn_process(*job);
        },
        [this, id = w.id, job] { on_spawned(id, *job); });
}

void Supervisor::fail_launch(Worker& w, const Error& error)
{
    w.settlement = runtime_settlement(
        transient(error.sys_errno) ? proto::RuntimeFailure::spawn_transient : proto::RuntimeFailure::spawn_refused,
        "the worker could not be started: " + error.describe(), KilledReason::spawn_failed);
    w.exited = true;
    WorkerOutcome outcome = build_outcome(w, std::nullopt);
    release(w);
    outcome.warnings = std::move(w.warnings);
    finish(w.id, std::move(outcome));
}

Result<std::shared_ptr<Supervisor::SpawnJob>> Supervisor::prepare_spawn(const WorkerSpec& spec, std::string name,
                                                                         std::vector<std::string> env)
{
    auto job = std::make_shared<SpawnJob>();
    job->out = NPS_TRY(make_pipe("stdout"));
    job->err = NPS_TRY(make_pipe("stderr"));
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
        return system_error_errno("Failed to create the worker's stdin socket");
    job->in = UniqueFd(sv[0]);
    job->child_in = UniqueFd(sv[1]);
    // One direction only: what the worker might write to its stdin must not
    // queue up in our socket, and we never read from it.
    (void)::shutdown(job->in.get(), SHUT_RD);
    (void)::shutdown(job->child_in.get(), SHUT_WR);
    if (::fcntl(job->in.get(), F_SETFL, O_NONBLOCK) < 0)
        return system_error_errno("Failed to make the worker's stdin socket non-blocking");

    job->sandbox = spec.sandbox;
    job->sandbox.env = std::move(env);
    job->sandbox.stdin_fd = job->child_in.get();
    job->sandbox.stdout_fd = job->out.write_end.get();
    job->sandbox.stderr_fd = job->err.write_end.get();
    job->name = std::move(name);
    job->limits = spec.limits;
    job->enforcement = spec.enforcement;
    return job;
}

namespace {

// The mount namespace of our child `pid`, or none (it is gone already, or
// /proc is not there: then its exit tears the namespace down as before).
//
// Why we hold it: a process that leaves a namespace last tears it down in
// its exit, before its parent can hear of the exit — for a worker, its
// ~40 mounts and an RCU grace period, 0.3–0.4 ms on two CPUs — so the
// loop learns of every node's end that much later. Held by this fd, the
// namespace outlives the worker; Supervisor::release() closes the fd on a
// spawn thread, which then pays for the teardown off the loop.
UniqueFd keep_mount_namespace(pid_t pid)
{
    return UniqueFd(::open(("/proc/" + std::to_string(pid) + "/ns/mnt").c_str(), O_RDONLY | O_CLOEXEC));
}

}  // namespace

void Supervisor::spawn_process(SpawnJob& job)
{
    const auto began = std::chrono::steady_clock::now();
    auto spent_us = [began] {
        return static_cast<std::uint64_t>(
            std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - began).count());
    };
    job.spawned = [&]() -> Result<void> {
        if (job.child.held()) {  // held ahead (worker_held.cpp): only its release is left
            NPS_TRY_VOID(job.child.release(job.late_env));
            ++spawned_held_;
            held_us_ += spent_us();
            return {};
        }
        if (pool_ && !job.sandbox.hold_before_exec) {
            // A miss (none parked, a plan too large, a parked child gone)
            // falls back below; a failure of the worker's own spec is its
            // outcome.
            sandbox::PoolAttempt attempt = NPS_TRY(pool_->spawn(job.sandbox, job.limits, job.enforcement));
            if (attempt.started) {
                job.cgroup.emplace(std::move(attempt.started->cgroup));
                job.child = std::move(attempt.started->child);
                ++spawned_pooled_;
                pooled_us_ += spent_us();
                return {};
            }
        }
        if (options_.cgroup_base) {
            job.cgroup = NPS_TRY(cgroup::WorkerCgroup::create(
                *options_.cgroup_base, {.name = job.name, .limits = job.limits, .enforcement = job.enforcement}));
        } else if ((job.limits.memory_bytes || job.limits.cpu_millicores || job.limits.pids_max) &&
                   job.enforcement == cgroup::Enforcement::strict) {
            return cgroup::unenforceable_limit("limits", "this runner has no usable cgroups");  // fail closed
        }
        job.sandbox.cgroup = job.cgroup ? &*job.cgroup : nullptr;
        if (options_.spawn_server) {
            // A miss (the server is gone) falls back below, as for the pool.
            sandbox::ServerAttempt attempt = NPS_TRY(options_.spawn_server->try_spawn(job.sandbox));
            if (attempt.started) {
                job.child = std::move(*attempt.started);
                if (!job.sandbox.hold_before_exec) {
                    ++spawned_server_;
                    server_us_ += spent_us();
                }
                return {};
            }
        }
        job.child = NPS_TRY(sandbox::spawn(job.sandbox));
        if (!job.sandbox.hold_before_exec) {
            ++spawned_direct_;
            direct_us_ += spent_us();
        }
        return {};
    }();
    // A held child is in its final mount namespace already (taken at its
    // hold); a pooled one makes its own before its execve.
    if (job.spawned && job.child.valid() && !job.mount_ns)
        job.mount_ns = keep_mount_namespace(job.child.pid());
    // The child has its copies (or there is no child): ours would keep the
    // worker's stdout and stderr from ever reaching EOF.
    job.child_in.reset();
    job.out.write_end.reset();
    job.err.write_end.reset();
}

void Supervisor::on_spawned(WorkerId id, SpawnJob& job)
{
    Worker* found = find(id);
    if (!found)
        return;  // cannot happen: a spawning worker ends only here
    Worker& w = *found;
    w.spawning = false;
    // Even after a failed spawn: release() removes a cgroup made for it.
    w.cgroup = std::move(job.cgroup);
    if (!job.spawned) {
        fail_launch(w, job.spawned.error());
        return;
    }
    w.child = std::move(job.child);
    w.mount_ns = std::move(job.mount_ns);
    if (w.cgroup) {
        for (const auto& skipped : w.cgroup->unenforced())
            w.warnings.push_back("this host cannot enforce the " + skipped + " limit; the worker ran without it");
    }
    w.started = event::EventLoop::now();
    w.last_activity = w.started;
    w.started_at_ms = options_.clock->now_ms();

    w.in = std::move(job.in);
    w.out = std::move(job.out.read_end);
    w.err = std::move(job.err.read_end);
    if (!options_.log_root.empty()) {
        const std::string dir = options_.log_root + "/" + w.name;
        w.out_log = RotatingLog(dir + "/stdout.log", options_.log_limits);
        w.err_log = RotatingLog(dir + "/stderr.log", options_.log_limits);
    }
    if (auto registered = register_io(w); !registered) {
        fail_launch(w, registered.error());  // release() kills and reaps the child
        return;
    }
    send_stdin(w, w.delegate.line);
    if (w.limits.max_runtime)
        w.max_timer = loop_.add_timer(w.started + *w.limits.max_runtime, [this, &w] { on_max_runtime(w); });
    arm_idle_timer(w);
    if (w.callbacks.on_started)
        w.callbacks.on_started(w.id, w.child.pid());
    if (w.stop_reason)  // cancelled or killed while it was being spawned: it has done nothing yet
        kill_now(w);
}

}  // namespace nps::supervisor
