// SPDX-License-Identifier: Apache-2.0
// Node results, idempotent on (task_id, node_id, dedup_key) (NPS-5 §8.1,
// CR-0007 §4.3): a reclaiming runner asks is_node_terminal() and skips what
// is already done.
#include "node_rules.hpp"
#include "sqlite_store.hpp"
#include "state_columns.hpp"

#include "nps/proto/error_codes.hpp"

namespace nps::store::detail {

namespace {

#define NPS_STORE_NODE_RESULT_COLUMNS                                                        \
    "task_id, node_id, dedup_key, state, attempts, error_code, error_message, result, "     \
    "killed_reason, runner_nid, recorded_at"

NodeResult read_node_result(const SQLite::Statement& st)
{
    NodeResult r;
    r.task_id = st.getColumn(0).getString();
    r.node_id = st.getColumn(1).getString();
    r.dedup_key = st.getColumn(2).getString();
    r.state = node_state_column(st.getColumn(3).getString(), r.task_id, r.node_id);
    r.attempts = st.getColumn(4).getUInt();
    r.error_code = optional_text(st, 5);
    r.error_message = optional_text(st, 6);
    r.result_json = optional_text(st, 7);
    r.killed_reason = optional_text(st, 8);
    r.runner_nid = optional_text(st, 9);
    r.recorded_at_ms = st.getColumn(10).getInt64();
    return r;
}

}  // namespace

Result<RecordOutcome> SqliteStore::record_node_result(const NodeResult& result)
{
    return guarded<RecordOutcome>(
        [&] { return "Failed to record the result of node '" + result.node_id + "' of task '" + result.task_id + "'"; },
        [&]() -> Result<RecordOutcome> {
            WriteTransaction txn(*this);
            const RecordOutcome outcome = NPS_TRY(record_node_result_locked(now_ms(), result));
            if (outcome == RecordOutcome::recorded)
                txn.commit();  // a duplicate changed nothing: nothing to commit
            return outcome;
        });
}

Result<RecordOutcome> SqliteStore::record_node_result_locked(std::int64_t now, const NodeResult& result)
{
    NPS_TRY_VOID(check_node_result(result));
    {
        auto st = use(result_task_,
                      "SELECT dedup_key, lease_owner, lease_expiry FROM tasks WHERE task_id = ?1");
        st->bindNoCopy(1, result.task_id);
        if (!st->executeStep())
            return protocol_error(proto::code::kNopTaskNotFound,
                                  "Task '" + result.task_id + "' does not exist");
        if (st->getColumn(0).getString() != result.dedup_key)
            return protocol_error(proto::code::kNopClaimConflict,
                                  "Task '" + result.task_id + "': dedup_key does not match the task");
        if (result.runner_nid && result.fence != LeaseFence::none) {
            const auto owner = optional_text(*st, 1);
            const bool live = st->getColumn(2).getInt64() > now;
            const bool refused = result.fence == LeaseFence::runner_lease
                                     ? owner != result.runner_nid || !live
                                     : owner && owner != result.runner_nid && live;
            if (refused)
                return lease_error(now, result.task_id, *result.runner_nid);
        }
    }
    {
        auto st = use(result_find_,
                      "SELECT state, error_code, result FROM node_results "
                      "WHERE task_id = ?1 AND node_id = ?2 AND dedup_key = ?3");
        st->bindNoCopy(1, result.task_id);
        st->bindNoCopy(2, result.node_id);
        st->bindNoCopy(3, result.dedup_key);
        if (st->executeStep()) {
            const proto::NodeState state =
                node_state_column(st->getColumn(0).getString(), result.task_id, result.node_id);
            if (is_stale_saga_report(state, result.state))
                return RecordOutcome::duplicate;  // an out-of-order replay; nothing to commit
            if (proto::is_terminal(state) && !starts_compensation(state, result.state)) {
                // A compensation record may omit the result it keeps (see the upsert).
                const bool same_result = optional_text(*st, 2) == result.result_json ||
                                         (!result.result_json && saga_rank(result.state) >= 2);
                if (state == result.state && optional_text(*st, 1) == result.error_code && same_result)
                    return RecordOutcome::duplicate;  // nothing to commit
                return protocol_error(proto::code::kNopTaskAlreadyCompleted,
                                      "Node '" + result.node_id + "' of task '" + result.task_id +
                                          "' already ended " + std::string(proto::to_string(state)) + " with a different result");
            }
        }
    }
    {
        auto st = use(result_upsert_,
                      "INSERT INTO node_results (" NPS_STORE_NODE_RESULT_COLUMNS ") "
                      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11) "
                      "ON CONFLICT (task_id, node_id, dedup_key) DO UPDATE SET state = excluded.state, "
                      "attempts = excluded.attempts, error_code = excluded.error_code, "
                      "error_message = excluded.error_message, "
                      "result = coalesce(excluded.result, CASE WHEN excluded.state LIKE 'COMPENSAT%' "
                      "THEN node_results.result END), "
                      "killed_reason = excluded.killed_reason, runner_nid = excluded.runner_nid, "
                      "recorded_at = excluded.recorded_at");
        st->bindNoCopy(1, result.task_id);
        st->bindNoCopy(2, result.node_id);
        st->bindNoCopy(3, result.dedup_key);
        st->bind(4, std::string(proto::to_string(result.state)));
        st->bind(5, result.attempts);
        bind_optional(*st, 6, result.error_code);
        bind_optional(*st, 7, result.error_message);
        bind_optional(*st, 8, result.result_json);
        bind_optional(*st, 9, result.killed_reason);
        bind_optional(*st, 10, result.runner_nid);
        st->bind(11, static_cast<std::int64_t>(now));
        st->exec();
    }
    if (!node_reports_) {  // OpenOptions::node_reports: the trigger's row goes with the record
        auto st = use(result_unreported_,
                      "DELETE FROM report_outbox "
                      "WHERE kind = 'node' AND task_id = ?1 AND node_id = ?2 AND status = 'pending'");
        st->bindNoCopy(1, result.task_id);
        st->bindNoCopy(2, result.node_id);
        st->exec();
    }
    return RecordOutcome::recorded;
}

Result<std::vector<NodeResult>> SqliteStore::node_results(const std::string& task_id)
{
    return guarded<std::vector<NodeResult>>(
        [&] { return "Failed to read the node results of task '" + task_id + "'"; },
        [&]() -> Result<std::vector<NodeResult>> {
            auto st = use(result_list_,
                          "SELECT " NPS_STORE_NODE_RESULT_COLUMNS " FROM node_results WHERE task_id = ?1 "
                          "ORDER BY node_id, dedup_key");
            st->bindNoCopy(1, task_id);
            std::vector<NodeResult> out;
            while (st->executeStep())
                out.push_back(read_node_result(*st));
            return out;
        });
}

Result<bool> SqliteStore::is_node_terminal(const std::string& dedup_key, const std::string& node_id)
{
    return guarded<bool>(
        [&] { return "Failed to look up node '" + node_id + "' under dedup_key '" + dedup_key + "'"; },
        [&]() -> Result<bool> {
            auto st = use(result_terminal_,
                          "SELECT 1 FROM node_results WHERE dedup_key = ?1 AND node_id = ?2 "
                          "AND state IN " NPS_STORE_TERMINAL_NODE_STATES " LIMIT 1");
            st->bindNoCopy(1, dedup_key);
            st->bindNoCopy(2, node_id);
            return st->executeStep();
        });
}

}  // namespace nps::store::detail
