// SPDX-License-Identifier: Apache-2.0
// What the executor counts for GET /metrics. The loop thread writes, API
// threads read at scrape time: every member is atomic.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

#include "nps/proto/states.hpp"

namespace nps::executor {

// A Prometheus histogram of durations over ten fixed buckets (seconds).
struct DurationHistogram {
    std::array<double, 10> bounds;
    std::array<std::atomic<std::uint64_t>, 11> buckets{};  // last: +Inf
    std::atomic<std::uint64_t> count{0};
    std::atomic<std::uint64_t> sum_us{0};

    void observe(std::uint64_t microseconds);
    void render(std::string& out, const char* name, const char* help) const;
};

struct ExecutorMetrics {

    std::atomic<std::uint64_t> claims_granted{0};
    std::atomic<std::uint64_t> claims_reclaimed{0};
    std::atomic<std::int64_t> tasks_running{0};
    std::atomic<std::int64_t> workers_running{0};
    std::atomic<std::int64_t> leases_live{0};
    // From dispatch to the worker's first instruction (resolution, image,
    // rootfs, sandbox).
    DurationHistogram start{.bounds = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10}};
    // From a task's claim to its end, for the tasks this runner ended.
    DurationHistogram task_duration{.bounds = {0.01, 0.05, 0.1, 0.5, 1, 5, 30, 120, 600, 3600}};
    std::atomic<std::uint64_t> timeouts_idle{0};
    std::atomic<std::uint64_t> timeouts_max_runtime{0};
    std::atomic<std::uint64_t> oom_kills{0};
    // Workers prepared ahead of their dispatch (TaskHost::anticipate), by fate.
    std::atomic<std::uint64_t> workers_prepared_ahead_used{0};
    std::atomic<std::uint64_t> workers_prepared_ahead_unused{0};
    std::atomic<std::uint64_t> workers_prepared_ahead_failed{0};
    // Workers kept warm for the next task's first node (WarmStart), by fate.
    std::atomic<std::uint64_t> workers_warm_used{0};
    std::atomic<std::uint64_t> workers_warm_unused{0};
    std::atomic<std::uint64_t> workers_warm_failed{0};
    std::atomic<std::uint64_t> nodes_completed{0};
    std::atomic<std::uint64_t> nodes_failed{0};
    std::atomic<std::uint64_t> nodes_skipped{0};
    std::atomic<std::uint64_t> nodes_cancelled{0};
    std::atomic<std::uint64_t> nodes_compensated{0};
    std::atomic<std::uint64_t> nodes_compensation_failed{0};
    std::atomic<std::uint64_t> tasks_completed{0};
    std::atomic<std::uint64_t> tasks_failed{0};
    std::atomic<std::uint64_t> tasks_cancelled{0};

    // A node reached a terminal or saga state (a state that is not an end counts nothing).
    void count_node(proto::NodeState state);
    // A task ended (a state that is not an end counts nothing).
    void count_task(proto::TaskState state);

    std::string render() const;
};

}  // namespace nps::executor
