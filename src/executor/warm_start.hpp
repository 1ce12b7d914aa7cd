// SPDX-License-Identifier: Apache-2.0
// WarmStart: workers kept ready for the next task's first nodes
// (docs/executor.md, "Workers kept warm for the next task").
//
// Within a task, each node's worker is prepared and its process held while
// its dependencies run (TaskExecution::anticipate); the first node of a
// task has none, so it paid the whole launch — rootfs, namespaces, spawn —
// between its claim and its start, and the nodes hinted at its start had
// only the first node's short run to be prepared in. When a task ends, the
// executor expects the next task to start as it did (a stream of tasks of
// one kind, a client submitting one after another): it prepares a worker of
// its first agent on the JobPool, gives it a network namespace from the
// pool and has the supervisor hold its process before its execve; then, in
// that namespace, one worker of each agent the task hinted at its start (at
// most TaskExecution's kMaxAhead: the followers). The next task whose first
// worker runs that agent takes them — the namespace becomes the task's, the
// followers its workers prepared ahead — and its dispatches only release
// processes.
//
// One set is kept at most, for [workers] warm_seconds (default 2 s: a
// SpawnSpec or image could change meanwhile, as for the workers prepared
// ahead within a task): then, when a task that starts otherwise ends, at a
// reload and at shutdown it is dropped (processes killed and reaped, then
// rootfs released off the loop). A follower not yet prepared when its set
// is taken goes to the task that took it once it is. An idle daemon
// therefore holds nothing for longer than warm_seconds after its last
// task. Only with [workers] hold_ahead, in production mode.
//
// Loop thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "execution_context.hpp"
#include "nps/sandbox/loopback_netns.hpp"

namespace nps::executor {

class WarmStart {
public:
    struct Worker {
        std::string agent;
        std::unique_ptr<PreparedWorker> prepared;
        std::optional<supervisor::WorkerId> held;  // none when the supervisor had no room
    };
    // Where the followers still being prepared when their set was taken go
    // once prepared: `deliver` (set by the taker) returns the worker if it
    // does not want it any more; unset, it is released.
    struct Handoff {
        bool taken = false;
        std::function<std::unique_ptr<PreparedWorker>(const std::string& agent,
                                                       Result<std::unique_ptr<PreparedWorker>> prepared)>
            deliver;
    };
    struct Warm {
        Worker first;
        std::vector<Worker> followers;       // those prepared (and held) by the time it was taken
        std::vector<std::string> preparing;  // the agents of those not yet: handed over through handoff
        std::shared_ptr<Handoff> handoff;
        sandbox::LoopbackNetns netns;        // their processes': the taking task's from then on
    };

    explicit WarmStart(ExecutionContext& context);
    // Destroyed after the supervisor (which kills a held process): the
    // rootfs is then released here.
    ~WarmStart();
    WarmStart(const WarmStart&) = delete;
    WarmStart& operator=(const WarmStart&) = delete;

    // A task whose first worker ran `agent`, and which hinted `followers`
    // at its start, ended: keep workers of them ready for the next task
    // (a set kept for other agents is dropped).
    void expect(const std::string& agent, const std::vector<std::string>& followers);
    // The set kept, if its first worker is of `agent`, prepared and within
    // warm_seconds.
    std::optional<Warm> take(const std::string& agent);
    // Drops the set kept, if any (a reload changed the worker policy).
    void drop();
    // Drops it and makes no other (the daemon is stopping); `idle` is
    // called (from the loop) once no preparation or release of one is left
    // in flight, after which the executor may be destroyed.
    void shut_down(std::function<void()> idle);

private:
    struct Entry {
        std::vector<std::string> agents;  // the first worker's, then the followers'
        event::EventLoop::TimePoint made{};
        std::uint64_t generation = 0;
        std::vector<std::optional<Worker>> ready;  // by agents' index, once prepared and held
        std::vector<bool> preparing;               // by agents' index, until its preparation ends
        std::optional<sandbox::LoopbackNetns> netns;  // taken when the first of them is prepared
        std::shared_ptr<Handoff> handoff;
        event::EventLoop::TimerId stale_timer = 0;
    };

    std::chrono::seconds freshness() const;
    // Prepares entry_'s worker of agents[index] on the JobPool.
    void prepare(std::size_t index);
    void hand_over(Handoff& handoff, const std::string& agent, Result<std::unique_ptr<PreparedWorker>> prepared);
    void prepared(std::uint64_t generation, std::size_t index, Result<std::unique_ptr<PreparedWorker>> prepared);
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
