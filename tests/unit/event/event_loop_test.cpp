// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "nps/base/unique_fd.hpp"
#include "nps/event/event_loop.hpp"
#include "nps/event/lifetime.hpp"

using namespace nps::event;
using namespace std::chrono_literals;

namespace {

std::unique_ptr<EventLoop> make_loop()
{
    auto loop = EventLoop::create();
    REQUIRE_MESSAGE(loop, (loop ? "" : loop.error().describe()));
    return std::move(*loop);
}

struct Pipe {
    nps::UniqueFd r, w;
};

Pipe make_pipe()
{
    int fds[2];
    REQUIRE(::pipe2(fds, O_CLOEXEC | O_NONBLOCK) == 0);
    return {nps::UniqueFd(fds[0]), nps::UniqueFd(fds[1])};
}

// Rounds until `done` or ~5 s.
void run_until(EventLoop& loop, const std::function<bool()>& done)
{
    for (int i = 0; i < 500 && !done(); ++i)
        REQUIRE(loop.run_once(10ms));
}

}  // namespace

TEST_CASE("timers run in deadline order, once")
{
    auto loop = make_loop();
    std::vector<int> order;
    const auto now = EventLoop::now();
    loop->add_timer(now + 30ms, [&] { order.push_back(3); });
    loop->add_timer(now + 10ms, [&] { order.push_back(1); });
    loop->add_timer(now + 20ms, [&] { order.push_back(2); });
    run_until(*loop, [&] { return order.size() == 3; });
    CHECK(order == std::vector<int>{1, 2, 3});
    CHECK(loop->pending_timers() == 0);
    REQUIRE(loop->run_once(20ms));
    CHECK(order.size() == 3);
}

TEST_CASE("a timer does not run before its deadline")
{
    auto loop = make_loop();
    const auto deadline = EventLoop::now() + 40ms;
    EventLoop::TimePoint ran_at{};
    loop->add_timer(deadline, [&] { ran_at = EventLoop::now(); });
    run_until(*loop, [&] { return ran_at != EventLoop::TimePoint{}; });
    CHECK(ran_at >= deadline);
}

TEST_CASE("cancelled timers never run, also when cancelled by an earlier callback of the same round")
{
    auto loop = make_loop();
    int ran = 0;
    const auto when = EventLoop::now() + 5ms;
    EventLoop::TimerId second = 0;
    loop->add_timer(when, [&] {
        ++ran;
        loop->cancel_timer(second);
    });
    second = loop->add_timer(when, [&] { ran += 100; });
    auto third = loop->add_timer(when, [&] { ran += 1000; });
    loop->cancel_timer(third);
    loop->cancel_timer(0);
    loop->cancel_timer(12345);
    run_until(*loop, [&] { return loop->pending_timers() == 0; });
    REQUIRE(loop->run_once(10ms));
    CHECK(ran == 1);
}

TEST_CASE("defer runs after its caller returns, in the same round a few deferrals deep, never spinning one")
{
    auto loop = make_loop();
    int ran = 0;
    loop->defer([&] {
        ++ran;
        loop->defer([&] { ++ran; });  // chained: still this round
        CHECK(ran == 1);
    });
    CHECK(ran == 0);
    REQUIRE(loop->run_once(100ms));
    CHECK(ran == 2);

    // A handler that defers itself forever runs 1 + kDeferPasses times a
    // round, and the round ends.
    int spins = 0;
    std::function<void()> again = [&] {
        ++spins;
        loop->defer(again);
    };
    loop->defer(again);
    REQUIRE(loop->run_once(100ms));
    CHECK(spins == 1 + nps::event::EventLoop::kDeferPasses);
    REQUIRE(loop->run_once(100ms));
    CHECK(spins == 2 * (1 + nps::event::EventLoop::kDeferPasses));
    loop.reset();  // the last deferral is dropped unrun
}

TEST_CASE("a deferral runs before a timer due now that was added after it")
{
    auto loop = make_loop();
    std::vector<std::string> order;
    loop->add_timer(loop->now(), [&] { order.push_back("timer"); });
    loop->defer([&] { order.push_back("deferred"); });
    REQUIRE(loop->run_once(100ms));
    CHECK(order == std::vector<std::string>{"deferred", "timer"});
}

TEST_CASE("fd callbacks: readiness, removal of itself and of another in the same round")
{
    auto loop = make_loop();
    Pipe a = make_pipe(), b = make_pipe();
    int a_calls = 0, b_calls = 0;
    REQUIRE(loop->add_fd(a.r.get(), EPOLLIN, [&](std::uint32_t events) {
        CHECK((events & EPOLLIN) != 0);
        ++a_calls;
        char buf[16];
        (void)!::read(a.r.get(), buf, sizeof buf);
        loop->remove_fd(a.r.get());  // itself
        loop->remove_fd(b.r.get());  // and b, whose event may be in this round too
    }));
    REQUIRE(loop->add_fd(b.r.get(), EPOLLIN, [&](std::uint32_t) { ++b_calls; }));
    CHECK_FALSE(loop->add_fd(a.r.get(), EPOLLIN, [](std::uint32_t) {}));  // one registration per fd

    REQUIRE(::write(b.w.get(), "x", 1) == 1);
    REQUIRE(::write(a.w.get(), "x", 1) == 1);
    // b may run first (then a removes nothing it can still see) or be dropped.
    run_until(*loop, [&] { return a_calls == 1; });
    REQUIRE(loop->run_once(10ms));
    CHECK(a_calls == 1);
    CHECK(b_calls <= 1);
}

