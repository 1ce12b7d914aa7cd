// SPDX-License-Identifier: Apache-2.0
// The per-NID inbox: deposit, npsd-compatible peek/ack/depth, TTL sweep.
#include <algorithm>

#include "nps/base/limits.hpp"
#include "sqlite_store.hpp"

#include "nps/proto/error_codes.hpp"

namespace nps::store::detail {

namespace {

std::int64_t effective_ttl_seconds(std::int64_t requested)
{
    if (requested <= 0)
        return limits::kDefaultInboxTtlSeconds;
    return std::min(requested, limits::kMaxInboxTtlSeconds);
}

}  // namespace

Result<DepositResult> SqliteStore::deposit(const DepositRequest& request)
{
    return guarded<DepositResult>(
        [&] { return "Failed to deposit task '" + request.task_id + "' into inbox '" + request.nid + "'"; },
        [&]() -> Result<DepositResult> {
            WriteTransaction txn(*this);
            auto out = NPS_TRY(deposit_locked(request, now_ms()));
            if (!out.duplicate)
                txn.commit();
            return out;
        });
}

std::vector<Result<DepositResult>> SqliteStore::deposit_batch(const std::vector<DepositRequest>& requests)
{
    std::vector<Result<DepositResult>> results;
    results.reserve(requests.size());
    auto committed = guarded<void>(
        [&] { return "Failed to commit a group of " + std::to_string(requests.size()) + " deposits"; },
        [&]() -> Result<void> {
            const std::int64_t now = now_ms();
            WriteTransaction txn(*this);
            for (const auto& request : requests) {
                // Each deposit in a savepoint: one that fails leaves no trace.
                auto result = in_savepoint<DepositResult>(
                    [&] { return "Failed to deposit task '" + request.task_id + "' into inbox '" + request.nid + "'"; },
                    [&] { return deposit_locked(request, now); });
                if (!result && !in_transaction())
                    return std::move(result).error();  // the group is gone with it
                results.push_back(std::move(result));
            }
            txn.commit();
            return {};
        });
    if (!committed) {
        // Nothing of the group is stored: every request fails with the reason.
        for (auto& result : results)
            if (result)
                result = committed.error();
        while (results.size() < requests.size())
            results.emplace_back(committed.error());
    }
    return results;
}

Result<DepositResult> SqliteStore::deposit_locked(const DepositRequest& request, std::int64_t now)
{
    {
        auto st = use(deposit_find_,
                      "SELECT m.nid, m.frame_hash, " NPS_STORE_MESSAGE_COLUMNS ", f.payload "
                      "FROM tasks m JOIN frames f ON f.message_id = m.message_id WHERE m.task_id = ?1");
        st->bindNoCopy(1, request.task_id);
        if (st->executeStep()) {
            const std::string nid = st->getColumn(0).getString();
            const std::string frame_hash = st->getColumn(1).getString();
            if (nid != request.nid || frame_hash != request.frame_hash)
                return protocol_error(proto::code::kNwpTaskIdConflict, "Task '" + request.task_id +
                                                                           "' was already deposited into inbox '" +
                                                                           nid + "' with a different frame");
            DepositResult dup;
            dup.message = read_message(*st, 2);
            dup.message.payload = st->getColumn(2 + kMessageColumnCount).getString();
            dup.duplicate = true;
            return dup;
        }
    }

    if (request.max_depth > 0)
        NPS_TRY_VOID(check_depth(request.nid, request.max_depth, now));

    NPS_TRY_VOID(count_inbox_task(request.nid, request.max_inboxes, now));

    DepositResult out;
    Message& m = out.message;
    m.nid = request.nid;
    m.task_id = request.task_id;
    m.content_type = request.content_type;
    m.priority = request.priority;
    m.enqueued_at_ms = now;
    m.expires_at_ms = now + effective_ttl_seconds(request.ttl_seconds) * 1000;
    {
        // The tasks_deposited trigger logs inbox:deposited.
        auto st = use(deposit_task_,
                      "INSERT INTO tasks (task_id, nid, content_type, priority, enqueued_at, expires_at, queue, "
                      "state, dag_hash, dedup_key, frame_hash, created_at, updated_at, result_ttl_seconds, "
                      "lease_expiry) "
                      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'queued', 'PENDING', ?7, ?8, ?9, ?5, ?5, ?10, ?11) "
                      "RETURNING message_id");
        st->bindNoCopy(1, request.task_id);
        st->bindNoCopy(2, request.nid);
        st->bindNoCopy(3, request.content_type);
        st->bind(4, request.priority);
        st->bind(5, static_cast<std::int64_t>(m.enqueued_at_ms));
        st->bind(6, static_cast<std::int64_t>(m.expires_at_ms));
        st->bindNoCopy(7, request.dag_hash);
        st->bindNoCopy(8, request.dedup_key);
        st->bindNoCopy(9, request.frame_hash);
        st->bind(10, static_cast<std::int64_t>(request.result_ttl_seconds));
        // lease_expiry doubles as "visible at" (schema.cpp): a delay
        // hides the unleased message from peek and head claims.
        st->bind(11, request.delay_seconds > 0 ? m.enqueued_at_ms + request.delay_seconds * 1000
                                               : std::int64_t{0});
        if (!st->executeStep())
            throw SQLite::Exception("the task insert returned no row");
        m.message_id = st->getColumn(0).getInt64();
    }
    {
        auto st = use(deposit_frame_, "INSERT INTO frames (message_id, payload) VALUES (?1, ?2)");
        st->bind(1, static_cast<std::int64_t>(m.message_id));
        st->bindNoCopy(2, request.payload.data(), static_cast<int>(request.payload.size()));
        st->exec();
    }
    m.payload = request.payload;
    return out;
}

