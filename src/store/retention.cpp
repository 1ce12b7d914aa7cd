// SPDX-License-Identifier: Apache-2.0
// Retention (docs/retention.md): result expiry after result_ttl_seconds,
// deleting finished tasks, and giving free pages back to the file system.
#include <algorithm>
#include <string>
#include <vector>

#include "nps/base/limits.hpp"
#include "nps/proto/error_codes.hpp"
#include "sqlite_store.hpp"
#include "state_columns.hpp"

namespace nps::store::detail {

namespace {

// Finished tasks deleted per transaction at most: each costs a handful of
// row deletes, so a batch keeps the write lock for a few milliseconds.
constexpr std::uint32_t kMaxPruneBatch = 1000;

}  // namespace

Result<std::int64_t> SqliteStore::expire_results(std::uint32_t max_tasks)
{
    const std::uint32_t limit = std::clamp<std::uint32_t>(max_tasks, 1, kMaxPruneBatch);
    return guarded<std::int64_t>(
        [] { return std::string("Failed to expire task results"); },
        [&]() -> Result<std::int64_t> {
            const std::int64_t now = now_ms();
            WriteTransaction txn(*this);
            // The due tasks leave the index and name themselves; then their
            // node results go, each a seek on the (task_id, …) primary key.
            std::vector<std::string> task_ids;
            {
                auto st = use(expire_tasks_,
                              "UPDATE tasks SET aggregate = NULL, results_expire_at = NULL, results_expired_at = ?1 "
                              "WHERE message_id IN (SELECT message_id FROM tasks WHERE results_expire_at <= ?1 "
                              "ORDER BY results_expire_at LIMIT ?2) RETURNING task_id");
                st->bind(1, static_cast<std::int64_t>(now));
                st->bind(2, limit);
                while (st->executeStep())
                    task_ids.push_back(st->getColumn(0).getString());
            }
            for (const auto& task_id : task_ids) {
                auto st = use(expire_nodes_, "UPDATE node_results SET result = NULL WHERE task_id = ?1");
                st->bindNoCopy(1, task_id);
                st->exec();
            }
            const auto expired = static_cast<std::int64_t>(task_ids.size());
            txn.commit();
            return expired;
        });
}

void SqliteStore::delete_tasks_locked(const std::vector<std::int64_t>& message_ids,
                                      const std::vector<std::string>& task_ids, const std::vector<std::string>& nids)
{
    // One statement keyed by a message id (int64) or a task id or NID (text).
    const auto run = [this](CachedStatement& slot, const char* sql, const auto& key) {
        auto st = use(slot, sql);
        st->bind(1, key);
        st->exec();
    };
    for (std::size_t i = 0; i < message_ids.size(); ++i) {
        // Children first: the foreign keys point at the task row.
        run(delete_events_, "DELETE FROM events WHERE message_id = ?1", message_ids[i]);
        run(delete_nodes_, "DELETE FROM node_results WHERE task_id = ?1", task_ids[i]);
        run(delete_reports_, "DELETE FROM report_outbox WHERE task_id = ?1", task_ids[i]);
        run(delete_frames_, "DELETE FROM frames WHERE message_id = ?1", message_ids[i]);
        run(delete_tasks_, "DELETE FROM tasks WHERE message_id = ?1", message_ids[i]);
        run(uncount_inbox_, "UPDATE inboxes SET tasks = tasks - 1 WHERE nid = ?1", nids[i]);
        run(delete_inbox_, "DELETE FROM inboxes WHERE nid = ?1 AND tasks <= 0", nids[i]);
    }
}

Result<std::int64_t> SqliteStore::prune_tasks(const PruneRequest& request)
{
    if (request.state && !proto::is_terminal(*request.state))
        return protocol_error(proto::code::kNwpHttpParamInvalid,
                              "state '" + std::string(proto::to_string(*request.state)) + "' is not a finished state (COMPLETED, FAILED, CANCELLED)");
    const std::uint32_t limit = std::clamp<std::uint32_t>(request.limit, 1, kMaxPruneBatch);
    return guarded<std::int64_t>(
        [] { return std::string("Failed to prune finished tasks"); },
        [&]() -> Result<std::int64_t> {
            WriteTransaction txn(*this);
            std::vector<std::int64_t> message_ids;
            std::vector<std::string> task_ids, nids;
            const std::optional<std::string> state = state_text(request.state);  // bound without a copy
            {
                // tasks_finished_order gives the oldest first; a task with a
                // report still to deliver waits for it (report_outbox_order).
                auto st = use(prune_select_,
                              "SELECT t.message_id, t.task_id, t.nid FROM tasks t "
                              "WHERE t.finished_at IS NOT NULL AND t.finished_at < ?1 "
                              "AND (?2 IS NULL OR t.state = ?2) "
                              "AND NOT EXISTS (SELECT 1 FROM report_outbox o "
                              "                WHERE o.task_id = t.task_id AND o.status = 'pending') "
                              "ORDER BY t.finished_at LIMIT ?3");
                st->bind(1, static_cast<std::int64_t>(request.finished_before_ms));
                bind_optional(*st, 2, state);
                st->bind(3, limit);
                while (st->executeStep()) {
                    message_ids.push_back(st->getColumn(0).getInt64());
                    task_ids.push_back(st->getColumn(1).getString());
                    nids.push_back(st->getColumn(2).getString());
                }
            }
            delete_tasks_locked(message_ids, task_ids, nids);
            txn.commit();
            return static_cast<std::int64_t>(message_ids.size());
        });
}

Result<void> SqliteStore::remove_task(const std::string& task_id)
{
    return guarded<void>(
        [&] { return "Failed to remove task '" + task_id + "'"; },
        [&]() -> Result<void> {
            WriteTransaction txn(*this);
            std::int64_t message_id = 0;
            std::string nid;
            proto::TaskState state = proto::TaskState::pending;
            {
                auto st = use(remove_select_, "SELECT message_id, nid, state FROM tasks WHERE task_id = ?1");
                st->bindNoCopy(1, task_id);
                if (!st->executeStep())
                    return protocol_error(proto::code::kNopTaskNotFound, "Task '" + task_id + "' does not exist");
                message_id = st->getColumn(0).getInt64();
                nid = st->getColumn(1).getString();
                state = task_state_column(st->getColumn(2).getString(), task_id);
            }
            if (!proto::is_terminal(state))
                return protocol_error(proto::code::kNopTaskNotFinished,
                                      "Task '" + task_id + "' is " + std::string(proto::to_string(state)) + "; cancel it before removing it");
            delete_tasks_locked({message_id}, {task_id}, {nid});
            txn.commit();
            return {};
        });
}

Result<std::int64_t> SqliteStore::reclaim_space(std::uint32_t max_pages)
{
    return guarded<std::int64_t>(
        [] { return std::string("Failed to give free pages of runner.db back"); },
        [&]() -> Result<std::int64_t> {
            std::int64_t free_pages = 0;
            {
                SQLite::Statement st(db(), "PRAGMA freelist_count");
                if (st.executeStep())
                    free_pages = st.getColumn(0).getInt64();
            }
            if (free_pages > 0 && max_pages > 0) {
                // A no-op on a file without auto_vacuum = INCREMENTAL.
                SQLite::Statement st(db(), "PRAGMA incremental_vacuum(" + std::to_string(max_pages) + ")");
                while (st.executeStep()) {
                }
            }
            return free_pages;
        });
}

}  // namespace nps::store::detail
