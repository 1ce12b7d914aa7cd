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
    ahead->taker = [this, node = attempt.node_id, serial, agent = attempt.agent](Prepared prepared) {
        if (prepared) {
            ++ctx_.metrics.workers_prepared_ahead_used;
            return prepared_for(node, serial, std::move(prepared));
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
                ahead->taker(std::move(*ahead->prepared));
        });
}

void TaskExecution::anticipate(const std::string& agent)
{
    if (ended_ || ahead_.size() >= kMaxAhead)
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
            if (ahead->taker) {
                ahead->taker(std::move(**prepared));
            } else {
                ahead->prepared = std::move(**prepared);
                // Not taken within its freshness: its resources go back.
                const auto left = kAheadFreshness - (event::EventLoop::now() - ahead->made);
                start_timer(std::max(std::chrono::duration_cast<std::chrono::milliseconds>(left),
                                     std::chrono::milliseconds{0}),
                            [this, ahead] { drop_ahead(ahead); });
            }
            maybe_retire();
        });
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

void TaskExecution::drop_ahead(const std::shared_ptr<Ahead>& ahead)
{
    const auto it = std::find(ahead_.begin(), ahead_.end(), ahead);
    if (it == ahead_.end())
        return;  // taken
    ahead_.erase(it);
    if (!ahead->prepared || !*ahead->prepared)
        return;
    ++ctx_.metrics.workers_prepared_ahead_unused;
    // As finish_attempt releases a worker's rootfs: off the loop.
    ctx_.jobs.submit([prepared = std::shared_ptr<PreparedWorker>(std::move(**ahead->prepared))] {
        (void)prepared->release();
    }, [] {});
}

void TaskExecution::release_ahead()
{
    while (!ahead_.empty())
        drop_ahead(ahead_.front());
}

}  // namespace nps::executor
