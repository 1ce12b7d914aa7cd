// SPDX-License-Identifier: Apache-2.0
// NetnsPool: loopback-only network namespaces (LoopbackNetns) made ahead of
// time by a thread of its own, so a task takes one without waiting for
// unshare(CLONE_NEWNET) (~0.5 ms of CPU) on the executor's loop.
//
// The daemon gives every task a namespace of its own: the task's workers
// share it (they may talk over 127.0.0.1 and abstract unix sockets), no two
// tasks' workers see or reach each other (docs/sandbox.md "network").
// A namespace is released by closing its fd when the task's LoopbackNetns
// is destroyed; the kernel tears it down asynchronously (cleanup_net), so
// giving one up costs the caller nothing. Nothing is reused: a used
// namespace may hold sockets of its former task until its last process is
// gone.
//
// Thread-safe: take(), ready() and the counters from any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "nps/base/result.hpp"
#include "nps/sandbox/loopback_netns.hpp"

namespace nps::sandbox {

class NetnsPool {
public:
    // Starts the thread, which makes `size` namespaces at once (size 0: none
    // is made ahead, take() always makes one).
    static Result<std::unique_ptr<NetnsPool>> start(std::size_t size);
    // Stops the thread and closes the parked namespaces.
    ~NetnsPool();
    NetnsPool(const NetnsPool&) = delete;
    NetnsPool& operator=(const NetnsPool&) = delete;

    // A parked namespace, or a new one made now when none is parked; wakes
    // the thread to make a replacement.
    Result<LoopbackNetns> take();

    std::size_t size() const { return size_; }
    std::size_t ready() const;
    std::uint64_t made() const { return made_.load(std::memory_order_relaxed); }
    std::uint64_t taken() const { return taken_.load(std::memory_order_relaxed); }
    std::uint64_t refill_failures() const { return failures_.load(std::memory_order_relaxed); }

private:
    explicit NetnsPool(std::size_t size);
    void run();

    const std::size_t size_;
    mutable std::mutex mutex_;
    std::condition_variable wake_;
    bool stop_ = false;
    std::deque<LoopbackNetns> parked_;
    std::atomic<std::uint64_t> made_{0};
    std::atomic<std::uint64_t> taken_{0};
    std::atomic<std::uint64_t> failures_{0};
    std::thread thread_;  // last: started once the rest exists
};

}  // namespace nps::sandbox
