// SPDX-License-Identifier: Apache-2.0
// Versioned schema. PRAGMA user_version is the number of migrations applied;
// migration N (1-based) is kMigrations[N-1]. Pending migrations run in one
// BEGIN IMMEDIATE transaction, so two processes opening a fresh file at once
// cannot both apply them, and a crash mid-migration leaves the old version.
// Never edit a released migration: append a new one.
#include <array>
#include <string>

#include "nps/base/log.hpp"
#include "sqlite_store.hpp"

namespace nps::store::detail {

namespace {

// 'NPSR': marks the file as ours (PRAGMA application_id), so we refuse to
// migrate some other application's SQLite file that happens to be named
// runner.db.
constexpr int kApplicationId = 0x4E505352;

// Schema notes (docs/durability.md has the full story):
//  - One row per task: `tasks` is both the inbox entry and the task record,
//    keyed by message_id (INTEGER PRIMARY KEY AUTOINCREMENT = the inbox id;
//    newest first is ORDER BY message_id DESC, with no extra index). The
//    lease lives on that row, so a claim is one
//    `UPDATE tasks … WHERE message_id = (SELECT … LIMIT 1) RETURNING …` on
//    the partial index tasks_claim that also sets the task RUNNING, and a
//    completion is one UPDATE fenced by the live lease: one row write per
//    step, no mirror to keep in sync.
//  - queue ('queued'|'done') is the inbox state; 'done' takes the row out of
//    the inbox (ack, complete, cancel, TTL expiry) and out of the partial
//    index. state is the task state (PENDING RUNNING COMPLETED FAILED
//    CANCELLED). A row is never deleted.
//  - lease_expiry doubles as "visible at" (0 = never leased or released);
//    expires_at is the TTL for the first claim and becomes INT64_MAX once
//    claimed. prev_owner receives the old lease_owner in the claim's SET
//    (right-hand sides see the old row), which tells granted (NULL: never
//    leased or released) from reclaimed.
//  - The event log is written by the triggers below, never by the C++ state
//    transitions, so it cannot disagree with the row it describes: deposit,
//    claim (grant/reclaim), release, ack, completion/cancellation and TTL
//    expiry each log their event in the statement that makes the change.
//    Store::append_event inserts other events (DAG engine) directly. seq is
//    the task's last seq + 1: a seek on the (message_id, seq) primary key.
//    Details are built in the key order nlohmann::json dumps (sorted), except
//    the lease events' {"runner_nid","lease_expiry"}.
//  - events are keyed by the task's integer key (message_id), not by the
//    task_id text: tasks claimed or completed together have neighbouring
//    keys, so a batch appends to a few B-tree pages.
//  - frames holds the deposited payload once and is never updated: lease
//    updates rewrite small rows, never a TaskFrame of up to 256 KiB.
//  - tasks_claim covers every column the claim predicate reads, so finding
//    the head never touches the table rows it skips (live leases). `queue`
//    is constant in the partial index but must be a column too: SQLite's
//    covering-index check does not credit the index's WHERE.
constexpr std::array<const char*, 6> kMigrations = {
    // 1: initial schema
    R"sql(
CREATE TABLE tasks (
    message_id    INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id       TEXT    NOT NULL UNIQUE,
    nid           TEXT    NOT NULL,
    content_type  TEXT    NOT NULL,
    priority      INTEGER NOT NULL,
    enqueued_at   INTEGER NOT NULL,
    expires_at    INTEGER NOT NULL,
    queue         TEXT    NOT NULL CHECK (queue IN ('queued', 'done')),
    state         TEXT    NOT NULL,
    lease_owner   TEXT,
    prev_owner    TEXT,
    lease_expiry  INTEGER NOT NULL DEFAULT 0,
    claims        INTEGER NOT NULL DEFAULT 0,
    error_code    TEXT,
    error_message TEXT,
    aggregate     TEXT,
    dag_hash      TEXT    NOT NULL,
    dedup_key     TEXT    NOT NULL,
    frame_hash    TEXT    NOT NULL,
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL
);
CREATE INDEX tasks_claim ON tasks (nid, priority DESC, message_id, lease_expiry, expires_at, queue)
    WHERE queue = 'queued';

CREATE TABLE frames (
    message_id INTEGER PRIMARY KEY REFERENCES tasks (message_id),
    payload    BLOB NOT NULL
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

-- The event log, maintained by the database: the statement that changes a
-- task row also logs the change, whoever runs it.
CREATE TRIGGER tasks_deposited AFTER INSERT ON tasks
BEGIN
    INSERT INTO events (message_id, seq, at, name, detail)
    VALUES (NEW.message_id, 1, NEW.created_at, 'inbox:deposited',
            json_object('expires_at', NEW.expires_at, 'message_id', NEW.message_id, 'nid', NEW.nid,
                        'priority', NEW.priority));
END;

-- Every other transition, in one trigger, so an UPDATE runs one trigger
-- program per row (SQLite evaluates a trigger's WHEN inside its program).
-- No `IN (…)` list of more than two constants: SQLite builds an ephemeral
-- index for one, once per program run, i.e. per row here (it tripled the
-- trigger's cost); explicit ORs cost nothing like that.
-- It fires only for UPDATEs that set a watched column (renewing a lease, a
-- node result or an aggregate log nothing), and only for rows that make one
-- of these transitions, each UPDATE of the store making at most one:
--  - a claim increments claims; prev_owner (the owner of the expired lease it
--    took over, or NULL) tells lease:reclaimed from lease:granted;
--  - the task reaches COMPLETED/FAILED/CANCELLED: task:*, whose detail names
--    the error code, if any, and the runner whose lease the transition ended,
--    if any — except that a never-claimed task failing with NOP-TASK-TIMEOUT
--    expired in the inbox (sweep_expired; a completion needs a lease, so it
--    always has claims > 0): inbox:expired;
--  - the owner is cleared and the task stays non-terminal: lease:released;
--  - the message leaves the inbox and the task state stays (ack): inbox:acked.
CREATE TRIGGER tasks_transition AFTER UPDATE OF claims, lease_owner, queue, state ON tasks
WHEN NEW.claims > OLD.claims
  OR ((NEW.state = 'COMPLETED' OR NEW.state = 'FAILED' OR NEW.state = 'CANCELLED')
      AND OLD.state IN ('PENDING', 'RUNNING'))
  OR (OLD.lease_owner IS NOT NULL AND NEW.lease_owner IS NULL)
  OR (OLD.queue = 'queued' AND NEW.queue = 'done' AND NEW.state IS OLD.state)
BEGIN
    INSERT INTO events (message_id, seq, at, name, detail)
    VALUES (NEW.message_id,
            (SELECT coalesce(max(seq), 0) + 1 FROM events WHERE message_id = NEW.message_id),
            NEW.updated_at,
            CASE WHEN NEW.claims > OLD.claims THEN
                      CASE WHEN NEW.prev_owner IS NULL THEN 'lease:granted' ELSE 'lease:reclaimed' END
                 WHEN (NEW.state = 'COMPLETED' OR NEW.state = 'FAILED' OR NEW.state = 'CANCELLED')
                      AND OLD.state IN ('PENDING', 'RUNNING') THEN
                      CASE WHEN OLD.claims = 0 AND NEW.state = 'FAILED' AND NEW.error_code IS 'NOP-TASK-TIMEOUT'
                                THEN 'inbox:expired'
                           WHEN NEW.state = 'COMPLETED' THEN 'task:completed'
                           WHEN NEW.state = 'FAILED' THEN 'task:failed'
                           ELSE 'task:cancelled' END
                 WHEN OLD.lease_owner IS NOT NULL AND NEW.lease_owner IS NULL THEN 'lease:released'
                 ELSE 'inbox:acked' END,
            CASE WHEN NEW.claims > OLD.claims THEN
                      json_object('runner_nid', NEW.lease_owner, 'lease_expiry', NEW.lease_expiry)
                 WHEN (NEW.state = 'COMPLETED' OR NEW.state = 'FAILED' OR NEW.state = 'CANCELLED')
                      AND OLD.state IN ('PENDING', 'RUNNING') THEN
                      CASE WHEN OLD.claims = 0 AND NEW.state = 'FAILED' AND NEW.error_code IS 'NOP-TASK-TIMEOUT'
                                THEN json_object('message_id', NEW.message_id)
                           WHEN OLD.lease_owner IS NULL AND NEW.error_code IS NULL THEN '{}'
                           WHEN OLD.lease_owner IS NULL THEN json_object('error_code', NEW.error_code)
                           WHEN NEW.error_code IS NULL THEN json_object('runner_nid', OLD.lease_owner)
                           ELSE json_object('error_code', NEW.error_code, 'runner_nid', OLD.lease_owner) END
                 WHEN OLD.lease_owner IS NOT NULL AND NEW.lease_owner IS NULL THEN
                      json_object('runner_nid', OLD.lease_owner)
                 ELSE json_object('message_id', NEW.message_id) END);
END;

CREATE TABLE announces (
    nid             TEXT    PRIMARY KEY,
    activation_mode TEXT    NOT NULL,
    spawn_spec_ref  TEXT    NOT NULL,
    ttl_seconds     INTEGER,
    announced_at    INTEGER NOT NULL,
    body            TEXT    NOT NULL
);
)sql",

    // 2: the image store's records (docs/images.md). Blobs live as files
    // under <state_dir>/images/blobs; these tables say which images exist and
    // what they are made of, so gc and reference counts never parse blobs.
    //  - image_manifests: one row per imported manifest (a platform-specific
    //    image); platform is "os/arch[/variant]"; last_used_at is bumped by
    //    every pin (LRU order for evicting unpacked layers).
    //  - image_blobs: the blobs a manifest uses, position 0 = its config,
    //    1…n = its layers bottom first; diff_id only for layers. Deleting a
    //    manifest deletes these rows (ON DELETE CASCADE).
    //  - image_refs: name ("repository:tag") → manifest. A manifest with a
    //    ref cannot be deleted (the foreign key has no cascade).
    // A blob's reference count is derived by a query (refs whose manifest
    // uses it), never stored, so it cannot drift after a crash.
    R"sql(
CREATE TABLE image_manifests (
    digest        TEXT    PRIMARY KEY,
    media_type    TEXT    NOT NULL,
    size          INTEGER NOT NULL,
    platform      TEXT    NOT NULL,
    imported_at   INTEGER NOT NULL,
    last_used_at  INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE image_blobs (
    manifest_digest TEXT    NOT NULL REFERENCES image_manifests (digest) ON DELETE CASCADE,
    position        INTEGER NOT NULL,
    digest          TEXT    NOT NULL,
    media_type      TEXT    NOT NULL,
    size            INTEGER NOT NULL,
    diff_id         TEXT,
    PRIMARY KEY (manifest_digest, position)
) WITHOUT ROWID;
CREATE INDEX image_blobs_digest ON image_blobs (digest);
CREATE INDEX image_blobs_diff_id ON image_blobs (diff_id) WHERE diff_id IS NOT NULL;

CREATE TABLE image_refs (
    name            TEXT    PRIMARY KEY,
    manifest_digest TEXT    NOT NULL REFERENCES image_manifests (digest),
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX image_refs_manifest ON image_refs (manifest_digest);
)sql",

    // 3: the report outbox (docs/reporting.md). Like the event log, its rows
    // are written by triggers, so the row reporting a change commits with
    // the change, whoever makes it (the executor's record_node_result, a
    // remote runner's completion through the API, cancel, TTL expiry).
    //  - A 'node' row is a snapshot of the node record as it was when it
    //    entered a reportable state (anything but PENDING/RUNNING: written as
    //    two comparisons, not an IN list, see the note above). An UPDATE
    //    writes one only when the state changes, so re-recording the same
    //    state (an idempotent replay) reports nothing twice.
    //  - A 'callback' row is written when a task with a callback_url in its
    //    deposited TaskFrame reaches COMPLETED/FAILED/CANCELLED; it holds the
    //    URL, and its body is rendered from the store at delivery. The payload
    //    is parsed only for that transition, and only when it is valid JSON
    //    (json_extract on anything else would fail the completion).
    //  - Delivery leases rows (lease_owner, lease_until) like the inbox leases
    //    tasks; a node's rows go out in id order: a row is not due while an
    //    earlier pending row of the same (task_id, node_id) exists
    //    (report_outbox_order). Callback rows use node_id ''.
    //  - Delivered rows are deleted; refused or abandoned ones stay as 'dead'
    //    (with last_error) until an operator looks, so the table holds only
    //    the backlog and the dead.
    R"sql(
CREATE TABLE report_outbox (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    kind            TEXT    NOT NULL CHECK (kind IN ('node', 'callback')),
    task_id         TEXT    NOT NULL,
    node_id         TEXT    NOT NULL,
    dedup_key       TEXT    NOT NULL,
    state           TEXT    NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    error_code      TEXT,
    error_message   TEXT,
    result          TEXT,
    killed_reason   TEXT,
    runner_nid      TEXT,
    callback_url    TEXT,
    recorded_at     INTEGER NOT NULL,
    status          TEXT    NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'dead')),
    tries           INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER NOT NULL,
    lease_owner     TEXT,
    lease_until     INTEGER NOT NULL DEFAULT 0,
    last_error      TEXT
);
CREATE INDEX report_outbox_order ON report_outbox (task_id, node_id, id) WHERE status = 'pending';

CREATE TRIGGER node_results_reported AFTER INSERT ON node_results
WHEN NEW.state <> 'PENDING' AND NEW.state <> 'RUNNING'
BEGIN
    INSERT INTO report_outbox (kind, task_id, node_id, dedup_key, state, attempts, error_code, error_message,
                               result, killed_reason, runner_nid, recorded_at, next_attempt_at)
    VALUES ('node', NEW.task_id, NEW.node_id, NEW.dedup_key, NEW.state, NEW.attempts, NEW.error_code,
            NEW.error_message, NEW.result, NEW.killed_reason, NEW.runner_nid, NEW.recorded_at, NEW.recorded_at);
END;

CREATE TRIGGER node_results_report_update AFTER UPDATE OF state ON node_results
WHEN NEW.state <> 'PENDING' AND NEW.state <> 'RUNNING' AND NEW.state IS NOT OLD.state
BEGIN
    INSERT INTO report_outbox (kind, task_id, node_id, dedup_key, state, attempts, error_code, error_message,
                               result, killed_reason, runner_nid, recorded_at, next_attempt_at)
    VALUES ('node', NEW.task_id, NEW.node_id, NEW.dedup_key, NEW.state, NEW.attempts, NEW.error_code,
            NEW.error_message, NEW.result, NEW.killed_reason, NEW.runner_nid, NEW.recorded_at, NEW.recorded_at);
END;

CREATE TRIGGER tasks_callback AFTER UPDATE OF state ON tasks
WHEN (NEW.state = 'COMPLETED' OR NEW.state = 'FAILED' OR NEW.state = 'CANCELLED')
  AND (OLD.state = 'PENDING' OR OLD.state = 'RUNNING')
BEGIN
    INSERT INTO report_outbox (kind, task_id, node_id, dedup_key, state, error_code, error_message, callback_url,
                               recorded_at, next_attempt_at)
    SELECT 'callback', NEW.task_id, '', NEW.dedup_key, NEW.state, NEW.error_code, NEW.error_message, url,
           NEW.updated_at, NEW.updated_at
    FROM (SELECT CASE WHEN json_valid(CAST(payload AS TEXT))
                      THEN json_extract(CAST(payload AS TEXT), '$.callback_url') END AS url
          FROM frames WHERE message_id = NEW.message_id)
    WHERE typeof(url) = 'text' AND url <> '';
END;
)sql",

    // 4: retention (docs/retention.md).
    //  - result_ttl_seconds is the TaskFrame's (NPS-5 §3.1, default 3600).
    //    When the task reaches a terminal state the tasks_finished trigger
    //    stamps finished_at and results_expire_at (finished_at + the TTL);
    //    the retention sweep then deletes the aggregate and the node results
    //    and sets results_expired_at, and the API answers
    //    NOP-TASK-RESULT-EXPIRED from results_expire_at on, sweep or not.
    //  - Finished tasks older than [store] task_retention_hours are deleted
    //    with their frame, events, node records and dead reports, oldest
    //    first (tasks_finished_order), never while a report is pending.
    //  - inboxes counts the task rows of each NID ([inbox] max_inboxes caps
    //    how many NIDs have any): deposit adds one, pruning takes them off
    //    and deletes a NID's row when its last task goes.
    R"sql(
ALTER TABLE tasks ADD COLUMN result_ttl_seconds INTEGER NOT NULL DEFAULT 3600;
ALTER TABLE tasks ADD COLUMN finished_at INTEGER;
ALTER TABLE tasks ADD COLUMN results_expire_at INTEGER;
ALTER TABLE tasks ADD COLUMN results_expired_at INTEGER;
UPDATE tasks SET finished_at = updated_at, results_expire_at = updated_at + 3600000
    WHERE state IN ('COMPLETED', 'FAILED', 'CANCELLED');
CREATE INDEX tasks_results_expiry ON tasks (results_expire_at) WHERE results_expire_at IS NOT NULL;
CREATE INDEX tasks_finished_order ON tasks (finished_at) WHERE finished_at IS NOT NULL;

CREATE TRIGGER tasks_finished AFTER UPDATE OF state ON tasks
WHEN (NEW.state = 'COMPLETED' OR NEW.state = 'FAILED' OR NEW.state = 'CANCELLED')
  AND (OLD.state = 'PENDING' OR OLD.state = 'RUNNING')
BEGIN
    UPDATE tasks SET finished_at = NEW.updated_at,
                     results_expire_at = NEW.updated_at + NEW.result_ttl_seconds * 1000
    WHERE message_id = NEW.message_id;
END;

CREATE TABLE inboxes (
    nid        TEXT    PRIMARY KEY,
    tasks      INTEGER NOT NULL,
    created_at INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO inboxes (nid, tasks, created_at) SELECT nid, count(*), min(created_at) FROM tasks GROUP BY nid;
)sql",

    // 5: live event feeds (docs/api.md "Live feeds"). Every event gets pos,
    // its place in the log of all tasks: the all-tasks feed resumes from it
    // (Last-Event-ID). AUTOINCREMENT, so a pos is never reused even when
    // the newest tasks are removed. (message_id, seq) stays unique and is
    // what a task's log and its next seq are read by. Existing events get
    // their pos in time order. The table is rebuilt in place: with the
    // legacy rename the triggers that write it keep naming "events".
    // Also: stored image names on Docker Hub take Docker's short form.
    R"sql(
PRAGMA legacy_alter_table = ON;
CREATE TABLE events_v5 (
    pos        INTEGER PRIMARY KEY AUTOINCREMENT,
    message_id INTEGER NOT NULL REFERENCES tasks (message_id),
    seq        INTEGER NOT NULL,
    at         INTEGER NOT NULL,
    name       TEXT    NOT NULL,
    detail     TEXT    NOT NULL,
    UNIQUE (message_id, seq)
);
INSERT INTO events_v5 (message_id, seq, at, name, detail)
    SELECT message_id, seq, at, name, detail FROM events ORDER BY at, message_id, seq;
DROP TABLE events;
ALTER TABLE events_v5 RENAME TO events;
PRAGMA legacy_alter_table = OFF;
-- Image names on Docker Hub in Docker's short form (image/reference.hpp):
-- docker.io/library/alpine:3 is alpine:3. A short name already stored wins.
UPDATE OR IGNORE image_refs SET name = substr(name, 11) WHERE name LIKE 'docker.io/%';
UPDATE OR IGNORE image_refs SET name = substr(name, 17) WHERE name LIKE 'index.docker.io/%';
UPDATE OR IGNORE image_refs SET name = substr(name, 9)
    WHERE name LIKE 'library/%' AND instr(substr(name, 9), '/') = 0;
)sql",