Result<void> SqliteStore::check_depth(const std::string& nid, std::int64_t max_depth, std::int64_t now)
{
    {
        // Cheap bound first: nid's task rows (queued or not, from `inboxes`)
        // and notices. Below the limit, the inbox cannot be full.
        auto bound = use(deposit_depth_bound_,
                         "SELECT coalesce((SELECT tasks FROM inboxes WHERE nid = ?1), 0) + "
                         "(SELECT count(*) FROM inbox_notices WHERE nid = ?1)");
        bound->bindNoCopy(1, nid);
        bound->executeStep();
        if (bound->getColumn(0).getInt64() < max_depth)
            return {};
    }
    // Counts entries of the partial index only (O(depth), index-only).
    auto st = use(deposit_depth_,
                  "SELECT (SELECT count(*) FROM tasks WHERE nid = ?1 AND queue = 'queued' AND expires_at > ?2) + "
                  "(SELECT count(*) FROM inbox_notices WHERE nid = ?1 AND expires_at > ?2)");
    st->bindNoCopy(1, nid);
    st->bind(2, static_cast<std::int64_t>(now));
    st->executeStep();
    const std::int64_t depth = st->getColumn(0).getInt64();
    if (depth >= max_depth)
        return protocol_error(proto::code::kNwpRateLimitInboxFull, "Inbox '" + nid + "' is full (" +
                                                                       std::to_string(depth) + " messages, limit " +
                                                                       std::to_string(max_depth) + ")");
    return {};
}

