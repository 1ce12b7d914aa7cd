// SPDX-License-Identifier: Apache-2.0
// What a TaskExecution writes, and the lease it writes under: events, node
// records and the task's end go to the store fenced by the lease (retried
// while the store cannot write), the lease is renewed every third of its
// length, and a write or renewal refused for a lost lease ends the run
// (docs/executor.md "Fencing").
#include <algorithm>
#include <variant>

#include <nlohmann/json.hpp>

#include "nps/base/log.hpp"
#include "nps/proto/error_codes.hpp"
#include "nps/store/write_health.hpp"
#include "task_execution.hpp"

namespace nps::executor {

namespace {

constexpr const char* kClaimConflict = proto::code::kNopClaimConflict;
constexpr const char* kTaskNotFound = proto::code::kNopTaskNotFound;
constexpr std::chrono::seconds kRenewRetry{1};
// Workers stop this long before the lease could run out unrenewed: time for
// the stop itself, and for monotonic clocks that run at slightly different
// rates.
constexpr std::chrono::seconds kLeaseSafetyMargin{2};
constexpr std::chrono::seconds kRecordRetry{1};
// Events kept while the store cannot write; past this, newer ones are
// dropped (logged). Node records and the task's end are always kept.
constexpr std::size_t kMaxUnwrittenEvents = 1024;

// The store cannot write for now (nps/store/write_health.hpp): keep the
// record and try again, rather than give the task up.
bool is_store_fault(const Error& error)
{
    return error.code == proto::code::kNwpStoreDiskFull || (error.code.empty() && store::write_health().degraded);
}

// A fenced write or renewal refused because the lease is not ours any more
// (expired, reclaimed, the task cancelled or gone).
bool is_lease_lost(const Error& error)
{
    return error.code == kClaimConflict || error.code == kTaskNotFound;
}

bool is_final_task_event(const std::string& name)
{
    // The store logs these itself, in the statement that ends the task.
    return name == "task:completed" || name == "task:failed" || name == "task:cancelled";
}

}  // namespace

// --- records -------------------------------------------------------------------

void TaskExecution::on_event(const std::string& name, const std::string& detail_json)
{
    if (abandoned_ || is_final_task_event(name))
        return;
    if (unwritten_events_ >= kMaxUnwrittenEvents) {
        log::warning("task " + task_id() + ": event " + name + " dropped: " + std::to_string(kMaxUnwrittenEvents) +
                     " events already wait for the store to take writes again", {.task_id = task_id()});
        return;
    }
    std::optional<std::string> fence;
    if (fence_ == Fence::lease)
        fence = lease_.runner_nid;
    ++unwritten_events_;
    queue_record(store::ProgressEvent{.task_id = task_id(), .name = name, .detail_json = detail_json,
                                      .lease_holder = std::move(fence)});
}

void TaskExecution::on_node(const nop::NodeUpdate& update)
{
    if (abandoned_)
        return;
    store::NodeResult result{.task_id = task_id(),
                             .node_id = update.node_id,
                             .dedup_key = lease_.dedup_key,
                             .state = update.state,
                             .attempts = update.attempts,
                             .error_code = update.error_code,
                             .error_message = update.error_message,
                             .result_json = update.result_json,
                             .killed_reason = update.killed_reason};
    if (result.killed_reason && result.killed_reason->empty())
        result.killed_reason.reset();
    if (fence_ == Fence::lease)
        result.runner_nid = lease_.runner_nid;
    queue_record(std::move(result));
}

void TaskExecution::on_task_end(const nop::TaskEnd& end)
{
    expect_next_task();
    ended_ = true;
    if (!abandoned_ && fence_ == Fence::lease) {
        // The lease stays renewed until the end is written.
        queue_record(store::ProgressEnd{.task_id = task_id(),
                                        .runner_nid = lease_.runner_nid,
                                        .outcome = {.state = end.state,
                                                    .error_code = end.error_code,
                                                    .error_message = end.error_message,
                                                    .aggregate_json = end.aggregate_json}});
    } else {
        ctx_.loop.cancel_timer(std::exchange(renew_timer_, 0));
    }
    maybe_retire();
}

void TaskExecution::queue_record(store::ProgressRecord record)
{
    unwritten_.push_back(std::move(record));
    if (write_timer_ || record_timer_)
        return;  // this round's write is due already, or a retry
    write_timer_ = ctx_.loop.defer([this, alive = alive_] {
        if (!*alive)
            return;
        write_timer_ = 0;
        write_records();
        maybe_retire();
    });
}

void TaskExecution::write_node_records_now()
{
    const bool node_waits = std::any_of(unwritten_.begin(), unwritten_.end(), [](const store::ProgressRecord& r) {
        return std::holds_alternative<store::NodeResult>(r);
    });
    if (node_waits)
        write_records();
}

bool TaskExecution::end_unwritten() const
{
    return !unwritten_.empty() && std::holds_alternative<store::ProgressEnd>(unwritten_.back());
}

void TaskExecution::write_records()
{
    ctx_.loop.cancel_timer(std::exchange(write_timer_, 0));
    if (abandoned_ || record_timer_)
        return;  // nothing more is written, or a retry is already due
    auto retry_later = [this](const Error& error) {
        log::warning("task " + task_id() + ": the store cannot write, retrying every " +
                     std::to_string(kRecordRetry.count()) + " s: " + error.describe(), {.task_id = task_id()});
        record_timer_ = ctx_.loop.add_timer_after(kRecordRetry, [this] {
            record_timer_ = 0;
            write_records();
            maybe_retire();
        });
    };
    bool recorded = false;
    while (!unwritten_.empty()) {
        const store::ProgressWritten written = ctx_.store.write_progress(unwritten_);
        for (std::size_t i = 0; i < written.written; ++i)
            recorded |= took(unwritten_[i], std::nullopt);
        unwritten_.erase(unwritten_.begin(), unwritten_.begin() + static_cast<std::ptrdiff_t>(written.written));
        if (!written.error)
            break;
        const Error& error = *written.error;
        if (is_store_fault(error)) {
            retry_later(error);
            break;
        }
        // Refused: drop it (and what it decides), then write what is left,
        // so nothing stays queued with no write to come.
        const store::ProgressRecord& refused = unwritten_.front();
        if (std::holds_alternative<store::ProgressEvent>(refused)) {
            if (is_lease_lost(error)) {
                drop_unwritten<store::ProgressEvent>();
                refused_later(error);
                continue;
            }
            log::warning("task " + task_id() + ": event " + std::get<store::ProgressEvent>(refused).name + ": " +
                         error.describe(), {.task_id = task_id()});
            --unwritten_events_;
            unwritten_.erase(unwritten_.begin());
        } else if (std::holds_alternative<store::NodeResult>(refused)) {
            drop_unwritten<store::NodeResult>();
            drop_unwritten<store::ProgressEnd>();
            refused_later(error);
        } else {
            recorded |= took(refused, error);
            unwritten_.erase(unwritten_.begin());
        }
    }
    if (recorded && ctx_.recorded)
        ctx_.recorded();
}

bool TaskExecution::took(const store::ProgressRecord& record, const std::optional<Error>& refusal)
{
    if (std::holds_alternative<store::ProgressEvent>(record)) {
        --unwritten_events_;
        return false;
    }
    if (const auto* node = std::get_if<store::NodeResult>(&record)) {
        ctx_.metrics.count_node(node->state);
        return true;
    }
    const store::TaskOutcome& outcome = std::get<store::ProgressEnd>(record).outcome;
    if (refusal)
        log::warning("task " + task_id() + ": could not record its end (" + std::string(proto::to_string(outcome.state)) +
                     "): " + refusal->describe(), {.task_id = task_id()});
    else
        log::info("task " + task_id() + ": " + std::string(proto::to_string(outcome.state)) + (outcome.error_code ? " " + *outcome.error_code : ""),
                  {.task_id = task_id()});
    ctx_.metrics.count_task(outcome.state);
    ctx_.metrics.task_duration.observe(static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(event::EventLoop::now() - claimed_).count()));
    ctx_.loop.cancel_timer(std::exchange(renew_timer_, 0));
    return true;
}

