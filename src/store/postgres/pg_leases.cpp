// SPDX-License-Identifier: Apache-2.0
// Live leases on PostgreSQL: renew, release and complete (../leases.cpp is
// the SQLite twin; errors match). Each is one UPDATE fenced by the live lease
// (owner = runner_nid AND lease_expiry > now) in its WHERE clause, and that
// clause is the whole guard: under READ COMMITTED, PostgreSQL re-checks it on
// the newest version of a row a concurrent transaction changed (waiting for
// that transaction first), so a runner whose lease expired — and maybe was
// reclaimed — can change nothing. Only when nothing matched does lease_error
// read the row, to explain why.
#include <unordered_set>

#include "../lease_rules.hpp"
#include "nps/proto/error_codes.hpp"
#include "nps/store/write_health.hpp"
#include "../state_columns.hpp"
#include "pg_store.hpp"

namespace nps::store::pg {

namespace {

constexpr const char* kLeaseStateSql = "SELECT state, lease_owner, lease_expiry FROM tasks WHERE task_id = $1";

// New expiry = now + clamped seconds (NPS-5 §8.1), not old expiry + seconds.
// $1 task, $2 runner, $3 expiry, $4 now.
constexpr const char* kRenewSql =
    "UPDATE tasks SET lease_expiry = $3, updated_at = $4 "
    "WHERE task_id = $1 AND lease_owner = $2 AND lease_expiry > $4 RETURNING message_id";

// lease_owner NULL: the next claim is `granted`, not `reclaimed`;
// lease_expiry 0: visible at once. The tasks_transition trigger logs
// lease:released. $1 task, $2 runner, $3 now.
constexpr const char* kReleaseSql =
    "UPDATE tasks SET state = 'PENDING', lease_owner = NULL, lease_expiry = 0, updated_at = $3 "
    "WHERE task_id = $1 AND lease_owner = $2 AND lease_expiry > $3 RETURNING message_id";

// For the tasks in $1 (a text[] of task_ids) whose live lease $2 holds
// ($3 = now): records the outcome ($4 state, $5–$7 error code, message and
// aggregate), ends the lease and takes the message out of the inbox; the
// tasks_transition trigger logs task:completed / task:failed /
// task:cancelled, tasks_finished stamps finished_at, tasks_reported writes
// the callback/reply rows. The rows it does not return were not fenced.
#define NPS_PG_COMPLETE_SET                                                                         \
    "UPDATE tasks SET queue = 'done', state = $4, error_code = $5, error_message = $6, aggregate = $7, " \
    "lease_owner = NULL, lease_expiry = 0, "
constexpr const char* kCompleteSql =
    NPS_PG_COMPLETE_SET "updated_at = $3 WHERE task_id = ANY ($1::text[]) AND lease_owner = $2 AND lease_expiry > $3 "
    "RETURNING task_id";

// The common case in one statement outside any transaction: kCompleteSql
// for $3 distinct tasks that must all be fenced, else it fails with SQLSTATE
// kNotAllFenced and changes nothing ($8 now, NULL: the database's).
#define NPS_PG_NOT_ALL_FENCED "NPS01"
constexpr std::string_view kNotAllFenced = NPS_PG_NOT_ALL_FENCED;
constexpr const char* kCompleteAllSql =
    "WITH n AS MATERIALIZED (SELECT coalesce($8::bigint, nps_now_ms()) AS now), "
    "u AS (" NPS_PG_COMPLETE_SET "updated_at = (SELECT now FROM n) WHERE task_id = ANY ($1::text[]) "
    "AND lease_owner = $2 AND lease_expiry > (SELECT now FROM n) RETURNING 1) "
    "SELECT CASE WHEN count(*) = $3 THEN count(*) "
    "ELSE nps_fail('" NPS_PG_NOT_ALL_FENCED "', 'a task of the batch is not leased by this runner') END FROM u";
#undef NPS_PG_COMPLETE_SET
#undef NPS_PG_NOT_ALL_FENCED

// kCompleteAllSql: true when every task was completed, false when one was
// not fenced (nothing changed: complete_locked then says which and why).
bool complete_all(PostgresStore& store, const std::vector<std::string>& task_ids, const std::string& runner_nid,
                  const TaskOutcome& outcome)
{
    const std::unordered_set<std::string> distinct(task_ids.begin(), task_ids.end());
    Params p;
    p.text_array(task_ids)
        .text(runner_nid)
        .integer(static_cast<std::int64_t>(distinct.size()))
        .text(std::string(proto::to_string(outcome.state)))
        .optional_text(outcome.error_code)
        .optional_text(outcome.error_message)
        .optional_text(outcome.aggregate_json)
        .optional_integer(store.database_clock() ? std::nullopt : std::optional(store.clock().now_ms()));
    try {
        store.conn().query(kCompleteAllSql, p);
    } catch (const PgFailure& e) {
        if (e.sqlstate() == kNotAllFenced)
            return false;
        throw;
    }
    mark_write_succeeded();
    return true;
}

}  // namespace

Error PostgresStore::lease_error(Connection& conn, std::int64_t now, const std::string& task_id,
                                 const std::string& runner_nid)
{
    Params p;
    p.text(task_id);
    const Rows rows = conn.query(kLeaseStateSql, p);
    if (rows.empty())
        return protocol_error(proto::code::kNopTaskNotFound, "Task '" + task_id + "' does not exist");
    const proto::TaskState state = detail::task_state_column(rows.text(0, 0), task_id);
    const std::optional<std::string> owner = rows.optional_text(0, 1);
    const std::int64_t expiry = rows.integer(0, 2);
    return detail::lease_refusal(task_id, runner_nid, {.state = state, .owner = owner, .lease_expiry = expiry}, now);
}

Result<std::int64_t> PostgresStore::renew(const std::string& task_id, const std::string& runner_nid,
                                          std::uint32_t lease_seconds)
{
    return guarded<std::int64_t>(
        [&] { return "Failed to renew the lease on task '" + task_id + "' for '" + runner_nid + "'"; },
        [&]() -> Result<std::int64_t> {
            Work w(*this);
            const std::int64_t now = w.now();
            const std::int64_t expiry = now + static_cast<std::int64_t>(clamp_lease_seconds(lease_seconds)) * 1000;
            Params p;
            p.text(task_id).text(runner_nid).integer(expiry).integer(now);
            if (w.conn().query(kRenewSql, p).empty())
                return lease_error(w.conn(), now, task_id, runner_nid);
            w.commit();
            return expiry;
        });
}

Result<void> PostgresStore::release(const std::string& task_id, const std::string& runner_nid)
{
    return guarded<void>(
        [&] { return "Failed to release the lease on task '" + task_id + "' for '" + runner_nid + "'"; },
        [&]() -> Result<void> {
            Work w(*this);
            const std::int64_t now = w.now();
            Params p;
            p.text(task_id).text(runner_nid).integer(now);
            if (w.conn().query(kReleaseSql, p).empty())
                return lease_error(w.conn(), now, task_id, runner_nid);
            w.commit();
            return {};
        });
}

// Inside w's transaction: ends runner_nid's live leases on task_ids and
// records the outcome; an Error (naming the first task not fenced) when any
// of them is not leased by runner_nid — the caller then rolls back.
Result<void> PostgresStore::complete_locked(Work& w, const std::vector<std::string>& task_ids,
                                            const std::string& runner_nid, const TaskOutcome& outcome)
{
    NPS_TRY_VOID(detail::check_terminal(task_ids.front(), outcome));
    std::unordered_set<std::string> fenced;
    {
        Params p;
        p.text_array(task_ids)
            .text(runner_nid)
            .integer(w.now())
            .text(std::string(proto::to_string(outcome.state)))
            .optional_text(outcome.error_code)
            .optional_text(outcome.error_message)
            .optional_text(outcome.aggregate_json);
        const Rows rows = w.conn().query(kCompleteSql, p);
        for (int r = 0; r < rows.size(); ++r)
            fenced.insert(rows.text(r, 0));
    }
    if (fenced.size() != task_ids.size())
        for (const auto& task_id : task_ids)
            if (!fenced.count(task_id))
                return lease_error(w.conn(), w.now(), task_id, runner_nid);
    return {};
}

Result<void> PostgresStore::complete(const std::string& task_id, const std::string& runner_nid,
                                     const TaskOutcome& outcome)
{
    return guarded<void>(
        [&] { return "Failed to complete task '" + task_id + "' for '" + runner_nid + "'"; },
        [&]() -> Result<void> {
            NPS_TRY_VOID(detail::check_terminal(task_id, outcome));
            if (complete_all(*this, {task_id}, runner_nid, outcome))
                return {};
            Work w(*this);
            NPS_TRY_VOID(complete_locked(w, {task_id}, runner_nid, outcome));
            w.commit();
            return {};
        });
}

Result<void> PostgresStore::complete_batch(const std::vector<std::string>& task_ids, const std::string& runner_nid,
                                           const TaskOutcome& outcome)
{
    if (task_ids.empty())
        return {};
    return guarded<void>(
        [&] { return "Failed to complete " + std::to_string(task_ids.size()) + " tasks for '" + runner_nid + "'"; },
        [&]() -> Result<void> {
            NPS_TRY_VOID(detail::check_terminal(task_ids.front(), outcome));
            if (complete_all(*this, task_ids, runner_nid, outcome))
                return {};
            // All or nothing: one task not fenced rolls the batch back.
            Work w(*this);
            NPS_TRY_VOID(complete_locked(w, task_ids, runner_nid, outcome));
            w.commit();
            return {};
        });
}

}  // namespace nps::store::pg
