// SPDX-License-Identifier: Apache-2.0
// Internal to store/: the SQLite implementation of nps::store::Store.
//
// One SqliteStore owns one connection. Its prepared statements are created on
// first use and cached for the object's lifetime (CachedStatement slots, one
// per SQL text, declared below and filled by the .cpp file that owns the
// SQL). Every public operation runs inside guarded(), which turns any
// SQLite::Exception into an internal Error naming the operation, so SQLiteCpp
// exceptions never leave store/. SQLITE_FULL becomes the protocol error
// NWP-STORE-DISK-FULL (503, docs/errors.md); it and SQLITE_IOERR mark the
// store degraded (nps/store/write_health.hpp) until a write commits again.
#pragma once

#include <cstdint>
#include <exception>
#include <limits>
#include <memory>
#include <new>
#include <string>
#include <utility>

#include <nlohmann/json_fwd.hpp>
#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Exception.h>
#include <SQLiteCpp/Statement.h>

#include "json_text.hpp"
#include "nps/store/store.hpp"

namespace nps::store::detail {

// "Never expires": a message's TTL once it has been claimed.
inline constexpr std::int64_t kNoExpiry = std::numeric_limits<std::int64_t>::max();

// Terminal task states as an SQL list, for `state IN (…)` / `NOT IN (…)`.
#define NPS_STORE_TERMINAL_TASK_STATES "('COMPLETED','FAILED','CANCELLED')"
#define NPS_STORE_TERMINAL_NODE_STATES \
    "('COMPLETED','FAILED','CANCELLED','SKIPPED','COMPENSATED','COMPENSATION_FAILED')"

// Store::open for a runner.db file (sqlite_store.cpp).
Result<std::unique_ptr<Store>> open_sqlite(const OpenOptions& options, const Clock& clock);

// The latest schema version this binary knows (schema.cpp).
int latest_schema_version();
// Brings the open database to latest_schema_version() in one transaction.
// Returns the version the file is at afterwards; fails (without touching the
// file) when the file's version is newer or it belongs to another application.
Result<int> migrate(SQLite::Database& db, const std::string& path);

// The SQL of the claim path, for tests that check query plans and for
// bench-claim's raw-SQLite baselines (which must run the very same text).
// These two statements are the whole hot path: the claim takes the lease and
// sets the task RUNNING, the completion records the outcome fenced by the
// live lease; the schema's triggers append the events.
const char* claim_head_sql();   // ?1 nid, ?2 runner, ?3 expiry, ?4 now, ?6 JSON array of message ids to pass over
const char* claim_batch_sql();  // the same, ?5 max count
const char* complete_sql();     // ?1 task ids (JSON), ?2 runner, ?3 now, ?4 state, ?5–?7 error/aggregate

struct CachedStatement {
    std::unique_ptr<SQLite::Statement> stmt;
};

// A statement in use: reset and unbound when the scope ends, so no statement
// keeps a read snapshot open between operations or a pointer into a caller's
// buffer (bindNoCopy).
class StatementUse {
public:
    explicit StatementUse(SQLite::Statement& stmt) noexcept : stmt_(&stmt) {}
    StatementUse(const StatementUse&) = delete;
    StatementUse& operator=(const StatementUse&) = delete;
    ~StatementUse()
    {
        stmt_->tryReset();
        try {
            stmt_->clearBindings();
        } catch (...) {  // sqlite3_clear_bindings cannot fail; keep the destructor noexcept
        }
    }
    SQLite::Statement* operator->() const noexcept { return stmt_; }
    SQLite::Statement& operator*() const noexcept { return *stmt_; }

private:
    SQLite::Statement* stmt_;
};

class SqliteStore;

// BEGIN IMMEDIATE … COMMIT. Taking the write lock at BEGIN means a
// transaction never has to upgrade a read lock, so two writers cannot
// deadlock on SQLITE_BUSY; busy_timeout makes the second one wait instead.
// Rolls back in the destructor unless committed.
class WriteTransaction {
public:
    explicit WriteTransaction(SqliteStore& store);
    WriteTransaction(const WriteTransaction&) = delete;
    WriteTransaction& operator=(const WriteTransaction&) = delete;
    ~WriteTransaction();
    void commit();

private:
    SqliteStore& store_;
    bool active_ = false;
};

// Column readers shared by several files (rows.cpp). Each reads the columns
// of the matching *_COLUMNS list starting at column `first`.
// Over `tasks m` (the inbox columns of the task row).
#define NPS_STORE_MESSAGE_COLUMNS \
    "m.message_id, m.nid, m.task_id, m.content_type, m.priority, m.enqueued_at, m.expires_at"
inline constexpr int kMessageColumnCount = 7;
Message read_message(const SQLite::Statement& stmt, int first);

#define NPS_STORE_TASK_COLUMNS                                                                      \
    "t.task_id, t.nid, t.state, t.error_code, t.error_message, t.aggregate, t.dag_hash, "           \
    "t.dedup_key, t.lease_owner, t.lease_expiry, t.claims, t.created_at, t.updated_at, f.payload, " \
    "t.finished_at, t.results_expire_at, t.results_expired_at"
TaskRecord read_task(const SQLite::Statement& stmt, int first);
// Over `events e`.
#define NPS_STORE_EVENT_COLUMNS "e.pos, e.seq, e.at, e.name, e.detail"
TaskEvent read_event(const SQLite::Statement& stmt, int first);

// One row returned by a claim UPDATE (claims.cpp).
struct ClaimedRow {
    Message message;
    bool reclaimed = false;  // prev_owner was set: an expired lease was taken over
    std::uint32_t claims = 0;
    std::string dedup_key;
    std::string dag_hash;
};

std::optional<std::string> optional_text(const SQLite::Statement& stmt, int column);
// Binds without a copy: `value` must outlive the statement's steps.
void bind_optional(SQLite::Statement& stmt, int index, const std::optional<std::string>& value);
// Not a temporary's text (it would be gone before the statement runs).
void bind_optional(SQLite::Statement& stmt, int index, std::optional<std::string>&& value) = delete;

class SqliteStore final : public Store {
public:
    // node_reports: OpenOptions::node_reports.
    SqliteStore(std::unique_ptr<SQLite::Database> db, const Clock& clock, std::string path, int version,
                bool node_reports);
    ~SqliteStore() override;