template <class Record>
void TaskExecution::drop_unwritten()
{
    std::erase_if(unwritten_, [this](const store::ProgressRecord& r) {
        if (!std::holds_alternative<Record>(r))
            return false;
        if (std::holds_alternative<store::ProgressEvent>(r))
            --unwritten_events_;
        return true;
    });
}

// --- the lease -------------------------------------------------------------------

void TaskExecution::renew_lease()
{
    renew_timer_ = 0;
    if (ended_ && !end_unwritten())
        return;
    const event::EventLoop::TimePoint asked = event::EventLoop::now();
    auto renewed = ctx_.store.renew(task_id(), lease_.runner_nid, ctx_.options.claims.lease_seconds);
    std::chrono::milliseconds next(ctx_.options.claims.lease_seconds * 1000 / 3);
    if (renewed)
        lease_sure_until_ = asked + std::chrono::seconds(ctx_.options.claims.lease_seconds);
    if (!renewed) {
        if (is_lease_lost(renewed.error())) {
            lease_refused(renewed.error());
            return;
        }
        // The store cannot be reached (a lost database connection): once the
        // lease may have run out, another runner may take the task over, so
        // the workers stop before that moment.
        if (event::EventLoop::now() + kRenewRetry + kLeaseSafetyMargin >= lease_sure_until_) {
            abandon("its lease could not be renewed before it may run out (" + renewed.error().describe() +
                    "): another runner may take the task over");
            return;
        }
        log::warning("task " + task_id() + ": lease renewal failed, retrying: " + renewed.error().describe(),
                     {.task_id = task_id()});
        next = kRenewRetry;
    }
    renew_timer_ = ctx_.loop.add_timer_after(next, [this] { renew_lease(); });
}

