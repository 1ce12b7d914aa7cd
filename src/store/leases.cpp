// SPDX-License-Identifier: Apache-2.0
// Live leases: renew, release and complete, each fenced by the live lease
// (owner = runner_nid AND lease_expiry > now) inside the UPDATE itself, so a
// runner whose lease expired — and maybe was reclaimed — can change nothing.
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "nps/base/time_format.hpp"
#include "sqlite_store.hpp"

namespace nps::store::detail {

namespace {

const char* completion_event(const std::string& state)
{
    if (state == kTaskCompleted)
        return "task:completed";
    if (state == kTaskFailed)
        return "task:failed";
    return "task:cancelled";
}

// For the tasks in ?1 (a JSON array of task_ids) whose live lease ?2 holds:
// ends the lease and takes the message out of the inbox. The rows it does not
// return were not fenced.
constexpr const char* kCompleteMessageSql =
    "UPDATE messages SET state = 'done', lease_owner = NULL, lease_expiry = 0 "
    "WHERE message_id IN (SELECT t.message_id FROM tasks t WHERE t.task_id IN (SELECT value FROM json_each(?1))) "
    "AND lease_owner = ?2 AND lease_expiry > ?3 RETURNING message_id, task_id";
// ?1 = JSON array of message ids.
constexpr const char* kCompleteTaskSql =
    "UPDATE tasks SET state = ?2, error_code = ?3, error_message = ?4, aggregate = ?5, lease_owner = NULL, "
    "lease_expiry = 0, updated_at = ?6 WHERE message_id IN (SELECT value FROM json_each(?1))";
constexpr const char* kCompleteEventsSql =
    "INSERT INTO events (message_id, seq, at, name, detail) "
    "SELECT j.value, (SELECT coalesce(max(e.seq), 0) + 1 FROM events e WHERE e.message_id = j.value), ?2, ?3, ?4 "
    "FROM json_each(?1) j";

}  // namespace

const char* complete_message_sql()
{
    return kCompleteMessageSql;
}

const char* complete_task_sql()
{
    return kCompleteTaskSql;
}

const char* complete_events_sql()
{
    return kCompleteEventsSql;
}

Error SqliteStore::lease_error(std::int64_t now, const std::string& task_id, const std::string& runner_nid)
{
    auto st = use(lease_state_,
                  "SELECT t.state, m.lease_owner, m.lease_expiry FROM tasks t "
                  "JOIN messages m ON m.message_id = t.message_id WHERE t.task_id = ?1");
    st->bindNoCopy(1, task_id);
    if (!st->executeStep())
        return protocol_error("NOP-TASK-NOT-FOUND", "Task '" + task_id + "' does not exist");
    const std::string state = st->getColumn(0).getString();
    const std::optional<std::string> owner = optional_text(*st, 1);
    const std::int64_t expiry = st->getColumn(2).getInt64();
    std::string why;
    if (is_terminal_task_state(state))
        why = "is already " + state + "; its lease has ended";
    else if (!owner)
        why = "holds no lease";
    else if (*owner != runner_nid)
        why = "is leased by '" + *owner + "'" + (expiry > now ? "" : " (expired)") + ", not by '" + runner_nid + "'";
    else if (expiry <= now)
        why = "lease of '" + runner_nid + "' expired at " + format_rfc3339_ms(expiry);
    else
        why = "is not leased by '" + runner_nid + "'";
    return protocol_error("NOP-CLAIM-CONFLICT", "Task '" + task_id + "' " + why);
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
            std::int64_t message_id = 0;
            {
                auto st = use(renew_,
                              "UPDATE messages SET lease_expiry = ?3 "
                              "WHERE message_id = (SELECT message_id FROM tasks WHERE task_id = ?1) "
                              "AND lease_owner = ?2 AND lease_expiry > ?4 RETURNING message_id");
                st->bindNoCopy(1, task_id);
                st->bindNoCopy(2, runner_nid);
                st->bind(3, static_cast<std::int64_t>(expiry));
                st->bind(4, static_cast<std::int64_t>(now));
                if (!st->executeStep())
                    return lease_error(now, task_id, runner_nid);
                message_id = st->getColumn(0).getInt64();
            }
            {
                auto st = use(renew_mirror_, "UPDATE tasks SET lease_expiry = ?2, updated_at = ?3 WHERE message_id = ?1");
                st->bind(1, static_cast<std::int64_t>(message_id));
                st->bind(2, static_cast<std::int64_t>(expiry));
                st->bind(3, static_cast<std::int64_t>(now));
                st->exec();
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
            std::int64_t message_id = 0;
            {
                // lease_owner NULL: the next claim is `granted`, not `reclaimed`;
                // lease_expiry 0: visible at once.
                auto st = use(release_,
                              "UPDATE messages SET lease_owner = NULL, lease_expiry = 0 "
                              "WHERE message_id = (SELECT message_id FROM tasks WHERE task_id = ?1) "
                              "AND lease_owner = ?2 AND lease_expiry > ?3 RETURNING message_id");
                st->bindNoCopy(1, task_id);
                st->bindNoCopy(2, runner_nid);
                st->bind(3, static_cast<std::int64_t>(now));
                if (!st->executeStep())
                    return lease_error(now, task_id, runner_nid);
                message_id = st->getColumn(0).getInt64();
            }
            {
                auto st = use(release_mirror_,
                              "UPDATE tasks SET state = 'PENDING', lease_owner = NULL, lease_expiry = 0, "
                              "updated_at = ?2 WHERE message_id = ?1");
                st->bind(1, static_cast<std::int64_t>(message_id));
                st->bind(2, static_cast<std::int64_t>(now));
                st->exec();
            }
            add_event(message_id, now, "lease:released", json_text({{"runner_nid", runner_nid}}));
            txn.commit();
            return {};
        });
}

