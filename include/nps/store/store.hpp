// SPDX-License-Identifier: Apache-2.0
// The durable store: per-NID inbox, the task-claim protocol (NPS-5 §8.1,
// CR-0007 §4), node results, task state, the event log and local NDP
// announces — in one SQLite database in WAL mode (runner.db), or in a
// PostgreSQL database shared by runners on several hosts (OpenOptions::url,
// docs/scale-out.md). Both implementations keep every contract below.
//
// Contract:
//  - Every public operation is one transaction; a returned success is durable
//    (synchronous=FULL, see docs/durability.md) — a deposit acknowledged with
//    201 survives kill -9 and power loss.
//  - Several Store objects, in one or several processes, may share one file.
//    A Store object itself is NOT thread-safe: use one per thread (StorePool).
//  - A claim is one atomic `UPDATE … WHERE … lease_expiry <= now … RETURNING`
//    statement. `lease_expiry` doubles as "visible at": a message is claimable
//    iff it is queued, its lease_expiry <= now and (if never claimed) its TTL
//    has not passed. A lease is live iff lease_expiry > now (vectors
//    nop.lease.*). Ordering: priority DESC, then message_id (FIFO).
//  - lease_seconds is clamped to [10, 600]; renewal sets expiry to
//    now + clamped seconds and succeeds only for the live owner.
//  - Protocol failures carry NOP codes: NOP-CLAIM-CONFLICT (409),
//    NOP-TASK-NOT-FOUND (404), NOP-TASK-ALREADY-COMPLETED (409),
//    NWP-TASK-ID-CONFLICT (409), NWP-RATE-LIMIT-INBOX-FULL (429),
//    NWP-INBOX-MESSAGE-NOT-FOUND (404). SQLite failures are internal errors
//    naming the operation; SQLiteCpp exceptions never leave store/.
//  - Time comes from the Clock given at open (tests use FakeClock).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nps/base/clock.hpp"
#include "nps/base/result.hpp"
#include "nps/store/types.hpp"

namespace nps::store {

enum class Synchronous { full, normal };

// Where a PostgreSQL store's "now" comes from (lease expiries, deposit and
// TTL times): the database server's clock, so that runners on hosts whose
// clocks disagree still agree on who holds a lease (docs/durability.md), or
// the Clock given to open() (tests with a FakeClock). SQLite always uses the
// Clock given to open(): every user of one file is on one host.
enum class ClockSource { database, caller };

struct OpenOptions {
    std::string path{};                            // runner.db; ":memory:" is refused (WAL needs a file)
    // "postgresql://…" or "postgres://…" (a libpq URI): the PostgreSQL store
    // instead of the file at `path` (docs/scale-out.md). Empty: SQLite.
    std::string url{};
    Synchronous synchronous = Synchronous::full;   // normal: survives process crash, may lose the last commits on power loss
    int busy_timeout_ms = 5000;
    ClockSource clock_source = ClockSource::database;
    // PostgreSQL: a pooler in transaction mode (PgBouncer's pool_mode =
    // transaction) hands each transaction to any server session, so the store
    // keeps no state in its sessions: statements are sent unnamed instead of
    // prepared once per connection, and the session's statement timeout is
    // left to the role or the pooler (docs/scale-out.md "Poolers").
    bool transaction_pooler = false;
    // Whether a task store takes this runner's node states ([report]
    // task_store_url, docs/reporting.md). false: the outbox row the schema's
    // trigger adds for a node's record is removed in the transaction that
    // recorded it — no row to deliver, and none for the deliverer to discard
    // in a transaction (and an fsync) of its own.
    bool node_reports = true;
};

// The schema version this build creates and migrates to (runner.db's PRAGMA user_version).
int latest_schema_version();

class Store {
public:
    // Opens (creating if needed) the database, sets WAL and the pragmas, and
    // applies pending schema migrations in one transaction. Fails if the file's
    // schema is newer than this binary knows.
    static Result<std::unique_ptr<Store>> open(const OpenOptions& options, const Clock& clock);
    virtual ~Store() = default;

