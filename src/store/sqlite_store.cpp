// SPDX-License-Identifier: Apache-2.0
// Opening runner.db: connection flags, pragmas, migrations; the statement
// cache, write transactions and the event appender every area uses.
#include "sqlite_store.hpp"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <string_view>
#include <thread>

#include "nps/base/unique_fd.hpp"
#include "nps/proto/error_codes.hpp"
#include "nps/store/write_health.hpp"

namespace nps::store {

namespace {

Result<std::unique_ptr<Store>> refuse(const std::string& path, const std::string& why)
{
    return internal_error("Failed to open database '" + path + "': " + why);
}

bool is_in_memory(const std::string& path)
{
    return path == ":memory:" || path.rfind("file::memory:", 0) == 0 || path.find("mode=memory") != std::string::npos;
}

// runner.db holds TaskFrames, params, results and callback secrets: root's
// alone. SQLite gives -wal and -shm the database file's mode and owner, so
// a missing database file is created with this mode before SQLite opens it;
// files an older version left readable (0644) are restricted on every open.
constexpr mode_t kDatabaseFileMode = 0600;

// Serialises the creation below with SQLite's open of the same file by
// another thread: see restrict_database_files().
std::mutex& database_open_mutex()
{
    static std::mutex mutex;
    return mutex;
}

// Works on paths only, never on an fd of an existing database file: closing
// any fd of a file drops every POSIX lock this process holds on it, including
// the SHARED lock each of our open WAL-mode connections keeps on runner.db.
// Without that lock, another process's connection that closes believes it is
// the last one, checkpoints and deletes the WAL and -shm under our open
// connections, whose later commits then go to an unlinked file and are lost
// (found by the power-cut trials, docs/durability.md). The file is only
// opened when this call creates it (O_EXCL), when no connection can hold it;
// the caller holds database_open_mutex() so no other thread's SQLite open
// slips between the creation and the close.
Result<void> restrict_database_files(const std::string& path)
{
    struct stat st{};
    if (::lstat(path.c_str(), &st) != 0) {
        if (errno != ENOENT)
            return system_error_errno("Failed to stat database file '" + path + "'");
        UniqueFd created(::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, kDatabaseFileMode));
        if (!created && errno != EEXIST)
            return system_error_errno("Failed to create database '" + path + "'");
        return {};
    }
    for (const std::string& file : {path, path + "-wal", path + "-shm"}) {
        if (::lstat(file.c_str(), &st) != 0) {
            if (errno == ENOENT)
                continue;
            return system_error_errno("Failed to stat database file '" + file + "'");
        }
        if (S_ISREG(st.st_mode) && (st.st_mode & 07777) != kDatabaseFileMode &&
            ::chmod(file.c_str(), kDatabaseFileMode) != 0)
            return system_error_errno("Failed to restrict the mode of database file '" + file + "'");
    }
    return {};
}

// A pragma that answers with one value; returns it as text.
std::string pragma(SQLite::Database& db, const std::string& statement)
{
    SQLite::Statement stmt(db, statement);
    if (!stmt.executeStep())
        return {};
    return stmt.getColumn(0).getString();
}

// NPS_TEST_UNSAFE_SYNCHRONOUS_OFF=1 in the environment: every connection
// runs with synchronous=OFF, whatever OpenOptions says. Test-only.
bool unsafe_no_sync_for_tests()
{
    const char* v = std::getenv("NPS_TEST_UNSAFE_SYNCHRONOUS_OFF");
    return v != nullptr && std::string_view(v) == "1";
}

// The write-ahead log's bound (docs/retention.md). SQLite's own automatic
// checkpoint (PASSIVE, every kCheckpointFrames) copies what no reader still
// needs; the log starts again from its beginning only when a checkpoint
// finished and no reader was inside it. Under steady concurrent writers that
// moment may not come, and the log grows without limit. This hook replaces
// the automatic one after every commit: the same passive checkpoint, and past
// kTruncateFrames a TRUNCATE checkpoint that waits (busy timeout) for the
// readers to leave and empties the file.
//
// SQLite runs one checkpoint at a time and refuses a second at once, without
// waiting; while a slow one runs (its fsync on a busy disk), every commit
// appends to the log. So past kTruncateFrames a committing thread waits for
// the checkpoint in progress and then truncates itself: writers are held back
// until the log is emptied, instead of growing it for as long as the disk is
// slow (the retention soak saw 36 MiB on a loaded machine). Below it, a
// thread that finds a checkpoint running leaves it to that one. The commit is
// already durable and its locks released when the hook runs; a checkpoint
// that fails here is retried after the next commit.
constexpr int kCheckpointFrames = 1000;  // SQLite's default: ~4 MiB of 4 KiB pages
constexpr int kTruncateFrames = 3072;    // ~12 MiB

// One checkpoint at a time in this process (other processes: SQLite's lock).
std::mutex& checkpoint_mutex()
{
    static std::mutex mutex;
    return mutex;
}

int bound_write_ahead_log(void*, sqlite3* db, const char* schema, int frames)
{
    if (frames >= kTruncateFrames) {
        const std::lock_guard lock(checkpoint_mutex());
        sqlite3_wal_checkpoint_v2(db, schema, SQLITE_CHECKPOINT_TRUNCATE, nullptr, nullptr);
    } else if (frames >= kCheckpointFrames) {
        const std::unique_lock lock(checkpoint_mutex(), std::try_to_lock);
        if (lock.owns_lock())
            sqlite3_wal_checkpoint_v2(db, schema, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
    }
    return SQLITE_OK;
}

// The connection's pragmas and the schema's migration. Run again when SQLite
// refused a lock without waiting (see open_sqlite).
Result<int> set_up(SQLite::Database& db, const OpenOptions& options)
{
    // A new file gives the pages retention frees back to the file
    // system (reclaim_space); the mode can only be chosen before the
    // first table exists (docs/retention.md).
    if (pragma(db, "PRAGMA page_count") == "0")
        db.exec("PRAGMA auto_vacuum=INCREMENTAL");
    // WAL: readers never block the writer and a commit appends to one
    // file. The mode is persistent in the file; asking again is cheap.
    // A file whose set-up another process is in the middle of answers its
    // old mode: thrown as SQLITE_BUSY, so it is retried like a busy lock.
    const std::string mode = pragma(db, "PRAGMA journal_mode=WAL");
    if (mode != "wal")
        throw SQLite::Exception("cannot switch to WAL journal mode (got '" + mode + "')", SQLITE_BUSY);
    // FULL: the WAL is fsynced at every commit, so an acknowledged
    // transaction survives power loss (docs/durability.md).
    db.exec(options.synchronous == Synchronous::full ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL");
    // TEST ONLY (docs/durability.md, "Negative control"): the power-cut
    // harness proves it can fail by running the daemon with no fsync at
    // all. Never set it in production: a power loss then loses commits.
    if (unsafe_no_sync_for_tests())
        db.exec("PRAGMA synchronous=OFF");
    db.exec("PRAGMA foreign_keys=ON");
    // After a checkpoint, truncate a WAL that grew past 64 MiB (a burst)
    // instead of keeping the big file around forever.
    db.exec("PRAGMA journal_size_limit=67108864");
    sqlite3_wal_hook(db.getHandle(), bound_write_ahead_log, nullptr);
    db.exec("PRAGMA temp_store=MEMORY");
    return detail::migrate(db, options.path);
}

// SQLite answers SQLITE_BUSY at once, without the busy handler, where
// waiting could deadlock: a connection upgrading its lock while another
// process sets up the same new file (its journal mode, its first tables) is
// refused rather than made to wait. Several processes opening a new
// runner.db together (`image import` run in parallel) meet this; such a
// refusal is retried, a little later each time, for the busy timeout.
bool refused_without_waiting(const SQLite::Exception& e)
{
    return e.getErrorCode() == SQLITE_BUSY;
}

Result<int> set_up_waiting(SQLite::Database& db, const OpenOptions& options)
{
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(std::max(options.busy_timeout_ms, 0));
    for (std::chrono::milliseconds pause(5);; pause = std::min(pause * 2, std::chrono::milliseconds(100))) {
        try {
            return set_up(db, options);
        } catch (const SQLite::Exception& e) {
            if (!refused_without_waiting(e) || std::chrono::steady_clock::now() + pause > deadline)
                throw;
        }
        std::this_thread::sleep_for(pause);
    }
}

}  // namespace

}  // namespace nps::store

namespace nps::store::detail {

Result<std::unique_ptr<Store>> open_sqlite(const OpenOptions& options, const Clock& clock)
{
    const std::string& path = options.path;
    if (path.empty())
        return refuse(path, "no path given");
    if (is_in_memory(path))
        return refuse(path, "an in-memory database cannot use WAL; give a file path");
    try {
        std::unique_ptr<SQLite::Database> db;
        {
            std::lock_guard creating(database_open_mutex());
            if (path.rfind("file:", 0) != 0)
                NPS_TRY_VOID(restrict_database_files(path));
            // NOMUTEX: a Store object is used by one thread at a time
            // (store.hpp), so SQLite's per-connection mutex would only cost time.
            db = std::make_unique<SQLite::Database>(
                path, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE | SQLite::OPEN_NOMUTEX, options.busy_timeout_ms);
        }

        auto version = set_up_waiting(*db, options);
        if (!version)
            return std::move(version).error();
        std::unique_ptr<Store> store =
            std::make_unique<detail::SqliteStore>(std::move(db), clock, path, version.value(), options.node_reports);
        return store;
    } catch (const SQLite::Exception& e) {
        return refuse(path, e.what());
    } catch (const std::exception& e) {
        return refuse(path, e.what());
    }
}

SqliteStore::SqliteStore(std::unique_ptr<SQLite::Database> db, const Clock& clock, std::string path, int version,
                         bool node_reports)
    : db_(std::move(db)), clock_(clock), path_(std::move(path)), version_(version), node_reports_(node_reports)
{
}

// Statements must be finalized before the connection closes; the members
// are declared after db_, so they are destroyed first.
SqliteStore::~SqliteStore() = default;

Result<std::int64_t> SqliteStore::size_bytes()
{
    std::int64_t total = 0;
    for (const std::string& file : {path_, path_ + "-wal"}) {
        struct stat st {};
        if (::stat(file.c_str(), &st) == 0)
            total += st.st_size;
    }
    return total;
}

StatementUse SqliteStore::use(CachedStatement& slot, const char* sql)
{
    if (!slot.stmt)
        slot.stmt = std::make_unique<SQLite::Statement>(*db_, sql);
    return StatementUse(*slot.stmt);
}

void SqliteStore::add_event(std::int64_t message_id, std::int64_t at_ms, const char* name,
                            const std::string& detail)
{
    // seq = the task's last seq + 1: a seek on the (message_id, seq) primary key.
    auto st = use(event_insert_,
                  "INSERT INTO events (message_id, seq, at, name, detail) VALUES "
                  "(?1, (SELECT coalesce(max(seq), 0) + 1 FROM events WHERE message_id = ?1), ?2, ?3, ?4)");
    st->bind(1, static_cast<std::int64_t>(message_id));
    st->bind(2, static_cast<std::int64_t>(at_ms));
    st->bindNoCopy(3, name);
    st->bindNoCopy(4, detail);
    st->exec();
}

WriteTransaction::WriteTransaction(SqliteStore& store) : store_(store)
{
    auto st = store_.use(store_.begin_, "BEGIN IMMEDIATE");
    st->exec();
    active_ = true;
}

void WriteTransaction::commit()
{
    auto st = store_.use(store_.commit_, "COMMIT");
    st->exec();
    active_ = false;
    mark_write_succeeded();
}

bool SqliteStore::in_transaction()
{
    return sqlite3_get_autocommit(db().getHandle()) == 0;
}

Error SqliteStore::classify_failure(Error error, int sqlite_code) noexcept
{
    try {
        const int primary = sqlite_code & 0xff;
        if (primary != SQLITE_FULL && primary != SQLITE_IOERR)
            return error;
        const bool full = primary == SQLITE_FULL;
        mark_write_failed(path_, (full ? "disk full writing '" : "I/O error on '") + path_ + "': " + error.message);
        if (full)
            return protocol_error(proto::code::kNwpStoreDiskFull,
                                  error.message + " (the filesystem of '" + path_ +
                                      "' is full: nothing was changed; retry once space is freed)");
        return error;
    } catch (...) {
        return error;
    }
}

WriteTransaction::~WriteTransaction()
{
    if (!active_)
        return;
    // Some errors (SQLITE_FULL, SQLITE_IOERR, …) already rolled back.
    if (sqlite3_get_autocommit(store_.db().getHandle()))
        return;
    try {
        auto st = store_.use(store_.rollback_, "ROLLBACK");
        st->tryExecuteStep();
    } catch (...) {  // nothing sensible to do in a destructor; the connection stays usable or reports later
    }
}

}  // namespace nps::store::detail