Result<void> SqliteStore::complete_locked(std::int64_t now, const std::vector<std::string>& task_ids,
                                          const std::string& runner_nid, const TaskOutcome& outcome)
{
    if (!is_terminal_task_state(outcome.state))
        return internal_error("Failed to complete task '" + task_ids.front() + "': '" + outcome.state +
                              "' is not a terminal task state");
    const std::string task_list = json_text(task_ids);
    std::vector<std::int64_t> message_ids;
    std::unordered_set<std::string> fenced;
    {
        auto st = use(complete_message_, kCompleteMessageSql);
        st->bindNoCopy(1, task_list);
        st->bindNoCopy(2, runner_nid);
        st->bind(3, static_cast<std::int64_t>(now));
        while (st->executeStep()) {
            message_ids.push_back(st->getColumn(0).getInt64());
            fenced.insert(st->getColumn(1).getString());
        }
    }
    for (const auto& task_id : task_ids)
        if (!fenced.count(task_id))
            return lease_error(now, task_id, runner_nid);  // the caller rolls back

    const std::string id_list = json_id_list(message_ids);
    {
        auto st = use(complete_task_, kCompleteTaskSql);
        st->bindNoCopy(1, id_list);
        st->bindNoCopy(2, outcome.state);
        bind_optional(*st, 3, outcome.error_code);
        bind_optional(*st, 4, outcome.error_message);
        bind_optional(*st, 5, outcome.aggregate_json);
        st->bind(6, static_cast<std::int64_t>(now));
        st->exec();
    }
    nlohmann::json detail{{"runner_nid", runner_nid}};
    if (outcome.error_code)
        detail["error_code"] = *outcome.error_code;
    const std::string detail_text = json_text(detail);
    {
        auto st = use(complete_events_, kCompleteEventsSql);
        st->bindNoCopy(1, id_list);
        st->bind(2, static_cast<std::int64_t>(now));
        st->bindNoCopy(3, completion_event(outcome.state));
        st->bindNoCopy(4, detail_text);
        st->exec();
    }
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
