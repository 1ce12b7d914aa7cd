// SPDX-License-Identifier: Apache-2.0
// The report outbox on PostgreSQL: claiming, finishing and counting the rows
// the schema's triggers write (pg_schema.cpp; docs/reporting.md). The SQLite
// twin is ../outbox.cpp: same rules, same messages.
//
// Concurrency (READ COMMITTED, deliverers on several hosts):
//  - A claim locks its due rows with FOR UPDATE SKIP LOCKED and leases them
//    in the same statement, so two deliverers never take one row. A row
//    another deliverer is claiming or finishing is still 'pending' to the
//    due rule's NOT EXISTS, so the later rows of its (task, node) wait.
//  - The marks are fenced by lease_owner in their UPDATE/DELETE. One that
//    appends a task event first locks the task row (tasks, then outbox row:
//    the order of remove_task and of the triggers that write rows), so the
//    event's seq is the task's last + 1 and no lock cycle forms.
#include <algorithm>
#include <string>
#include <string_view>

#include "nps/base/limits.hpp"
#include "pg_store.hpp"

namespace nps::store::pg {

namespace {

#define NPS_PG_REPORT_COLUMNS                                                                             \
    "id, kind, status, task_id, node_id, dedup_key, state, attempts, error_code, error_message, result, " \
    "killed_reason, runner_nid, callback_url, recorded_at, tries, next_attempt_at, lease_until, last_error, " \
    "reply_to"

// Due rows (over `report_outbox o`): pending, of the kinds asked for, and no
// earlier pending row of the same kind and (task, node) — that one goes
// first (a task's callback and its completion message do not wait for each
// other). `kind` is the parameter naming the kind left out (NULL: none).
#define NPS_PG_REPORT_DUE(kind)                                                                   \
    "o.status = 'pending' AND (" kind "::text IS NULL OR o.kind <> " kind "::text) AND NOT EXISTS (" \
    "SELECT 1 FROM report_outbox p WHERE p.status = 'pending' AND p.task_id = o.task_id "            \
    "AND p.node_id = o.node_id AND p.kind = o.kind AND p.id < o.id)"

// $1 now, $2 the kind left out, $3 owner, $4 lease end, $5 max rows. The
// lease test sits on the locked row itself, so a row another deliverer
// leased after this statement's snapshot is re-checked on its new version
// and dropped. RETURNING's order is unspecified: the caller sorts.
constexpr const char* kClaimReports =
    "WITH due AS (SELECT o.id AS due_id FROM report_outbox o WHERE " NPS_PG_REPORT_DUE("$2")
    " AND o.next_attempt_at <= $1::bigint AND o.lease_until <= $1::bigint "
    "ORDER BY o.id LIMIT $5 FOR UPDATE SKIP LOCKED) "
    "UPDATE report_outbox SET lease_owner = $3, lease_until = $4 FROM due WHERE id = due.due_id "
    "RETURNING " NPS_PG_REPORT_COLUMNS;

// The task row of a report whose mark writes an event, locked before the
// report row (see the top of the file). No row: the report or its task is gone.
constexpr const char* kLockEventTaskOfDelivered =
    "SELECT t.message_id FROM report_outbox o JOIN tasks t ON t.task_id = o.task_id "
    "WHERE o.id = $1 AND o.kind <> 'node' FOR UPDATE OF t";
constexpr const char* kLockEventTaskOfReport =
    "SELECT t.message_id FROM report_outbox o JOIN tasks t ON t.task_id = o.task_id "
    "WHERE o.id = $1 FOR UPDATE OF t";

constexpr const char* kDeliveredReport =
    "DELETE FROM report_outbox WHERE id = $1 AND lease_owner = $2 AND status = 'pending' RETURNING kind";

constexpr const char* kRescheduleReport =
    "UPDATE report_outbox SET tries = tries + 1, next_attempt_at = $3, last_error = $4, "
    "lease_owner = NULL, lease_until = 0 "
    "WHERE id = $1 AND lease_owner = $2 AND status = 'pending'";

constexpr const char* kDeadReport =
    "UPDATE report_outbox SET status = 'dead', tries = tries + 1, last_error = $3, "
    "lease_owner = NULL, lease_until = 0 "
    "WHERE id = $1 AND lease_owner = $2 AND status = 'pending' RETURNING kind";

constexpr const char* kReleaseReports =
    "UPDATE report_outbox SET lease_owner = NULL, lease_until = 0 "
    "WHERE lease_owner = $1 AND status = 'pending' AND ($2::bigint = 0 OR id = $2::bigint)";

constexpr const char* kAnyNodeReport =
    "SELECT EXISTS (SELECT 1 FROM report_outbox WHERE kind = 'node' AND status = 'pending')";
constexpr const char* kDiscardNodeReports = "DELETE FROM report_outbox WHERE kind = 'node' AND status = 'pending'";

constexpr const char* kReportCounts =
    "SELECT count(*) FILTER (WHERE status = 'pending'), count(*) FILTER (WHERE status = 'dead') "
    "FROM report_outbox";

// $1 the kind left out.
// $1 the kind left out, $2 now (NULL: the database's clock).
constexpr const char* kReportDueIn =
    "SELECT min(greatest(o.next_attempt_at, o.lease_until)) - coalesce($2::bigint, nps_now_ms()) "
    "FROM report_outbox o WHERE " NPS_PG_REPORT_DUE("$1");

constexpr const char* kDeadReports =
    "SELECT " NPS_PG_REPORT_COLUMNS " FROM report_outbox WHERE status = 'dead' ORDER BY id DESC LIMIT $1";

ReportKind report_kind(const std::string& text)
{
    return text == "callback" ? ReportKind::callback : text == "reply" ? ReportKind::reply : ReportKind::node;
}

ReportRow read_report(const Rows& rows, int row)
{
    ReportRow r;
    r.id = rows.integer(row, 0);
    r.kind = report_kind(rows.text(row, 1));
    r.status = rows.text(row, 2) == "dead" ? ReportStatus::dead : ReportStatus::pending;
    r.task_id = rows.text(row, 3);
    r.node_id = rows.text(row, 4);
    r.dedup_key = rows.text(row, 5);
    r.state = rows.text(row, 6);
    r.attempts = static_cast<std::uint32_t>(rows.integer(row, 7));
    r.error_code = rows.optional_text(row, 8);
    r.error_message = rows.optional_text(row, 9);
    r.result_json = rows.optional_text(row, 10);
    r.killed_reason = rows.optional_text(row, 11);
    r.runner_nid = rows.optional_text(row, 12);
    r.callback_url = rows.optional_text(row, 13);
    r.recorded_at_ms = rows.integer(row, 14);
    r.tries = static_cast<std::uint32_t>(rows.integer(row, 15));
    r.next_attempt_at_ms = rows.integer(row, 16);
    r.lease_until_ms = rows.integer(row, 17);
    r.last_error = rows.optional_text(row, 18);
    r.reply_to = rows.optional_text(row, 19);
    return r;
}

Params& kinds_param(Params& params, ReportKinds kinds)
{
    if (kinds == ReportKinds::no_node_reports)
        return params.text("node");
    return params.null();
}

// The task's message_id when the lock query found (and locked) its row.
std::optional<std::int64_t> lock_event_task(Connection& conn, const char* sql, std::int64_t report_id)
{
    Params p;
    p.integer(report_id);
    const Rows rows = conn.query(sql, p);
    if (rows.empty())
        return std::nullopt;
    return rows.integer(0, 0);
}

}  // namespace

Result<std::vector<ReportRow>> PostgresStore::claim_reports(const ReportClaim& claim)
{
    return guarded<std::vector<ReportRow>>(
        [&] { return std::string("Failed to claim reports from the outbox"); },
        [&]() -> Result<std::vector<ReportRow>> {
            Work w(*this);
            const std::int64_t now = w.now();
            Params p;
            p.integer(now);
            kinds_param(p, claim.kinds);
            p.text(claim.owner);
            p.integer(now + std::max<std::int64_t>(claim.lease_ms, 1));
            p.integer(static_cast<std::int64_t>(std::max<std::uint32_t>(claim.max_rows, 1)));
            const Rows rows = w.conn().query(kClaimReports, p);
            std::vector<ReportRow> out;
            out.reserve(static_cast<std::size_t>(rows.size()));
            for (int i = 0; i < rows.size(); ++i) {
                out.push_back(read_report(rows, i));
                out.back().claimed_at_ms = now;
            }
            w.commit();
            // RETURNING yields rows in no promised order; delivery order is id order.
            std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
            return out;
        });
}

Result<bool> PostgresStore::mark_report_delivered(std::int64_t id, const std::string& owner,
                                                  const std::string& detail_json)
{
    return guarded<bool>(
        [&] { return "Failed to mark report " + std::to_string(id) + " delivered"; },
        [&]() -> Result<bool> {
            Work w(*this);
            // A callback or reply row appends an event: its task row first.
            const auto message_id = lock_event_task(w.conn(), kLockEventTaskOfDelivered, id);
            Params p;
            p.integer(id);
            p.text(owner);
            const Rows rows = w.conn().query(kDeliveredReport, p);
            if (rows.empty())
                return false;
            const std::string kind = rows.text(0, 0);
            if ((kind == "callback" || kind == "reply") && message_id)  // "callback:delivered", "reply:delivered"
                add_event(w.conn(), *message_id, w.now(), kind + ":delivered", detail_json.empty() ? "{}" : detail_json);
            w.commit();
            return true;
        });
}

Result<bool> PostgresStore::reschedule_report(const ReportRetry& retry)
{
    return guarded<bool>(
        [&] { return "Failed to reschedule report " + std::to_string(retry.id); },
        [&]() -> Result<bool> {
            Work w(*this);
            Params p;
            p.integer(retry.id);
            p.text(retry.owner);
            p.integer(retry.next_attempt_at_ms);
            p.text(retry.error);  // Params::text makes it valid UTF-8
            const bool changed = w.conn().query(kRescheduleReport, p).affected() > 0;
            w.commit();
            return changed;
        });
}

Result<bool> PostgresStore::mark_report_dead(std::int64_t id, const std::string& owner, const std::string& error,
                                             const std::string& detail_json)
{
    return guarded<bool>(
        [&] { return "Failed to mark report " + std::to_string(id) + " dead"; },
        [&]() -> Result<bool> {
            Work w(*this);
            // Every kind appends an event: its task row first.
            const auto message_id = lock_event_task(w.conn(), kLockEventTaskOfReport, id);
            Params p;
            p.integer(id);
            p.text(owner);
            p.text(error);
            const Rows rows = w.conn().query(kDeadReport, p);
            if (rows.empty())
                return false;
            const std::string kind = rows.text(0, 0);
            if (message_id)
                add_event(w.conn(), *message_id, w.now(), kind == "node" ? "report:abandoned" : kind + ":abandoned",
                          detail_json.empty() ? "{}" : detail_json);
            w.commit();
            return true;
        });
}

Result<std::int64_t> PostgresStore::release_reports(const std::string& owner, std::int64_t id)
{
    return guarded<std::int64_t>(
        [&] { return "Failed to release the reports leased by '" + owner + "'"; },
        [&]() -> Result<std::int64_t> {
            Work w(*this);
            Params p;
            p.text(owner);
            p.integer(id);
            const std::int64_t released = w.conn().query(kReleaseReports, p).affected();
            w.commit();
            return released;
        });
}

Result<std::int64_t> PostgresStore::discard_node_reports()
{
    return guarded<std::int64_t>(
        [&] { return std::string("Failed to discard node reports"); },
        [&]() -> Result<std::int64_t> {
            // A runner without a task store calls this at every wake: open a
            // transaction only when there is something to delete.
            {
                const Rows any = conn().query(kAnyNodeReport);
                if (any.empty() || !any.boolean(0, 0))
                    return std::int64_t{0};
            }
            Work w(*this);
            const std::int64_t discarded = w.conn().query(kDiscardNodeReports).affected();
            w.commit();
            return discarded;
        });
}

Result<ReportCounts> PostgresStore::report_counts()
{
    return guarded<ReportCounts>(
        [&] { return std::string("Failed to count the report outbox"); },
        [&]() -> Result<ReportCounts> {
            const Rows rows = conn().query(kReportCounts);
            ReportCounts counts;
            if (!rows.empty()) {
                counts.backlog = rows.integer(0, 0);
                counts.dead = rows.integer(0, 1);
            }
            return counts;
        });
}

Result<std::optional<std::int64_t>> PostgresStore::report_due_in_ms(ReportKinds kinds)
{
    return guarded<std::optional<std::int64_t>>(
        [&] { return std::string("Failed to find the next due report"); },
        [&]() -> Result<std::optional<std::int64_t>> {
            Params p;
            kinds_param(p, kinds);
            if (database_clock())
                p.null();
            else
                p.integer(clock().now_ms());
            const Rows rows = conn().query(kReportDueIn, p);
            if (rows.empty() || rows.is_null(0, 0))
                return std::optional<std::int64_t>{};
            return std::optional<std::int64_t>{rows.integer(0, 0)};
        });
}

Result<std::vector<ReportRow>> PostgresStore::dead_reports(std::uint32_t limit)
{
    return guarded<std::vector<ReportRow>>(
        [&] { return std::string("Failed to list dead reports"); },
        [&]() -> Result<std::vector<ReportRow>> {
            const std::uint32_t n = limit == 0 ? limits::kDefaultTaskListLimit
                                               : std::min(limit, limits::kMaxTaskListLimit);
            Params p;
            p.integer(static_cast<std::int64_t>(n));
            const Rows rows = conn().query(kDeadReports, p);
            std::vector<ReportRow> out;
            out.reserve(static_cast<std::size_t>(rows.size()));
            for (int i = 0; i < rows.size(); ++i)
                out.push_back(read_report(rows, i));
            return out;
        });
}

}  // namespace nps::store::pg
