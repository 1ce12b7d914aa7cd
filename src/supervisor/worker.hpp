// SPDX-License-Identifier: Apache-2.0
// Internal: the supervisor's record of one worker, from start() to outcome.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "nps/base/unique_fd.hpp"
#include "nps/proto/runtime_failure.hpp"
#include "nps/sandbox/child.hpp"
#include "nps/supervisor/supervisor.hpp"
#include "nps/supervisor/worker_protocol.hpp"

namespace nps::supervisor {

// The node's fate once it is decided, before the worker is reaped: by a
// final frame, a limit breach or a protocol violation. Whatever happens
// afterwards (the kill, the exit status) no longer changes it.
struct Settlement {
    WorkerState state = WorkerState::failed;
    std::string result_json;
    std::string error_code;
    std::string error_message;
    bool retryable = false;
    KilledReason killed_reason = KilledReason::none;
};

// A failure the runner decided, with the code and retryability of its kind
// (proto/runtime_failure.hpp, the one place that decides them).
Settlement runtime_settlement(proto::RuntimeFailure failure, std::string message,
                              KilledReason reason = KilledReason::none);

enum class StopStage { none, frame_sent, term_sent, kill_sent };

struct Supervisor::Worker {
    Worker(WorkerId id_, std::string name_, WorkerSpec spec_, DelegateLine delegate_, WorkerCallbacks callbacks_,
           LifecycleLimits limits_)
        : id(id_), name(std::move(name_)), spec(std::move(spec_)), delegate(std::move(delegate_)),
          callbacks(std::move(callbacks_)), limits(limits_), decoder(delegate.assignment)
    {
    }

    // Its process's environment: the spec's with the DelegateFrame's NPS_*
    // variables.
    std::vector<std::string> environment() const
    {
        return worker_environment(delegate.assignment, spec.attempt, spec.cgn_budget, spec.sandbox.env);
    }

    WorkerId id;
    std::string name;
    WorkerSpec spec;
    DelegateLine delegate;
    WorkerCallbacks callbacks;
    LifecycleLimits limits;

    std::optional<cgroup::WorkerCgroup> cgroup;
    sandbox::Child child;
    UniqueFd mount_ns;  // the child's, until release() drops it on a spawn thread
    UniqueFd in, out, err;
    std::string in_pending;          // stdin bytes the socket has not taken yet
    bool in_watched = false;         // `in` is in the epoll set (waiting for EPOLLOUT)
    bool in_close_when_sent = false;

    LineFramer framer;
    StreamDecoder decoder;
    RotatingLog out_log, err_log;

    event::EventLoop::TimePoint started{};
    event::EventLoop::TimePoint last_activity{};
    std::int64_t started_at_ms = 0;
    event::EventLoop::TimerId max_timer = 0, idle_timer = 0, stop_timer = 0;

    std::optional<Settlement> settlement;
    std::optional<StopReason> stop_reason;
    StopStage stop_stage = StopStage::none;
    bool spawning = false;  // its process is being spawned (worker_spawn.cpp); no child yet
    bool killed = false;  // we sent SIGKILL to the group
    event::EventLoop::TimePoint killed_at{};
    bool exited = false;  // reaped; what is left in the pipes is being drained
    std::vector<std::string> warnings;
};

}  // namespace nps::supervisor
