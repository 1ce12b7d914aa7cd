// SPDX-License-Identifier: Apache-2.0
// Internal to store/: a thin RAII layer over libpq for the PostgreSQL store.
//
// Contract:
//  - Connection owns one PGconn (PQfinish on destruction). It is used by one
//    thread at a time, like every Store object.
//  - Statements are prepared on first use and cached per connection, keyed
//    by the address of their SQL text (string literals of the store's .cpp
//    files), as SqliteStore caches its SQLite statements.
//  - Parameters and results travel in text format, except bytea parameters
//    (Params::bytes), sent in binary; bytea results are decoded by
//    Rows::bytes. Text parameters are made valid for PostgreSQL's text: a
//    NUL byte or a byte that is not valid UTF-8 becomes U+FFFD.
//  - Failures throw PgFailure (SQLSTATE and message). Like SQLiteCpp's
//    exceptions they never leave store/: PostgresStore::guarded turns them
//    into Results.
//  - libpq itself is loaded on first use (src/lazy/pq_symbols.cpp).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

struct pg_conn;
struct pg_result;

namespace nps::store::pg {

// SQLSTATE classes the store acts on.
inline constexpr std::string_view kSerializationFailure = "40001";
inline constexpr std::string_view kDeadlockDetected = "40P01";
inline constexpr std::string_view kUniqueViolation = "23505";
inline constexpr std::string_view kDiskFull = "53100";
// Not a server code: the connection is gone (libpq reports CONNECTION_BAD).
inline constexpr std::string_view kConnectionLost = "08006";

class PgFailure : public std::runtime_error {
public:
    PgFailure(std::string sqlstate, const std::string& message)
        : std::runtime_error(message), sqlstate_(std::move(sqlstate))
    {
    }
    const std::string& sqlstate() const noexcept { return sqlstate_; }
    // 40001 or 40P01: the transaction may simply be run again.
    bool retryable() const noexcept { return sqlstate_ == kSerializationFailure || sqlstate_ == kDeadlockDetected; }
    // Class 08 (connection exception) or a connection libpq reports lost.
    bool connection_lost() const noexcept { return sqlstate_.rfind("08", 0) == 0; }

private:
    std::string sqlstate_;
};

// The parameters of one statement, $1 … $n in order.
class Params {
public:
    Params& text(std::string_view value);
    Params& integer(std::int64_t value);
    Params& optional_text(const std::optional<std::string>& value);
    Params& optional_integer(const std::optional<std::int64_t>& value);
    Params& null();
    // Raw bytes for a bytea parameter (binary format: no escaping).
    Params& bytes(std::string_view value);
    // A text[] literal of the given strings ({"a","b"}), for `= ANY($n::text[])`.
    Params& text_array(const std::vector<std::string>& values);
    // A bigint[] literal, for `= ANY($n::bigint[])`.
    Params& integer_array(const std::vector<std::int64_t>& values);

    int size() const noexcept { return static_cast<int>(values_.size()); }
    const char* const* values() const noexcept { return pointers_.data(); }
    const int* lengths() const noexcept { return lengths_.data(); }
    const int* formats() const noexcept { return formats_.data(); }

private:
    void push(std::optional<std::string> value, int format);

    std::vector<std::optional<std::string>> values_;
    std::vector<const char*> pointers_;
    std::vector<int> lengths_;
    std::vector<int> formats_;
};

// A result (PQclear on destruction). Columns are read by index.
class Rows {
public:
    explicit Rows(pg_result* result) noexcept;
    Rows(Rows&&) noexcept = default;
    Rows& operator=(Rows&&) noexcept = default;
    ~Rows();

    int size() const noexcept;
    bool empty() const noexcept { return size() == 0; }
    bool is_null(int row, int column) const noexcept;
    std::string text(int row, int column) const;
    std::optional<std::string> optional_text(int row, int column) const;
    std::int64_t integer(int row, int column) const;  // NULL reads as 0
    std::optional<std::int64_t> optional_integer(int row, int column) const;
    bool boolean(int row, int column) const;  // 't'
    std::string bytes(int row, int column) const;  // a bytea column
    // How many rows an UPDATE/DELETE/INSERT touched (PQcmdTuples).
    std::int64_t affected() const;

private:
    struct Clear {
        void operator()(pg_result* result) const noexcept;
    };
    std::unique_ptr<pg_result, Clear> result_;
};

class Connection {
public:
    // How query() sends a statement: prepared once per connection under a
    // name and executed by it after, or unnamed (parsed and planned at each
    // call, in one round trip: what a pooler in transaction mode needs, as
    // a name prepared on one server session is unknown to the next).
    enum class Statements { prepared, unnamed };

    // Connects with a libpq connection string or URI; throws PgFailure
    // (kConnectionLost) with libpq's reason (the caller names the target).
    explicit Connection(const std::string& conninfo, Statements statements = Statements::prepared);
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;
    ~Connection();

    // One or more statements in the simple protocol, no parameters; the last
    // statement's result.
    Rows exec(const char* sql);
    // A statement with parameters, sent as `Statements` says.
    Rows query(const char* sql, const Params& params);
    Rows query(const char* sql) { return query(sql, Params()); }

    // False once libpq reports the connection bad.
    bool ok() const noexcept;
    // ok(), and between transactions also what the socket says: a server
    // that restarted or ended the session while it sat idle has closed it
    // (readable: EOF, perhaps after a FATAL notice), which libpq learns only
    // by reading. So a connection idle through an outage is found dead here,
    // before an operation would fail on it, at the cost of one poll(2).
    bool alive() noexcept;
    // True when no transaction is open or failed on this connection.
    bool idle() const noexcept;
    // The server's message of the last failure, for errors.
    pg_conn* handle() const noexcept { return conn_.get(); }

private:
    struct Finish {
        void operator()(pg_conn* conn) const noexcept;
    };
    [[noreturn]] void fail(pg_result* result, const char* what);
    Rows checked(pg_result* result, const char* what);

    std::unique_ptr<pg_conn, Finish> conn_;
    Statements statements_;
    std::unordered_map<const char*, std::string> prepared_;  // SQL text address → statement name
};

// BEGIN … COMMIT on a Connection; rolls back in the destructor unless
// committed. READ COMMITTED: the store's operations take row locks
// (FOR UPDATE, SKIP LOCKED) or advisory locks where they read before writing.
class Transaction {
public:
    // begin_sql: "BEGIN" and, optionally, further statements sent in the
    // same round trip; the last one's result is begun().
    explicit Transaction(Connection& conn, const char* begin_sql = "BEGIN");
    Transaction(const Transaction&) = delete;
    Transaction& operator=(const Transaction&) = delete;
    ~Transaction();
    void commit();
    const Rows& begun() const noexcept { return begun_; }

private:
    Connection& conn_;
    Rows begun_;
    bool active_ = false;
};

// The URL with connect_timeout=10 added unless it names one: a connection
// attempt must not block a thread that has other work without bound.
std::string with_connect_timeout(std::string url);


}  // namespace nps::store::pg
