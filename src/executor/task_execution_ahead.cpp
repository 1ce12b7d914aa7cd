// SPDX-License-Identifier: Apache-2.0
// Workers prepared ahead (docs/executor.md): TaskHost::anticipate and the
// bookkeeping of the workers it prepares; dispatch() takes them.
#include <algorithm>

#include "task_execution.hpp"

namespace nps::executor {

void TaskExecution::launch_ahead(const nop::Attempt& attempt, std::uint64_t serial, std::shared_ptr<Ahead> ahead)
{
    // Prepared ahead: launched at once if ready (in the next loop round,
    // outside the run's dispatch), else when its preparation ends. A
    // preparation ahead that failed is not the node's failure: the node
    // prepares its own.
    ahead->taker = [this, node = attempt.node_id, serial, agent = attempt.agent](
                       Prepared prepared, std::optional<supervisor::WorkerId> held) {
        if (prepared) {
            ++ctx_.metrics.workers_prepared_ahead_used;
            return prepared_for(node, serial, std::move(prepared), held);
        }
        ++ctx_.metrics.workers_prepared_ahead_failed;
        auto fresh = std::make_shared<std::optional<Prepared>>();
        ctx_.jobs.submit(
            [fresh, launch = ctx_.launch, agent, name = next_worker_name(), policy = ctx_.options.workers,
             userns = ctx_.userns] { *fresh = prepare_worker(launch, agent, name, policy, userns); },
            [this, node, serial, fresh] { prepared_for(node, serial, std::move(**fresh)); });
    };
    if (ahead->prepared)
        ctx_.loop.defer([this, alive = alive_, ahead] {
            if (*alive)
                ahead->taker(std::move(*ahead->prepared), ahead->held);
        });
}

void TaskExecution::anticipate(const std::string& agent)
{
    if (next_serial_ == 2 && start_hints_.size() < kMaxAhead)
        start_hints_.push_back(agent);  // hinted at the task's start: what the next task may want warm
    // A worker kept warm with the first one (launch_warm) serves this hint.
    for (const auto& ahead : ahead_) {
        if (ahead->warm && !ahead->hinted && ahead->agent == agent) {
            ahead->hinted = true;
            return;
        }
    }
    // Warm ones no hint wanted (the task differs from the previous one) do
    // not count: they go when the task ends.
    const auto wanted = std::count_if(ahead_.begin(), ahead_.end(), [](const auto& a) { return !a->warm || a->hinted; });
    if (ended_ || static_cast<std::size_t>(wanted) >= kMaxAhead)
        return;
    auto ahead = std::make_shared<Ahead>();
    ahead->agent = agent;
    ahead->made = event::EventLoop::now();
    ahead_.push_back(ahead);
    ++ahead_jobs_;
    auto prepared = std::make_shared<std::optional<Prepared>>();
    ctx_.jobs.submit(
        [prepared, launch = ctx_.launch, agent, name = next_worker_name(), policy = ctx_.options.workers,
         userns = ctx_.userns] { *prepared = prepare_worker(launch, agent, name, policy, userns); },
        [this, ahead, prepared] {
            --ahead_jobs_;
            ahead_prepared(ahead, std::move(**prepared));
            maybe_retire();
        });
}

void TaskExecution::ahead_prepared(const std::shared_ptr<Ahead>& ahead, Prepared prepared)
{
    if (ahead->taker) {
        ahead->taker(std::move(prepared), std::nullopt);
        return;
    }
    ahead->prepared = std::move(prepared);
    hold_ahead(*ahead);
    // Not taken within its freshness: its resources go back.
    const auto left = kAheadFreshness - (event::EventLoop::now() - ahead->made);
    start_timer(std::max(std::chrono::duration_cast<std::chrono::milliseconds>(left), std::chrono::milliseconds{0}),
                [this, ahead] { drop_ahead(ahead); });
}

void TaskExecution::launch_warm(const std::string& node_id, std::uint64_t serial, WarmStart::Warm warm)
{
    netns_.emplace(std::move(warm.netns));
    // Its followers become this task's workers prepared ahead (their
    // processes are in the namespace above), for the hints to come; those
    // still being prepared come when they are (WarmStart::Handoff).
    for (auto& follower : warm.followers) {
        auto ahead = add_warm_ahead(follower.agent);
        ahead->prepared = Prepared(std::move(follower.prepared));
        ahead->held = follower.held;
        start_timer(std::chrono::duration_cast<std::chrono::milliseconds>(kAheadFreshness),
                    [this, ahead] { drop_ahead(ahead); });
    }
    for (const auto& agent : warm.preparing) {
        awaiting_warm_.push_back(add_warm_ahead(agent));
        ++ahead_jobs_;
    }
    if (!warm.preparing.empty())
        warm.handoff->deliver = [this, alive = alive_](const std::string& agent, Prepared prepared) {
            if (!*alive)
                return prepared ? std::move(*prepared) : nullptr;
            return warm_follower_prepared(agent, std::move(prepared));
        };
    auto prepared = std::make_shared<std::unique_ptr<PreparedWorker>>(std::move(warm.first.prepared));
    ctx_.loop.defer([this, alive = alive_, node_id, serial, prepared, held = warm.first.held] {
        if (*alive)
            prepared_for(node_id, serial, std::move(*prepared), held);
    });
}

std::shared_ptr<TaskExecution::Ahead> TaskExecution::add_warm_ahead(const std::string& agent)
{
    auto ahead = std::make_shared<Ahead>();
    ahead->agent = agent;
    ahead->made = event::EventLoop::now();
    ahead->warm = true;
    ahead_.push_back(ahead);
    return ahead;
}

std::unique_ptr<PreparedWorker> TaskExecution::warm_follower_prepared(const std::string& agent, Prepared prepared)
{
    --ahead_jobs_;
    std::shared_ptr<Ahead> ahead;
    if (const auto it = std::find_if(awaiting_warm_.begin(), awaiting_warm_.end(),
                                     [&](const auto& a) { return a->agent == agent; });
        it != awaiting_warm_.end()) {
        ahead = *it;
        awaiting_warm_.erase(it);
    }
    // Wanted by a dispatch (taken while it was prepared), or still waiting
    // for one in ahead_.
    const bool wanted =
        ahead && (ahead->taker || (!ended_ && std::find(ahead_.begin(), ahead_.end(), ahead) != ahead_.end()));
    std::unique_ptr<PreparedWorker> unwanted;
    if (wanted)
        ahead_prepared(ahead, std::move(prepared));
    else if (prepared)
        unwanted = std::move(*prepared);
    maybe_retire();
    return unwanted;
}

void TaskExecution::expect_next_task()
{
    if (!first_agent_.empty() && !abandoned_ && ctx_.warm)
        ctx_.warm->expect(first_agent_, start_hints_);
}

std::shared_ptr<TaskExecution::Ahead> TaskExecution::take_ahead(const std::string& agent)
{
    const auto now = event::EventLoop::now();
    for (auto it = ahead_.begin(); it != ahead_.end(); ++it) {
        if ((*it)->agent != agent || now - (*it)->made > kAheadFreshness)
            continue;  // a stale one's SpawnSpec may have changed since: its timer drops it
        auto taken = *it;
        ahead_.erase(it);
        return taken;
    }
    return nullptr;
}

void TaskExecution::hold_ahead(Ahead& ahead)
{
    if (ended_ || !ctx_.options.workers.hold_ahead || !ahead.prepared || !*ahead.prepared)
        return;
    auto spec = worker_spec(***ahead.prepared);
    if (spec)  // else the dispatch fails with the same error
        ahead.held = ctx_.supervisor.hold(*spec);
}

void TaskExecution::drop_ahead(std::shared_ptr<Ahead> ahead)
{
    // By value: a caller's reference into ahead_ (release_ahead's front())
    // would name the next worker once this one is erased.
    const auto it = std::find(ahead_.begin(), ahead_.end(), ahead);
    if (it == ahead_.end())
        return;  // taken
    ahead_.erase(it);
    if (!ahead->prepared || !*ahead->prepared)
        return;
    ++ctx_.metrics.workers_prepared_ahead_unused;
    if (ahead->held) {
        drop_held(*ahead->held, std::move(**ahead->prepared));
        return;
    }
    // As finish_attempt releases a worker's rootfs: off the loop.
    ctx_.jobs.submit([prepared = std::shared_ptr<PreparedWorker>(std::move(**ahead->prepared))] {
        (void)prepared->release();
    }, [] {});
}

void TaskExecution::drop_held(supervisor::WorkerId held, std::unique_ptr<PreparedWorker> prepared)
{
    // Its rootfs is released after the process is gone; by then this
    // execution may have retired: nothing of it is captured.
    ctx_.supervisor.drop_held(held, [&jobs = ctx_.jobs, prepared = std::shared_ptr<PreparedWorker>(std::move(prepared))] {
        jobs.submit([prepared] { (void)prepared->release(); }, [] {});
    });
}

void TaskExecution::release_ahead()
{
    while (!ahead_.empty())
        drop_ahead(ahead_.front());
}

}  // namespace nps::executor
