// SPDX-License-Identifier: Apache-2.0
// Plain records the store reads and writes. Times are Unix milliseconds
// (wall clock, because several runner processes share one runner.db).
// Every member has a default initialiser, so designated initialisers may
// name only the fields they set (no -Wmissing-field-initializers).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "nps/base/result.hpp"
#include "nps/proto/states.hpp"

namespace nps::store {

// States are proto::TaskState and proto::NodeState in every record; the
// columns hold their spec spellings, and a row whose column holds anything
// else is read back as an error naming the row (a damaged or foreign store),
// never as a default state.

struct Message {
    std::int64_t message_id = 0;
    std::string nid{};
    std::string task_id{};  // empty: a notice (Store::deposit_notice), not a task
    std::string payload{};  // the TaskFrame JSON (or the notice) exactly as deposited
    std::string content_type{};
    int priority = 0;
    std::int64_t enqueued_at_ms = 0;
    std::int64_t expires_at_ms = 0;  // TTL for the first claim; cleared (INT64_MAX) once claimed
};

struct DepositRequest {
    std::string nid{};
    std::string task_id{};
    std::string payload{};
    std::string content_type{};
    std::string frame_hash{};  // canonical hash of the whole frame: same hash ⇒ idempotent re-deposit
    std::string dag_hash{};
    std::string dedup_key{};
    int priority = 0;
    std::int64_t ttl_seconds = 0;  // > 0
    // > 0: hidden from peek and head claims this long (a claim naming the
    // task takes it at once); must be below the TTL.
    std::int64_t delay_seconds = 0;
    std::int64_t max_depth = 0;    // inbox depth cap for this nid; 0 = unlimited
    std::int64_t max_inboxes = 0;  // cap on NIDs holding tasks, a new nid refused at it; 0 = unlimited
    std::uint32_t result_ttl_seconds = 3600;  // the TaskFrame's: results kept this long after the task ends
};

// A message that is not a task, for an inbox: a completion message
// (docs/reporting.md). `source` names it: depositing the same source again
// is a duplicate of the first.
struct NoticeRequest {
    std::string nid{};
    std::string source{};
    std::string payload{};
    std::string content_type{};
    std::int64_t ttl_seconds = 0;  // ≤ 0: the inbox default; clamped as a task's
    std::int64_t max_depth = 0;    // inbox depth cap for this nid; 0 = unlimited
};

struct DepositResult {
    Message message{};
    bool duplicate = false;  // an identical deposit of this task_id already existed
};

enum class ClaimOutcome { granted, reclaimed };
const char* to_string(ClaimOutcome outcome);

struct ClaimRequest {
    std::string nid{};
    std::string runner_nid{};
    std::uint32_t lease_seconds = 0;       // clamped to [10, 600] by the store
    std::optional<std::string> task_id{};    // claim this task instead of the head
    std::optional<std::string> dedup_key{};  // when given, must equal the task's
    // A head claim passes over these messages: tasks the caller still winds
    // down after losing their lease, which it must not take back before the
    // old execution has ended (another runner may take them meanwhile).
    std::vector<std::int64_t> passing_over{};
};

struct Lease {
    ClaimOutcome outcome = ClaimOutcome::granted;
    std::string task_id{};
    std::string runner_nid{};
    std::string dedup_key{};
    std::string dag_hash{};
    std::int64_t lease_expiry_ms = 0;
    std::uint32_t claims = 0;  // how many times this task has been claimed, this one included
    Message message{};
};

struct TaskRecord {
    std::string task_id{};
    std::string nid{};
    proto::TaskState state = proto::TaskState::pending;
    std::optional<std::string> error_code{};
    std::optional<std::string> error_message{};
    std::optional<std::string> aggregate_json{};
    std::string dag_hash{};
    std::string dedup_key{};
    std::optional<std::string> lease_owner{};
    std::int64_t lease_expiry_ms = 0;
    std::uint32_t claims = 0;
    std::int64_t created_at_ms = 0;
    std::int64_t updated_at_ms = 0;
    std::string payload{};  // the deposited TaskFrame
    std::optional<std::int64_t> finished_at_ms{};        // when it reached its terminal state
    std::optional<std::int64_t> results_expire_at_ms{};  // finished_at + result_ttl_seconds, until expired
    std::optional<std::int64_t> results_expired_at_ms{}; // when the sweep deleted the results

