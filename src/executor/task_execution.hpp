// SPDX-License-Identifier: Apache-2.0
// TaskExecution: one claimed task, from its lease to its end. It is the
// nop::TaskRun's host: it launches each attempt as a sandboxed worker (the
// blocking preparation on the JobPool, the worker under the Supervisor),
// records every node state and event in the store fenced by the lease,
// renews the lease every third of its length, and completes the task in the
// store when the run ends.
//
// Fencing: a record or renewal refused with NOP-CLAIM-CONFLICT means the
// lease is gone. If the task was cancelled (the API), the run is cancelled:
// its workers stop and the nodes they ran end CANCELLED. Otherwise another
// runner may own the task now: the run is abandoned, its workers are
// killed at once, and nothing more is written for it.
//
// The object retires (the `retired` callback, from the loop) once the run
// has ended and no worker or preparation of it is outstanding, so no
// callback ever reaches a destroyed execution.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "execution_context.hpp"
#include "warm_start.hpp"
#include "nps/nop/task_run.hpp"
#include "nps/proto/task_frame.hpp"
#include "nps/store/types.hpp"

namespace nps::executor {

class TaskExecution final : public nop::TaskHost {
public:
    using Retired = std::function<void(const std::string& task_id)>;

    TaskExecution(ExecutionContext& context, store::Lease lease, proto::TaskFrame task, Retired retired);
    ~TaskExecution() override;
    TaskExecution(const TaskExecution&) = delete;
    TaskExecution& operator=(const TaskExecution&) = delete;

    // Reads the nodes an earlier claim finished (a reclaim resumes after
    // them), arms the lease renewal and starts the run.
    void start();
    // The task was cancelled through the store (the API): stop and end.
    void cancelled_elsewhere();
    // The daemon is stopping and the grace is over: write what is queued,
    // kill the workers, give the lease back so another runner resumes the
    // task at once.
    void shut_down();

    const std::string& task_id() const { return lease_.task_id; }
    std::int64_t message_id() const { return lease_.message.message_id; }
    // One JSON object per attempt of this task that has a worker, queued or
    // running (GET /v1/workers, docs/api.md), appended to `into`.
    void describe_workers(nlohmann::json& into, std::int64_t now_ms) const;
    // The log directory of the node's worker while it runs (started, not yet ended).
    std::optional<std::string> running_log_dir(const std::string& node_id) const;
    std::size_t workers() const { return outstanding_; }

    // nop::TaskHost
    void dispatch(const nop::Attempt& attempt) override;
    // Prepares a worker of `agent` on the JobPool now, for the next dispatch
    // of that agent (docs/executor.md, "Workers prepared ahead").
    void anticipate(const std::string& agent) override;
    void stop(const std::string& node_id) override;
    void preflight(const std::vector<std::pair<std::string, std::string>>& probes) override;
    TimerId start_timer(std::chrono::milliseconds delay, std::function<void()> fire) override;
    void cancel_timer(TimerId id) override;
    void on_event(const std::string& name, const std::string& detail_json) override;
    void on_node(const nop::NodeUpdate& update) override;
    void on_task_end(const nop::TaskEnd& end) override;

private:
    enum class Fence { lease, none };  // how records are written: fenced by our lease, or (cancelled) not
    struct Slot;
    using Prepared = Result<std::unique_ptr<PreparedWorker>>;
    // A worker prepared ahead (anticipate()): taken by the next dispatch of
    // its agent, released unused when the run ends or it grows stale. Once
    // prepared, its process is held by the supervisor (Supervisor::hold)
    // when it has room, so that dispatch only releases it.
    struct Ahead {
        std::string agent;
        event::EventLoop::TimePoint made{};
        std::optional<Prepared> prepared;           // once its preparation ended
        std::optional<supervisor::WorkerId> held;   // its process, held before its execve
        std::function<void(Prepared, std::optional<supervisor::WorkerId>)> taker;  // a dispatch waiting for it
        bool warm = false;    // kept warm since the previous task (WarmStart's follower)
        bool hinted = false;  // a warm one: a hint (anticipate()) was served by it
    };
    // At most this many workers prepared ahead per task, used within this long.
    static constexpr std::size_t kMaxAhead = 2;
    static constexpr std::chrono::seconds kAheadFreshness{10};

