// SPDX-License-Identifier: Apache-2.0
#include "warm_start.hpp"

#include <utility>

#include "worker_spec.hpp"

namespace nps::executor {

WarmStart::WarmStart(ExecutionContext& context) : ctx_(context) {}

WarmStart::~WarmStart()
{
    *alive_ = false;
    if (entry_)
        ctx_.loop.cancel_timer(entry_->stale_timer);
    // The supervisor is gone, and with it a held process: ~PreparedWorker
    // releases the rootfs.
}

std::chrono::seconds WarmStart::freshness() const
{
    return std::chrono::seconds(ctx_.options.workers.warm_seconds);
}

void WarmStart::expect(const std::string& agent, const std::vector<std::string>& followers)
{
    if (stopping_ || !ctx_.options.workers.hold_ahead || ctx_.options.workers.warm_seconds == 0 ||
        ctx_.options.claims.conformance)
        return;
    std::vector<std::string> agents{agent};
    agents.insert(agents.end(), followers.begin(), followers.end());
    if (entry_ && entry_->agents == agents)
        return;  // preparing, or ready for the next task
    drop();
    const std::uint64_t generation = next_generation_++;
    entry_.emplace(Entry{.agents = agents, .made = event::EventLoop::now(), .generation = generation});
    entry_->ready.resize(agents.size());
    entry_->preparing.assign(agents.size(), true);
    entry_->stale_timer = ctx_.loop.add_timer_after(freshness(), [this] {
        entry_->stale_timer = 0;
        drop();
    });
    entry_->handoff = std::make_shared<Handoff>();
    // The followers once the first is held: the next task may come at once,
    // and its first worker is the one it cannot start without.
    prepare(0);
}

void WarmStart::prepare(std::size_t index)
{
    auto result = std::make_shared<std::optional<Result<std::unique_ptr<PreparedWorker>>>>();
    ++in_flight_;
    ctx_.jobs.submit(
        [result, launch = ctx_.launch, agent = entry_->agents[index], name = next_worker_name(),
         policy = ctx_.options.workers,
         userns = ctx_.userns] { *result = prepare_worker(launch, agent, name, policy, userns); },
        [this, alive = alive_, generation = entry_->generation, handoff = entry_->handoff,
         agent = entry_->agents[index], index, result] {
            if (!*alive)
                return;  // ~PreparedWorker releases it
            if (handoff->taken)
                hand_over(*handoff, agent, std::move(**result));
            else
                prepared(generation, index, std::move(**result));
            landed();
        });
}

void WarmStart::prepared(std::uint64_t generation, std::size_t index,
                         Result<std::unique_ptr<PreparedWorker>> prepared)
{
    if (!entry_ || entry_->generation != generation) {
        // Dropped while it was prepared.
        if (prepared) {
            ++ctx_.metrics.workers_warm_unused;
            release(std::move(*prepared), std::nullopt);
        }
        return;
    }
    entry_->preparing[index] = false;
    // A failure is not the next task's: it prepares its own worker.
    if (!prepared) {
        ++ctx_.metrics.workers_warm_failed;
        if (index == 0)
            drop();
        return;
    }
    if (!entry_->netns) {
        auto netns = ctx_.netns_pool->take();
        if (!netns) {
            ++ctx_.metrics.workers_warm_failed;
            release(std::move(*prepared), std::nullopt);  // off the loop
            drop();
            return;
        }
        entry_->netns.emplace(std::move(*netns));
    }
    Worker worker{.agent = entry_->agents[index], .prepared = std::move(*prepared), .held = std::nullopt};
    worker.held = ctx_.supervisor.hold(worker_spec_for(ctx_, *worker.prepared, entry_->netns->fd()));
    entry_->ready[index].emplace(std::move(worker));
    if (index == 0)
        for (std::size_t follower = 1; follower < entry_->agents.size(); ++follower)
            prepare(follower);
}

void WarmStart::hand_over(Handoff& handoff, const std::string& agent, Result<std::unique_ptr<PreparedWorker>> prepared)
{
    // A follower of a set taken while it was prepared: the taking task's
    // now, if it still waits for it.
    const bool ok = static_cast<bool>(prepared);
    std::unique_ptr<PreparedWorker> unwanted;
    if (handoff.deliver) {
        unwanted = handoff.deliver(agent, std::move(prepared));
    } else if (prepared) {
        unwanted = std::move(*prepared);
    }
    if (!ok)
        ++ctx_.metrics.workers_warm_failed;
    else if (unwanted)
        ++ctx_.metrics.workers_warm_unused;
    else
        ++ctx_.metrics.workers_warm_used;
    if (unwanted)
        release(std::move(unwanted), std::nullopt);
}

std::optional<WarmStart::Warm> WarmStart::take(const std::string& agent)
{
    if (!entry_ || !entry_->ready.front() || entry_->agents.front() != agent ||
        event::EventLoop::now() - entry_->made > freshness())
        return std::nullopt;
    ctx_.loop.cancel_timer(entry_->stale_timer);
    Warm warm{.first = std::move(*entry_->ready.front()),
              .followers = {},
              .preparing = {},
              .handoff = entry_->handoff,
              .netns = std::move(*entry_->netns)};
    for (std::size_t index = 1; index < entry_->ready.size(); ++index) {
        if (entry_->ready[index])
            warm.followers.push_back(std::move(*entry_->ready[index]));
        else if (entry_->preparing[index])
            warm.preparing.push_back(entry_->agents[index]);  // handed over when prepared
    }
    warm.handoff->taken = true;
    entry_.reset();
    ctx_.metrics.workers_warm_used += 1 + warm.followers.size();
    return warm;
}

void WarmStart::drop()
{
    if (!entry_)
        return;
    ctx_.loop.cancel_timer(entry_->stale_timer);
    auto ready = std::move(entry_->ready);
    // The namespace goes now (a held process keeps it until reaped).
    entry_.reset();  // one still being prepared is released when it is
    for (auto& worker : ready) {
        if (!worker)
            continue;
        ++ctx_.metrics.workers_warm_unused;
        release(std::move(worker->prepared), worker->held);
    }
}

void WarmStart::shut_down(std::function<void()> idle)
{
    stopping_ = true;
    drop();
    idle_ = std::move(idle);
    if (in_flight_ == 0)
        ctx_.loop.defer([alive = alive_, idle = std::exchange(idle_, nullptr)] {
            if (*alive)
                idle();
        });
}

void WarmStart::release(std::unique_ptr<PreparedWorker> prepared, std::optional<supervisor::WorkerId> held)
{
    ++in_flight_;
    auto worker = std::shared_ptr<PreparedWorker>(std::move(prepared));
    auto release_rootfs = [this, alive = alive_, worker] {
        if (*alive)
            ctx_.jobs.submit([worker] { (void)worker->release(); }, [this, alive] {
                if (*alive)
                    landed();
            });
    };
    if (held)
        ctx_.supervisor.drop_held(*held, std::move(release_rootfs));
    else
        release_rootfs();
}

void WarmStart::landed()
{
    if (--in_flight_ == 0 && idle_)
        std::exchange(idle_, nullptr)();
}

}  // namespace nps::executor