void TaskExecution::refused_later(const Error& error)
{
    if (std::exchange(refusal_pending_, true))
        return;  // the first refusal of this round decides
    // Not from inside the run's own call: decide in the next round.
    ctx_.loop.defer([this, alive = alive_, error] {
        if (!*alive)
            return;
        refusal_pending_ = false;
        lease_refused(error);
    });
}

void TaskExecution::lease_refused(const Error& error)
{
    if (ended_)
        return;
    auto task = ctx_.store.task(task_id());
    if (task && task->state == proto::TaskState::cancelled) {
        cancelled_elsewhere();
        return;
    }
    if (is_lease_lost(error))
        abandon("its lease is lost (" + error.describe() + ")");
    else
        abandon("the store refused a record (" + error.describe() + ")");
}

void TaskExecution::cancelled_elsewhere()
{
    if (ended_)
        return;
    log::info("task " + task_id() + ": cancelled, stopping its workers", {.task_id = task_id()});
    fence_ = Fence::none;
    run_->cancel("cancelled through the API");
}

void TaskExecution::abandon(const std::string& why)
{
    if (ended_)
        return;
    log::warning("task " + task_id() + ": abandoned, " + why, {.task_id = task_id()});
    abandoned_ = true;
    ended_ = true;
    unwritten_.clear();
    unwritten_events_ = 0;
    ctx_.loop.cancel_timer(std::exchange(write_timer_, 0));
    ctx_.loop.cancel_timer(std::exchange(record_timer_, 0));
    ctx_.loop.cancel_timer(std::exchange(renew_timer_, 0));
    run_->abandon();
    stop_all(/*at_once=*/true);
    maybe_retire();
}

void TaskExecution::shut_down()
{
    release_on_retire_ = !ended_;
    // What this round queued is written first: the next claim resumes after it.
    write_records();
    abandon("the runner is shutting down");
}

void TaskExecution::maybe_retire()
{
    if (!ended_ || outstanding_ > 0 || ahead_jobs_ > 0 || retiring_ || !unwritten_.empty())
        return;
    release_ahead();
    retiring_ = true;
    if (release_on_retire_) {
        if (auto released = ctx_.store.release(task_id(), lease_.runner_nid); !released)
            log::warning("task " + task_id() + ": " + released.error().describe(), {.task_id = task_id()});
        else
            log::info("task " + task_id() + ": lease released for another runner to resume", {.task_id = task_id()});
    }
    ctx_.loop.defer([this, alive = alive_] {
        if (!*alive)
            return;
        const std::string id = task_id();  // retiring destroys this object
        retired_(id);
    });
}

}  // namespace nps::executor