    // 6: completion messages (docs/reporting.md "Completion messages").
    //  - A 'reply' outbox row is written when a task whose deposited
    //    TaskFrame names a reply_to NID reaches COMPLETED/FAILED/CANCELLED,
    //    like a callback row; reply_to holds the NID. The table is rebuilt
    //    for the kind's CHECK (SQLite cannot alter one), in place as events
    //    was in 5, so the triggers that write it keep naming report_outbox.
    //  - inbox_notices holds messages that are not tasks (completion
    //    messages) in an inbox: peek lists them beside the tasks, ack
    //    deletes them, no claim ever takes them. Their message_id comes from
    //    the tasks' AUTOINCREMENT sequence (sqlite_sequence), so one id
    //    space names every message of every inbox. source keys a notice
    //    ("reply:<task_id>" for ours): depositing it again is a duplicate.
    R"sql(
PRAGMA legacy_alter_table = ON;
CREATE TABLE report_outbox_v6 (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    kind            TEXT    NOT NULL CHECK (kind IN ('node', 'callback', 'reply')),
    task_id         TEXT    NOT NULL,
    node_id         TEXT    NOT NULL,
    dedup_key       TEXT    NOT NULL,
    state           TEXT    NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    error_code      TEXT,
    error_message   TEXT,
    result          TEXT,
    killed_reason   TEXT,
    runner_nid      TEXT,
    callback_url    TEXT,
    reply_to        TEXT,
    recorded_at     INTEGER NOT NULL,
    status          TEXT    NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'dead')),
    tries           INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER NOT NULL,
    lease_owner     TEXT,
    lease_until     INTEGER NOT NULL DEFAULT 0,
    last_error      TEXT
);
INSERT INTO report_outbox_v6 (id, kind, task_id, node_id, dedup_key, state, attempts, error_code, error_message,
                              result, killed_reason, runner_nid, callback_url, recorded_at, status, tries,
                              next_attempt_at, lease_owner, lease_until, last_error)
    SELECT id, kind, task_id, node_id, dedup_key, state, attempts, error_code, error_message, result,
           killed_reason, runner_nid, callback_url, recorded_at, status, tries, next_attempt_at, lease_owner,
           lease_until, last_error
    FROM report_outbox;
