// SPDX-License-Identifier: Apache-2.0
// Workers held before their execve (docs/supervisor.md): hold() spawns a
// worker's process ahead on a spawn thread, as launch() would but with
// SandboxSpec::hold_before_exec and without the NPS_* variables, which
// belong to the DelegateFrame not known yet. start(spec, callbacks, held)
// queues the worker under the hold's id (its name, cgroup and log directory
// are the hold's); when its turn comes, launch_held() releases the process
// on a spawn thread with those variables, and on_spawned() takes it as any
// spawned child: the worker's timers run from the release.
#include <utility>

#include "nps/base/limits.hpp"

#include "spawn_job.hpp"
#include "worker.hpp"

namespace nps::supervisor {

std::optional<WorkerId> Supervisor::hold(const WorkerSpec& spec)
{
    // A held process never takes the place of a worker that could run.
    if (held_.size() >= kMaxHeld || running_ + queue_.size() + held_.size() >= options_.max_concurrent)
        return std::nullopt;
    if (spec.sandbox.argv.empty() || spec.sandbox.argv.front().empty() || spec.sandbox.rootfs.empty())
        return std::nullopt;
    const WorkerId id = next_id_++;
    std::vector<std::string> env;
    for (const std::string& entry : spec.sandbox.env)
        if (!is_worker_variable(entry))
            env.push_back(entry);
    auto job = prepare_spawn(spec, worker_name(id), std::move(env));
    if (!job)
        return std::nullopt;
    (*job)->sandbox.hold_before_exec = true;
    auto held = std::make_unique<Held>();
    held->sandbox = spec.sandbox;
    held->limits = spec.limits;
    held->enforcement = spec.enforcement;
    held->job = *job;
    held_.emplace(id, std::move(held));
    spawn_jobs_->submit([this, job = *job] { spawn_process(*job); }, [this, id] { on_held_spawned(id); });
    return id;
}

Result<WorkerId> Supervisor::start(WorkerSpec spec, WorkerCallbacks callbacks, WorkerId held)
{
    const auto it = held_.find(held);
    if (it == held_.end())
        return start(std::move(spec), std::move(callbacks));
    const Held& h = *it->second;
    if (!(h.sandbox == spec.sandbox && h.limits == spec.limits && h.enforcement == spec.enforcement)) {
        drop_held(held);
        return start(std::move(spec), std::move(callbacks));
    }
    auto id = enqueue(std::move(spec), std::move(callbacks), held);
    if (!id)
        drop_held(held);
    return id;
}

void Supervisor::drop_held(WorkerId held, std::function<void()> gone)
{
    const auto it = held_.find(held);
    if (it == held_.end()) {
        if (gone)
            loop_.defer(std::move(gone));
        return;
    }
    ++holds_unused_;
    Held& h = *it->second;
    if (h.spawning) {
        h.when_spawned = [this, held, gone = std::move(gone)]() mutable { finish_drop(held, std::move(gone)); };
        return;
    }
    finish_drop(held, std::move(gone));
}

void Supervisor::finish_drop(WorkerId held, std::function<void()> gone)
{
    auto node = held_.extract(held);
    discard(std::move(node.mapped()->job), std::move(gone));
}

void Supervisor::discard(std::shared_ptr<SpawnJob> job, std::function<void()> gone)
{
    // Killing and reaping a pid namespace's first process, and removing its
    // cgroup, take a while: not on the loop.
    spawn_jobs_->submit([job = std::move(job)]() mutable { job.reset(); },
                        [gone = std::move(gone)] {
                            if (gone)
                                gone();
                        });
}

void Supervisor::on_held_spawned(WorkerId id)
{
    const auto it = held_.find(id);
    if (it == held_.end())
        return;  // cannot happen: a hold leaves held_ only once spawned
    Held& h = *it->second;
    h.spawning = false;
    if (auto then = std::exchange(h.when_spawned, {}))
        then();
}

void Supervisor::launch_held(Worker& w)
{
    Held& h = *held_.at(w.id);
    w.spawning = true;
    if (h.spawning)
        h.when_spawned = [this, id = w.id] { release_held(id); };
    else
        release_held(w.id);
}

void Supervisor::release_held(WorkerId id)
{
    std::shared_ptr<SpawnJob> job = std::move(held_.extract(id).mapped()->job);
    Worker& w = *find(id);  // launched, spawning: it ends only in on_spawned()
    job->late_env.clear();
    std::size_t bytes = 0;
    for (std::string& entry : w.environment()) {
        if (is_worker_variable(entry)) {
            bytes += entry.size() + 1;
            job->late_env.push_back(std::move(entry));
        }
    }
    if (job->spawned && job->child.held() && job->late_env.size() <= limits::kMaxReleaseEnvEntries &&
        bytes <= limits::kMaxReleaseEnvBytes) {
        submit_spawn(w, std::move(job));
        return;
    }
    // The hold failed, or its release could not carry the variables: the
    // worker is spawned as start() spawns it, once the held process and
    // its cgroup (of the same name) are gone.
    ++holds_unused_;
    spawn_fresh(w, std::move(job));
}

}  // namespace nps::supervisor