    // Schema version the file is at after open().
    virtual int schema_version() const = 0;
    // Now, on the clock the store writes its times with (deposits, leases,
    // expiries): the host's for runner.db, the database server's for
    // PostgreSQL. Judge those times against this, not a host's clock.
    virtual Result<std::int64_t> time_now_ms() = 0;
    // What the store takes on disk: runner.db with its WAL; on PostgreSQL
    // the tables of its schema with their indexes and TOAST.
    virtual Result<std::int64_t> size_bytes() = 0;

    // --- inbox -----------------------------------------------------------------
    // Stores the message and creates the task (state PENDING, event
    // "inbox:deposited"). A second deposit of the same task_id with the same
    // frame_hash and nid returns the original message with duplicate=true
    // (even when the inbox is full or the task has finished); a different
    // frame_hash or nid → NWP-TASK-ID-CONFLICT. Depth at max_depth →
    // NWP-RATE-LIMIT-INBOX-FULL. ttl_seconds ≤ 0 means the default
    // (limits::kDefaultInboxTtlSeconds); larger than kMaxInboxTtlSeconds is
    // clamped. Checking the depth counts the inbox (O(depth)) only when nid
    // holds max_depth or more task rows and notices in all.
    virtual Result<DepositResult> deposit(const DepositRequest& request) = 0;
    // Group commit: every request deposited as deposit() would, in order, in
    // one transaction (one fsync for all): the i-th result is the i-th
    // request's. A request that fails (full inbox, conflicting task_id, …)
    // changes nothing and does not affect the others; a later request sees
    // the earlier ones (a repeated task_id is a duplicate, depth counts
    // them). When the commit itself fails, every request fails with its
    // error and nothing is stored. A success is durable, as deposit()'s.
    // The default runs deposit() once per request (a transaction each).
    virtual std::vector<Result<DepositResult>> deposit_batch(const std::vector<DepositRequest>& requests);
    // Stores a notice, a message that is not a task (a completion message,
    // docs/reporting.md), in request.nid's inbox: peek lists it among the
    // tasks (Message::task_id empty), ack deletes it, depth counts it, no
    // claim takes it, its TTL deletes it (sweep_expired). The same source
    // again returns the first notice with duplicate=true. Depth at
    // max_depth → NWP-RATE-LIMIT-INBOX-FULL.
    virtual Result<DepositResult> deposit_notice(const NoticeRequest& request) = 0;

    // npsd-compatible peek: up to `batch` visible messages (queued, not under a
    // live lease, TTL not passed), in claim order. Does not change anything.
    virtual Result<std::vector<Message>> peek(const std::string& nid, std::uint32_t batch) = 0;
    // npsd-compatible ack: removes the message from the inbox (the task record
    // stays, with event "inbox:acked"; a lease on it is not ended; a notice is
    // deleted). Unknown,
    // already-acked, another nid's or expired id → NWP-INBOX-MESSAGE-NOT-FOUND.
    virtual Result<void> ack(const std::string& nid, std::int64_t message_id) = 0;
    // Messages still queued for nid (leased or not), TTL not passed.
    virtual Result<std::int64_t> depth(const std::string& nid) = 0;
    // Highest message_id ever deposited (any nid): long-poll waiters compare it.
    virtual Result<std::int64_t> last_message_id() = 0;