    int schema_version() const override { return version_; }
    Result<std::int64_t> time_now_ms() override { return now_ms(); }
    Result<std::int64_t> size_bytes() override;

    Result<DepositResult> deposit(const DepositRequest& request) override;
    std::vector<Result<DepositResult>> deposit_batch(const std::vector<DepositRequest>& requests) override;
    Result<std::vector<Message>> peek(const std::string& nid, std::uint32_t batch) override;
    Result<void> ack(const std::string& nid, std::int64_t message_id) override;
    Result<std::int64_t> depth(const std::string& nid) override;
    Result<std::int64_t> last_message_id() override;

    Result<std::optional<Lease>> claim(const ClaimRequest& request) override;
    Result<std::vector<Lease>> claim_batch(const std::string& nid, const std::string& runner_nid,
                                           std::uint32_t lease_seconds, std::uint32_t max_count) override;
    Result<std::int64_t> renew(const std::string& task_id, const std::string& runner_nid,
                               std::uint32_t lease_seconds) override;
    Result<void> release(const std::string& task_id, const std::string& runner_nid) override;
    Result<void> complete(const std::string& task_id, const std::string& runner_nid,
                          const TaskOutcome& outcome) override;
    Result<void> complete_batch(const std::vector<std::string>& task_ids, const std::string& runner_nid,
                                const TaskOutcome& outcome) override;

    Result<RecordOutcome> record_node_result(const NodeResult& result) override;
    ProgressWritten write_progress(const std::vector<ProgressRecord>& records) override;
    Result<std::vector<NodeResult>> node_results(const std::string& task_id) override;
    Result<bool> is_node_terminal(const std::string& dedup_key, const std::string& node_id) override;

    Result<TaskRecord> task(const std::string& task_id) override;
    Result<std::vector<TaskRecord>> list_tasks(const TaskListFilter& filter) override;
    Result<std::vector<TaskStateCount>> task_state_counts() override;
    Result<TaskRecord> cancel(const std::string& task_id) override;
    using Store::append_event;
    Result<void> append_event(const std::string& task_id, const std::string& name, const std::string& detail_json,
                              const std::optional<std::string>& lease_holder) override;
    Result<std::vector<TaskEvent>> events(const std::string& task_id) override;
    Result<std::vector<FeedEvent>> events_after(const EventQuery& query) override;
    Result<std::int64_t> last_event_pos() override;

