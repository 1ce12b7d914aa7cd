// SPDX-License-Identifier: Apache-2.0
// Internal to store/: the PostgreSQL implementation of nps::store::Store
// (docs/scale-out.md).
//
// One PostgresStore owns one connection (pg_connection.hpp) and keeps every
// contract of store.hpp. What differs from SqliteStore, and why:
//  - Concurrency. PostgreSQL runs writers side by side (READ COMMITTED), so
//    the single-writer guarantees SQLite gives for free are replaced by
//    locks: head claims and outbox claims take their rows with
//    `FOR UPDATE SKIP LOCKED`; an operation that reads a row and then
//    changes it first locks it (`SELECT … FOR UPDATE`); a deposit takes a
//    transaction-scoped advisory lock on its inbox (lock_inbox) so the depth
//    limit stays exact. A duplicate task_id racing another deposit is the
//    idempotent replay it is (ON CONFLICT, then the duplicate check).
//  - Time. now() is the database server's clock (ClockSource::database) read
//    in the operation's transaction, so hosts whose clocks disagree never
//    disagree on a lease; tests pass ClockSource::caller and a FakeClock.
//  - The event log and the report outbox are written by PL/pgSQL triggers in
//    the transaction of the change, with event details byte-identical to
//    SQLite's json_object() (pg_schema.cpp).
//  - Failures. guarded() runs an operation's body and turns a PgFailure into
//    an Error naming the operation; a serialization failure or deadlock
//    (40001, 40P01) runs the body again, a lost connection is reconnected
//    on the next operation and marks the store degraded until a write
//    commits again (write_health.hpp).
#pragma once

#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "../json_text.hpp"
#include "nps/store/store.hpp"
#include "pg_connection.hpp"

namespace nps::store::pg {

// Terminal states as SQL lists, for `state IN (…)`.
#define NPS_PG_TERMINAL_TASK_STATES "('COMPLETED','FAILED','CANCELLED')"
#define NPS_PG_TERMINAL_NODE_STATES \
    "('COMPLETED','FAILED','CANCELLED','SKIPPED','COMPENSATED','COMPENSATION_FAILED')"

// "Never expires": a message's TTL once it has been claimed.
inline constexpr std::int64_t kNoExpiry = INT64_MAX;

// The schema version this binary creates (pg_schema.cpp), and the migration
// itself: pending migrations run in one transaction under an advisory lock,
// so runners starting together on several hosts apply each once. Returns the
// version after; fails, changing nothing, when the database's schema is
// newer than this binary knows or holds tables that are not ours.
int latest_schema_version();
int migrate(Connection& conn);  // throws PgFailure; refusals as PgFailure("NPS00")

// Column lists and their readers (pg_rows.cpp), as in sqlite_store.hpp.
// Over `tasks m`:
#define NPS_PG_MESSAGE_COLUMNS \
    "m.message_id, m.nid, m.task_id, m.content_type, m.priority, m.enqueued_at, m.expires_at"
inline constexpr int kMessageColumnCount = 7;
Message read_message(const Rows& rows, int row, int first);
// Over `tasks t LEFT JOIN frames f ON f.message_id = t.message_id`:
#define NPS_PG_TASK_COLUMNS                                                                         \
    "t.task_id, t.nid, t.state, t.error_code, t.error_message, t.aggregate, t.dag_hash, "           \
    "t.dedup_key, t.lease_owner, t.lease_expiry, t.claims, t.created_at, t.updated_at, f.payload, " \
    "t.finished_at, t.results_expire_at, t.results_expired_at"
inline constexpr int kTaskColumnCount = 17;
TaskRecord read_task(const Rows& rows, int row, int first);
// Over `events e`:
#define NPS_PG_EVENT_COLUMNS "e.pos, e.seq, e.at, e.name, e.detail"
TaskEvent read_event(const Rows& rows, int row, int first);

// Store::open for a PostgreSQL URL: connects and migrates.
Result<std::unique_ptr<Store>> open_postgres(const OpenOptions& options, const Clock& clock);

class PostgresStore;

// One operation's transaction and its "now", read together in one round trip
// (BEGIN; SELECT now). Rolls back unless committed.
class Work {
public:
    explicit Work(PostgresStore& store);
    std::int64_t now() const noexcept { return now_; }
    Connection& conn() noexcept { return conn_; }
    void commit();

private:
    Connection& conn_;
    Transaction txn_;
    std::int64_t now_ = 0;
};

class PostgresStore final : public Store {
public:
    // transaction_pooler, node_reports: OpenOptions' own.
    PostgresStore(std::string conninfo, const Clock& clock, ClockSource clock_source, bool transaction_pooler,
                  bool node_reports);
    ~PostgresStore() override;

