// SPDX-License-Identifier: Apache-2.0
// LoopReactor: the daemon's supervisor::EventLoop as a net::Reactor, so the
// loop-driven HTTP clients of net/ (CurlMulti, AsyncFetcher, Mailbox) run on
// it without net/ knowing supervisor/. Same thread rules as the loop.
#pragma once

#include "nps/net/reactor.hpp"
#include "nps/supervisor/event_loop.hpp"

namespace nps::report {

class LoopReactor final : public net::Reactor {
public:
    explicit LoopReactor(supervisor::EventLoop& loop) : loop_(loop) {}

    Result<void> add_fd(int fd, std::uint32_t events, FdHandler handler) override
    {
        return loop_.add_fd(fd, events, std::move(handler));
    }
    Result<void> modify_fd(int fd, std::uint32_t events) override { return loop_.modify_fd(fd, events); }
    void remove_fd(int fd) override { loop_.remove_fd(fd); }
    TimerId add_timer_after(std::chrono::milliseconds delay, TimerHandler handler) override
    {
        return loop_.add_timer_after(delay, std::move(handler));
    }
    void cancel_timer(TimerId id) override { loop_.cancel_timer(id); }

    supervisor::EventLoop& loop() const { return loop_; }

private:
    supervisor::EventLoop& loop_;
};

}  // namespace nps::report
