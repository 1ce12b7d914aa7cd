// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include "nps/base/clock.hpp"
#include "nps/config/config.hpp"
#include "nps/executor/executor_options.hpp"
#include "nps/supervisor/lifecycle.hpp"
#include "nps/supervisor/supervisor.hpp"

using namespace nps::supervisor;
using namespace std::chrono_literals;

namespace {

LifecycleInput input(std::chrono::nanoseconds elapsed, std::chrono::nanoseconds idle,
                     std::optional<std::chrono::milliseconds> idle_timeout,
                     std::optional<std::chrono::milliseconds> max_runtime, WorkerReport report)
{
    return {.elapsed = elapsed, .idle = idle, .limits = {idle_timeout, max_runtime}, .report = report};
}

}  // namespace

TEST_CASE("evaluate_lifecycle: the vector order")
{
    // nop.lifecycle.001: done, within limits
    auto d = evaluate_lifecycle(input(20s, 2s, 30s, 300s, WorkerReport::done));
    CHECK(d.verdict == NodeVerdict::completed);
    CHECK(d.error_code.empty());
    CHECK(d.killed_reason == KilledReason::none);
    // nop.lifecycle.002: idle breach
    d = evaluate_lifecycle(input(40s, 31s, 30s, 300s, WorkerReport::running));
    CHECK(d.verdict == NodeVerdict::failed);
    CHECK(d.error_code == "NOP-RUNTIME-IDLE-TIMEOUT");
    CHECK(d.killed_reason == KilledReason::idle_timeout);
    // nop.lifecycle.003: both breached, max runtime wins
    d = evaluate_lifecycle(input(301s, 31s, 30s, 300s, WorkerReport::running));
    CHECK(d.error_code == "NOP-RUNTIME-MAX-RUNTIME");
    CHECK(d.killed_reason == KilledReason::max_runtime);
}

TEST_CASE("evaluate_lifecycle: a breach beats a report that came too late")
{
    auto d = evaluate_lifecycle(input(300s, 0s, std::nullopt, 300s, WorkerReport::done));
    CHECK(d.verdict == NodeVerdict::failed);
    CHECK(d.error_code == "NOP-RUNTIME-MAX-RUNTIME");
    d = evaluate_lifecycle(input(10s, 30s, 30s, std::nullopt, WorkerReport::failed));
    CHECK(d.error_code == "NOP-RUNTIME-IDLE-TIMEOUT");
}

TEST_CASE("evaluate_lifecycle: limits compare with >=, to the nanosecond")
{
    CHECK(evaluate_lifecycle(input(300s, 0s, std::nullopt, 300s, WorkerReport::running)).breached());
    CHECK_FALSE(evaluate_lifecycle(input(300s - 1ns, 0s, std::nullopt, 300s, WorkerReport::running)).breached());
    CHECK(evaluate_lifecycle(input(1s, 500ms, 500ms, std::nullopt, WorkerReport::running)).breached());
    CHECK_FALSE(evaluate_lifecycle(input(1s, 500ms - 1ns, 500ms, std::nullopt, WorkerReport::running)).breached());
}

TEST_CASE("evaluate_lifecycle: no limits, no breach; reports decide")
{
    const auto forever = std::chrono::hours(24 * 365);
    CHECK(evaluate_lifecycle(input(forever, forever, std::nullopt, std::nullopt, WorkerReport::running)).verdict ==
          NodeVerdict::running);
    CHECK(evaluate_lifecycle(input(forever, forever, std::nullopt, std::nullopt, WorkerReport::done)).verdict ==
          NodeVerdict::completed);
    auto failed = evaluate_lifecycle(input(1s, 1s, 30s, 60s, WorkerReport::failed));
    CHECK(failed.verdict == NodeVerdict::failed);
    CHECK(failed.error_code.empty());  // the worker's own code is the caller's
    CHECK_FALSE(failed.breached());
}

TEST_CASE("resolve_limits: SpawnSpec, then policy; zero rules")
{
    auto l = resolve_limits(10s, std::nullopt, 60s, 3600s);
    CHECK(l.idle_timeout == 10s);
    CHECK(l.max_runtime == 3600s);
    l = resolve_limits(std::nullopt, std::nullopt, 0ms, 0ms);
    CHECK_FALSE(l.idle_timeout);
    CHECK_FALSE(l.max_runtime);
    // A spec's zero is "not set": it cannot switch the policy off.
    l = resolve_limits(0ms, 0ms, 60s, 3600s);
    CHECK(l.idle_timeout == 60s);
    CHECK(l.max_runtime == 3600s);
    l = resolve_limits(5s, 50s, 0ms, 0ms);
    CHECK(l.idle_timeout == 5s);
    CHECK(l.max_runtime == 50s);
}