    using Store::put_announce;
    Result<void> put_announce(const Announce& announce, const AnnounceAdmission& admit) override;
    Result<Announce> resolve_announce(const std::string& nid) override;
    Result<std::vector<Announce>> list_announces() override;
    Result<void> remove_announce(const std::string& nid) override;

    Result<std::int64_t> sweep_expired() override;
    Result<DepositResult> deposit_notice(const NoticeRequest& request) override;

    Result<std::int64_t> expire_results(std::uint32_t max_tasks) override;
    Result<std::int64_t> prune_tasks(const PruneRequest& request) override;
    Result<void> remove_task(const std::string& task_id) override;
    Result<std::int64_t> reclaim_space(std::uint32_t max_pages) override;

    Result<std::vector<ReportRow>> claim_reports(const ReportClaim& claim) override;
    Result<bool> mark_report_delivered(std::int64_t id, const std::string& owner,
                                       const std::string& detail_json) override;
    Result<bool> reschedule_report(const ReportRetry& retry) override;
    Result<bool> mark_report_dead(std::int64_t id, const std::string& owner, const std::string& error,
                                  const std::string& detail_json) override;
    Result<std::int64_t> release_reports(const std::string& owner, std::int64_t id) override;
    Result<std::int64_t> discard_node_reports() override;
    Result<ReportCounts> report_counts() override;
    Result<std::optional<std::int64_t>> report_due_in_ms(ReportKinds kinds) override;
    Result<std::vector<ReportRow>> dead_reports(std::uint32_t limit) override;

    // --- helpers for the implementation files ---------------------------------
    // The cached statement for `sql`, prepared on first use.
    StatementUse use(CachedStatement& slot, const char* sql);
    std::int64_t now_ms() const { return clock_.now_ms(); }
    SQLite::Database& db() { return *db_; }

    // Runs body(); an SQLite (or allocation) failure becomes
    // internal_error(what() + ": " + the SQLite message). `what` is a callable
    // so the message is only built on failure.
    template <class T, class What, class Body>
    Result<T> guarded(What&& what, Body&& body) noexcept
    {
        try {
            return body();
        } catch (const SQLite::Exception& e) {
            return store_failure(what, e);
        } catch (const std::bad_alloc&) {
            return guarded_failure(what, "out of memory");
        } catch (const std::exception& e) {
            return guarded_failure(what, e.what());
        }
    }

private:
    friend class WriteTransaction;

    template <class What>
    Error store_failure(What& what, const SQLite::Exception& e) noexcept
    {
        Error error = guarded_failure(what, e.what());
        return classify_failure(std::move(error), e.getErrorCode());
    }
    // Disk full → NWP-STORE-DISK-FULL; full or I/O error → degraded.
    Error classify_failure(Error error, int sqlite_code) noexcept;

    template <class What>
    static Error guarded_failure(What& what, const char* reason) noexcept
    {
        try {
            return internal_error(what() + ": " + reason);
        } catch (...) {
            return internal_error("store operation failed");
        }
    }

