// SPDX-License-Identifier: Apache-2.0
// RefilledPool (see the header): the refill thread and the hand-over.
#include "refilled_pool.hpp"

#include <pthread.h>
#include <signal.h>

#include <system_error>

namespace nps::supervisor {

Result<std::unique_ptr<RefilledPool>> RefilledPool::start(sandbox::SpawnPoolOptions options)
{
    auto pool = NPS_TRY(sandbox::SpawnPool::create(std::move(options)));
    std::unique_ptr<RefilledPool> refilled(new RefilledPool(std::move(pool)));
    try {
        refilled->thread_ = std::thread([p = refilled.get()] { p->run(); });
    } catch (const std::system_error& e) {
        return system_error("Failed to start the spawn pool's refill thread", e.code().value());
    }
    return refilled;
}

RefilledPool::RefilledPool(sandbox::SpawnPool pool) : pool_(std::move(pool)) {}

RefilledPool::~RefilledPool()
{
    {
        std::lock_guard lock(mutex_);
        stop_ = true;
    }
    wake_.notify_one();
    if (thread_.joinable())
        thread_.join();
    // pool_ goes next: its parked children are killed, their slots removed.
}

Result<sandbox::PoolAttempt> RefilledPool::spawn(const sandbox::SandboxSpec& spec, const cgroup::CgroupLimits& limits,
                                                 cgroup::Enforcement enforcement)
{
    {
        std::lock_guard lock(mutex_);
        last_activity_ = std::chrono::steady_clock::now();
    }
    auto attempt = pool_.try_spawn(spec, limits, enforcement);
    if (pool_.ready() == 0)
        wake();
    return attempt;
}

void RefilledPool::wake()
{
    {
        std::lock_guard lock(mutex_);
        wanted_ = true;
        last_activity_ = std::chrono::steady_clock::now();
    }
    wake_.notify_one();
}

bool RefilledPool::wait_for_quiet(std::unique_lock<std::mutex>& lock)
{
    for (;;) {
        const auto quiet_from = last_activity_ + kQuietPeriod;
        if (stop_ || std::chrono::steady_clock::now() >= quiet_from)
            return !stop_;
        wake_.wait_until(lock, quiet_from, [this] { return stop_; });
    }
}

std::string RefilledPool::last_error() const
{
    std::lock_guard lock(mutex_);
    return last_error_;
}

void RefilledPool::run()
{
    // Process-directed signals are the event loop's (signalfd): never ours.
    // Parked children start from this mask and reset it themselves.
    sigset_t all;
    ::sigfillset(&all);
    ::pthread_sigmask(SIG_BLOCK, &all, nullptr);
    // Inherited by the children it clones: a parked child reads "nps-pool".
    ::pthread_setname_np(::pthread_self(), "nps-pool");

    std::unique_lock lock(mutex_);
    while (!stop_) {
        wake_.wait(lock, [this] { return stop_ || wanted_; });
        if (stop_)
            break;
        wanted_ = false;
        // One child at a time, without the lock, so a stop or another wake
        // is seen between them.
        for (;;) {
            if (!wait_for_quiet(lock))
                break;
            lock.unlock();
            auto parked = pool_.park_one();
            lock.lock();
            if (!parked) {
                ++failures_;
                last_error_ = parked.error().describe();
                // Try again later; a wake before then changes nothing.
                wake_.wait_for(lock, kRefillRetry, [this] { return stop_; });
                wanted_ = true;
                break;
            }
            if (!*parked || stop_)
                break;
        }
    }
}

}  // namespace nps::supervisor
