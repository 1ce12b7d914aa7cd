// SPDX-License-Identifier: Apache-2.0
// Retention on PostgreSQL (docs/retention.md): result expiry after
// result_ttl_seconds and deleting finished tasks. The SQLite twin is
// ../retention.cpp: same rules, same messages.
//
// Concurrency (READ COMMITTED, runners on several hosts): the batch
// operations lock their tasks with FOR UPDATE SKIP LOCKED, so a task another
// transaction is writing (an event, a node record, a report mark) is left
// for the next batch instead of waited for, and two runners pruning at once
// take disjoint batches. remove_task waits for its one task's lock.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "nps/base/limits.hpp"
#include "nps/proto/error_codes.hpp"
#include "../state_columns.hpp"
#include "pg_store.hpp"

namespace nps::store::pg {

namespace {

// Finished tasks deleted per transaction at most: each costs a handful of
// row deletes, so a batch holds its locks briefly.
constexpr std::uint32_t kMaxPruneBatch = 1000;

// $1 now, $2 max tasks. The due tasks leave the index and name themselves.
constexpr const char* kExpireTasks =
    "WITH due AS (SELECT message_id AS due_id FROM tasks WHERE results_expire_at <= $1::bigint "
    "ORDER BY results_expire_at LIMIT $2 FOR UPDATE SKIP LOCKED) "
    "UPDATE tasks SET aggregate = NULL, results_expire_at = NULL, results_expired_at = $1::bigint "
    "FROM due WHERE message_id = due.due_id RETURNING task_id";
constexpr const char* kExpireNodes = "UPDATE node_results SET result = NULL WHERE task_id = ANY($1::text[])";

// $1 finished before, $2 state (NULL: any finished one), $3 limit. Oldest
// finished first (tasks_finished_order); a task with a report still to
// deliver waits for it (report_outbox_order).
constexpr const char* kPruneSelect =
    "SELECT t.message_id, t.task_id, t.nid FROM tasks t "
    "WHERE t.finished_at IS NOT NULL AND t.finished_at < $1::bigint "
    "AND ($2::text IS NULL OR t.state = $2::text) "
    "AND NOT EXISTS (SELECT 1 FROM report_outbox o WHERE o.task_id = t.task_id AND o.status = 'pending') "
    "ORDER BY t.finished_at LIMIT $3 FOR UPDATE OF t SKIP LOCKED";
// The locked victims that gained a pending report after the select's
// snapshot was taken (a fresh snapshot now that their rows are locked).
constexpr const char* kPruneRecheck =
    "SELECT DISTINCT task_id FROM report_outbox WHERE status = 'pending' AND task_id = ANY($1::text[])";

constexpr const char* kRemoveSelect = "SELECT message_id, nid, state FROM tasks WHERE task_id = $1 FOR UPDATE";

// $1 message ids, $2 their task ids. Children first: the foreign keys point
// at the task row (checked at the end of the statement).
constexpr const char* kDeleteTasks =
    "WITH e AS (DELETE FROM events WHERE message_id = ANY($1::bigint[])), "
    "n AS (DELETE FROM node_results WHERE task_id = ANY($2::text[])), "
    "r AS (DELETE FROM report_outbox WHERE task_id = ANY($2::text[])), "
    "f AS (DELETE FROM frames WHERE message_id = ANY($1::bigint[])) "
    "DELETE FROM tasks WHERE message_id = ANY($1::bigint[])";
// $1 NIDs (sorted, so concurrent prunes lock them in one order), $2 how
// many tasks each lost.
constexpr const char* kLockInboxes = "SELECT nid FROM inboxes WHERE nid = ANY($1::text[]) ORDER BY nid FOR UPDATE";
constexpr const char* kUncountInboxes =
    "UPDATE inboxes SET tasks = tasks - c.n FROM unnest($1::text[], $2::bigint[]) AS c(nid, n) "
    "WHERE inboxes.nid = c.nid";
constexpr const char* kDeleteInboxes = "DELETE FROM inboxes WHERE nid = ANY($1::text[]) AND tasks <= 0";

// Deletes the tasks (rows locked by the caller) with their frames, events,
// node records and reports, and takes them off their inboxes' counts.
void delete_tasks_locked(Connection& conn, const std::vector<std::int64_t>& message_ids,
                         const std::vector<std::string>& task_ids, const std::vector<std::string>& nids)
{
    if (message_ids.empty())
        return;
    {
        Params p;
        p.integer_array(message_ids);
        p.text_array(task_ids);
        conn.query(kDeleteTasks, p);
    }
    std::map<std::string, std::int64_t> per_nid;
    for (const auto& nid : nids)
        ++per_nid[nid];
    std::vector<std::string> inbox_nids;
    std::vector<std::int64_t> counts;
    for (const auto& [nid, n] : per_nid) {
        inbox_nids.push_back(nid);
        counts.push_back(n);
    }
    {
        Params p;
        p.text_array(inbox_nids);
        conn.query(kLockInboxes, p);
    }
    {
        Params p;
        p.text_array(inbox_nids);
        p.integer_array(counts);
        conn.query(kUncountInboxes, p);
    }
    {
        Params p;
        p.text_array(inbox_nids);
        conn.query(kDeleteInboxes, p);
    }
}

}  // namespace

Result<std::int64_t> PostgresStore::expire_results(std::uint32_t max_tasks)
{
    const std::uint32_t limit = std::clamp<std::uint32_t>(max_tasks, 1, kMaxPruneBatch);
    return guarded<std::int64_t>(
        [] { return std::string("Failed to expire task results"); },
        [&]() -> Result<std::int64_t> {
            Work w(*this);
            std::vector<std::string> task_ids;
            {
                Params p;
                p.integer(w.now());
                p.integer(limit);
                const Rows rows = w.conn().query(kExpireTasks, p);
                task_ids.reserve(static_cast<std::size_t>(rows.size()));
                for (int i = 0; i < rows.size(); ++i)
                    task_ids.push_back(rows.text(i, 0));
            }
            if (!task_ids.empty()) {
                Params p;
                p.text_array(task_ids);
                w.conn().query(kExpireNodes, p);
            }
            const auto expired = static_cast<std::int64_t>(task_ids.size());
            w.commit();
            return expired;
        });
}

Result<std::int64_t> PostgresStore::prune_tasks(const PruneRequest& request)
{
    if (request.state && !proto::is_terminal(*request.state))
        return protocol_error(proto::code::kNwpHttpParamInvalid,
                              "state '" + std::string(proto::to_string(*request.state)) + "' is not a finished state (COMPLETED, FAILED, CANCELLED)");
    const std::uint32_t limit = std::clamp<std::uint32_t>(request.limit, 1, kMaxPruneBatch);
    return guarded<std::int64_t>(
        [] { return std::string("Failed to prune finished tasks"); },
        [&]() -> Result<std::int64_t> {
            Work w(*this);
            std::vector<std::int64_t> message_ids;
            std::vector<std::string> task_ids, nids;
            {
                Params p;
                p.integer(request.finished_before_ms);
                p.optional_text(detail::state_text(request.state));
                p.integer(limit);
                const Rows rows = w.conn().query(kPruneSelect, p);
                for (int i = 0; i < rows.size(); ++i) {
                    message_ids.push_back(rows.integer(i, 0));
                    task_ids.push_back(rows.text(i, 1));
                    nids.push_back(rows.text(i, 2));
                }
            }
            if (!task_ids.empty()) {
                // A report written after the select's snapshot, before the
                // lock was taken: that task waits for it like the others.
                Params p;
                p.text_array(task_ids);
                const Rows pending = w.conn().query(kPruneRecheck, p);
                for (int i = 0; i < pending.size(); ++i) {
                    const auto it = std::find(task_ids.begin(), task_ids.end(), pending.text(i, 0));
                    if (it == task_ids.end())
                        continue;
                    const auto at = it - task_ids.begin();
                    message_ids.erase(message_ids.begin() + at);
                    nids.erase(nids.begin() + at);
                    task_ids.erase(it);
                }
            }
            delete_tasks_locked(w.conn(), message_ids, task_ids, nids);
            w.commit();
            return static_cast<std::int64_t>(message_ids.size());
        });
}

Result<void> PostgresStore::remove_task(const std::string& task_id)
{
    return guarded<void>(
        [&] { return "Failed to remove task '" + task_id + "'"; },
        [&]() -> Result<void> {
            Work w(*this);
            std::int64_t message_id = 0;
            std::string nid;
            proto::TaskState state = proto::TaskState::pending;
            {
                Params p;
                p.text(task_id);
                const Rows rows = w.conn().query(kRemoveSelect, p);
                if (rows.empty())
                    return protocol_error(proto::code::kNopTaskNotFound, "Task '" + task_id + "' does not exist");
                message_id = rows.integer(0, 0);
                nid = rows.text(0, 1);
                state = detail::task_state_column(rows.text(0, 2), task_id);
            }
            if (!proto::is_terminal(state))
                return protocol_error(proto::code::kNopTaskNotFinished,
                                      "Task '" + task_id + "' is " + std::string(proto::to_string(state)) + "; cancel it before removing it");
            delete_tasks_locked(w.conn(), {message_id}, {task_id}, {nid});
            w.commit();
            return {};
        });
}

// PostgreSQL has no incremental vacuum to run from here: space freed by
// deletes is reused by later rows once autovacuum has processed the table
// (the tasks table's autovacuum thresholds are lowered for it, pg_schema.cpp),
// and giving it back to the file system takes VACUUM FULL, which cannot run
// inside a transaction and locks the tables — an operator's job, never a
// runner's. Nothing is counted as free: returns 0.
Result<std::int64_t> PostgresStore::reclaim_space(std::uint32_t /*max_pages*/)
{
    return std::int64_t{0};
}

}  // namespace nps::store::pg
