// SPDX-License-Identifier: Apache-2.0
// Node results on PostgreSQL, idempotent on (task_id, node_id, dedup_key)
// (NPS-5 §8.1, CR-0007 §4.3), as ../results.cpp. record_node_result reads
// the task, its lease and the node's record before it writes, so it first
// locks the task row: two reports of one node, or a report and a lease
// change (claim, renew, release, complete, cancel), never interleave.
#include "../node_rules.hpp"
#include "../state_columns.hpp"
#include "pg_store.hpp"

#include "nps/proto/error_codes.hpp"

namespace nps::store::pg {

namespace {

#define NPS_PG_NODE_RESULT_COLUMNS                                                           \
    "task_id, node_id, dedup_key, state, attempts, error_code, error_message, result, "     \
    "killed_reason, runner_nid, recorded_at"

// The task row, locked until the end of the transaction.
constexpr const char* kLockTask =
    "SELECT dedup_key, lease_owner, lease_expiry FROM tasks WHERE task_id = $1 FOR UPDATE";
// The node's record; locked too, for writers that do not lock the task first.
constexpr const char* kFindResult =
    "SELECT state, error_code, result FROM node_results "
    "WHERE task_id = $1 AND node_id = $2 AND dedup_key = $3 FOR UPDATE";
constexpr const char* kUpsertResult =
    "INSERT INTO node_results (" NPS_PG_NODE_RESULT_COLUMNS ") "
    "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) "
    "ON CONFLICT (task_id, node_id, dedup_key) DO UPDATE SET state = excluded.state, "
    "attempts = excluded.attempts, error_code = excluded.error_code, "
    "error_message = excluded.error_message, "
    "result = coalesce(excluded.result, CASE WHEN excluded.state LIKE 'COMPENSAT%' "
    "THEN node_results.result END), "
    "killed_reason = excluded.killed_reason, runner_nid = excluded.runner_nid, "
    "recorded_at = excluded.recorded_at";
// OpenOptions::node_reports false: the row the trigger added goes with the record.
constexpr const char* kDropNodeReports =
    "DELETE FROM report_outbox WHERE kind = 'node' AND task_id = $1 AND node_id = $2 AND status = 'pending'";
// COLLATE "C": byte order, as SQLite's BINARY collation sorts.
constexpr const char* kListResults =
    "SELECT " NPS_PG_NODE_RESULT_COLUMNS " FROM node_results WHERE task_id = $1 "
    "ORDER BY node_id COLLATE \"C\", dedup_key COLLATE \"C\"";
constexpr const char* kIsTerminal =
    "SELECT 1 FROM node_results WHERE dedup_key = $1 AND node_id = $2 "
    "AND state IN " NPS_PG_TERMINAL_NODE_STATES " LIMIT 1";

NodeResult read_node_result(const Rows& rows, int row)
{
    NodeResult r;
    r.task_id = rows.text(row, 0);
    r.node_id = rows.text(row, 1);
    r.dedup_key = rows.text(row, 2);
    r.state = detail::node_state_column(rows.text(row, 3), r.task_id, r.node_id);
    r.attempts = static_cast<std::uint32_t>(rows.integer(row, 4));
    r.error_code = rows.optional_text(row, 5);
    r.error_message = rows.optional_text(row, 6);
    r.result_json = rows.optional_text(row, 7);
    r.killed_reason = rows.optional_text(row, 8);
    r.runner_nid = rows.optional_text(row, 9);
    r.recorded_at_ms = rows.integer(row, 10);
    return r;
}

}  // namespace

Result<RecordOutcome> PostgresStore::record_node_result(const NodeResult& result)
{
    return guarded<RecordOutcome>(
        [&] { return "Failed to record the result of node '" + result.node_id + "' of task '" + result.task_id + "'"; },
        [&]() -> Result<RecordOutcome> {
            Work w(*this);
            const RecordOutcome outcome = NPS_TRY(record_node_result_locked(w, result));
            if (outcome == RecordOutcome::recorded)
                w.commit();  // a duplicate changed nothing: nothing to commit
            return outcome;
        });
}

Result<RecordOutcome> PostgresStore::record_node_result_locked(Work& w, const NodeResult& result)
{
    NPS_TRY_VOID(detail::check_node_result(result));
    Connection& c = w.conn();
    const std::int64_t now = w.now();
    {
        Params p;
        p.text(result.task_id);
        const Rows task = c.query(kLockTask, p);
        if (task.empty())
            return protocol_error(proto::code::kNopTaskNotFound,
                                  "Task '" + result.task_id + "' does not exist");
        if (task.text(0, 0) != result.dedup_key)
            return protocol_error(proto::code::kNopClaimConflict,
                                  "Task '" + result.task_id + "': dedup_key does not match the task");
        if (result.runner_nid && result.fence != LeaseFence::none) {
            const auto owner = task.optional_text(0, 1);
            const bool live = task.integer(0, 2) > now;
            const bool refused = result.fence == LeaseFence::runner_lease
                                     ? owner != result.runner_nid || !live
                                     : owner && owner != result.runner_nid && live;
            if (refused)
                return lease_error(c, now, result.task_id, *result.runner_nid);
        }
    }
    {
        Params p;
        p.text(result.task_id).text(result.node_id).text(result.dedup_key);
        const Rows found = c.query(kFindResult, p);
        if (!found.empty()) {
            const proto::NodeState state =
                detail::node_state_column(found.text(0, 0), result.task_id, result.node_id);
            if (detail::is_stale_saga_report(state, result.state))
                return RecordOutcome::duplicate;  // an out-of-order replay; nothing to commit
            if (proto::is_terminal(state) && !detail::starts_compensation(state, result.state)) {
                // A compensation record may omit the result it keeps (see the upsert).
                const bool same_result = found.optional_text(0, 2) == result.result_json ||
                                         (!result.result_json && detail::saga_rank(result.state) >= 2);
                if (state == result.state && found.optional_text(0, 1) == result.error_code && same_result)
                    return RecordOutcome::duplicate;  // nothing to commit
                return protocol_error(proto::code::kNopTaskAlreadyCompleted,
                                      "Node '" + result.node_id + "' of task '" + result.task_id +
                                          "' already ended " + std::string(proto::to_string(state)) + " with a different result");
            }
        }
    }
    {
        Params p;
        p.text(result.task_id)
            .text(result.node_id)
            .text(result.dedup_key)
            .text(proto::to_string(result.state))
            .integer(result.attempts)
            .optional_text(result.error_code)
            .optional_text(result.error_message)
            .optional_text(result.result_json)
            .optional_text(result.killed_reason)
            .optional_text(result.runner_nid)
            .integer(now);
        c.query(kUpsertResult, p);
    }
    if (!node_reports_) {
        Params p;
        p.text(result.task_id).text(result.node_id);
        c.query(kDropNodeReports, p);
    }
    return RecordOutcome::recorded;
}

Result<std::vector<NodeResult>> PostgresStore::node_results(const std::string& task_id)
{
    return guarded<std::vector<NodeResult>>(
        [&] { return "Failed to read the node results of task '" + task_id + "'"; },
        [&]() -> Result<std::vector<NodeResult>> {
            Params p;
            p.text(task_id);
            const Rows rows = conn().query(kListResults, p);
            std::vector<NodeResult> out;
            out.reserve(static_cast<std::size_t>(rows.size()));
            for (int i = 0; i < rows.size(); ++i)
                out.push_back(read_node_result(rows, i));
            return out;
        });
}

Result<bool> PostgresStore::is_node_terminal(const std::string& dedup_key, const std::string& node_id)
{
    return guarded<bool>(
        [&] { return "Failed to look up node '" + node_id + "' under dedup_key '" + dedup_key + "'"; },
        [&]() -> Result<bool> {
            Params p;
            p.text(dedup_key).text(node_id);
            return !conn().query(kIsTerminal, p).empty();
        });
}

}  // namespace nps::store::pg
