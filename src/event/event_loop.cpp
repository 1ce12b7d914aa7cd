// SPDX-License-Identifier: Apache-2.0
#include "nps/event/event_loop.hpp"

#include <errno.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <array>
#include <deque>
#include <mutex>

namespace nps::event {

struct EventLoop::Posted {
    std::mutex mutex;
    std::deque<std::function<void()>> queue;
    bool open = true;
    UniqueFd event;  // written when the queue becomes non-empty; read by the loop

    void post(std::function<void()> work)
    {
        std::lock_guard lock(mutex);
        if (!open)
            return;  // `work` is destroyed on return, outside nothing we hold
        const bool was_empty = queue.empty();
        queue.push_back(std::move(work));
        if (was_empty) {
            // The counter only wakes the loop; a full one (EAGAIN) is awake already.
            const std::uint64_t one = 1;
            [[maybe_unused]] const ssize_t n = ::write(event.get(), &one, sizeof one);
        }
    }
};

namespace {

constexpr int kMaxEventsPerRound = 64;

timespec to_timespec(EventLoop::TimePoint when)
{
    // A deadline at or before the clock's origin (defer() uses min()) must
    // still fire: an all-zero it_value would disarm the timerfd instead.
    auto ns = when.time_since_epoch();
    if (ns < std::chrono::nanoseconds(1))
        ns = std::chrono::nanoseconds(1);
    const auto count = std::chrono::duration_cast<std::chrono::nanoseconds>(ns).count();
    return timespec{static_cast<time_t>(count / 1'000'000'000), static_cast<long>(count % 1'000'000'000)};
}

}  // namespace

Result<std::unique_ptr<EventLoop>> EventLoop::create()
{
    std::unique_ptr<EventLoop> loop(new EventLoop());
    loop->epoll_ = UniqueFd(::epoll_create1(EPOLL_CLOEXEC));
    if (!loop->epoll_)
        return system_error_errno("Failed to create an epoll instance");
    loop->timerfd_ = UniqueFd(::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK));
    if (!loop->timerfd_)
        return system_error_errno("Failed to create the event loop's timerfd");
    EventLoop* self = loop.get();
    NPS_TRY_VOID(loop->add_fd(loop->timerfd_.get(), EPOLLIN, [self](std::uint32_t) {
        std::uint64_t expirations = 0;
        (void)!::read(self->timerfd_.get(), &expirations, sizeof expirations);
        self->armed_.reset();  // expired: whatever comes next must be set again
    }));
    loop->posted_ = std::make_shared<Posted>();
    loop->posted_->event = UniqueFd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (!loop->posted_->event)
        return system_error_errno("Failed to create the event loop's eventfd");
    NPS_TRY_VOID(loop->add_fd(loop->posted_->event.get(), EPOLLIN, [self](std::uint32_t) { self->run_posted(); }));
    return loop;
}

EventLoop::~EventLoop()
{
    if (!posted_)
        return;
    std::deque<std::function<void()>> dropped;
    {
        std::lock_guard lock(posted_->mutex);
        posted_->open = false;
        dropped.swap(posted_->queue);
    }
    // `dropped` is destroyed here, outside the lock: queued work may own
    // things whose destructors post.
}

void EventLoop::post(std::function<void()> work)
{
    posted_->post(std::move(work));
}

Poster EventLoop::poster() const
{
    return [posted = posted_](std::function<void()> work) { posted->post(std::move(work)); };
}

void EventLoop::run_posted()
{
    std::uint64_t count = 0;
    [[maybe_unused]] const ssize_t n = ::read(posted_->event.get(), &count, sizeof count);
    std::deque<std::function<void()>> ready;
    {
        std::lock_guard lock(posted_->mutex);
        ready.swap(posted_->queue);
    }
    for (auto& work : ready)
        work();
}

Result<void> EventLoop::add_fd(int fd, std::uint32_t events, FdHandler handler)
{
    if (fds_.count(fd))
        return internal_error("Failed to watch fd " + std::to_string(fd) + ": it is already registered");
    const std::uint64_t registration = next_registration_++;
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = registration;
    if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &ev) < 0)
        return system_error_errno("Failed to add fd " + std::to_string(fd) + " to the epoll set");
    fds_.emplace(fd, FdEntry{registration, std::make_shared<FdHandler>(std::move(handler))});
    registrations_.emplace(registration, fd);
    return {};
}

Result<void> EventLoop::modify_fd(int fd, std::uint32_t events)
{
    auto it = fds_.find(fd);
    if (it == fds_.end())
        return internal_error("Failed to modify fd " + std::to_string(fd) + ": it is not registered");
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = it->second.registration;
    if (::epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, fd, &ev) < 0)
        return system_error_errno("Failed to modify fd " + std::to_string(fd) + " in the epoll set");
    return {};
}