DROP TABLE report_outbox;
ALTER TABLE report_outbox_v6 RENAME TO report_outbox;
PRAGMA legacy_alter_table = OFF;
CREATE INDEX report_outbox_order ON report_outbox (task_id, node_id, id) WHERE status = 'pending';

CREATE TRIGGER tasks_reply AFTER UPDATE OF state ON tasks
WHEN (NEW.state = 'COMPLETED' OR NEW.state = 'FAILED' OR NEW.state = 'CANCELLED')
  AND (OLD.state = 'PENDING' OR OLD.state = 'RUNNING')
BEGIN
    INSERT INTO report_outbox (kind, task_id, node_id, dedup_key, state, error_code, error_message, reply_to,
                               recorded_at, next_attempt_at)
    SELECT 'reply', NEW.task_id, '', NEW.dedup_key, NEW.state, NEW.error_code, NEW.error_message, nid,
           NEW.updated_at, NEW.updated_at
    FROM (SELECT CASE WHEN json_valid(CAST(payload AS TEXT))
                      THEN json_extract(CAST(payload AS TEXT), '$.reply_to') END AS nid
          FROM frames WHERE message_id = NEW.message_id)
    WHERE typeof(nid) = 'text' AND nid <> '';
END;

CREATE TABLE inbox_notices (
    message_id   INTEGER PRIMARY KEY,
    nid          TEXT    NOT NULL,
    source       TEXT    NOT NULL UNIQUE,
    content_type TEXT    NOT NULL,
    payload      BLOB    NOT NULL,
    priority     INTEGER NOT NULL,
    enqueued_at  INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL
);
CREATE INDEX inbox_notices_order ON inbox_notices (nid, priority DESC, message_id);
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
        if (version > 0 && version < latest)  // an upgrade, not a new store: worth a line in the log
            log::notice("'" + path + "': schema migrated from version " + std::to_string(version) + " to " +
                        std::to_string(latest));
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

namespace nps::store {

int latest_schema_version()
{
    return detail::latest_schema_version();
}

}  // namespace nps::store
