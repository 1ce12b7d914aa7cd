// SPDX-License-Identifier: Apache-2.0
#include "nps/event/job_pool.hpp"

#include <pthread.h>

namespace nps::event {

Result<std::unique_ptr<JobPool>> JobPool::create(EventLoop& loop, std::size_t threads, const char* name)
{
    std::unique_ptr<JobPool> pool(new JobPool(loop));
    for (std::size_t i = 0; i < (threads ? threads : 1); ++i)
        pool->threads_.emplace_back([p = pool.get(), name] {
            ::pthread_setname_np(::pthread_self(), name);
            p->run_thread();
        });
    return pool;
}

JobPool::~JobPool()
{
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
        queue_.clear();
    }
    cv_.notify_all();
    for (auto& thread : threads_)
        thread.join();
    lifetime_.end();
}

void JobPool::submit(Work work, Done done)
{
    {
        std::lock_guard lock(mutex_);
        queue_.push_back({std::move(work), std::move(done)});
    }
    ++pending_;
    cv_.notify_one();
}

void JobPool::post(Done done)
{
    post_(std::move(done));
}

void JobPool::run_thread()
{
    for (;;) {
        Job job;
        {
            std::unique_lock lock(mutex_);
            cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
            if (queue_.empty())
                return;  // stopping
            job = std::move(queue_.front());
            queue_.pop_front();
        }
        job.work();
        job.work = nullptr;  // what it captured is let go before its done runs
        post_([this, done = std::move(job.done)] {
            --pending_;
            done();
        });
    }
}

}  // namespace nps::event
