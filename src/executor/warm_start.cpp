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

void WarmStart::expect(const std::string& agent)
{
    if (stopping_ || !ctx_.options.workers.hold_ahead || ctx_.options.workers.warm_seconds == 0 ||
        ctx_.options.claims.conformance)
        return;
    if (entry_ && entry_->agent == agent)
        return;  // preparing, or ready for the next task
    drop();
    const std::uint64_t generation = next_generation_++;
    entry_.emplace(Entry{.agent = agent, .made = event::EventLoop::now(), .generation = generation});
    auto result = std::make_shared<std::optional<Result<std::unique_ptr<PreparedWorker>>>>();
    ++in_flight_;
    ctx_.jobs.submit(
        [result, launch = ctx_.launch, agent, name = next_worker_name(), policy = ctx_.options.workers,
         userns = ctx_.userns] { *result = prepare_worker(launch, agent, name, policy, userns); },
        [this, alive = alive_, generation, result] {
            if (!*alive)
                return;  // ~PreparedWorker releases it
            prepared(generation, std::move(**result));
            landed();
        });
}

void WarmStart::prepared(std::uint64_t generation, Result<std::unique_ptr<PreparedWorker>> prepared)
{
    if (!entry_ || entry_->generation != generation) {
        // Dropped while it was prepared.
        if (prepared) {
            ++ctx_.metrics.workers_warm_unused;
            release(std::move(*prepared), std::nullopt);
        }
        return;
    }
    // A failure is not the next task's: it prepares its own worker.
    if (!prepared) {
        ++ctx_.metrics.workers_warm_failed;
        entry_.reset();
        return;
    }
    auto netns = ctx_.netns_pool->take();
    if (!netns) {
        ++ctx_.metrics.workers_warm_failed;
        entry_.reset();
        release(std::move(*prepared), std::nullopt);  // off the loop
        return;
    }
    Warm warm{.prepared = std::move(*prepared), .held = std::nullopt, .netns = std::move(*netns)};
    warm.held = ctx_.supervisor.hold(worker_spec_for(ctx_, *warm.prepared, warm.netns.fd()));
    entry_->warm.emplace(std::move(warm));
    const auto left = freshness() - (event::EventLoop::now() - entry_->made);
    entry_->stale_timer = ctx_.loop.add_timer_after(
        std::max(std::chrono::duration_cast<std::chrono::milliseconds>(left), std::chrono::milliseconds{0}),
        [this] {
            entry_->stale_timer = 0;
            drop();
        });
}

std::optional<WarmStart::Warm> WarmStart::take(const std::string& agent)
{
    if (!entry_ || !entry_->warm || entry_->agent != agent ||
        event::EventLoop::now() - entry_->made > freshness())
        return std::nullopt;
    ctx_.loop.cancel_timer(entry_->stale_timer);
    Warm warm = std::move(*entry_->warm);
    entry_.reset();
    ++ctx_.metrics.workers_warm_used;
    return warm;
}

void WarmStart::drop()
{
    if (!entry_)
        return;
    ctx_.loop.cancel_timer(entry_->stale_timer);
    std::optional<Warm> warm = std::move(entry_->warm);
    entry_.reset();  // one still being prepared is released when it is
    if (warm) {
        // Its namespace goes now (a held process keeps it until reaped).
        ++ctx_.metrics.workers_warm_unused;
        release(std::move(warm->prepared), warm->held);
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
