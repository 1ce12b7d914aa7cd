// SPDX-License-Identifier: Apache-2.0
// Connecting, migrating, the transaction-with-now every operation runs in,
// failure classification and the event appender.
#include "pg_store.hpp"

#include <algorithm>

#include "nps/proto/error_codes.hpp"
#include "nps/store/write_health.hpp"

namespace nps::store::pg {

namespace {

// The database clock in milliseconds, read in the transaction it begins
// (now() is the transaction's start: every statement of one operation
// agrees on it).
constexpr const char* kBeginWithNow = "BEGIN; SELECT nps_now_ms()";

constexpr const char* kNowSql = "SELECT nps_now_ms()";
// The tables of the store's schema (the search path's first) with their
// indexes and TOAST.
constexpr const char* kSizeSql =
    "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class c "
    "WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r'";

// Every store call runs on a thread that has other work (the executor's on
// the event loop), so none may wait without bound: a connection attempt
// gives up after 10 s unless the URL says otherwise (with_connect_timeout),
// and a statement, lock waits included, after 30 s.
constexpr const char* kSessionSetup = "SET statement_timeout = '30s'";

constexpr const char* kAddEventSql =
    "INSERT INTO events (message_id, seq, at, name, detail) VALUES "
    "($1::bigint, (SELECT coalesce(max(seq), 0) + 1 FROM events WHERE message_id = $1::bigint), $2, $3, $4)";

}  // namespace

Result<std::unique_ptr<Store>> open_postgres(const OpenOptions& options, const Clock& clock)
{
    try {
        auto store = std::make_unique<PostgresStore>(options.url, clock, options.clock_source,
                                                     options.transaction_pooler, options.node_reports);
        store->connect();
        return std::unique_ptr<Store>(std::move(store));
    } catch (const std::exception& e) {
        return internal_error("Failed to open the PostgreSQL store '" + redact_store_url(options.url) + "': " +
                              e.what());
    }
}

Work::Work(PostgresStore& store)
    : conn_(store.conn()), txn_(conn_, store.database_clock() ? kBeginWithNow : "BEGIN")
{
    now_ = store.database_clock() ? txn_.begun().integer(0, 0) : store.clock().now_ms();
}

void Work::commit()
{
    txn_.commit();
    mark_write_succeeded();
}

PostgresStore::PostgresStore(std::string conninfo, const Clock& clock, ClockSource clock_source,
                             bool transaction_pooler, bool node_reports)
    : conninfo_(with_connect_timeout(std::move(conninfo))),
      clock_(clock),
      clock_source_(clock_source),
      transaction_pooler_(transaction_pooler),
      node_reports_(node_reports)
{
}

std::unique_ptr<Connection> PostgresStore::open_connection() const
{
    auto conn = std::make_unique<Connection>(
        conninfo_, transaction_pooler_ ? Connection::Statements::unnamed : Connection::Statements::prepared);
    if (!transaction_pooler_)  // a SET would stay with whichever server session ran it
        conn->exec(kSessionSetup);
    return conn;
}

PostgresStore::~PostgresStore() = default;

void PostgresStore::connect()
{
    conn_ = open_connection();
    version_ = migrate(*conn_);
}

Connection& PostgresStore::conn()
{
    if (conn_ && conn_->alive())
        return *conn_;
    conn_.reset();
    const auto now = std::chrono::steady_clock::now();
    if (now < next_connect_) {
        const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next_connect_ - now);
        throw PgFailure(std::string(kConnectionLost), last_connect_failure_ + " (next connection attempt in " +
                                                          std::to_string(wait.count()) + " ms)");
    }
    try {
        // The schema was checked when the store opened; a reconnect only
        // needs the connection (its statements are prepared again on use).
        conn_ = open_connection();
        reconnect_delay_ = std::chrono::milliseconds{0};
    } catch (const PgFailure& e) {
        reconnect_delay_ = std::clamp(reconnect_delay_ * 2, kFirstReconnectDelay, kMaxReconnectDelay);
        next_connect_ = now + reconnect_delay_;
        last_connect_failure_ = e.what();
        throw;
    }
    return *conn_;
}

std::int64_t PostgresStore::now_ms()
{
    if (!database_clock())
        return clock_.now_ms();
    return conn().query(kNowSql).integer(0, 0);
}

Result<std::int64_t> PostgresStore::size_bytes()
{
    return guarded<std::int64_t>([] { return std::string("Failed to read the store's size"); },
                                 [&]() -> Result<std::int64_t> { return conn().query(kSizeSql).integer(0, 0); });
}

Result<std::int64_t> PostgresStore::time_now_ms()
{
    return guarded<std::int64_t>([] { return std::string("Failed to read the database's clock"); },
                                 [&]() -> Result<std::int64_t> { return now_ms(); });
}

void PostgresStore::add_event(Connection& conn, std::int64_t message_id, std::int64_t at_ms, const std::string& name,
                              const std::string& detail)
{
    conn.query(kAddEventSql, Params().integer(message_id).integer(at_ms).text(name).text(detail));
}

Error PostgresStore::classify_failure(Error error, const PgFailure& e) noexcept
{
    try {
        if (e.connection_lost()) {
            conn_.reset();  // the next operation connects afresh
            mark_write_failed("", "lost the connection to the PostgreSQL store: " +
                                                              std::string(e.what()));
            return error;
        }
        if (e.sqlstate() == kDiskFull) {
            mark_write_failed("", "the PostgreSQL store's disk is full: " +
                                                              std::string(e.what()));
            return protocol_error(proto::code::kNwpStoreDiskFull,
                                  error.message + " (the database server's disk is full: nothing was changed; "
                                                  "retry once space is freed)");
        }
        return error;
    } catch (...) {
        return error;
    }
}

}  // namespace nps::store::pg