    // Appends an explicit event (append_event) inside the caller's transaction;
    // the state transitions' events are written by the schema's triggers.
    void add_event(std::int64_t message_id, std::int64_t at_ms, const char* name, const std::string& detail);
    // Inside a write transaction: the head claims (see claims.cpp).
    std::vector<Lease> claim_head_locked(const std::string& nid, const std::string& runner_nid,
                                         std::uint32_t lease_seconds, std::uint32_t max_count,
                                         const std::vector<std::int64_t>& passing_over);
    // The leases for the rows a claim UPDATE returned, in claim order.
    static std::vector<Lease> finish_claims(const std::string& runner_nid, std::int64_t expiry,
                                            std::vector<ClaimedRow>& claimed);
    // Inside a write transaction: runs `body` (under guarded()) in a
    // savepoint, rolled back when it fails, so a failed step leaves no trace
    // and the transaction goes on. Some failures (a full disk, an I/O error)
    // end the whole transaction: after a failure, in_transaction() tells.
    template <class T, class What, class Body>
    Result<T> in_savepoint(What&& what, Body&& body)
    {
        use(savepoint_, "SAVEPOINT step")->exec();
        Result<T> result = guarded<T>(what, body);
        if (in_transaction()) {
            if (!result)
                use(savepoint_rollback_, "ROLLBACK TO step")->exec();
            use(savepoint_release_, "RELEASE step")->exec();
        }
        return result;
    }
    bool in_transaction();
    // Inside a write transaction: append_event's, record_node_result's work,
    // stamped `now`; a refusal has written nothing.
    Result<void> append_event_locked(std::int64_t now, const std::string& task_id, const std::string& name,
                                     const std::string& detail_json, const std::optional<std::string>& lease_holder);
    Result<RecordOutcome> record_node_result_locked(std::int64_t now, const NodeResult& result);
    // Inside a write transaction: ends runner_nid's live leases on task_ids and
    // records the outcome; an Error (naming the first task not fenced) when
    // any of them is not leased by runner_nid.
    Result<void> complete_locked(std::int64_t now, const std::vector<std::string>& task_ids,
                                 const std::string& runner_nid, const TaskOutcome& outcome);
    Result<TaskRecord> task_locked(const std::string& task_id);
    // Inside a write transaction: deposit()'s work, stamped `now`. A refusal
    // (or a duplicate) has written nothing; an SQLite exception may leave
    // partial writes for the caller to roll back.
    Result<DepositResult> deposit_locked(const DepositRequest& request, std::int64_t now);
    // NWP-RATE-LIMIT-INBOX-FULL when nid holds max_depth live messages
    // (tasks and notices); in the caller's transaction.
    Result<void> check_depth(const std::string& nid, std::int64_t max_depth, std::int64_t now);
    // Inside deposit's transaction: counts one more task of nid in
    // `inboxes`; a nid with no tasks yet is refused (NWP-RATE-LIMIT-INBOX-FULL)
    // when max_inboxes (> 0) NIDs already have some.
    Result<void> count_inbox_task(const std::string& nid, std::int64_t max_inboxes, std::int64_t now);
    // Inside a write transaction: deletes the finished tasks listed (message
    // ids, task ids, nids) with everything that refers to them (retention.cpp).
    void delete_tasks_locked(const std::vector<std::int64_t>& message_ids, const std::vector<std::string>& task_ids,
                             const std::vector<std::string>& nids);
    // Why runner_nid holds no live lease on task_id: NOP-TASK-NOT-FOUND or
    // NOP-CLAIM-CONFLICT with an explanation.
    Error lease_error(std::int64_t now, const std::string& task_id, const std::string& runner_nid);

    std::unique_ptr<SQLite::Database> db_;
    const Clock& clock_;
    std::string path_;
    int version_;
    bool node_reports_;

    // Statement slots, grouped by the file that owns their SQL.
    CachedStatement begin_, commit_, rollback_;
    CachedStatement event_insert_;                       // sqlite_store.cpp
    CachedStatement event_list_, task_exists_;           // tasks.cpp
    CachedStatement feed_all_, feed_task_, feed_last_;   // tasks.cpp
    // inbox.cpp
    CachedStatement deposit_find_, deposit_depth_bound_, deposit_depth_, deposit_task_, deposit_frame_;
    CachedStatement savepoint_, savepoint_rollback_, savepoint_release_;  // in_savepoint()
    CachedStatement peek_, ack_, depth_, last_id_, sweep_, inbox_known_, inbox_count_, inbox_add_;
    CachedStatement notice_find_, notice_sequence_, notice_id_, notice_insert_, notice_ack_, notice_sweep_;
    // retention.cpp
    CachedStatement expire_nodes_, expire_tasks_, prune_select_, remove_select_;
    CachedStatement delete_events_, delete_nodes_, delete_reports_, delete_frames_, delete_tasks_;
    CachedStatement uncount_inbox_, delete_inbox_;
    // claims.cpp, leases.cpp
    CachedStatement claim_head_, claim_batch_, claim_task_lookup_, claim_task_, claim_renew_;
    CachedStatement lease_state_, renew_, release_, complete_;
    // results.cpp
    CachedStatement result_task_, result_find_, result_upsert_, result_unreported_, result_list_, result_terminal_;
    // tasks.cpp
    CachedStatement task_get_, task_list_, task_counts_, cancel_task_;
    // announces.cpp
    CachedStatement announce_put_, announce_get_, announce_list_, announce_remove_;
    // outbox.cpp
    CachedStatement report_claim_, report_delivered_, report_retry_, report_dead_, report_release_;
    CachedStatement report_discard_, report_any_node_, report_counts_, report_due_, report_dead_list_;
    CachedStatement report_task_key_;
};

}  // namespace nps::store::detail
