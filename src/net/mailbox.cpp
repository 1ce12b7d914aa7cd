// SPDX-License-Identifier: Apache-2.0
#include "nps/net/mailbox.hpp"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <deque>
#include <mutex>

#include "nps/base/unique_fd.hpp"

namespace nps::net {

struct Mailbox::Shared {
    std::mutex mutex;
    std::deque<std::function<void()>> queue;
    bool open = true;
    UniqueFd event;  // written by post(), read by the loop; closed with the last holder
};

namespace {

void post_to(const std::shared_ptr<Mailbox::Shared>& shared, std::function<void()> work)
{
    std::lock_guard lock(shared->mutex);
    if (!shared->open)
        return;
    const bool was_empty = shared->queue.empty();
    shared->queue.push_back(std::move(work));
    if (was_empty) {
        // The counter only wakes the loop; a full counter (EAGAIN) is awake already.
        const std::uint64_t one = 1;
        [[maybe_unused]] const ssize_t n = ::write(shared->event.get(), &one, sizeof one);
    }
}

}  // namespace

Result<std::unique_ptr<Mailbox>> Mailbox::create(Reactor& reactor)
{
    auto shared = std::make_shared<Shared>();
    shared->event = UniqueFd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (!shared->event)
        return system_error_errno("Failed to create the eventfd of a loop mailbox");
    std::unique_ptr<Mailbox> mailbox(new Mailbox(reactor, shared));
    Mailbox* raw = mailbox.get();
    NPS_TRY_VOID(reactor.add_fd(shared->event.get(), EPOLLIN, [raw](std::uint32_t) { raw->drain(); }));
    return mailbox;
}

Mailbox::Mailbox(Reactor& reactor, std::shared_ptr<Shared> shared) : reactor_(reactor), shared_(std::move(shared)) {}

Mailbox::~Mailbox()
{
    close();
}

void Mailbox::post(std::function<void()> work)
{
    post_to(shared_, std::move(work));
}

Poster Mailbox::poster() const
{
    return [shared = shared_](std::function<void()> work) { post_to(shared, std::move(work)); };
}

void Mailbox::close()
{
    if (closed_)
        return;
    closed_ = true;
    reactor_.remove_fd(shared_->event.get());
    std::deque<std::function<void()>> dropped;
    {
        std::lock_guard lock(shared_->mutex);
        shared_->open = false;
        dropped.swap(shared_->queue);
    }
    // `dropped` is destroyed outside the lock: a queued function may own
    // things whose destructors post.
}

void Mailbox::drain()
{
    std::uint64_t count = 0;
    [[maybe_unused]] const ssize_t n = ::read(shared_->event.get(), &count, sizeof count);
    // A function may close or destroy this mailbox: from here on only the
    // shared state is touched.
    const std::shared_ptr<Shared> shared = shared_;
    std::deque<std::function<void()>> ready;
    {
        std::lock_guard lock(shared->mutex);
        ready.swap(shared->queue);
    }
    while (!ready.empty()) {
        {
            std::lock_guard lock(shared->mutex);
            if (!shared->open)
                return;
        }
        std::function<void()> work = std::move(ready.front());
        ready.pop_front();
        work();
    }
}

}  // namespace nps::net