    // Connects and migrates; throws PgFailure.
    void connect();

    int schema_version() const override { return version_; }
    Result<std::int64_t> time_now_ms() override;
    Result<std::int64_t> size_bytes() override;

    Result<DepositResult> deposit(const DepositRequest& request) override;
    Result<DepositResult> deposit_notice(const NoticeRequest& request) override;
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
    // The connection, reconnected first if the last one was lost. After a
    // failed attempt the next waits kFirstReconnectDelay, doubling up to
    // kMaxReconnectDelay; until then conn() throws at once (kConnectionLost,
    // naming the last reason), so callers on the event loop are not held up
    // by connection timeouts while the server is away.
    Connection& conn();
    // "now" outside a transaction: the database clock (one round trip) or
    // the caller's clock.
    std::int64_t now_ms();
    bool database_clock() const noexcept { return clock_source_ == ClockSource::database; }
    const Clock& clock() const noexcept { return clock_; }

    // Runs body() (which opens its own Work); a PgFailure becomes
    // internal_error(what() + ": " + the server's message), NWP-STORE-DISK-FULL
    // for a full disk; a serialization failure or deadlock runs body again
    // (up to kMaxAttempts). `what` is only called on failure.
    template <class T, class What, class Body>
    Result<T> guarded(What&& what, Body&& body) noexcept
    {
        for (int attempt = 1;; ++attempt) {
            try {
                return body();
            } catch (const PgFailure& e) {
                if (e.retryable() && attempt < kMaxAttempts)
                    continue;
                return failure(what, e);
            } catch (const std::bad_alloc&) {
                return plain_failure(what, "out of memory");
            } catch (const std::exception& e) {
                return plain_failure(what, e.what());
            }
        }
    }

    // Appends an explicit event inside the caller's transaction; the
    // transitions' events are written by the schema's triggers.
    void add_event(Connection& conn, std::int64_t message_id, std::int64_t at_ms, const std::string& name,
                   const std::string& detail);
    // Inside w's transaction: append_event's, record_node_result's and
    // complete's work (pg_tasks.cpp, pg_results.cpp, pg_leases.cpp); a
    // refusal has written nothing.
    Result<void> append_event_locked(Work& w, const std::string& task_id, const std::string& name,
                                     const std::string& detail_json, const std::optional<std::string>& lease_holder);
    Result<RecordOutcome> record_node_result_locked(Work& w, const NodeResult& result);
    Result<void> complete_locked(Work& w, const std::vector<std::string>& task_ids, const std::string& runner_nid,
                                 const TaskOutcome& outcome);
    // Why runner_nid holds no live lease on task_id: NOP-TASK-NOT-FOUND or
    // NOP-CLAIM-CONFLICT with an explanation (pg_leases.cpp).
    Error lease_error(Connection& conn, std::int64_t now, const std::string& task_id, const std::string& runner_nid);

private:
    static constexpr int kMaxAttempts = 5;

    template <class What>
    Error failure(What& what, const PgFailure& e) noexcept
    {
        return classify_failure(plain_failure(what, e.what()), e);
    }
    // Disk full → NWP-STORE-DISK-FULL; a lost connection → dropped (the next
    // operation reconnects) and the store marked degraded.
    Error classify_failure(Error error, const PgFailure& e) noexcept;

    template <class What>
    static Error plain_failure(What& what, const char* reason) noexcept
    {
        try {
            return internal_error(what() + ": " + reason);
        } catch (...) {
            return internal_error("store operation failed");
        }
    }

    // A new session, set up for this store; throws PgFailure.
    std::unique_ptr<Connection> open_connection() const;

    std::string conninfo_;
    const Clock& clock_;
    ClockSource clock_source_;
    bool transaction_pooler_;
    bool node_reports_;
    std::unique_ptr<Connection> conn_;
    int version_ = 0;
    static constexpr std::chrono::milliseconds kFirstReconnectDelay{250};
    static constexpr std::chrono::milliseconds kMaxReconnectDelay{5000};
    std::chrono::milliseconds reconnect_delay_{0};
    std::chrono::steady_clock::time_point next_connect_{};
    std::string last_connect_failure_;
};

}  // namespace nps::store::pg