    // --- claims and leases -------------------------------------------------------
    // Without task_id: claims the head of nid's inbox; nullopt when nothing is
    // claimable. With task_id: claims that task; a live lease of another
    // runner → NOP-CLAIM-CONFLICT; the caller's own live lease is renewed
    // (outcome `granted`, the new expiry, the same claims count, no event:
    // NPS-5 §8.1's claim table, docs/protocol-choices.md); a terminal task →
    // NOP-TASK-ALREADY-COMPLETED; unknown (or another nid's) → NOP-TASK-NOT-FOUND;
    // dedup_key given and different → NOP-CLAIM-CONFLICT; a task whose message
    // was acked or expired unclaimed → NOP-TASK-NOT-FOUND. Outcome `reclaimed`
    // when a previous lease existed and expired, else `granted`. The task goes
    // RUNNING and gets event "lease:granted" / "lease:reclaimed" with detail
    // {"runner_nid", "lease_expiry"}.
    virtual Result<std::optional<Lease>> claim(const ClaimRequest& request) = 0;
    // Up to max_count head claims in one transaction (max ≤ limits::kMaxClaimBatch).
    virtual Result<std::vector<Lease>> claim_batch(const std::string& nid, const std::string& runner_nid,
                                                   std::uint32_t lease_seconds, std::uint32_t max_count) = 0;
    // Extends a live lease held by runner_nid; returns the new expiry.
    // Not owner, expired, released or reclaimed → NOP-CLAIM-CONFLICT; unknown
    // task → NOP-TASK-NOT-FOUND (so for release and complete).
    virtual Result<std::int64_t> renew(const std::string& task_id, const std::string& runner_nid,
                                       std::uint32_t lease_seconds) = 0;
    // Gives a live lease back: the message becomes claimable at once (outcome
    // `granted` for the next claimant), the task goes back to PENDING, event
    // "lease:released". Not the live owner → NOP-CLAIM-CONFLICT.
    virtual Result<void> release(const std::string& task_id, const std::string& runner_nid) = 0;
    // Records the task's terminal outcome, fenced by the live lease of
    // runner_nid (else NOP-CLAIM-CONFLICT), removes its message from the inbox
    // and ends the lease, in one transaction.
    virtual Result<void> complete(const std::string& task_id, const std::string& runner_nid,
                                  const TaskOutcome& outcome) = 0;
    // Completes several leased tasks in one transaction (bench and batch
    // runners). All or nothing: one task not fenced fails the whole batch with
    // that task's error and changes nothing.
    virtual Result<void> complete_batch(const std::vector<std::string>& task_ids, const std::string& runner_nid,
                                        const TaskOutcome& outcome) = 0;

    // --- node results (idempotent on task_id, node_id, dedup_key) ---------------
    // dedup_key must be the task's (else NOP-CLAIM-CONFLICT); runner_nid, when
    // set, must hold the live lease (fence runner_lease), or no other runner
    // may hold one (fence foreign_lease; see LeaseFence). An existing
    // terminal record with the same state, error_code and result → duplicate;
    // with a different one → NOP-TASK-ALREADY-COMPLETED (result_json is
    // compared byte for byte) — except the saga's steps: COMPLETED may become
    // COMPENSATING (a null result keeps the stored one through the saga
    // states), and a report of an earlier saga state than the recorded one
    // (COMPLETED or COMPENSATING after COMPENSATING/COMPENSATED/
    // COMPENSATION_FAILED) is a stale replay → duplicate, nothing changed. A
    // non-terminal record may be overwritten. Unknown task →
    // NOP-TASK-NOT-FOUND; a state that is not a node state or a result over
    // limits::kMaxNodeResultBytes → NWP-HTTP-PARAM-INVALID.
    virtual Result<RecordOutcome> record_node_result(const NodeResult& result) = 0;
    virtual Result<std::vector<NodeResult>> node_results(const std::string& task_id) = 0;
    // True iff a terminal record exists for (dedup_key, node_id) (vector nop.lease.002).
    virtual Result<bool> is_node_terminal(const std::string& dedup_key, const std::string& node_id) = 0;

