// SPDX-License-Identifier: Apache-2.0
#include "job_pool.hpp"

#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>

namespace nps::daemon {

Result<std::unique_ptr<JobPool>> JobPool::create(supervisor::EventLoop& loop, std::size_t threads, const char* name)
{
    UniqueFd wake(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (!wake)
        return system_error_errno("Failed to create the job pool's eventfd");
    std::unique_ptr<JobPool> pool(new JobPool(loop, std::move(wake)));
    NPS_TRY_VOID(loop.add_fd(pool->wake_.get(), EPOLLIN, [p = pool.get()](std::uint32_t) { p->deliver(); }));
    for (std::size_t i = 0; i < (threads ? threads : 1); ++i)
        pool->threads_.emplace_back([p = pool.get(), name] {
            ::pthread_setname_np(::pthread_self(), name);
            p->run_thread();
        });
    return pool;
}

JobPool::JobPool(supervisor::EventLoop& loop, UniqueFd wake) : loop_(loop), wake_(std::move(wake)) {}

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
    loop_.remove_fd(wake_.get());
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
    {
        std::lock_guard lock(mutex_);
        if (stopping_)
            return;
        posted_.push_back(std::move(done));
    }
    std::uint64_t one = 1;
    [[maybe_unused]] ssize_t w = ::write(wake_.get(), &one, sizeof one);
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
        {
            std::lock_guard lock(mutex_);
            completed_.push_back(std::move(job.done));
        }
        std::uint64_t one = 1;
        [[maybe_unused]] ssize_t w = ::write(wake_.get(), &one, sizeof one);
    }
}

void JobPool::deliver()
{
    std::uint64_t count = 0;
    [[maybe_unused]] ssize_t r = ::read(wake_.get(), &count, sizeof count);
    std::deque<Done> ready, posted;
    {
        std::lock_guard lock(mutex_);
        ready.swap(completed_);
        posted.swap(posted_);
    }
    for (auto& done : ready) {
        --pending_;
        done();
    }
    for (auto& done : posted)
        done();
}

}  // namespace nps::daemon