TEST_CASE("killed_reason names")
{
    CHECK(to_string(KilledReason::none).empty());
    CHECK(to_string(KilledReason::idle_timeout) == "idle_timeout");
    CHECK(to_string(KilledReason::max_runtime) == "max_runtime");
    CHECK(to_string(KilledReason::oom) == "oom");
    CHECK(to_string(KilledReason::signal) == "signal");
    CHECK(to_string(KilledReason::exit_status) == "exit_status");
    CHECK(to_string(KilledReason::spawn_failed) == "spawn_failed");
    CHECK(to_string(KilledReason::shutdown) == "shutdown");
}

TEST_CASE("a worker's life in fake time: output resets idle, max runtime does not move")
{
    // The supervisor feeds evaluate_lifecycle with (now - start, now - last
    // output); here a FakeClock plays the loop's clock.
    nps::FakeClock clock;
    const std::int64_t start = clock.now_ms();
    std::int64_t last_output = start;
    const LifecycleLimits limits{.idle_timeout = 10s, .max_runtime = 60s};
    auto at_now = [&] {
        return evaluate_lifecycle({.elapsed = std::chrono::milliseconds(clock.now_ms() - start),
                                   .idle = std::chrono::milliseconds(clock.now_ms() - last_output),
                                   .limits = limits});
    };
    for (int i = 0; i < 5; ++i) {  // output every 9 s: never idle
        clock.advance_ms(9'000);
        CHECK_FALSE(at_now().breached());
        last_output = clock.now_ms();
    }
    clock.advance_ms(9'999);
    CHECK_FALSE(at_now().breached());  // 54.999 s, idle 9.999 s
    clock.advance_ms(1);
    CHECK(at_now().killed_reason == KilledReason::idle_timeout);  // 55 s, idle 10 s
    last_output = clock.now_ms();
    clock.advance_ms(5'000);
    CHECK(at_now().killed_reason == KilledReason::max_runtime);  // 60 s
}

TEST_CASE("[workers] becomes the supervisor's options")
{
    auto config = nps::config::parse_config(R"(
[workers]
max_concurrent = 3
default_idle_timeout_seconds = 30
default_max_runtime_seconds = 90
stop_grace_seconds = 2
log_max_bytes = "64Ki"
log_keep = 4
spawn_pool = 5
)",
                                            "test.toml");
    REQUIRE(config);
    const SupervisorOptions o = nps::executor::supervisor_options(config->workers);
    CHECK(o.max_concurrent == 3);
    CHECK(o.default_idle_timeout == 30s);
    CHECK(o.default_max_runtime == 90s);
    CHECK(o.stop_grace == 2s);
    CHECK(o.log_limits.max_bytes == 64 * 1024);
    CHECK(o.log_limits.keep == 4);
    CHECK(o.spawn_pool == 5);
    CHECK(o.log_root.empty());
    CHECK(o.cgroup_base == nullptr);
    // The defaults: no idle limit, 4 h.
    const auto defaults = resolve_limits(std::nullopt, std::nullopt,
                                         nps::executor::supervisor_options(nps::config::parse_config("", "t")->workers).default_idle_timeout,
                                         nps::executor::supervisor_options(nps::config::parse_config("", "t")->workers).default_max_runtime);
    CHECK_FALSE(defaults.idle_timeout);
    CHECK(defaults.max_runtime == std::chrono::hours(4));
    CHECK(nps::executor::supervisor_options(nps::config::parse_config("", "t")->workers).spawn_pool == kDefaultSpawnPool);
    CHECK(nps::executor::supervisor_options(nps::config::parse_config("[workers]\nspawn_pool = 0\n", "t")->workers).spawn_pool == 0);
    auto too_big = nps::config::parse_config("[workers]\nspawn_pool = 65\n", "t");
    REQUIRE_FALSE(too_big);
    CHECK(too_big.error().message.find("spawn_pool") != std::string::npos);
    CHECK(too_big.error().message.find("64") != std::string::npos);
    CHECK_FALSE(nps::config::parse_config("[workers]\nspawn_pool = -1\n", "t"));
}
