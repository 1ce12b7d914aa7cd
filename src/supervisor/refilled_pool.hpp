// SPDX-License-Identifier: Apache-2.0
// Internal: a sandbox::SpawnPool kept full by a thread of its own, so the
// supervisor's event loop never waits for a refill (a clone and the
// namespaces; before parked children placed themselves, also an RCU grace
// period on v1 hierarchies).
//
// spawn() takes a parked slot (under the pool's mutex); wake() — after a
// worker's cgroup is removed, or from spawn() when the pool ran dry — lets the
// thread park children until the pool is full again; then it sleeps until
// the next wake. A failed refill is counted, kept as last_error() and retried
// after kRefillRetry (a worker meanwhile falls back to sandbox::spawn()).
//
// The thread is the parked children's parent thread: their PR_SET_PDEATHSIG,
// kept once they run a worker, fires when it ends. It lives as long as this
// object: destroying it kills the workers started from it too, those whose
// credentials did not change at least (a uid change clears the signal, as
// for sandbox::spawn()'s children); the Supervisor does so only in its
// destructor, after killing their cgroups. Parked children show up in `ps` as
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
    // A refill waits until no spawn or worker end happened for this long:
    // parking a child competes with the next node's preparation and spawn
    // for the CPUs (and, measured when the parent still moved it by pid,
    // for the kernel's cgroup_mutex through a grace period). So a stream of
    // work spawns through the server, and the pool is refilled in the
    // pauses between bursts (bench/RESULTS.md). Re-measured once children
    // placed themselves: refilling after every spawn still made a DAG
    // slower (the CPUs).
    static constexpr std::chrono::milliseconds kQuietPeriod{30};

    // Validates the options (sandbox::SpawnPool::create) and starts the
    // thread, which begins parking at once.
    static Result<std::unique_ptr<RefilledPool>> start(sandbox::SpawnPoolOptions options);
    // Stops the thread (after the child it is parking, if any), then kills
    // the parked children and removes their cgroups.
    ~RefilledPool();
    RefilledPool(const RefilledPool&) = delete;
    RefilledPool& operator=(const RefilledPool&) = delete;

    // sandbox::SpawnPool::try_spawn(); wakes the thread only when that left
    // the pool empty (see wake()).
    Result<sandbox::PoolAttempt> spawn(const sandbox::SandboxSpec& spec, const cgroup::CgroupLimits& limits,
                                       cgroup::Enforcement enforcement);
    // Lets the thread refill now: the supervisor calls it once a worker's
    // cgroup is removed. Why not at every spawn: when parking still moved
    // the child by pid, a refill's migration held the kernel's cgroup_mutex
    // through an RCU grace period, and the cgroup.kill and rmdir of a worker
    // that had just ended waited for it (bench/RESULTS.md "dag").
    void wake();

    std::size_t size() const { return pool_.size(); }
    std::size_t ready() const { return pool_.ready(); }
    std::uint64_t refill_failures() const { return failures_.load(std::memory_order_relaxed); }
    std::string last_error() const;

private:
    explicit RefilledPool(sandbox::SpawnPool pool);
    void run();
    // Waits (lock held) until kQuietPeriod passed since the last activity;
    // false when the pool is stopping.
    bool wait_for_quiet(std::unique_lock<std::mutex>& lock);

    sandbox::SpawnPool pool_;
    mutable std::mutex mutex_;
    std::condition_variable wake_;
    bool stop_ = false;
    bool wanted_ = true;  // a refill is due
    std::chrono::steady_clock::time_point last_activity_{};  // of spawn() and wake()
    std::string last_error_;
    std::atomic<std::uint64_t> failures_{0};
    std::thread thread_;  // last: started once the rest exists
};

}  // namespace nps::supervisor