    // --- tasks and events ------------------------------------------------------------
    virtual Result<TaskRecord> task(const std::string& task_id) = 0;  // NOP-TASK-NOT-FOUND
    // Newest deposit first; limit 0 → kDefaultTaskListLimit, clamped to
    // kMaxTaskListLimit. The records' payload is left empty (fetch task()).
    virtual Result<std::vector<TaskRecord>> list_tasks(const TaskListFilter& filter) = 0;
    // The number of tasks in each state that has any, ordered by state name.
    virtual Result<std::vector<TaskStateCount>> task_state_counts() = 0;
    // Non-terminal → CANCELLED (error NOP-TASK-CANCELLED), message removed, lease
    // ended, event "task:cancelled". Terminal → NOP-TASK-ALREADY-COMPLETED.
    virtual Result<TaskRecord> cancel(const std::string& task_id) = 0;
    // detail_json must be a JSON text ("" means "{}"); seq is the task's
    // last seq + 1. Unknown task → NOP-TASK-NOT-FOUND. With lease_holder, the
    // event is written only while that runner holds the task's live lease,
    // checked in the same transaction (else NOP-CLAIM-CONFLICT, nothing
    // written): the executing runner's writes are fenced like its node
    // records, so a runner that lost its lease adds nothing to the log.
    virtual Result<void> append_event(const std::string& task_id, const std::string& name,
                                      const std::string& detail_json,
                                      const std::optional<std::string>& lease_holder) = 0;
    Result<void> append_event(const std::string& task_id, const std::string& name, const std::string& detail_json)
    {
        return append_event(task_id, name, detail_json, std::nullopt);
    }
    // Writes a run's records in order, each as append_event, record_node_result
    // or complete would, in one transaction: a record refused leaves no trace
    // and ends the batch, those before it are committed (ProgressWritten); a
    // failure of the store itself (a full disk, a lost connection) writes
    // none. The executor's way to write what one loop round of a run
    // produced with one commit (docs/executor.md "Records").
    virtual ProgressWritten write_progress(const std::vector<ProgressRecord>& records) = 0;
    // In seq order; empty for an unknown task.
    virtual Result<std::vector<TaskEvent>> events(const std::string& task_id) = 0;
    // The live feeds' read (EventQuery); empty for an unknown task.
    virtual Result<std::vector<FeedEvent>> events_after(const EventQuery& query) = 0;
    // The pos of the newest event (0: none): where a feed of new events starts.
    virtual Result<std::int64_t> last_event_pos() = 0;

    // --- local NDP registry ----------------------------------------------------------
    // Decides, inside put_announce's transaction and given the NID's stored
    // announce (nullptr when none), whether `announce` replaces it: true
    // writes it, false leaves the store as it was; an error aborts the put
    // and is what put_announce returns (the NDP sequence rules live above
    // the store, api/routes_ndp.cpp).
    using AnnounceAdmission = std::function<Result<bool>(const Announce* stored)>;
    virtual Result<void> put_announce(const Announce& announce, const AnnounceAdmission& admit) = 0;
    // Insert or replace, unconditionally.
    Result<void> put_announce(const Announce& announce)
    {
        return put_announce(announce, [](const Announce*) -> Result<bool> { return true; });
    }
    // NDP-RESOLVE-NOT-FOUND when absent or offline (ttl 0); NDP-RESOLVE-STALE
    // when announced_at + ttl <= now.
    virtual Result<Announce> resolve_announce(const std::string& nid) = 0;
    // Every stored announce, stale and offline ones included, by nid.
    virtual Result<std::vector<Announce>> list_announces() = 0;
    // Deletes nid's announce (its sequence state with it: a later announce
    // starts afresh). None stored → NDP-RESOLVE-NOT-FOUND.
    virtual Result<void> remove_announce(const std::string& nid) = 0;

    // --- housekeeping ----------------------------------------------------------------
    // Never-claimed messages past their TTL leave the inbox; their tasks go
    // FAILED with NOP-TASK-TIMEOUT and event "inbox:expired". Returns how many;
    // notices past their TTL are deleted besides.
    virtual Result<std::int64_t> sweep_expired() = 0;

    // --- retention (docs/retention.md) -------------------------------------------------
    // Deletes the aggregate and node results of up to max_tasks finished
    // tasks whose results_expire_at has passed, and stamps their
    // results_expired_at; states, errors, events and frames stay. One
    // transaction; returns how many tasks.
    virtual Result<std::int64_t> expire_results(std::uint32_t max_tasks) = 0;
    // Deletes up to request.limit finished tasks (their row, frame, events,
    // node records and dead reports) that match request, oldest finished
    // first, skipping any with a pending report; one transaction. Returns
    // how many. A state that is not terminal → NWP-HTTP-PARAM-INVALID.
    virtual Result<std::int64_t> prune_tasks(const PruneRequest& request) = 0;
    // Deletes one finished task like prune_tasks, its pending reports too
    // (the operator asked). Unknown → NOP-TASK-NOT-FOUND; not finished →
    // NOP-TASK-NOT-FINISHED (cancel it first).
    virtual Result<void> remove_task(const std::string& task_id) = 0;
    // Gives up to max_pages free pages back to the file system (incremental
    // vacuum; a file created before schema 4 keeps its size and reuses its
    // free pages instead). Returns how many pages were free before.
    virtual Result<std::int64_t> reclaim_space(std::uint32_t max_pages) = 0;

