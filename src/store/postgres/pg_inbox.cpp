// SPDX-License-Identifier: Apache-2.0
// The per-NID inbox on PostgreSQL: deposit, npsd-compatible peek/ack/depth,
// TTL sweep (../inbox.cpp is the SQLite twin; behaviour and errors match).
//
// Concurrency (READ COMMITTED, writers on several hosts):
//  - A deposit with a depth limit first takes a transaction-scoped advisory
//    lock on its inbox, so the duplicate check, the depth count and the
//    insert see every deposit into that inbox that committed before, and the
//    limit stays exact. A deposit of an inbox new to the inboxes table with
//    max_inboxes set takes one more lock, on the inbox count.
//  - The same task_id racing into two inboxes (two locks) meets at the
//    unique key: the insert is ON CONFLICT DO NOTHING, and the loser reads
//    the winner's row and answers as SQLite would (duplicate or conflict).
//  - ack and the sweep are single UPDATE/DELETE statements whose WHERE
//    clause is the whole guard: PostgreSQL re-checks it on the newest
//    version of a row a concurrent transaction changed.
#include <algorithm>

#include <nlohmann/json.hpp>

#include "nps/base/limits.hpp"
#include "nps/proto/error_codes.hpp"
#include "pg_store.hpp"

namespace nps::store::pg {

namespace {

// Keys of the transaction-scoped advisory locks (a bigint per text).
constexpr const char* kLockInboxSql = "SELECT pg_advisory_xact_lock(hashtextextended('nps inbox ' || $1::text, 0))";
constexpr const char* kLockInboxCountSql = "SELECT pg_advisory_xact_lock(hashtextextended('nps inboxes', 0))";

constexpr const char* kDepositFindSql =
    "SELECT m.nid, m.frame_hash, " NPS_PG_MESSAGE_COLUMNS ", f.payload "
    "FROM tasks m JOIN frames f ON f.message_id = m.message_id WHERE m.task_id = $1";

// Live messages of $1 (tasks and notices) at $2: entries of the partial
// index and of inbox_notices_order only (O(depth)).
constexpr const char* kDepthSql =
    "SELECT (SELECT count(*) FROM tasks WHERE nid = $1 AND queue = 'queued' AND expires_at > $2) + "
    "(SELECT count(*) FROM inbox_notices WHERE nid = $1 AND expires_at > $2)";

// The tasks_deposited trigger logs inbox:deposited. No row back: a
// concurrent deposit of the same task_id committed first.
constexpr const char* kDepositTaskSql =
    "INSERT INTO tasks (task_id, nid, content_type, priority, enqueued_at, expires_at, queue, state, dag_hash, "
    "dedup_key, frame_hash, callback_url, reply_to, created_at, updated_at, result_ttl_seconds, lease_expiry) "
    "VALUES ($1, $2, $3, $4, $5, $6, 'queued', 'PENDING', $7, $8, $9, $10, $11, $5, $5, $12, $13) "
    "ON CONFLICT (task_id) DO NOTHING RETURNING message_id";
constexpr const char* kDepositFrameSql = "INSERT INTO frames (message_id, payload) VALUES ($1, $2)";

// Locked: a prune deleting the row waits, so the count check below cannot
// be skipped for an inbox that is about to disappear.
constexpr const char* kInboxKnownSql = "SELECT 1 FROM inboxes WHERE nid = $1 FOR UPDATE";
// Under the inbox-count lock: how many NIDs hold tasks, and whether $1 is
// one of them by now (a deposit into it committed while this one waited).
constexpr const char* kInboxCountSql =
    "SELECT (SELECT count(*) FROM inboxes), EXISTS (SELECT 1 FROM inboxes WHERE nid = $1)";
constexpr const char* kInboxAddSql =
    "INSERT INTO inboxes (nid, tasks, created_at) VALUES ($1, 1, $2) "
    "ON CONFLICT (nid) DO UPDATE SET tasks = inboxes.tasks + 1";

// A notice's task_id column reads as '' (Message::task_id empty).
constexpr const char* kNoticeFindSql =
    "SELECT n.message_id, n.nid, ''::text, n.content_type, n.priority, n.enqueued_at, n.expires_at, n.payload "
    "FROM inbox_notices n WHERE n.source = $1";
// The id comes from the tasks' identity sequence: one id space for every
// message (pg_schema.cpp). No row back: the same source was deposited
// concurrently (into another inbox) and committed first.
constexpr const char* kNoticeInsertSql =
    "INSERT INTO inbox_notices (message_id, nid, source, content_type, payload, priority, enqueued_at, expires_at) "
    "VALUES (nextval(pg_get_serial_sequence('tasks', 'message_id')), $1, $2, $3, $4, 0, $5, $6) "
    "ON CONFLICT (source) DO NOTHING RETURNING message_id";

// Tasks and notices in one claim order.
constexpr const char* kPeekSql =
    "SELECT * FROM ("
    "SELECT " NPS_PG_MESSAGE_COLUMNS ", f.payload FROM tasks m "
    "JOIN frames f ON f.message_id = m.message_id "
    "WHERE m.nid = $1 AND m.queue = 'queued' AND m.lease_expiry <= $2 AND m.expires_at > $2 "
    "UNION ALL "
    "SELECT n.message_id, n.nid, ''::text, n.content_type, n.priority, n.enqueued_at, n.expires_at, n.payload "
    "FROM inbox_notices n WHERE n.nid = $1 AND n.expires_at > $2) AS p "
    "ORDER BY 5 DESC, 1 LIMIT $3";

// An expired message is gone for npsd too (it purges on access). The
// tasks_transition trigger logs inbox:acked.
constexpr const char* kAckSql =
    "UPDATE tasks SET queue = 'done', updated_at = $3 WHERE message_id = $1 AND nid = $2 "
    "AND queue = 'queued' AND expires_at > $3 RETURNING message_id";
constexpr const char* kNoticeAckSql =
    "DELETE FROM inbox_notices WHERE message_id = $1 AND nid = $2 AND expires_at > $3";

constexpr const char* kLastIdSql =
    "SELECT greatest(coalesce((SELECT max(message_id) FROM tasks), 0), "
    "coalesce((SELECT max(message_id) FROM inbox_notices), 0))";

// Only never-claimed messages can match: a claim sets expires_at to
// INT64_MAX, so these tasks are PENDING (a terminal task is never queued).
// The tasks_transition trigger logs inbox:expired.
constexpr const char* kSweepSql =
    "UPDATE tasks SET queue = 'done', state = 'FAILED', error_code = 'NOP-TASK-TIMEOUT', "
    "error_message = 'not claimed before its inbox TTL expired', updated_at = $1 "
    "WHERE queue = 'queued' AND expires_at <= $1";
constexpr const char* kNoticeSweepSql = "DELETE FROM inbox_notices WHERE expires_at <= $1";

std::int64_t effective_ttl_seconds(std::int64_t requested)
{
    if (requested <= 0)
        return limits::kDefaultInboxTtlSeconds;
    return std::min(requested, limits::kMaxInboxTtlSeconds);
}

// Serialises the deposits into nid until the transaction ends.
void lock_inbox(Connection& conn, const std::string& nid)
{
    Params p;
    p.text(nid);
    conn.query(kLockInboxSql, p);
}

// NWP-RATE-LIMIT-INBOX-FULL when nid holds max_depth live messages (tasks
// and notices); in the caller's transaction, which holds lock_inbox(nid).
Result<void> check_depth(Connection& conn, const std::string& nid, std::int64_t max_depth, std::int64_t now)
{
    Params p;
    p.text(nid).integer(now);
    const Rows rows = conn.query(kDepthSql, p);
    const std::int64_t depth = rows.integer(0, 0);
    if (depth >= max_depth)
        return protocol_error(proto::code::kNwpRateLimitInboxFull, "Inbox '" + nid + "' is full (" +
                                                                       std::to_string(depth) + " messages, limit " +
                                                                       std::to_string(max_depth) + ")");
    return {};
}

// Inside deposit's transaction: counts one more task of nid in `inboxes`; a
// nid with no tasks yet is refused (NWP-RATE-LIMIT-INBOX-FULL) when
// max_inboxes (> 0) NIDs already have some. A new NID is counted under a
// lock on the count, so two new NIDs cannot both take the last place (the
// count is read after the lock: a statement's snapshot is taken at its start).
Result<void> count_inbox_task(Connection& conn, const std::string& nid, std::int64_t max_inboxes, std::int64_t now)
{
    if (max_inboxes > 0) {
        Params known;
        known.text(nid);
        if (conn.query(kInboxKnownSql, known).empty()) {
            conn.query(kLockInboxCountSql);
            const Rows count = conn.query(kInboxCountSql, known);
            const std::int64_t inboxes = count.integer(0, 0);
            if (!count.boolean(0, 1) && inboxes >= max_inboxes)
                return protocol_error(proto::code::kNwpRateLimitInboxFull,
                                      "No inbox for '" + nid + "': the runner already holds tasks of " +
                                          std::to_string(inboxes) + " NIDs, its limit ([inbox] max_inboxes " +
                                          std::to_string(max_inboxes) + ")");
        }
    }
    Params p;
    p.text(nid).integer(now);
    conn.query(kInboxAddSql, p);
    return {};
}

// The frame's "callback_url" / "reply_to" when it is a JSON object naming a
// non-empty string there, else nullopt (a MsgPack frame, or no such member):
// what SQLite's triggers extract with json_valid/json_extract.
std::optional<std::string> frame_member(const nlohmann::json& frame, const char* name)
{
    if (!frame.is_object())
        return std::nullopt;
    const auto it = frame.find(name);
    if (it == frame.end() || !it->is_string())
        return std::nullopt;
    const auto& value = it->get_ref<const std::string&>();
    if (value.empty())
        return std::nullopt;
    return value;
}

// The duplicate rules of a deposit whose task_id is already stored (rows
// from kDepositFindSql): the original message, or NWP-TASK-ID-CONFLICT.
Result<DepositResult> existing_deposit(const DepositRequest& request, const Rows& rows)
{
    const std::string nid = rows.text(0, 0);
    const std::string frame_hash = rows.text(0, 1);
    if (nid != request.nid || frame_hash != request.frame_hash)
        return protocol_error(proto::code::kNwpTaskIdConflict, "Task '" + request.task_id +
                                                                   "' was already deposited into inbox '" + nid +
                                                                   "' with a different frame");
    DepositResult dup;
    dup.message = read_message(rows, 0, 2);
    dup.message.payload = rows.bytes(0, 2 + kMessageColumnCount);
    dup.duplicate = true;
    return dup;
}

DepositResult existing_notice(const Rows& rows)
{
    DepositResult dup;
    dup.message = read_message(rows, 0, 0);
    dup.message.payload = rows.bytes(0, kMessageColumnCount);
    dup.duplicate = true;
    return dup;
}

}  // namespace

Result<DepositResult> PostgresStore::deposit(const DepositRequest& request)
{
    return guarded<DepositResult>(
        [&] { return "Failed to deposit task '" + request.task_id + "' into inbox '" + request.nid + "'"; },
        [&]() -> Result<DepositResult> {
            Work w(*this);
            Connection& conn = w.conn();
            const std::int64_t now = w.now();

            // Before the duplicate check: a re-deposit racing its original
            // into the same full inbox must see it and answer duplicate.
            if (request.max_depth > 0)
                lock_inbox(conn, request.nid);

            Params find;
            find.text(request.task_id);
            {
                const Rows rows = conn.query(kDepositFindSql, find);
                if (!rows.empty())
                    return existing_deposit(request, rows);  // nothing to commit
            }

            if (request.max_depth > 0)
                NPS_TRY_VOID(check_depth(conn, request.nid, request.max_depth, now));

            NPS_TRY_VOID(count_inbox_task(conn, request.nid, request.max_inboxes, now));

            const nlohmann::json frame = nlohmann::json::parse(request.payload, nullptr, false);

            DepositResult out;
            Message& m = out.message;
            m.nid = request.nid;
            m.task_id = request.task_id;
            m.content_type = request.content_type;
            m.priority = request.priority;
            m.enqueued_at_ms = now;
            m.expires_at_ms = now + effective_ttl_seconds(request.ttl_seconds) * 1000;
            {
                Params p;
                p.text(request.task_id)
                    .text(request.nid)
                    .text(request.content_type)
                    .integer(request.priority)
                    .integer(m.enqueued_at_ms)
                    .integer(m.expires_at_ms)
                    .text(request.dag_hash)
                    .text(request.dedup_key)
                    .text(request.frame_hash)
                    .optional_text(frame_member(frame, "callback_url"))
                    .optional_text(frame_member(frame, "reply_to"))
                    .integer(static_cast<std::int64_t>(request.result_ttl_seconds))
                    // lease_expiry doubles as "visible at" (../schema.cpp): a
                    // delay hides the unleased message from peek and head claims.
                    .integer(request.delay_seconds > 0 ? m.enqueued_at_ms + request.delay_seconds * 1000
                                                       : std::int64_t{0});
                const Rows rows = conn.query(kDepositTaskSql, p);
                if (rows.empty()) {
                    // A deposit of the same task_id (into another inbox, or
                    // without a depth limit) committed since the check above:
                    // answer from its row; the inbox count taken above rolls back.
                    const Rows again = conn.query(kDepositFindSql, find);
                    if (again.empty())
                        throw PgFailure(std::string(kSerializationFailure),
                                        "the task_id conflicts with a row that is gone");  // guarded runs it again
                    return existing_deposit(request, again);
                }
                m.message_id = rows.integer(0, 0);
            }
            {
                Params p;
                p.integer(m.message_id).bytes(request.payload);
                conn.query(kDepositFrameSql, p);
            }
            w.commit();
            m.payload = request.payload;
            return out;
        });
}

Result<DepositResult> PostgresStore::deposit_notice(const NoticeRequest& request)
{
    return guarded<DepositResult>(
        [&] { return "Failed to deposit a message into inbox '" + request.nid + "'"; },
        [&]() -> Result<DepositResult> {
            Work w(*this);
            Connection& conn = w.conn();
            const std::int64_t now = w.now();
            if (request.max_depth > 0)
                lock_inbox(conn, request.nid);

            Params find;
            find.text(request.source);
            {
                const Rows rows = conn.query(kNoticeFindSql, find);
                if (!rows.empty())
                    return existing_notice(rows);
            }
            if (request.max_depth > 0)
                NPS_TRY_VOID(check_depth(conn, request.nid, request.max_depth, now));

            DepositResult out;
            Message& m = out.message;
            m.nid = request.nid;
            m.content_type = request.content_type;
            m.enqueued_at_ms = now;
            m.expires_at_ms = now + effective_ttl_seconds(request.ttl_seconds) * 1000;
            {
                Params p;
                p.text(request.nid)
                    .text(request.source)
                    .text(request.content_type)
                    .bytes(request.payload)
                    .integer(m.enqueued_at_ms)
                    .integer(m.expires_at_ms);
                const Rows rows = conn.query(kNoticeInsertSql, p);
                if (rows.empty()) {
                    const Rows again = conn.query(kNoticeFindSql, find);
                    if (again.empty())
                        throw PgFailure(std::string(kSerializationFailure),
                                        "the notice's source conflicts with a row that is gone");
                    return existing_notice(again);
                }
                m.message_id = rows.integer(0, 0);
            }
            w.commit();
            m.payload = request.payload;
            return out;
        });
}

Result<std::vector<Message>> PostgresStore::peek(const std::string& nid, std::uint32_t batch)
{
    const std::uint32_t limit =
        batch == 0 ? limits::kDefaultPeekBatch : std::min(batch, limits::kMaxPeekBatch);
    return guarded<std::vector<Message>>(
        [&] { return "Failed to peek inbox '" + nid + "'"; },
        [&]() -> Result<std::vector<Message>> {
            Params p;
            p.text(nid).integer(now_ms()).integer(limit);
            const Rows rows = conn().query(kPeekSql, p);
            std::vector<Message> out;
            out.reserve(static_cast<std::size_t>(rows.size()));
            for (int r = 0; r < rows.size(); ++r) {
                out.push_back(read_message(rows, r, 0));
                out.back().payload = rows.bytes(r, kMessageColumnCount);
            }
            return out;
        });
}

Result<void> PostgresStore::ack(const std::string& nid, std::int64_t message_id)
{
    return guarded<void>(
        [&] { return "Failed to ack message " + std::to_string(message_id) + " in inbox '" + nid + "'"; },
        [&]() -> Result<void> {
            Work w(*this);
            Connection& conn = w.conn();
            Params p;
            p.integer(message_id).text(nid).integer(w.now());
            if (conn.query(kAckSql, p).empty() && conn.query(kNoticeAckSql, p).affected() == 0)
                return protocol_error(proto::code::kNwpInboxMessageNotFound,
                                      "Message " + std::to_string(message_id) + " is not in inbox '" + nid + "'");
            w.commit();
            return {};
        });
}

Result<std::int64_t> PostgresStore::depth(const std::string& nid)
{
    return guarded<std::int64_t>(
        [&] { return "Failed to count inbox '" + nid + "'"; },
        [&]() -> Result<std::int64_t> {
            Params p;
            p.text(nid).integer(now_ms());
            return conn().query(kDepthSql, p).integer(0, 0);
        });
}

Result<std::int64_t> PostgresStore::last_message_id()
{
    return guarded<std::int64_t>(
        [&] { return std::string("Failed to read the last message id"); },
        [&]() -> Result<std::int64_t> { return conn().query(kLastIdSql).integer(0, 0); });
}

Result<std::int64_t> PostgresStore::sweep_expired()
{
    return guarded<std::int64_t>(
        [&] { return std::string("Failed to sweep expired inbox messages"); },
        [&]() -> Result<std::int64_t> {
            Work w(*this);
            Connection& conn = w.conn();
            Params p;
            p.integer(w.now());
            const std::int64_t expired = conn.query(kSweepSql, p).affected();
            conn.query(kNoticeSweepSql, p);  // notices past their TTL are simply gone, as at npsd
            w.commit();
            return expired;
        });
}

}  // namespace nps::store::pg
