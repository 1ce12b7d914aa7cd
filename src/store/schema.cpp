// SPDX-License-Identifier: Apache-2.0
// Versioned schema. PRAGMA user_version is the number of migrations applied;
// migration N (1-based) is kMigrations[N-1]. Pending migrations run in one
// BEGIN IMMEDIATE transaction, so two processes opening a fresh file at once
// cannot both apply them, and a crash mid-migration leaves the old version.
// Never edit a released migration: append a new one.
#include <array>
#include <string>

#include "sqlite_store.hpp"

namespace nps::store::detail {

namespace {

// 'NPSR': marks the file as ours (PRAGMA application_id), so we refuse to
// migrate some other application's SQLite file that happens to be named
// runner.db.
constexpr int kApplicationId = 0x4E505352;

// Schema notes (docs/durability.md has the full story):
//  - The lease lives on the inbox row (messages): the claim is one
//    `UPDATE messages … WHERE message_id = (SELECT … LIMIT 1) RETURNING …`
//    on the partial index messages_claim. lease_expiry doubles as "visible
//    at" (0 = never leased or released); expires_at is the TTL for the first
//    claim and becomes INT64_MAX once claimed. prev_owner receives the old
//    lease_owner in the claim's SET (right-hand sides see the old row), which
//    tells granted (NULL: never leased or released) from reclaimed.
//  - A message row is never deleted; state 'done' takes it out of the inbox
//    (ack, complete, cancel, TTL expiry) and out of the partial index.
//  - tasks is 1:1 with messages and keyed by the same integer (rowid), so the
//    lease mirror in the claim transaction is a rowid update. Newest first is
//    ORDER BY message_id DESC, with no extra index.
//  - events are keyed by the task's integer key (message_id), not by the
//    task_id text: tasks claimed or completed together have neighbouring
//    keys, so a batch appends to a few B-tree pages instead of one page per
//    task scattered by task_id order.
//  - frames holds the deposited payload once and is never updated: lease
//    updates rewrite small rows, never a TaskFrame of up to 256 KiB.
//  - messages_claim covers every column the claim predicate reads, so
//    finding the head never touches the table rows it skips (live leases).
//    `state` is constant in the partial index but must be a column too:
//    SQLite's covering-index check does not credit the index's WHERE.
constexpr std::array<const char*, 1> kMigrations = {
    // 1: initial schema
    R"sql(
CREATE TABLE messages (
    message_id   INTEGER PRIMARY KEY AUTOINCREMENT,
    nid          TEXT    NOT NULL,
    task_id      TEXT    NOT NULL,
    content_type TEXT    NOT NULL,
    priority     INTEGER NOT NULL,
    enqueued_at  INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL,
    state        TEXT    NOT NULL CHECK (state IN ('queued', 'done')),
    lease_owner  TEXT,
    prev_owner   TEXT,
    lease_expiry INTEGER NOT NULL DEFAULT 0,
    claims       INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX messages_claim ON messages (nid, priority DESC, message_id, lease_expiry, expires_at, state)
    WHERE state = 'queued';

CREATE TABLE frames (
    message_id INTEGER PRIMARY KEY REFERENCES messages (message_id),
    payload    BLOB NOT NULL
);

CREATE TABLE tasks (
    message_id    INTEGER PRIMARY KEY REFERENCES messages (message_id),
    task_id       TEXT    NOT NULL UNIQUE,
    nid           TEXT    NOT NULL,
    state         TEXT    NOT NULL,
    error_code    TEXT,
    error_message TEXT,
    aggregate     TEXT,
    dag_hash      TEXT    NOT NULL,
    dedup_key     TEXT    NOT NULL,
    frame_hash    TEXT    NOT NULL,
    lease_owner   TEXT,
    lease_expiry  INTEGER NOT NULL DEFAULT 0,
    claims        INTEGER NOT NULL DEFAULT 0,
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL
);

CREATE TABLE node_results (
    task_id       TEXT    NOT NULL REFERENCES tasks (task_id),
    node_id       TEXT    NOT NULL,
    dedup_key     TEXT    NOT NULL,
    state         TEXT    NOT NULL,
    attempts      INTEGER NOT NULL,
    error_code    TEXT,
    error_message TEXT,
    result        TEXT,
    killed_reason TEXT,
    runner_nid    TEXT,
    recorded_at   INTEGER NOT NULL,
    PRIMARY KEY (task_id, node_id, dedup_key)
);
CREATE INDEX node_results_dedup ON node_results (dedup_key, node_id);

CREATE TABLE events (
    message_id INTEGER NOT NULL REFERENCES tasks (message_id),
    seq        INTEGER NOT NULL,
    at         INTEGER NOT NULL,
    name       TEXT    NOT NULL,
    detail     TEXT    NOT NULL,
    PRIMARY KEY (message_id, seq)
) WITHOUT ROWID;

CREATE TABLE announces (
    nid             TEXT    PRIMARY KEY,
    activation_mode TEXT    NOT NULL,
    spawn_spec_ref  TEXT    NOT NULL,
    ttl_seconds     INTEGER,
    announced_at    INTEGER NOT NULL,
    body            TEXT    NOT NULL
);
)sql",
};

int read_int_pragma(SQLite::Database& db, const char* sql)
{
    SQLite::Statement stmt(db, sql);
    return stmt.executeStep() ? stmt.getColumn(0).getInt() : 0;
}

}  // namespace

int latest_schema_version()
{
    return static_cast<int>(kMigrations.size());
}

Result<int> migrate(SQLite::Database& db, const std::string& path)
{
    const auto fail = [&path](const std::string& why) {
        return internal_error("Failed to open database '" + path + "': " + why);
    };
    const int latest = latest_schema_version();

    db.exec("BEGIN IMMEDIATE");
    try {
        const int version = read_int_pragma(db, "PRAGMA user_version");
        const int app_id = read_int_pragma(db, "PRAGMA application_id");
        if (version > latest) {
            db.exec("ROLLBACK");
            return fail("schema version " + std::to_string(version) + " is newer than this nps-runner supports (" +
                        std::to_string(latest) + "); upgrade nps-runner");
        }
        if (app_id != 0 && app_id != kApplicationId) {
            db.exec("ROLLBACK");
            return fail("not an nps-runner database (application_id " + std::to_string(app_id) + ")");
        }
        if (version == 0 && app_id == 0 && read_int_pragma(db, "SELECT count(*) FROM sqlite_schema") != 0) {
            db.exec("ROLLBACK");
            return fail("the file holds tables that are not an nps-runner schema");
        }
        for (int next = version + 1; next <= latest; ++next)
            db.exec(kMigrations[static_cast<std::size_t>(next - 1)]);
        if (version < latest) {
            db.exec("PRAGMA application_id=" + std::to_string(kApplicationId));
            db.exec("PRAGMA user_version=" + std::to_string(latest));
        }
        db.exec("COMMIT");
        return latest;
    } catch (const SQLite::Exception& e) {
        try {
            db.exec("ROLLBACK");
        } catch (const SQLite::Exception&) {  // the failure may have rolled back already
        }
        return fail(std::string("schema migration failed: ") + e.what());
    }
}

}  // namespace nps::store::detail
