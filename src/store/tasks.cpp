// SPDX-License-Identifier: Apache-2.0
// Task records, cancellation and the per-task event log.
#include <algorithm>

#include "nps/base/limits.hpp"
#include "nps/proto/error_codes.hpp"
#include "progress_rules.hpp"
#include "sqlite_store.hpp"
#include "state_columns.hpp"

namespace nps::store::detail {

Result<TaskRecord> SqliteStore::task_locked(const std::string& task_id)
{
    auto st = use(task_get_,
                  "SELECT " NPS_STORE_TASK_COLUMNS " FROM tasks t "
                  "JOIN frames f ON f.message_id = t.message_id WHERE t.task_id = ?1");
    st->bindNoCopy(1, task_id);
    if (!st->executeStep())
        return protocol_error(proto::code::kNopTaskNotFound, "Task '" + task_id + "' does not exist");
    return read_task(*st, 0);
}

Result<TaskRecord> SqliteStore::task(const std::string& task_id)
{
    return guarded<TaskRecord>([&] { return "Failed to read task '" + task_id + "'"; },
                               [&]() -> Result<TaskRecord> { return task_locked(task_id); });
}

Result<std::vector<TaskRecord>> SqliteStore::list_tasks(const TaskListFilter& filter)
{
    const std::uint32_t limit =
        filter.limit == 0 ? limits::kDefaultTaskListLimit : std::min(filter.limit, limits::kMaxTaskListLimit);
    return guarded<std::vector<TaskRecord>>(
        [&] { return std::string("Failed to list tasks"); },
        [&]() -> Result<std::vector<TaskRecord>> {
            // message_id grows with every deposit, so DESC is newest first.
            // The payload is left out (see TaskListFilter).
            auto st = use(task_list_,
                          "SELECT t.task_id, t.nid, t.state, t.error_code, t.error_message, t.aggregate, "
                          "t.dag_hash, t.dedup_key, t.lease_owner, t.lease_expiry, t.claims, t.created_at, "
                          "t.updated_at, '', t.finished_at, t.results_expire_at, t.results_expired_at "
                          "FROM tasks t WHERE (?1 IS NULL OR t.state = ?1) "
                          "AND (?2 IS NULL OR t.nid = ?2) AND (?4 IS NULL OR t.created_at > ?4) "
                          "AND (?5 IS NULL OR instr(t.task_id, ?5) > 0) ORDER BY t.message_id DESC LIMIT ?3");
            const std::optional<std::string> state = state_text(filter.state);  // bound without a copy
            bind_optional(*st, 1, state);
            bind_optional(*st, 2, filter.nid);
            st->bind(3, limit);
            if (filter.created_after_ms)
                st->bind(4, *filter.created_after_ms);
            else
                st->bind(4);
            bind_optional(*st, 5, filter.task_id_contains);
            std::vector<TaskRecord> out;
            while (st->executeStep())
                out.push_back(read_task(*st, 0));
            return out;
        });
}

Result<std::vector<TaskStateCount>> SqliteStore::task_state_counts()
{
    return guarded<std::vector<TaskStateCount>>(
        [&] { return std::string("Failed to count tasks by state"); },
        [&]() -> Result<std::vector<TaskStateCount>> {
            auto st = use(task_counts_, "SELECT state, count(*) FROM tasks GROUP BY state ORDER BY state");
            std::vector<TaskStateCount> out;
            while (st->executeStep())
                out.push_back({.state = task_state_column(st->getColumn(0).getString(), ""), .tasks = st->getColumn(1).getInt64()});
            return out;
        });
}

Result<TaskRecord> SqliteStore::cancel(const std::string& task_id)
{
    return guarded<TaskRecord>(
        [&] { return "Failed to cancel task '" + task_id + "'"; },
        [&]() -> Result<TaskRecord> {
            const std::int64_t now = now_ms();
            WriteTransaction txn(*this);
            {
                // Ending the lease fences the runner that held it: its renew
                // and complete now answer NOP-CLAIM-CONFLICT. The
                // tasks_transition trigger logs task:cancelled.
                auto st = use(cancel_task_,
                              "UPDATE tasks SET queue = 'done', state = 'CANCELLED', error_code = 'NOP-TASK-CANCELLED', "
                              "error_message = 'cancelled on request', lease_owner = NULL, lease_expiry = 0, "
                              "updated_at = ?2 WHERE task_id = ?1 AND state NOT IN " NPS_STORE_TERMINAL_TASK_STATES
                              " RETURNING message_id");
                st->bindNoCopy(1, task_id);
                st->bind(2, static_cast<std::int64_t>(now));
                if (!st->executeStep()) {
                    auto existing = task_locked(task_id);
                    if (!existing)
                        return std::move(existing).error();
                    return protocol_error(proto::code::kNopTaskAlreadyCompleted,
                                          "Task '" + task_id + "' is already " +
                                              std::string(proto::to_string(existing->state)));
                }
            }
            auto record = task_locked(task_id);
            if (record)
                txn.commit();
            return record;
        });
}

Result<void> SqliteStore::append_event(const std::string& task_id, const std::string& name,
                                       const std::string& detail_json,
                                       const std::optional<std::string>& lease_holder)
{
    return guarded<void>(
        [&] { return "Failed to append event '" + name + "' to task '" + task_id + "'"; },
        [&]() -> Result<void> {
            WriteTransaction txn(*this);
            NPS_TRY_VOID(append_event_locked(now_ms(), task_id, name, detail_json, lease_holder));
            txn.commit();
            return {};
        });
}

Result<void> SqliteStore::append_event_locked(std::int64_t now, const std::string& task_id, const std::string& name,
                                              const std::string& detail_json,
                                              const std::optional<std::string>& lease_holder)
{
    const std::string detail = NPS_TRY(checked_event_detail(task_id, name, detail_json));
    std::int64_t message_id = 0;
    {
        auto st = use(task_exists_, "SELECT message_id, lease_owner, lease_expiry FROM tasks WHERE task_id = ?1");
        st->bindNoCopy(1, task_id);
        if (!st->executeStep())
            return protocol_error(proto::code::kNopTaskNotFound, "Task '" + task_id + "' does not exist");
        message_id = st->getColumn(0).getInt64();
        if (lease_holder && (optional_text(*st, 1) != lease_holder || st->getColumn(2).getInt64() <= now))
            return lease_error(now, task_id, *lease_holder);
    }
    add_event(message_id, now, name.c_str(), detail);
    return {};
}

Result<std::vector<TaskEvent>> SqliteStore::events(const std::string& task_id)
{
    return guarded<std::vector<TaskEvent>>(
        [&] { return "Failed to read the events of task '" + task_id + "'"; },
        [&]() -> Result<std::vector<TaskEvent>> {
            auto st = use(event_list_,
                          "SELECT " NPS_STORE_EVENT_COLUMNS " FROM tasks t "
                          "JOIN events e ON e.message_id = t.message_id WHERE t.task_id = ?1 ORDER BY e.seq");
            st->bindNoCopy(1, task_id);
            std::vector<TaskEvent> out;
            while (st->executeStep())
                out.push_back(read_event(*st, 0));
            return out;
        });
}

Result<std::vector<FeedEvent>> SqliteStore::events_after(const EventQuery& query)
{
    return guarded<std::vector<FeedEvent>>(
        [&] {
            return query.task_id ? "Failed to read the events of task '" + *query.task_id + "'"
                                 : std::string("Failed to read the event log");
        },
        [&]() -> Result<std::vector<FeedEvent>> {
            const auto limit = static_cast<std::int64_t>(query.limit);
            auto st = query.task_id
                          ? use(feed_task_,
                                "SELECT t.task_id, " NPS_STORE_EVENT_COLUMNS " FROM tasks t "
                                "JOIN events e ON e.message_id = t.message_id WHERE t.task_id = ?1 AND e.seq > ?2 "
                                "ORDER BY e.seq LIMIT ?3")
                          : use(feed_all_,
                                "SELECT t.task_id, " NPS_STORE_EVENT_COLUMNS " FROM events e "
                                "JOIN tasks t ON t.message_id = e.message_id WHERE e.pos > ?2 "
                                "ORDER BY e.pos LIMIT ?3");
            if (query.task_id)
                st->bindNoCopy(1, *query.task_id);
            st->bind(2, query.after);
            st->bind(3, limit);
            std::vector<FeedEvent> out;
            while (st->executeStep())
                out.push_back(FeedEvent{st->getColumn(0).getString(), read_event(*st, 1)});
            return out;
        });
}

Result<std::int64_t> SqliteStore::last_event_pos()
{
    return guarded<std::int64_t>([] { return std::string("Failed to read the event log"); },
                                 [&]() -> Result<std::int64_t> {
                                     auto st = use(feed_last_, "SELECT coalesce(max(pos), 0) FROM events");
                                     return st->executeStep() ? st->getColumn(0).getInt64() : 0;
                                 });
}

}  // namespace nps::store::detail
