// SPDX-License-Identifier: Apache-2.0
// Live leases: renew, release and complete, each fenced by the live lease
// (owner = runner_nid AND lease_expiry > now) inside the UPDATE itself, so a
// runner whose lease expired — and maybe was reclaimed — can change nothing.
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "lease_rules.hpp"
#include "sqlite_store.hpp"
#include "state_columns.hpp"

#include "nps/proto/error_codes.hpp"

namespace nps::store::detail {

namespace {

// For the tasks in ?1 (a JSON array of task_ids) whose live lease ?2 holds
// (?3 = now): records the outcome (?4 state, ?5–?7 error code, message and
// aggregate), ends the lease and takes the message out of the inbox; the
// tasks_transition trigger logs task:completed / task:failed / task:cancelled.
// The rows it does not return were not fenced.
constexpr const char* kCompleteSql =
    "UPDATE tasks SET queue = 'done', state = ?4, error_code = ?5, error_message = ?6, aggregate = ?7, "
    "lease_owner = NULL, lease_expiry = 0, updated_at = ?3 "
    "WHERE task_id IN (SELECT value FROM json_each(?1)) AND lease_owner = ?2 AND lease_expiry > ?3 "
    "RETURNING task_id";

}  // namespace

const char* complete_sql()
{
    return kCompleteSql;
}

Error SqliteStore::lease_error(std::int64_t now, const std::string& task_id, const std::string& runner_nid)
{
    auto st = use(lease_state_,
                  "SELECT state, lease_owner, lease_expiry FROM tasks WHERE task_id = ?1");
    st->bindNoCopy(1, task_id);
    if (!st->executeStep())
        return protocol_error(proto::code::kNopTaskNotFound, "Task '" + task_id + "' does not exist");
    const proto::TaskState state = task_state_column(st->getColumn(0).getString(), task_id);
    const std::optional<std::string> owner = optional_text(*st, 1);
    const std::int64_t expiry = st->getColumn(2).getInt64();
    return lease_refusal(task_id, runner_nid, {.state = state, .owner = owner, .lease_expiry = expiry}, now);
}

Result<std::int64_t> SqliteStore::renew(const std::string& task_id, const std::string& runner_nid,
                                        std::uint32_t lease_seconds)
{
    return guarded<std::int64_t>(
        [&] { return "Failed to renew the lease on task '" + task_id + "' for '" + runner_nid + "'"; },
        [&]() -> Result<std::int64_t> {
            const std::int64_t now = now_ms();
            // New expiry = now + clamped seconds (NPS-5 §8.1), not old expiry + seconds.
            const std::int64_t expiry = now + static_cast<std::int64_t>(clamp_lease_seconds(lease_seconds)) * 1000;
            WriteTransaction txn(*this);
            {
                auto st = use(renew_,
                              "UPDATE tasks SET lease_expiry = ?3, updated_at = ?4 "
                              "WHERE task_id = ?1 AND lease_owner = ?2 AND lease_expiry > ?4 RETURNING message_id");
                st->bindNoCopy(1, task_id);
                st->bindNoCopy(2, runner_nid);
                st->bind(3, static_cast<std::int64_t>(expiry));
                st->bind(4, static_cast<std::int64_t>(now));
                if (!st->executeStep())
                    return lease_error(now, task_id, runner_nid);
            }
            txn.commit();
            return expiry;
        });
}

Result<void> SqliteStore::release(const std::string& task_id, const std::string& runner_nid)
{
    return guarded<void>(
        [&] { return "Failed to release the lease on task '" + task_id + "' for '" + runner_nid + "'"; },
        [&]() -> Result<void> {
            const std::int64_t now = now_ms();
            WriteTransaction txn(*this);
            {
                // lease_owner NULL: the next claim is `granted`, not `reclaimed`;
                // lease_expiry 0: visible at once. The tasks_transition trigger
                // logs lease:released.
                auto st = use(release_,
                              "UPDATE tasks SET state = 'PENDING', lease_owner = NULL, lease_expiry = 0, "
                              "updated_at = ?3 WHERE task_id = ?1 AND lease_owner = ?2 AND lease_expiry > ?3 "
                              "RETURNING message_id");
                st->bindNoCopy(1, task_id);
                st->bindNoCopy(2, runner_nid);
                st->bind(3, static_cast<std::int64_t>(now));
                if (!st->executeStep())
                    return lease_error(now, task_id, runner_nid);
            }
            txn.commit();
            return {};
        });
}

Result<void> SqliteStore::complete_locked(std::int64_t now, const std::vector<std::string>& task_ids,
                                          const std::string& runner_nid, const TaskOutcome& outcome)
{
    NPS_TRY_VOID(detail::check_terminal(task_ids.front(), outcome));
    const std::string task_list = json_text(task_ids);
    std::unordered_set<std::string> fenced;
    {
        auto st = use(complete_, kCompleteSql);
        st->bindNoCopy(1, task_list);
        st->bindNoCopy(2, runner_nid);
        st->bind(3, static_cast<std::int64_t>(now));
        st->bind(4, std::string(proto::to_string(outcome.state)));
        bind_optional(*st, 5, outcome.error_code);
        bind_optional(*st, 6, outcome.error_message);
        bind_optional(*st, 7, outcome.aggregate_json);
        while (st->executeStep())
            fenced.insert(st->getColumn(0).getString());
    }
    if (fenced.size() != task_ids.size())
        for (const auto& task_id : task_ids)
            if (!fenced.count(task_id))
                return lease_error(now, task_id, runner_nid);  // the caller rolls back
    return {};
}

Result<void> SqliteStore::complete(const std::string& task_id, const std::string& runner_nid,
                                   const TaskOutcome& outcome)
{
    return guarded<void>(
        [&] { return "Failed to complete task '" + task_id + "' for '" + runner_nid + "'"; },
        [&]() -> Result<void> {
            const std::int64_t now = now_ms();
            WriteTransaction txn(*this);
            NPS_TRY_VOID(complete_locked(now, {task_id}, runner_nid, outcome));
            txn.commit();
            return {};
        });
}

Result<void> SqliteStore::complete_batch(const std::vector<std::string>& task_ids, const std::string& runner_nid,
                                         const TaskOutcome& outcome)
{
    if (task_ids.empty())
        return {};
    return guarded<void>(
        [&] { return "Failed to complete " + std::to_string(task_ids.size()) + " tasks for '" + runner_nid + "'"; },
        [&]() -> Result<void> {
            const std::int64_t now = now_ms();
            WriteTransaction txn(*this);
            // All or nothing: one task not fenced rolls the batch back.
            NPS_TRY_VOID(complete_locked(now, task_ids, runner_nid, outcome));
            txn.commit();
            return {};
        });
}

}  // namespace nps::store::detail