Result<DepositResult> SqliteStore::deposit_notice(const NoticeRequest& request)
{
    return guarded<DepositResult>(
        [&] { return "Failed to deposit a message into inbox '" + request.nid + "'"; },
        [&]() -> Result<DepositResult> {
            const std::int64_t now = now_ms();
            WriteTransaction txn(*this);
            {
                auto st = use(notice_find_,
                              "SELECT n.message_id, n.nid, NULL, n.content_type, n.priority, n.enqueued_at, "
                              "n.expires_at, n.payload FROM inbox_notices n WHERE n.source = ?1");
                st->bindNoCopy(1, request.source);
                if (st->executeStep()) {
                    DepositResult dup;
                    dup.message = read_message(*st, 0);
                    dup.message.payload = st->getColumn(kMessageColumnCount).getString();
                    dup.duplicate = true;
                    return dup;
                }
            }
            if (request.max_depth > 0)
                NPS_TRY_VOID(check_depth(request.nid, request.max_depth, now));

            DepositResult out;
            Message& m = out.message;
            m.nid = request.nid;
            m.content_type = request.content_type;
            m.enqueued_at_ms = now;
            m.expires_at_ms = now + effective_ttl_seconds(request.ttl_seconds) * 1000;
            m.payload = request.payload;
            {
                // The next id of the tasks' AUTOINCREMENT sequence: one id
                // space for every message (schema migration 6).
                auto st = use(notice_sequence_,
                              "INSERT INTO sqlite_sequence (name, seq) "
                              "SELECT 'tasks', coalesce((SELECT max(message_id) FROM tasks), 0) "
                              "WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'tasks')");
                st->exec();
            }
            {
                auto st = use(notice_id_,
                              "UPDATE sqlite_sequence SET seq = seq + 1 WHERE name = 'tasks' RETURNING seq");
                if (!st->executeStep())
                    throw SQLite::Exception("the tasks' id sequence gave no id");
                m.message_id = st->getColumn(0).getInt64();
            }
            {
                auto st = use(notice_insert_,
                              "INSERT INTO inbox_notices (message_id, nid, source, content_type, payload, priority, "
                              "enqueued_at, expires_at) VALUES (?1, ?2, ?3, ?4, ?5, 0, ?6, ?7)");
                st->bind(1, static_cast<std::int64_t>(m.message_id));
                st->bindNoCopy(2, request.nid);
                st->bindNoCopy(3, request.source);
                st->bindNoCopy(4, request.content_type);
                st->bindNoCopy(5, request.payload.data(), static_cast<int>(request.payload.size()));
                st->bind(6, static_cast<std::int64_t>(m.enqueued_at_ms));
                st->bind(7, static_cast<std::int64_t>(m.expires_at_ms));
                st->exec();
            }
            txn.commit();
            return out;
        });
}

Result<void> SqliteStore::count_inbox_task(const std::string& nid, std::int64_t max_inboxes, std::int64_t now)
{
    if (max_inboxes > 0) {
        auto known = use(inbox_known_, "SELECT 1 FROM inboxes WHERE nid = ?1");
        known->bindNoCopy(1, nid);
        if (!known->executeStep()) {
            auto count = use(inbox_count_, "SELECT count(*) FROM inboxes");
            count->executeStep();
            const std::int64_t inboxes = count->getColumn(0).getInt64();
            if (inboxes >= max_inboxes)
                return protocol_error(proto::code::kNwpRateLimitInboxFull,
                                      "No inbox for '" + nid + "': the runner already holds tasks of " +
                                          std::to_string(inboxes) + " NIDs, its limit ([inbox] max_inboxes " +
                                          std::to_string(max_inboxes) + ")");
        }
    }
    auto st = use(inbox_add_,
                  "INSERT INTO inboxes (nid, tasks, created_at) VALUES (?1, 1, ?2) "
                  "ON CONFLICT (nid) DO UPDATE SET tasks = tasks + 1");
    st->bindNoCopy(1, nid);
    st->bind(2, static_cast<std::int64_t>(now));
    st->exec();
    return {};
}

Result<std::vector<Message>> SqliteStore::peek(const std::string& nid, std::uint32_t batch)
{
    const std::uint32_t limit =
        batch == 0 ? limits::kDefaultPeekBatch : std::min(batch, limits::kMaxPeekBatch);
    return guarded<std::vector<Message>>(
        [&] { return "Failed to peek inbox '" + nid + "'"; },
        [&]() -> Result<std::vector<Message>> {
            // Tasks and notices (task_id NULL) in one claim order.
            auto st = use(peek_,
                          "SELECT * FROM ("
                          "SELECT " NPS_STORE_MESSAGE_COLUMNS ", f.payload FROM tasks m "
                          "JOIN frames f ON f.message_id = m.message_id "
                          "WHERE m.nid = ?1 AND m.queue = 'queued' AND m.lease_expiry <= ?2 AND m.expires_at > ?2 "
                          "UNION ALL "
                          "SELECT n.message_id, n.nid, NULL, n.content_type, n.priority, n.enqueued_at, n.expires_at, "
                          "n.payload FROM inbox_notices n WHERE n.nid = ?1 AND n.expires_at > ?2) "
                          "ORDER BY 5 DESC, 1 LIMIT ?3");
            st->bindNoCopy(1, nid);
            st->bind(2, static_cast<std::int64_t>(now_ms()));
            st->bind(3, limit);
            std::vector<Message> out;
            while (st->executeStep()) {
                out.push_back(read_message(*st, 0));
                out.back().payload = st->getColumn(kMessageColumnCount).getString();
            }
            return out;
        });
}

