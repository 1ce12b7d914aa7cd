// SPDX-License-Identifier: Apache-2.0
// Task records, cancellation and the per-task event log on PostgreSQL, as
// ../tasks.cpp. cancel and append_event lock the task row before they read
// and write it: a cancel racing a claim or a completion sees the winner's
// state, and an explicit event takes its seq under the same row lock as the
// trigger-written events of the task's transitions.
#include <algorithm>
#include <limits>
#include <optional>

#include "nps/base/limits.hpp"
#include "nps/proto/error_codes.hpp"
#include "../progress_rules.hpp"
#include "../state_columns.hpp"
#include "pg_store.hpp"

namespace nps::store::pg {

namespace {

// How old the event after a gap in pos must be before the all-tasks feed
// passes the gap (events_after).
constexpr std::int64_t kFeedGapGraceMs = 5000;

constexpr const char* kGetTask =
    "SELECT " NPS_PG_TASK_COLUMNS " FROM tasks t "
    "LEFT JOIN frames f ON f.message_id = t.message_id WHERE t.task_id = $1";
// message_id grows with every deposit, so DESC is newest first. The payload
// is left out (see TaskListFilter). task_id_contains is a literal substring:
// strpos, not LIKE (no wildcards to escape).
constexpr const char* kListTasks =
    "SELECT t.task_id, t.nid, t.state, t.error_code, t.error_message, t.aggregate, "
    "t.dag_hash, t.dedup_key, t.lease_owner, t.lease_expiry, t.claims, t.created_at, "
    "t.updated_at, NULL::bytea, t.finished_at, t.results_expire_at, t.results_expired_at "
    "FROM tasks t WHERE ($1::text IS NULL OR t.state = $1::text) "
    "AND ($2::text IS NULL OR t.nid = $2::text) AND ($4::bigint IS NULL OR t.created_at > $4::bigint) "
    "AND ($5::text IS NULL OR strpos(t.task_id, $5::text) > 0) ORDER BY t.message_id DESC LIMIT $3::bigint";
// COLLATE "C": byte order, as SQLite's BINARY collation sorts.
constexpr const char* kCountStates =
    "SELECT state, count(*) FROM tasks GROUP BY state ORDER BY state COLLATE \"C\"";
constexpr const char* kLockTaskState = "SELECT state FROM tasks WHERE task_id = $1 FOR UPDATE";
// Ending the lease fences the runner that held it: its renew and complete
// now answer NOP-CLAIM-CONFLICT. The tasks_transition trigger logs
// task:cancelled, tasks_finished stamps finished_at (RETURNING shows it).
constexpr const char* kCancelTask =
    "WITH t AS (UPDATE tasks SET queue = 'done', state = 'CANCELLED', error_code = 'NOP-TASK-CANCELLED', "
    "error_message = 'cancelled on request', lease_owner = NULL, lease_expiry = 0, updated_at = $2 "
    "WHERE task_id = $1 AND state NOT IN " NPS_PG_TERMINAL_TASK_STATES " RETURNING *) "
    "SELECT " NPS_PG_TASK_COLUMNS " FROM t LEFT JOIN frames f ON f.message_id = t.message_id";
constexpr const char* kLockTaskLease =
    "SELECT message_id, lease_owner, lease_expiry FROM tasks WHERE task_id = $1 FOR UPDATE";
constexpr const char* kListEvents =
    "SELECT " NPS_PG_EVENT_COLUMNS " FROM tasks t "
    "JOIN events e ON e.message_id = t.message_id WHERE t.task_id = $1 ORDER BY e.seq";
constexpr const char* kFeedTask =
    "SELECT t.task_id, " NPS_PG_EVENT_COLUMNS " FROM tasks t "
    "JOIN events e ON e.message_id = t.message_id WHERE t.task_id = $1 AND e.seq > $2::bigint "
    "ORDER BY e.seq LIMIT $3::bigint";
constexpr const char* kFeedAll =
    "SELECT t.task_id, " NPS_PG_EVENT_COLUMNS " FROM events e "
    "JOIN tasks t ON t.message_id = e.message_id WHERE e.pos > $1::bigint "
    "ORDER BY e.pos LIMIT $2::bigint";
constexpr const char* kLastEventPos = "SELECT coalesce(max(pos), 0) FROM events";

}  // namespace

Result<TaskRecord> PostgresStore::task(const std::string& task_id)
{
    return guarded<TaskRecord>([&] { return "Failed to read task '" + task_id + "'"; },
                               [&]() -> Result<TaskRecord> {
                                   Params p;
                                   p.text(task_id);
                                   const Rows rows = conn().query(kGetTask, p);
                                   if (rows.empty())
                                       return protocol_error(proto::code::kNopTaskNotFound,
                                                             "Task '" + task_id + "' does not exist");
                                   return read_task(rows, 0, 0);
                               });
}

Result<std::vector<TaskRecord>> PostgresStore::list_tasks(const TaskListFilter& filter)
{
    const std::uint32_t limit =
        filter.limit == 0 ? limits::kDefaultTaskListLimit : std::min(filter.limit, limits::kMaxTaskListLimit);
    return guarded<std::vector<TaskRecord>>(
        [&] { return std::string("Failed to list tasks"); },
        [&]() -> Result<std::vector<TaskRecord>> {
            Params p;
            p.optional_text(detail::state_text(filter.state))
                .optional_text(filter.nid)
                .integer(limit)
                .optional_integer(filter.created_after_ms)
                .optional_text(filter.task_id_contains);
            const Rows rows = conn().query(kListTasks, p);
            std::vector<TaskRecord> out;
            out.reserve(static_cast<std::size_t>(rows.size()));
            for (int i = 0; i < rows.size(); ++i)
                out.push_back(read_task(rows, i, 0));
            return out;
        });
}

Result<std::vector<TaskStateCount>> PostgresStore::task_state_counts()
{
    return guarded<std::vector<TaskStateCount>>(
        [&] { return std::string("Failed to count tasks by state"); },
        [&]() -> Result<std::vector<TaskStateCount>> {
            const Rows rows = conn().query(kCountStates);
            std::vector<TaskStateCount> out;
            out.reserve(static_cast<std::size_t>(rows.size()));
            for (int i = 0; i < rows.size(); ++i)
                out.push_back({.state = detail::task_state_column(rows.text(i, 0), ""), .tasks = rows.integer(i, 1)});
            return out;
        });
}

Result<TaskRecord> PostgresStore::cancel(const std::string& task_id)
{
    return guarded<TaskRecord>(
        [&] { return "Failed to cancel task '" + task_id + "'"; },
        [&]() -> Result<TaskRecord> {
            Work w(*this);
            Connection& c = w.conn();
            {
                Params p;
                p.text(task_id);
                const Rows locked = c.query(kLockTaskState, p);
                if (locked.empty())
                    return protocol_error(proto::code::kNopTaskNotFound, "Task '" + task_id + "' does not exist");
                const proto::TaskState state = detail::task_state_column(locked.text(0, 0), task_id);
                if (proto::is_terminal(state))
                    return protocol_error(proto::code::kNopTaskAlreadyCompleted,
                                          "Task '" + task_id + "' is already " + std::string(proto::to_string(state)));
            }
            Params p;
            p.text(task_id).integer(w.now());
            const Rows rows = c.query(kCancelTask, p);
            if (rows.empty())  // cannot happen under the row lock; answer as SQLite would
                return protocol_error(proto::code::kNopTaskAlreadyCompleted,
                                      "Task '" + task_id + "' is already finished");
            TaskRecord record = read_task(rows, 0, 0);
            w.commit();
            return record;
        });
}

Result<void> PostgresStore::append_event(const std::string& task_id, const std::string& name,
                                         const std::string& detail_json,
                                         const std::optional<std::string>& lease_holder)
{
    return guarded<void>(
        [&] { return "Failed to append event '" + name + "' to task '" + task_id + "'"; },
        [&]() -> Result<void> {
            Work w(*this);
            NPS_TRY_VOID(append_event_locked(w, task_id, name, detail_json, lease_holder));
            w.commit();
            return {};
        });
}

Result<void> PostgresStore::append_event_locked(Work& w, const std::string& task_id, const std::string& name,
                                                const std::string& detail_json,
                                                const std::optional<std::string>& lease_holder)
{
    const std::string detail = NPS_TRY(detail::checked_event_detail(task_id, name, detail_json));
    Connection& c = w.conn();
    const std::int64_t now = w.now();
    std::int64_t message_id = 0;
    {
        // The row lock also orders this event's seq after those the
        // triggers write (they run under the lock of their UPDATE).
        Params p;
        p.text(task_id);
        const Rows rows = c.query(kLockTaskLease, p);
        if (rows.empty())
            return protocol_error(proto::code::kNopTaskNotFound, "Task '" + task_id + "' does not exist");
        message_id = rows.integer(0, 0);
        if (lease_holder && (rows.optional_text(0, 1) != lease_holder || rows.integer(0, 2) <= now))
            return lease_error(c, now, task_id, *lease_holder);
    }
    add_event(c, message_id, now, name, detail);
    return {};
}

Result<std::vector<TaskEvent>> PostgresStore::events(const std::string& task_id)
{
    return guarded<std::vector<TaskEvent>>(
        [&] { return "Failed to read the events of task '" + task_id + "'"; },
        [&]() -> Result<std::vector<TaskEvent>> {
            Params p;
            p.text(task_id);
            const Rows rows = conn().query(kListEvents, p);
            std::vector<TaskEvent> out;
            out.reserve(static_cast<std::size_t>(rows.size()));
            for (int i = 0; i < rows.size(); ++i)
                out.push_back(read_event(rows, i, 0));
            return out;
        });
}

Result<std::vector<FeedEvent>> PostgresStore::events_after(const EventQuery& query)
{
    return guarded<std::vector<FeedEvent>>(
        [&] {
            return query.task_id ? "Failed to read the events of task '" + *query.task_id + "'"
                                 : std::string("Failed to read the event log");
        },
        [&]() -> Result<std::vector<FeedEvent>> {
            // SQLite reads a negative LIMIT as "no limit"; PostgreSQL refuses one.
            const auto limit = static_cast<std::int64_t>(
                std::min<std::size_t>(query.limit, static_cast<std::size_t>(std::numeric_limits<std::int64_t>::max())));
            Params p;
            if (query.task_id)
                p.text(*query.task_id);
            p.integer(query.after).integer(limit);
            const Rows rows = conn().query(query.task_id ? kFeedTask : kFeedAll, p);
            std::vector<FeedEvent> out;
            out.reserve(static_cast<std::size_t>(rows.size()));
            std::int64_t expected = query.after + 1;
            std::optional<std::int64_t> now;
            for (int i = 0; i < rows.size(); ++i) {
                FeedEvent e{rows.text(i, 0), read_event(rows, i, 1)};
                // The all-tasks feed resumes after the last pos it gave out,
                // but a pos is taken at insert, not at commit: a gap may be
                // an event whose transaction is still open, which would
                // commit behind the cursor and never be seen. So the feed
                // stops before a gap until the event after it is
                // kFeedGapGraceMs old (the store's transactions last
                // milliseconds; a gap still there by then is a rollback or
                // a pruned task, and stays).
                if (!query.task_id && e.event.pos != expected) {
                    if (!now)
                        now = now_ms();
                    if (e.event.at_ms > *now - kFeedGapGraceMs)
                        break;
                }
                expected = e.event.pos + 1;
                out.push_back(std::move(e));
            }
            return out;
        });
}

Result<std::int64_t> PostgresStore::last_event_pos()
{
    return guarded<std::int64_t>([] { return std::string("Failed to read the event log"); },
                                 [&]() -> Result<std::int64_t> {
                                     const Rows rows = conn().query(kLastEventPos);
                                     return rows.empty() ? 0 : rows.integer(0, 0);
                                 });
}

}  // namespace nps::store::pg
