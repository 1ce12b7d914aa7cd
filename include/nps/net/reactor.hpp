// SPDX-License-Identifier: Apache-2.0
// Reactor: what an event loop offers the loop-driven clients of net/
// (curl_multi.hpp, async_fetch.hpp, mailbox.hpp) — fd readiness callbacks
// and one-shot timers. net/ does not depend on supervisor/: the daemon adapts
// its supervisor::EventLoop (report/loop_reactor.hpp).
//
// Every call comes from the loop's thread; callbacks run there, one at a
// time, and may add or remove any registration, their own included.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>

#include "nps/base/result.hpp"

namespace nps::net {

class Reactor {
public:
    using FdHandler = std::function<void(std::uint32_t events)>;  // EPOLLIN, EPOLLOUT, EPOLLERR, EPOLLHUP
    using TimerHandler = std::function<void()>;
    using TimerId = std::uint64_t;  // never 0; 0 means "no timer"

    virtual ~Reactor() = default;

    // Watches `fd` (not owned; level-triggered) for `events` (EPOLLIN/EPOLLOUT).
    virtual Result<void> add_fd(int fd, std::uint32_t events, FdHandler handler) = 0;
    virtual Result<void> modify_fd(int fd, std::uint32_t events) = 0;
    // No-op for a fd that is not watched.
    virtual void remove_fd(int fd) = 0;
    // Runs `handler` once, `delay` from now (0: in the next round, never
    // inside the caller's stack).
    virtual TimerId add_timer_after(std::chrono::milliseconds delay, TimerHandler handler) = 0;
    // No-op for 0, a timer that already ran, or one cancelled before.
    virtual void cancel_timer(TimerId id) = 0;
};

}  // namespace nps::net
