// SPDX-License-Identifier: Apache-2.0
// WarmStart: one worker kept ready for the next task's first node
// (docs/executor.md, "A worker kept warm for the next task").
//
// Within a task, each node's worker is prepared and its process held while
// its dependencies run (TaskExecution::anticipate); the first node of a
// task has none, so it paid the whole launch — rootfs, namespaces, spawn —
// between its claim and its start. When a task's first node is dispatched,
// the executor expects the next task to start with the same agent (a stream
// of tasks of one kind, a client submitting one after another): it prepares
// a worker of that agent on the JobPool, gives it a network namespace from
// the pool and has the supervisor hold its process before its execve. The
// next task whose first worker runs that agent takes all three — the
// namespace becomes the task's — and its dispatch only releases the process.
//
// One is kept at most, for [workers] warm_seconds (default 2 s: its
// SpawnSpec or image could change meanwhile, as for the workers prepared
// ahead within a task): then, when a task starts with another agent, at a
// reload and at shutdown it is dropped (its process killed and reaped,
// then its rootfs released off the loop). An idle daemon therefore holds
// nothing for longer than warm_seconds after its last task. Only with
// [workers] hold_ahead, in production mode.
//
// Loop thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "execution_context.hpp"
#include "nps/sandbox/loopback_netns.hpp"

namespace nps::executor {

class WarmStart {
public:
    struct Warm {
        std::unique_ptr<PreparedWorker> prepared;
        std::optional<supervisor::WorkerId> held;  // none when the supervisor had no room
        sandbox::LoopbackNetns netns;              // the process's: the taking task's from then on
    };

    explicit WarmStart(ExecutionContext& context);
    // Destroyed after the supervisor (which kills a held process): the
    // rootfs is then released here.
    ~WarmStart();
    WarmStart(const WarmStart&) = delete;
    WarmStart& operator=(const WarmStart&) = delete;

    // A task's first worker, of `agent`, was dispatched: keep one of `agent`
    // ready for the next task (one of another agent is dropped).
    void expect(const std::string& agent);
    // The warm worker, if it is of `agent`, prepared and within warm_seconds.
    std::optional<Warm> take(const std::string& agent);
    // Drops the warm worker, if any (a reload changed the worker policy).
    void drop();
    // Drops it and makes no other (the daemon is stopping); `idle` is
    // called (from the loop) once no preparation or release of one is left
    // in flight, after which the executor may be destroyed.
    void shut_down(std::function<void()> idle);

private:
    struct Entry {
        std::string agent;
        event::EventLoop::TimePoint made{};
        std::uint64_t generation = 0;
        std::optional<Warm> warm;  // once prepared
        event::EventLoop::TimerId stale_timer = 0;
    };

    std::chrono::seconds freshness() const;
    void prepared(std::uint64_t generation, Result<std::unique_ptr<PreparedWorker>> prepared);
    // Gives back a prepared worker no task took, off the loop: its process
    // (if held) first, then its rootfs.
    void release(std::unique_ptr<PreparedWorker> prepared, std::optional<supervisor::WorkerId> held);
    // One preparation or release ended.
    void landed();

    ExecutionContext& ctx_;
    std::optional<Entry> entry_;
    std::uint64_t next_generation_ = 1;
    bool stopping_ = false;
    std::size_t in_flight_ = 0;  // preparations and releases not ended yet
    std::function<void()> idle_;  // shut_down()'s, once in_flight_ is 0
    std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace nps::executor