Result<void> SqliteStore::ack(const std::string& nid, std::int64_t message_id)
{
    return guarded<void>(
        [&] { return "Failed to ack message " + std::to_string(message_id) + " in inbox '" + nid + "'"; },
        [&]() -> Result<void> {
            const std::int64_t now = now_ms();
            WriteTransaction txn(*this);
            {
                // An expired message is gone for npsd too (it purges on access).
                // The tasks_transition trigger logs inbox:acked.
                auto st = use(ack_,
                              "UPDATE tasks SET queue = 'done', updated_at = ?3 WHERE message_id = ?1 AND nid = ?2 "
                              "AND queue = 'queued' AND expires_at > ?3 RETURNING message_id");
                st->bind(1, static_cast<std::int64_t>(message_id));
                st->bindNoCopy(2, nid);
                st->bind(3, static_cast<std::int64_t>(now));
                if (!st->executeStep()) {
                    auto notice = use(notice_ack_,
                                      "DELETE FROM inbox_notices WHERE message_id = ?1 AND nid = ?2 AND expires_at > ?3");
                    notice->bind(1, static_cast<std::int64_t>(message_id));
                    notice->bindNoCopy(2, nid);
                    notice->bind(3, static_cast<std::int64_t>(now));
                    if (notice->exec() == 0)
                        return protocol_error(proto::code::kNwpInboxMessageNotFound,
                                              "Message " + std::to_string(message_id) + " is not in inbox '" + nid +
                                                  "'");
                }
            }
            txn.commit();
            return {};
        });
}

Result<std::int64_t> SqliteStore::depth(const std::string& nid)
{
    return guarded<std::int64_t>(
        [&] { return "Failed to count inbox '" + nid + "'"; },
        [&]() -> Result<std::int64_t> {
            auto st = use(depth_,
                          "SELECT (SELECT count(*) FROM tasks WHERE nid = ?1 AND queue = 'queued' AND expires_at > ?2) "
                          "+ (SELECT count(*) FROM inbox_notices WHERE nid = ?1 AND expires_at > ?2)");
            st->bindNoCopy(1, nid);
            st->bind(2, static_cast<std::int64_t>(now_ms()));
            st->executeStep();
            return st->getColumn(0).getInt64();
        });
}

Result<std::int64_t> SqliteStore::last_message_id()
{
    return guarded<std::int64_t>(
        [&] { return std::string("Failed to read the last message id"); },
        [&]() -> Result<std::int64_t> {
            auto st = use(last_id_,
                          "SELECT max(coalesce((SELECT max(message_id) FROM tasks), 0), "
                          "coalesce((SELECT max(message_id) FROM inbox_notices), 0))");
            st->executeStep();
            return st->getColumn(0).getInt64();
        });
}

Result<std::int64_t> SqliteStore::sweep_expired()
{
    return guarded<std::int64_t>(
        [&] { return std::string("Failed to sweep expired inbox messages"); },
        [&]() -> Result<std::int64_t> {
            const std::int64_t now = now_ms();
            WriteTransaction txn(*this);
            // Only never-claimed messages can match: a claim sets expires_at
            // to INT64_MAX, so these tasks are PENDING (a terminal task is never
            // queued). The tasks_transition trigger logs inbox:expired.
            std::int64_t expired = 0;
            {
                auto st = use(sweep_,
                              "UPDATE tasks SET queue = 'done', state = 'FAILED', error_code = 'NOP-TASK-TIMEOUT', "
                              "error_message = 'not claimed before its inbox TTL expired', updated_at = ?1 "
                              "WHERE queue = 'queued' AND expires_at <= ?1 RETURNING message_id");
                st->bind(1, static_cast<std::int64_t>(now));
                while (st->executeStep())
                    ++expired;
            }
            {
                auto st = use(notice_sweep_, "DELETE FROM inbox_notices WHERE expires_at <= ?1");
                st->bind(1, static_cast<std::int64_t>(now));
                st->exec();  // notices past their TTL are simply gone, as at npsd
            }
            txn.commit();
            return expired;
        });
}

}  // namespace nps::store::detail