void EventLoop::remove_fd(int fd)
{
    auto it = fds_.find(fd);
    if (it == fds_.end())
        return;
    (void)::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, fd, nullptr);
    registrations_.erase(it->second.registration);
    fds_.erase(it);
}

EventLoop::TimerId EventLoop::add_timer(TimePoint deadline, TimerHandler handler)
{
    const TimerId id = next_timer_++;
    auto position = deadlines_.emplace(deadline, id);
    timers_.emplace(id, TimerEntry{position, std::move(handler)});
    return id;
}

void EventLoop::cancel_timer(TimerId id)
{
    auto it = timers_.find(id);
    if (it == timers_.end())
        return;
    deadlines_.erase(it->second.position);
    timers_.erase(it);
}

Result<void> EventLoop::watch_signals(const std::vector<int>& signals, SignalHandler handler)
{
    if (signalfd_)
        return internal_error("Failed to watch signals: this loop already watches a set");
    sigset_t mask;
    ::sigemptyset(&mask);
    for (int sig : signals)
        ::sigaddset(&mask, sig);
    if (int err = ::pthread_sigmask(SIG_BLOCK, &mask, nullptr); err != 0)
        return system_error("Failed to block the watched signals", err);
    signalfd_ = UniqueFd(::signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK));
    if (!signalfd_)
        return system_error_errno("Failed to create a signalfd");
    auto shared = std::make_shared<SignalHandler>(std::move(handler));
    return add_fd(signalfd_.get(), EPOLLIN, [this, shared](std::uint32_t) {
        signalfd_siginfo info{};
        while (::read(signalfd_.get(), &info, sizeof info) == static_cast<ssize_t>(sizeof info))
            (*shared)(info);
    });
}

Result<void> EventLoop::arm_timerfd()
{
    if (deadlines_.empty()) {
        if (armed_) {
            itimerspec off{};
            ::timerfd_settime(timerfd_.get(), TFD_TIMER_ABSTIME, &off, nullptr);
            armed_.reset();
        }
        return {};
    }
    const TimePoint earliest = deadlines_.begin()->first;
    // Setting it again is needed when the earliest deadline changed, and when
    // the armed time has passed (its expiry may have been consumed already).
    if (armed_ && *armed_ == earliest && earliest > now())
        return {};
    itimerspec when{};
    when.it_value = to_timespec(earliest);
    if (::timerfd_settime(timerfd_.get(), TFD_TIMER_ABSTIME, &when, nullptr) < 0)
        return system_error_errno("Failed to arm the event loop's timerfd");
    armed_ = earliest;
    return {};
}

std::size_t EventLoop::run_due_timers(std::optional<TimePoint> until)
{
    // Only what is due now: timers that callbacks add for the past run in the
    // next round, so a callback re-adding itself cannot spin this one.
    const TimePoint now_point = until.value_or(now());
    std::vector<TimerId> due;
    for (auto it = deadlines_.begin(); it != deadlines_.end() && it->first <= now_point; ++it)
        due.push_back(it->second);
    std::size_t ran = 0;
    for (TimerId id : due) {
        auto it = timers_.find(id);
        if (it == timers_.end())
            continue;  // cancelled by an earlier callback of this round
        TimerHandler handler = std::move(it->second.handler);
        deadlines_.erase(it->second.position);
        timers_.erase(it);
        handler();
        ++ran;
    }
    return ran;
}

Result<std::size_t> EventLoop::run_once(std::optional<std::chrono::milliseconds> timeout)
{
    NPS_TRY_VOID(arm_timerfd());
    std::array<epoll_event, kMaxEventsPerRound> events;
    const int timeout_ms = timeout ? static_cast<int>(timeout->count()) : -1;
    int n = ::epoll_wait(epoll_.get(), events.data(), kMaxEventsPerRound, timeout_ms);
    if (n < 0) {
        if (errno == EINTR)
            return std::size_t{0};
        return system_error_errno("Failed to wait on the epoll set");
    }
    if (n > 0)
        ++wakeups_;
    std::size_t ran = 0;
    for (int i = 0; i < n; ++i) {
        auto reg = registrations_.find(events[static_cast<std::size_t>(i)].data.u64);
        if (reg == registrations_.end())
            continue;  // removed by an earlier callback of this round
        // A copy keeps the callable alive while it removes its own registration.
        std::shared_ptr<FdHandler> handler = fds_.at(reg->second).handler;
        (*handler)(events[static_cast<std::size_t>(i)].events);
        ++ran;
    }
    ran += run_due_timers();
    // Deferred handlers queued by this round's callbacks (defer(): the
    // deadline min()), a few passes deep.
    for (int pass = 0; pass < kDeferPasses && !deadlines_.empty() && deadlines_.begin()->first == TimePoint::min();
         ++pass)
        ran += run_due_timers(TimePoint::min());
    return ran;
}

Result<void> EventLoop::run()
{
    stopping_ = false;
    while (!stopping_)
        NPS_TRY(run_once());
    return {};
}

}  // namespace nps::event