    // The slot of the attempt (node_id, serial) while it is the node's current one, else nullptr.
    Slot* slot_of(const std::string& node_id, std::uint64_t serial);
    // Starts the attempt's worker under the supervisor, with the process
    // held for it if any.
    void launch(const std::string& node_id, std::uint64_t serial, std::unique_ptr<PreparedWorker> prepared,
                std::optional<supervisor::WorkerId> held);
    // Launches the attempt with `prepared`, or ends it with the preparation's error.
    void prepared_for(const std::string& node_id, std::uint64_t serial, Prepared prepared,
                      std::optional<supervisor::WorkerId> held = std::nullopt);
    // The worker of `prepared` as the supervisor runs it, but for what only
    // its attempt gives (the DelegateFrame, the attempt number): hold() and
    // start() get the same. Takes the task's network namespace at its first
    // worker.
    Result<supervisor::WorkerSpec> worker_spec(const PreparedWorker& prepared);
    // Launches the attempt with the worker kept warm for it (WarmStart),
    // whose network namespace becomes the task's, in the next loop round.
    void launch_warm(const std::string& node_id, std::uint64_t serial, WarmStart::Warm warm);
    // At the run's end (on_task_end, once): the next task will likely start
    // as this one did, so WarmStart keeps a worker of this task's first agent
    // ready for it (made then, not earlier: on two CPUs its preparation would
    // slow this task's last nodes).
    void expect_next_task();
    // A warm follower (launch_warm) in ahead_, served by no hint yet.
    std::shared_ptr<Ahead> add_warm_ahead(const std::string& agent);
    // A warm follower still being prepared when this task took its set is
    // ready (WarmStart::Handoff): kept as a worker prepared ahead if still
    // wanted; else returned, for WarmStart to release.
    std::unique_ptr<PreparedWorker> warm_follower_prepared(const std::string& agent, Prepared prepared);
    // `ahead`'s preparation ended: to the dispatch waiting for it, else kept
    // (its process held) until one takes it or it grows stale.
    void ahead_prepared(const std::shared_ptr<Ahead>& ahead, Prepared prepared);
    // Has the supervisor hold the process of `ahead`'s prepared worker.
    void hold_ahead(Ahead& ahead);
    // Drops a held process nobody took; `prepared` is released once it is gone.
    void drop_held(supervisor::WorkerId held, std::unique_ptr<PreparedWorker> prepared);
    // The attempt's slot exists: launches it with `ahead`'s worker, at once
    // when ready (in the next loop round), else when its preparation ends.
    void launch_ahead(const nop::Attempt& attempt, std::uint64_t serial, std::shared_ptr<Ahead> ahead);
    // The unclaimed, fresh worker prepared ahead for `agent`, removed from ahead_.
    std::shared_ptr<Ahead> take_ahead(const std::string& agent);
    // Removes `ahead` if still untaken, releasing its worker off the loop.
    void drop_ahead(std::shared_ptr<Ahead> ahead);
    // drop_ahead() for every worker prepared ahead that no dispatch took.
    void release_ahead();
    // A progress frame of the attempt (node_id, serial): written now as an
    // event, or when the node's kProgressInterval has passed.
    void progress(const std::string& node_id, std::uint64_t serial, std::uint64_t seq, const std::string& data_json);
    // Writes the attempt's newest unwritten progress frame, if any.
    void flush_progress(const std::string& node_id, std::uint64_t serial);
    void count_worker(const std::string& node_id, std::uint64_t serial, const supervisor::WorkerOutcome& outcome);
    void log_worker_start(const std::string& node_id, std::uint64_t serial, pid_t pid) const;
    void log_worker_end(const std::string& node_id, std::uint64_t serial, const supervisor::WorkerOutcome& o) const;
    void finish_attempt(const std::string& node_id, std::uint64_t serial, nop::AttemptOutcome outcome);
    void renew_lease();
    // Queues a record for write_records() at the end of this loop round, so
    // that what one round of the run produces (a worker's event, its node's
    // record, the task's end) is written with one commit.
    void queue_record(store::ProgressRecord record);
    // Writes what is queued now if a node's record is among it: a dispatch
    // calls it first, so a node never starts before the record of one
    // that ended before it is written (docs/executor.md "Records").
    void write_node_records_now();
    // Writes the queued records, in order, with Store::write_progress; while
    // the store cannot write (disk full, I/O error) retries every
    // kRecordRetry, keeping the lease renewed, instead of dropping the task
    // or its records.
    void write_records();
    // What follows a record the store took (or, for the task's end, refused
    // for good): metrics and the log. True for a node's record or the end.
    bool took(const store::ProgressRecord& record, const std::optional<Error>& refusal);
    // Removes the queued records of one kind.
    template <class Record>
    void drop_unwritten();
    bool end_unwritten() const;
    // A fenced write was refused: lease_refused() in the next loop round (once).
    void refused_later(const Error& error);
    void lease_refused(const Error& error);
    void abandon(const std::string& why);
    void stop_all(bool at_once);
    void maybe_retire();