    // --- report outbox ---------------------------------------------------------------
    // Rows are written by the database itself, in the transaction of the change
    // they report (docs/reporting.md): record_node_result into a reportable
    // state → a 'node' row holding a snapshot of the record; a task with a
    // callback_url reaching COMPLETED/FAILED/CANCELLED (complete, cancel,
    // sweep_expired) → a 'callback' row. The methods below deliver them.
    //
    // Claims up to max_rows due rows, in id order, and leases them to owner
    // until now + lease_ms in one UPDATE … RETURNING, so several deliverers
    // (threads or processes) never hold one row at once. Due: pending,
    // next_attempt_at <= now, lease_until <= now, and no earlier pending row
    // of the same (task, node) — a node's reports go out in order, and a
    // later one waits while an earlier one is retried.
    virtual Result<std::vector<ReportRow>> claim_reports(const ReportClaim& claim) = 0;
    // The row was delivered: it is deleted. A callback row appends the task
    // event "callback:delivered" with detail_json, in the same transaction.
    // False (nothing changed) when owner no longer holds the row (its lease
    // ran out and another deliverer took it over).
    virtual Result<bool> mark_report_delivered(std::int64_t id, const std::string& owner,
                                               const std::string& detail_json) = 0;
    // A failed attempt: tries + 1, the error kept, due again at
    // next_attempt_at, lease cleared. False when owner no longer holds the row.
    virtual Result<bool> reschedule_report(const ReportRetry& retry) = 0;
    // A permanent refusal or an abandoned delivery: the row is kept as 'dead'
    // with the error (dead_reports(), counts().dead) and the task event
    // "callback:abandoned" (callback) or "report:abandoned" (node) is appended
    // with detail_json. False when owner no longer holds the row.
    virtual Result<bool> mark_report_dead(std::int64_t id, const std::string& owner, const std::string& error,
                                          const std::string& detail_json) = 0;
    // Gives owner's leased rows back (id 0: all of them) without counting an
    // attempt: they are due again at once for anyone.
    virtual Result<std::int64_t> release_reports(const std::string& owner, std::int64_t id) = 0;
    // Deletes the pending node rows (a runner without a task store: its own
    // store is the task store). Returns how many.
    virtual Result<std::int64_t> discard_node_reports() = 0;
    virtual Result<ReportCounts> report_counts() = 0;
    // How many milliseconds from now, on the store's clock, the next row of
    // `kinds` becomes due (max of next_attempt_at and lease_until over rows
    // whose predecessors are not pending); ≤ 0 when one is due already,
    // nullopt when none is pending. Relative, so that a caller whose own
    // clock is off (a host's, against PostgreSQL's) still waits right.
    virtual Result<std::optional<std::int64_t>> report_due_in_ms(ReportKinds kinds) = 0;
    // Dead rows, newest first; limit 0 → kDefaultTaskListLimit.
    virtual Result<std::vector<ReportRow>> dead_reports(std::uint32_t limit) = 0;
};

// True for a URL that selects the PostgreSQL store: "postgresql://…" or
// "postgres://…" (libpq URIs, docs/scale-out.md).
bool is_postgres_url(std::string_view url);
// The store URL with any password replaced by "***": for messages, logs and
// `status`.
std::string redact_store_url(const std::string& url);

// Clamp to [limits::kMinLeaseSeconds, limits::kMaxLeaseSeconds].
std::uint32_t clamp_lease_seconds(std::uint32_t requested);

}  // namespace nps::store
