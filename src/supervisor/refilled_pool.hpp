// SPDX-License-Identifier: Apache-2.0
// Internal: a sandbox::SpawnPool kept full by a thread of its own, so the
// supervisor's event loop never waits for a refill (on v1 hierarchies a
// sparse refill sleeps for an RCU grace period, ~12 ms, in the kernel).
//
// spawn() takes a parked slot (under the pool's mutex) and wakes the thread;
// the thread parks children until the pool is full again, then sleeps until
// the next wake. A failed refill is counted, kept as last_error() and retried
// after kRefillRetry (a worker meanwhile falls back to sandbox::spawn()).
//
// The thread is the parked children's parent thread: their PR_SET_PDEATHSIG,
// kept once they run a worker, fires when it ends. It lives as long as this
// object; destroy it only after the workers started from it are gone (the
// Supervisor kills and reaps them first). Parked children show up in `ps` as
// "nps-pool", the thread's name, until they execute their worker.
//
// Thread-safe: spawn(), ready() and the counters from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "nps/base/result.hpp"
#include "nps/sandbox/spawn_pool.hpp"

namespace nps::supervisor {

class RefilledPool {
public:
    static constexpr std::chrono::seconds kRefillRetry{1};

    // Validates the options (sandbox::SpawnPool::create) and starts the
    // thread, which begins parking at once.
    static Result<std::unique_ptr<RefilledPool>> start(sandbox::SpawnPoolOptions options);
    // Stops the thread (after the child it is parking, if any), then kills
    // the parked children and removes their cgroups.
    ~RefilledPool();
    RefilledPool(const RefilledPool&) = delete;
    RefilledPool& operator=(const RefilledPool&) = delete;

    // sandbox::SpawnPool::try_spawn(), then wakes the thread.
    Result<sandbox::PoolAttempt> spawn(const sandbox::SandboxSpec& spec, const cgroup::CgroupLimits& limits,
                                       cgroup::Enforcement enforcement);

    std::size_t size() const { return pool_.size(); }
    std::size_t ready() const { return pool_.ready(); }
    std::uint64_t refill_failures() const { return failures_.load(std::memory_order_relaxed); }
    std::string last_error() const;

private:
    explicit RefilledPool(sandbox::SpawnPool pool);
    void run();

    sandbox::SpawnPool pool_;
    mutable std::mutex mutex_;
    std::condition_variable wake_;
    bool stop_ = false;
    bool wanted_ = true;  // a refill is due
    std::string last_error_;
    std::atomic<std::uint64_t> failures_{0};
    std::thread thread_;  // last: started once the rest exists
};

}  // namespace nps::supervisor