    ExecutionContext& ctx_;
    store::Lease lease_;
    proto::TaskFrame task_;
    Retired retired_;
    std::unique_ptr<nop::TaskRun> run_;
    event::EventLoop::TimePoint claimed_ = event::EventLoop::now();  // for nps_task_duration_seconds
    std::map<std::string, std::unique_ptr<Slot>> slots_;  // by node id: the attempt in flight
    std::uint64_t next_serial_ = 1;
    std::size_t outstanding_ = 0;                          // preparations + workers not yet ended
    std::vector<std::shared_ptr<Ahead>> ahead_;            // workers prepared ahead, not taken yet
    std::size_t ahead_jobs_ = 0;                           // their preparations still on the JobPool
    event::EventLoop::TimerId renew_timer_ = 0;
    // Until when, on this host's monotonic clock, the lease is surely ours:
    // the moment the claim or the last renewal that succeeded was asked for,
    // plus the lease's length (the store granted it no earlier, by its own
    // clock). Never compared with a wall clock (docs/durability.md, "Leases
    // across hosts").
    event::EventLoop::TimePoint lease_sure_until_{};
    // Records the store has not taken yet, in the order the run made them;
    // the task's end, once made, is last.
    std::vector<store::ProgressRecord> unwritten_;
    std::size_t unwritten_events_ = 0;  // how many of them are events
    event::EventLoop::TimerId write_timer_ = 0;   // this round's write_records()
    event::EventLoop::TimerId record_timer_ = 0;  // a retry of write_records()
    std::set<TimerId> timers_;                             // the run's timers still pending
    std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // for deferred callbacks
    Fence fence_ = Fence::lease;
    bool ended_ = false;      // the run ended (or was abandoned): nothing more is dispatched
    bool abandoned_ = false;  // nothing more is written
    bool refusal_pending_ = false;
    bool retiring_ = false;
    bool release_on_retire_ = false;
    // The task's network namespace (its workers share it); closed with the execution.
    std::optional<sandbox::LoopbackNetns> netns_;
    std::string first_agent_;  // the agent of the first dispatch
    // Warm followers still being prepared when this task took them
    // (WarmStart::Handoff), in ahead_ too until a dispatch takes them.
    std::vector<std::shared_ptr<Ahead>> awaiting_warm_;
    std::vector<std::string> start_hints_;  // the agents anticipate()d at the first dispatch
};

}  // namespace nps::executor