TEST_CASE("a reused fd number gets none of the old registration's events")
{
    auto loop = make_loop();
    Pipe a = make_pipe();
    int old_calls = 0, new_calls = 0;
    REQUIRE(loop->add_fd(a.r.get(), EPOLLIN, [&](std::uint32_t) { ++old_calls; }));
    REQUIRE(::write(a.w.get(), "x", 1) == 1);
    const int number = a.r.get();
    loop->remove_fd(number);
    a.r.reset();
    Pipe b = make_pipe();  // likely gets `number` back
    REQUIRE(loop->add_fd(b.r.get(), EPOLLIN, [&](std::uint32_t) { ++new_calls; }));
    REQUIRE(loop->run_once(20ms));
    CHECK(old_calls == 0);
    CHECK(new_calls == 0);  // nothing written to b
    REQUIRE(::write(b.w.get(), "y", 1) == 1);
    run_until(*loop, [&] { return new_calls > 0; });
    CHECK(old_calls == 0);
}

TEST_CASE("modify_fd switches the events watched")
{
    auto loop = make_loop();
    Pipe p = make_pipe();
    int writable = 0;
    REQUIRE(loop->add_fd(p.w.get(), 0, [&](std::uint32_t events) {
        if (events & EPOLLOUT)
            ++writable;
    }));
    REQUIRE(loop->run_once(10ms));
    CHECK(writable == 0);
    REQUIRE(loop->modify_fd(p.w.get(), EPOLLOUT));
    REQUIRE(loop->run_once(100ms));
    CHECK(writable == 1);
    CHECK_FALSE(loop->modify_fd(12345, EPOLLIN));
}

TEST_CASE("signals arrive through the signalfd")
{
    auto loop = make_loop();
    int got = 0;
    REQUIRE(loop->watch_signals({SIGUSR1}, [&](const signalfd_siginfo& info) { got = static_cast<int>(info.ssi_signo); }));
    CHECK_FALSE(loop->watch_signals({SIGUSR2}, [](const signalfd_siginfo&) {}));
    REQUIRE(::kill(::getpid(), SIGUSR1) == 0);
    run_until(*loop, [&] { return got != 0; });
    CHECK(got == SIGUSR1);
}

TEST_CASE("run() until stop(); an idle loop does not wake up")
{
    auto loop = make_loop();
    loop->add_timer_after(10ms, [&] { loop->stop(); });
    REQUIRE(loop->run());
    const auto before = loop->wakeups();
    auto far = loop->add_timer_after(std::chrono::hours(1), [] {});
    auto ran = loop->run_once(100ms);
    REQUIRE(ran);
    CHECK(*ran == 0);
    CHECK(loop->wakeups() == before);
    loop->cancel_timer(far);
}

TEST_CASE("work posted from other threads runs on the loop's thread, in posting order")
{
    auto loop = make_loop();
    const auto loop_thread = std::this_thread::get_id();
    std::vector<int> order;
    bool all_on_loop = true;
    std::thread poster([&] {
        for (int i = 0; i < 100; ++i)
            loop->post([&, i] {
                order.push_back(i);
                all_on_loop = all_on_loop && std::this_thread::get_id() == loop_thread;
            });
    });
    poster.join();
    run_until(*loop, [&] { return order.size() == 100; });
    REQUIRE(order.size() == 100);
    CHECK(all_on_loop);
    for (int i = 0; i < 100; ++i)
        CHECK(order[static_cast<std::size_t>(i)] == i);
}

TEST_CASE("work posted inside posted work runs in a later round, not in the same one")
{
    auto loop = make_loop();
    int ran = 0;
    loop->post([&] {
        ++ran;
        loop->post([&] { ++ran; });
    });
    REQUIRE(loop->run_once(1000ms));
    CHECK(ran == 1);
    run_until(*loop, [&] { return ran == 2; });
    CHECK(ran == 2);
}

TEST_CASE("a poster outlives its loop: what it posts then is dropped, never run")
{
    auto loop = make_loop();
    nps::event::Poster post = loop->poster();
    auto queued = std::make_shared<int>(0);
    bool ran = false;
    post([&ran, queued] { ran = true; });  // still queued when the loop goes
    CHECK(queued.use_count() == 2);
    loop.reset();
    CHECK(queued.use_count() == 1);  // the queued work was destroyed with the loop
    post([&ran] { ran = true; });    // no loop: dropped
    CHECK_FALSE(ran);
}

TEST_CASE("work posted through a Lifetime is dropped once the Lifetime ended")
{
    auto loop = make_loop();
    std::vector<std::string> ran;
    nps::event::Poster kept, ended;
    {
        nps::event::Lifetime alive;
        kept = alive.poster(*loop);
        kept([&] { ran.push_back("before end"); });
        run_until(*loop, [&] { return ran.size() == 1; });
        nps::event::Lifetime gone;
        ended = gone.poster(*loop);
        ended([&] { ran.push_back("posted before end, run after"); });
        gone.end();
        CHECK(gone.ended());
        ended([&] { ran.push_back("posted after end"); });
        kept([&] { ran.push_back("still alive"); });
        run_until(*loop, [&] { return ran.size() == 2; });
    }
    kept([&] { ran.push_back("after destruction"); });
    REQUIRE(loop->run_once(50ms));
    CHECK(ran == std::vector<std::string>{"before end", "still alive"});
}