    // True when the results are gone or due to go at now_ms: reading them
    // answers NOP-TASK-RESULT-EXPIRED whether or not the sweep ran yet.
    bool results_expired(std::int64_t now_ms) const
    {
        return results_expired_at_ms || (results_expire_at_ms && *results_expire_at_ms <= now_ms);
    }
};

struct TaskOutcome {
    proto::TaskState state = proto::TaskState::completed;  // a terminal state (others are refused)
    std::optional<std::string> error_code{};
    std::optional<std::string> error_message{};
    std::optional<std::string> aggregate_json{};
};

// How record_node_result checks NodeResult::runner_nid.
enum class LeaseFence {
    runner_lease,   // the executing runner: when runner_nid is set, it must hold the live lease
    foreign_lease,  // a task store receiving a report (PATCH): refused only while another
                    // runner holds a live lease (the sender lost the task); a report arriving
                    // after the sender's lease ended normally (its outbox) is accepted
    none,           // runner_nid is recorded as given
};

struct NodeResult {
    std::string task_id{};
    std::string node_id{};
    std::string dedup_key{};
    proto::NodeState state = proto::NodeState::pending;
    std::uint32_t attempts = 0;
    std::optional<std::string> error_code{};
    std::optional<std::string> error_message{};
    std::optional<std::string> result_json{};
    std::optional<std::string> killed_reason{};  // idle_timeout max_runtime oom signal exit_status spawn_failed shutdown
    std::optional<std::string> runner_nid{};     // when set, must hold the live lease (fencing; see fence)
    std::int64_t recorded_at_ms = 0;           // set by the store
    LeaseFence fence = LeaseFence::runner_lease;
};

enum class RecordOutcome { recorded, duplicate };
const char* to_string(RecordOutcome outcome);

// What an executing runner writes as a task's run goes on, in order, with
// Store::write_progress: an event (as append_event), a node's record (as
// record_node_result) and the task's end (as complete).
struct ProgressEvent {
    std::string task_id{};
    std::string name{};
    std::string detail_json{};                 // "" means "{}"
    std::optional<std::string> lease_holder{};  // fences the event as append_event's
};
struct ProgressEnd {
    std::string task_id{};
    std::string runner_nid{};  // the lease holder that completes the task
    TaskOutcome outcome{};
};
using ProgressRecord = std::variant<ProgressEvent, NodeResult, ProgressEnd>;

// Store::write_progress's answer: the first `written` records are stored
// (a duplicate node record counts as stored); when fewer than all, `error`
// says why records[written] was not, and none after it was tried.
struct ProgressWritten {
    std::size_t written = 0;
    std::optional<Error> error{};
};

struct TaskEvent {
    std::int64_t pos = 0;  // place in the log of every task (the all-tasks feed's cursor), ascending
    std::int64_t seq = 0;  // place in its task's log: 1, 2, …
    std::int64_t at_ms = 0;
    std::string name{};         // "inbox:deposited", "lease:granted", "task:running", "fetch:attempt:1", …
    std::string detail_json{};  // JSON object text, "{}" when there is nothing to add
};

// A slice of the event log for a live feed (Store::events_after): with
// task_id, that task's events after seq `after`; without, every task's events
// after pos `after`. In log order, at most `limit`.
struct EventQuery {
    std::optional<std::string> task_id{};
    std::int64_t after = 0;
    std::size_t limit = 500;
};

struct FeedEvent {
    std::string task_id{};
    TaskEvent event{};
};

// Which finished tasks prune_tasks deletes: finished before the cutoff, in
// `state` when given (a terminal state), oldest first, at most `limit`.
struct PruneRequest {
    std::int64_t finished_before_ms = 0;
    std::optional<proto::TaskState> state{};
    std::uint32_t limit = 500;
};

struct TaskListFilter {
    std::optional<proto::TaskState> state{};
    std::optional<std::string> nid{};
    std::optional<std::int64_t> created_after_ms{};  // deposited after this time
    std::optional<std::string> task_id_contains{};   // a literal substring of the task id
    std::uint32_t limit = 100;
};

struct Announce {
    std::string nid{};
    std::string activation_mode{};  // "ephemeral" | "resident" | "hybrid"
    std::string spawn_spec_ref{};
    std::optional<std::uint32_t> ttl_seconds{};  // absent → no expiry; 0 → offline
    // When its freshness began: the announce's own time when it gives one
    // and that is not in the future, else 0 and the store uses its now.
    std::int64_t announced_at_ms = 0;
    std::string body_json{};                     // the announce as received
};

// --- report outbox (docs/reporting.md) ---
// A row the database wrote, in the same transaction as the change it reports
// (schema triggers): a node reaching a reportable state (COMPLETED FAILED
// CANCELLED SKIPPED COMPENSATING COMPENSATED COMPENSATION_FAILED), or a task
// with a callback_url ending (COMPLETED FAILED CANCELLED), or a task with a
// reply_to ending (a completion message for that NID's inbox).
enum class ReportKind { node, callback, reply };
const char* to_string(ReportKind kind);

enum class ReportStatus { pending, dead };

struct ReportRow {
    std::int64_t id = 0;  // delivery order: rows of one (task, node) go out in id order
    ReportKind kind = ReportKind::node;
    ReportStatus status = ReportStatus::pending;
    std::string task_id{};
    std::string node_id{};    // "" for a callback or a reply
    std::string dedup_key{};
    std::string state{};      // node state, or the task's terminal state for a callback
    // The snapshot of the node record (node rows); a callback row carries the
    // task's error_code/error_message only and is rendered from the store.
    std::uint32_t attempts = 0;
    std::optional<std::string> error_code{};
    std::optional<std::string> error_message{};
    std::optional<std::string> result_json{};
    std::optional<std::string> killed_reason{};
    std::optional<std::string> runner_nid{};
    std::optional<std::string> callback_url{};  // callback rows
    std::optional<std::string> reply_to{};      // reply rows: the NID whose inbox gets the message
    std::int64_t recorded_at_ms = 0;            // when the reported change was recorded
    std::uint32_t tries = 0;                    // failed delivery attempts so far
    std::int64_t next_attempt_at_ms = 0;
    std::int64_t lease_until_ms = 0;
    std::optional<std::string> last_error{};
    // The store's clock when claim_reports() took the row (0 from other
    // reads): on PostgreSQL the database server's, so that a deliverer
    // reckons a row's age and its next attempt on the clock of the row's
    // other times, not on its host's (docs/scale-out.md "Clocks").
    std::int64_t claimed_at_ms = 0;
};

// Which rows a claim may take: all, or all but node reports (while there is
// no task store to send them to, or it is failing).
enum class ReportKinds { all, no_node_reports };

struct ReportClaim {
    std::string owner{};        // the deliverer's token; fences the marks below
    std::int64_t lease_ms = 0;  // the rows are invisible to other claimants this long
    std::uint32_t max_rows = 1;
    ReportKinds kinds = ReportKinds::all;
};

struct ReportRetry {
    std::int64_t id = 0;
    std::string owner{};
    std::string error{};
    std::int64_t next_attempt_at_ms = 0;
};

// How many tasks are in one state.
struct TaskStateCount {
    proto::TaskState state = proto::TaskState::pending;
    std::int64_t tasks = 0;
};

struct ReportCounts {
    std::int64_t backlog = 0;  // pending rows (not yet delivered, not dead)
    std::int64_t dead = 0;     // permanently refused or abandoned rows
};

}  // namespace nps::store
