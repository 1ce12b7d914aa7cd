// SPDX-License-Identifier: Apache-2.0
// EventLoop: one epoll instance that owns the thread it runs on. File
// descriptors (pidfds, pipes, sockets, a signalfd) get a callback per
// readiness event; timers are deadlines on CLOCK_MONOTONIC kept in an ordered
// set and served by a single timerfd armed for the earliest one, so a timer
// costs no fd and re-arming one costs no system call. Nothing ticks: with no
// fd ready and no timer due, the thread sleeps in epoll_wait.
//
// Callbacks run on the loop's thread, one at a time, and may add or remove
// any registration, their own included: an event for a registration removed
// earlier in the same round is dropped, and a fd number reused by a new
// registration never receives the old one's events. A timer added for a
// deadline already passed runs in the next round. defer() runs its handler
// once the current callbacks return: still in this round, after its fd
// events and due timers, for up to kDeferPasses chained deferrals (a
// deferred handler that defers again), then in the next round — so a chain
// of a few deferrals waits for no system call, and none can spin a round.
//
// Not thread-safe, but for post() and poster(): every other call comes from
// the loop's thread (or before run()). Not movable: registrations capture its
// address. The loop is the foundation of every area that waits for something
// (net/'s HTTP clients and server, the supervisor, reports, the executor), so
// it depends on base/ alone (docs/architecture.md).
#pragma once

#include <signal.h>
#include <sys/signalfd.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "nps/base/result.hpp"
#include "nps/base/unique_fd.hpp"

namespace nps::event {

// Hands work to a loop from any thread; see EventLoop::poster().
using Poster = std::function<void(std::function<void()> work)>;

class EventLoop {
public:
    using Clock = std::chrono::steady_clock;  // CLOCK_MONOTONIC on Linux
    using TimePoint = Clock::time_point;
    using FdHandler = std::function<void(std::uint32_t events)>;  // EPOLLIN, EPOLLOUT, EPOLLHUP, ...
    using TimerHandler = std::function<void()>;
    using SignalHandler = std::function<void(const signalfd_siginfo& info)>;
    using TimerId = std::uint64_t;  // never 0; 0 means "no timer"

    static Result<std::unique_ptr<EventLoop>> create();

    EventLoop(const EventLoop&) = delete;
    EventLoop& operator=(const EventLoop&) = delete;
    ~EventLoop();

    static TimePoint now() { return Clock::now(); }

    // Watches `fd` (not owned) for `events` (level-triggered). One
    // registration per fd; remove it before closing the fd.
    Result<void> add_fd(int fd, std::uint32_t events, FdHandler handler);
    Result<void> modify_fd(int fd, std::uint32_t events);
    // No-op for a fd that is not registered.
    void remove_fd(int fd);

    // Runs `handler` once, at or after `deadline`.
    TimerId add_timer(TimePoint deadline, TimerHandler handler);
    TimerId add_timer_after(std::chrono::nanoseconds delay, TimerHandler handler)
    {
        return add_timer(now() + delay, std::move(handler));
    }
    // Runs `handler` soon, outside the caller's stack (see above).
    TimerId defer(TimerHandler handler) { return add_timer(TimePoint::min(), std::move(handler)); }
    static constexpr int kDeferPasses = 8;
    // No-op for 0, a timer that already ran, or one cancelled before.
    void cancel_timer(TimerId id);
    std::size_t pending_timers() const { return timers_.size(); }

    // Blocks `signals` in the calling thread (call it before starting other
    // threads, which inherit the mask) and delivers them through a signalfd.
    // One call per loop.
    Result<void> watch_signals(const std::vector<int>& signals, SignalHandler handler);

    // Waits up to `timeout` (nullopt: until something happens) and runs what
    // is ready: fd callbacks, then due timers. Returns how many callbacks ran.
    Result<std::size_t> run_once(std::optional<std::chrono::milliseconds> timeout = std::nullopt);
    // Rounds until stop() (from a callback).
    Result<void> run();
    void stop() { stopping_ = true; }

    // Any thread: runs `work` on the loop's thread in a later round, after
    // what was posted before it. Work still queued when the loop is destroyed
    // is dropped (destroyed, never run).
    void post(std::function<void()> work);
    // post() as a value that stays safe to call after the loop is gone (the
    // work is then dropped): for helper threads that may outlive it.
    Poster poster() const;

    // Rounds that woke from epoll_wait so far (benchmarks: wakeups while idle).
    std::uint64_t wakeups() const { return wakeups_; }

private:
    struct FdEntry {
        std::uint64_t registration;
        std::shared_ptr<FdHandler> handler;
    };
    struct TimerEntry {
        std::multimap<TimePoint, TimerId>::iterator position;
        TimerHandler handler;
    };

    struct Posted;  // the queue of post(), shared with posters

    EventLoop() = default;
    Result<void> arm_timerfd();
    void run_posted();
    // Runs the timers due at `until` (default: now) that were there when
    // it was called.
    std::size_t run_due_timers(std::optional<TimePoint> until = std::nullopt);

    UniqueFd epoll_;
    UniqueFd timerfd_;
    UniqueFd signalfd_;
    std::shared_ptr<Posted> posted_;
    std::unordered_map<int, FdEntry> fds_;
    std::unordered_map<std::uint64_t, int> registrations_;  // registration → fd
    std::uint64_t next_registration_ = 1;
    std::multimap<TimePoint, TimerId> deadlines_;
    std::unordered_map<TimerId, TimerEntry> timers_;
    TimerId next_timer_ = 1;
    std::optional<TimePoint> armed_;  // what timerfd_ is set to
    bool stopping_ = false;
    std::uint64_t wakeups_ = 0;
};

}  // namespace nps::event
