// SPDX-License-Identifier: Apache-2.0
// What every TaskExecution of one `serve` shares: the loop and the things
// that live on it, and the executor's options.
#pragma once

#include <functional>

#include "nps/base/clock.hpp"
#include "nps/cgroup/worker_cgroup.hpp"
#include "nps/executor/executor_options.hpp"
#include "nps/event/event_loop.hpp"
#include "nps/event/job_pool.hpp"
#include "nps/executor/executor_metrics.hpp"
#include "nps/sandbox/netns_pool.hpp"
#include "nps/sandbox/seccomp.hpp"
#include "nps/sandbox/userns.hpp"
#include "nps/store/store.hpp"
#include "nps/supervisor/supervisor.hpp"
#include "worker_launch.hpp"

namespace nps::executor {

class WarmStart;  // warm_start.hpp

struct ExecutionContext {
    // The executor's: on the loop thread, a reload changes its claim and
    // worker policy (Executor::policy_changed).
    const ExecutorOptions& options;
    const Clock& clock;
    event::EventLoop& loop;
    store::Store& store;  // the loop thread's connection
    supervisor::Supervisor& supervisor;
    event::JobPool& jobs;
    LaunchContext launch;
    sandbox::NetnsPool* netns_pool = nullptr;      // each task takes a loopback-only netns of its own
    sandbox::UsernsSlots* userns = nullptr;        // nullptr: no user namespace (mode off)
    const sandbox::SeccompProgram* seccomp = nullptr;  // nullptr: the default filter
    cgroup::Enforcement enforcement = cgroup::Enforcement::strict;
    ExecutorMetrics& metrics;
    WarmStart* warm = nullptr;  // the worker kept ready for the next task's first node
    // Told when a node or compensation state was recorded (the report outbox).
    std::function<void()> recorded;
    // Told a worker's log directory once the worker is gone (the logs cap).
    std::function<void(const std::string& log_dir)> worker_logs_closed;
};

}  // namespace nps::executor
