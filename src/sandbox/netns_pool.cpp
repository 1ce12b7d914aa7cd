// SPDX-License-Identifier: Apache-2.0
#include "nps/sandbox/netns_pool.hpp"

#include <pthread.h>

#include <chrono>

#include "nps/base/limits.hpp"

namespace nps::sandbox {

namespace {

// After a failed creation (e.g. the namespace limit was reached), wait
// this long before the next try; take() still makes one on demand.
constexpr std::chrono::seconds kRetryAfterFailure{1};

}  // namespace

NetnsPool::NetnsPool(std::size_t size) : size_(size) {}

Result<std::unique_ptr<NetnsPool>> NetnsPool::start(std::size_t size)
{
    if (size > limits::kSpawnPoolMaxSize)
        return internal_error("Failed to start a network namespace pool: size " + std::to_string(size) +
                              " exceeds " + std::to_string(limits::kSpawnPoolMaxSize));
    std::unique_ptr<NetnsPool> pool(new NetnsPool(size));
    pool->thread_ = std::thread([p = pool.get()] {
        ::pthread_setname_np(::pthread_self(), "nps-netns");
        p->run();
    });
    return pool;
}

NetnsPool::~NetnsPool()
{
    {
        std::lock_guard lock(mutex_);
        stop_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable())
        thread_.join();
}

std::size_t NetnsPool::ready() const
{
    std::lock_guard lock(mutex_);
    return parked_.size();
}

Result<LoopbackNetns> NetnsPool::take()
{
    {
        std::lock_guard lock(mutex_);
        if (!parked_.empty()) {
            LoopbackNetns netns = std::move(parked_.front());
            parked_.pop_front();
            taken_.fetch_add(1, std::memory_order_relaxed);
            wake_.notify_all();
            return netns;
        }
    }
    wake_.notify_all();
    auto made = LoopbackNetns::create();
    if (made) {
        made_.fetch_add(1, std::memory_order_relaxed);
        taken_.fetch_add(1, std::memory_order_relaxed);
    }
    return made;
}

void NetnsPool::run()
{
    std::unique_lock lock(mutex_);
    while (!stop_) {
        if (parked_.size() >= size_) {
            wake_.wait(lock, [this] { return stop_ || parked_.size() < size_; });
            continue;
        }
        lock.unlock();
        auto made = LoopbackNetns::create();
        lock.lock();
        if (!made) {
            failures_.fetch_add(1, std::memory_order_relaxed);
            wake_.wait_for(lock, kRetryAfterFailure, [this] { return stop_; });
            continue;
        }
        made_.fetch_add(1, std::memory_order_relaxed);
        parked_.push_back(std::move(*made));
    }
}

}  // namespace nps::sandbox
