// SPDX-License-Identifier: Apache-2.0
// JobPool: runs blocking work (resolving a SpawnSpec over HTTPS, pulling an
// image, unpacking layers, mounting an overlay) on a few threads, and hands
// each job's completion back to the EventLoop's thread, so the loop never
// waits for slow I/O (DESIGN.md §4: "nothing blocks it for more than a few
// ms").
//
// A job is two functions: `work` runs on a pool thread; `done` runs later on
// the loop's thread. They share state through what they capture. Jobs start
// in submission order; completions arrive in the order jobs finish. The
// destructor stops taking jobs, lets running ones finish, joins the threads
// and drops the completions not yet delivered (their `done` never runs).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "nps/base/result.hpp"
#include "nps/event/event_loop.hpp"
#include "nps/event/lifetime.hpp"

namespace nps::event {

class JobPool {
public:
    using Work = std::function<void()>;
    using Done = std::function<void()>;

    // `name` (at most 15 characters) names the threads in /proc/PID/task/*/comm.
    static Result<std::unique_ptr<JobPool>> create(EventLoop& loop, std::size_t threads,
                                                   const char* name);
    ~JobPool();
    JobPool(const JobPool&) = delete;
    JobPool& operator=(const JobPool&) = delete;

    // Loop thread only.
    void submit(Work work, Done done);
    // Any thread: runs `done` on the loop's thread soon (the API's threads
    // wake the executor this way). Dropped if the pool is destroyed first.
    void post(Done done);
    // Jobs submitted and not yet completed (queued, running, or done but not
    // yet delivered).
    std::size_t pending() const { return pending_; }

private:
    struct Job {
        Work work;
        Done done;
    };

    explicit JobPool(EventLoop& loop) : post_(lifetime_.poster(loop)) {}
    void run_thread();

    Lifetime lifetime_;  // completions arriving after the pool are dropped
    Poster post_;
    std::mutex mutex_;
    std::condition_variable cv_;
    std::deque<Job> queue_;
    bool stopping_ = false;
    std::size_t pending_ = 0;  // loop thread only
    std::vector<std::thread> threads_;
};

}  // namespace nps::event
