// SPDX-License-Identifier: Apache-2.0
// The report outbox: claiming, finishing and counting the rows the schema's
// triggers write (schema.cpp, migration 3; docs/reporting.md).
#include <algorithm>

#include "nps/base/limits.hpp"
#include "sqlite_store.hpp"

namespace nps::store::detail {

namespace {

#define NPS_STORE_REPORT_COLUMNS                                                                        \
    "id, kind, status, task_id, node_id, dedup_key, state, attempts, error_code, error_message, result, " \
    "killed_reason, runner_nid, callback_url, recorded_at, tries, next_attempt_at, lease_until, last_error, "  \
    "reply_to"

// Due rows of a claim: pending, not waiting for a retry, not leased, and no
// earlier pending row of the same kind and (task, node) — that one goes
// first (a task's callback and its completion message do not wait for each
// other). ?2 is the kind left out (NULL: none); claims bind ?1 to now.
#define NPS_STORE_REPORT_DUE                                                                    \
    "o.status = 'pending' AND (?2 IS NULL OR o.kind <> ?2) AND NOT EXISTS ("                   \
    "SELECT 1 FROM report_outbox p WHERE p.status = 'pending' AND p.task_id = o.task_id "      \
    "AND p.node_id = o.node_id AND p.kind = o.kind AND p.id < o.id)"

ReportKind report_kind(const std::string& text)
{
    return text == "callback" ? ReportKind::callback : text == "reply" ? ReportKind::reply : ReportKind::node;
}

ReportRow read_report(const SQLite::Statement& st)
{
    ReportRow r;
    r.id = st.getColumn(0).getInt64();
    r.kind = report_kind(st.getColumn(1).getString());
    r.status = st.getColumn(2).getString() == "dead" ? ReportStatus::dead : ReportStatus::pending;
    r.task_id = st.getColumn(3).getString();
    r.node_id = st.getColumn(4).getString();
    r.dedup_key = st.getColumn(5).getString();
    r.state = st.getColumn(6).getString();
    r.attempts = st.getColumn(7).getUInt();
    r.error_code = optional_text(st, 8);
    r.error_message = optional_text(st, 9);
    r.result_json = optional_text(st, 10);
    r.killed_reason = optional_text(st, 11);
    r.runner_nid = optional_text(st, 12);
    r.callback_url = optional_text(st, 13);
    r.recorded_at_ms = st.getColumn(14).getInt64();
    r.tries = st.getColumn(15).getUInt();
    r.next_attempt_at_ms = st.getColumn(16).getInt64();
    r.lease_until_ms = st.getColumn(17).getInt64();
    r.last_error = optional_text(st, 18);
    r.reply_to = optional_text(st, 19);
    return r;
}

void bind_kinds(SQLite::Statement& st, int index, ReportKinds kinds)
{
    if (kinds == ReportKinds::no_node_reports)
        st.bind(index, "node");
    else
        st.bind(index);
}

}  // namespace

Result<std::vector<ReportRow>> SqliteStore::claim_reports(const ReportClaim& claim)
{
    return guarded<std::vector<ReportRow>>(
        [&] { return std::string("Failed to claim reports from the outbox"); },
        [&]() -> Result<std::vector<ReportRow>> {
            const std::int64_t now = now_ms();
            WriteTransaction txn(*this);
            std::vector<ReportRow> rows;
            {
                auto st = use(report_claim_,
                              "UPDATE report_outbox SET lease_owner = ?3, lease_until = ?4 WHERE id IN ("
                              "SELECT o.id FROM report_outbox o WHERE " NPS_STORE_REPORT_DUE
                              " AND o.next_attempt_at <= ?1 AND o.lease_until <= ?1 ORDER BY o.id LIMIT ?5) "
                              "RETURNING " NPS_STORE_REPORT_COLUMNS);
                st->bind(1, static_cast<std::int64_t>(now));
                bind_kinds(*st, 2, claim.kinds);
                st->bindNoCopy(3, claim.owner);
                st->bind(4, static_cast<std::int64_t>(now + std::max<std::int64_t>(claim.lease_ms, 1)));
                st->bind(5, static_cast<std::int64_t>(std::max<std::uint32_t>(claim.max_rows, 1)));
                while (st->executeStep()) {
                    rows.push_back(read_report(*st));
                    rows.back().claimed_at_ms = now;
                }
            }
            txn.commit();
            // RETURNING yields rows in no promised order; delivery order is id order.
            std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
            return rows;
        });
}

Result<bool> SqliteStore::mark_report_delivered(std::int64_t id, const std::string& owner,
                                                const std::string& detail_json)
{
    return guarded<bool>(
        [&] { return "Failed to mark report " + std::to_string(id) + " delivered"; },
        [&]() -> Result<bool> {
            const std::int64_t now = now_ms();
            WriteTransaction txn(*this);
            std::string kind, task_id;
            {
                auto st = use(report_delivered_,
                              "DELETE FROM report_outbox WHERE id = ?1 AND lease_owner = ?2 AND status = 'pending' "
                              "RETURNING kind, task_id");
                st->bind(1, static_cast<std::int64_t>(id));
                st->bindNoCopy(2, owner);
                if (!st->executeStep())
                    return false;
                kind = st->getColumn(0).getString();
                task_id = st->getColumn(1).getString();
            }
            if (kind == "callback" || kind == "reply") {  // "callback:delivered", "reply:delivered"
                auto st = use(report_task_key_, "SELECT message_id FROM tasks WHERE task_id = ?1");
                st->bindNoCopy(1, task_id);
                if (st->executeStep()) {
                    const std::int64_t message_id = st->getColumn(0).getInt64();
                    st->tryReset();
                    add_event(message_id, now, (kind + ":delivered").c_str(), detail_json.empty() ? "{}" : detail_json);
                }
            }
            txn.commit();
            return true;
        });
}

Result<bool> SqliteStore::reschedule_report(const ReportRetry& retry)
{
    return guarded<bool>(
        [&] { return "Failed to reschedule report " + std::to_string(retry.id); },
        [&]() -> Result<bool> {
            WriteTransaction txn(*this);
            bool changed = false;
            {
                auto st = use(report_retry_,
                              "UPDATE report_outbox SET tries = tries + 1, next_attempt_at = ?3, last_error = ?4, "
                              "lease_owner = NULL, lease_until = 0 "
                              "WHERE id = ?1 AND lease_owner = ?2 AND status = 'pending'");
                st->bind(1, static_cast<std::int64_t>(retry.id));
                st->bindNoCopy(2, retry.owner);
                st->bind(3, static_cast<std::int64_t>(retry.next_attempt_at_ms));
                st->bindNoCopy(4, retry.error);
                changed = st->exec() > 0;
            }
            txn.commit();
            return changed;
        });
}

Result<bool> SqliteStore::mark_report_dead(std::int64_t id, const std::string& owner, const std::string& error,
                                           const std::string& detail_json)
{
    return guarded<bool>(
        [&] { return "Failed to mark report " + std::to_string(id) + " dead"; },
        [&]() -> Result<bool> {
            const std::int64_t now = now_ms();
            WriteTransaction txn(*this);
            std::string kind, task_id;
            {
                auto st = use(report_dead_,
                              "UPDATE report_outbox SET status = 'dead', tries = tries + 1, last_error = ?3, "
                              "lease_owner = NULL, lease_until = 0 "
                              "WHERE id = ?1 AND lease_owner = ?2 AND status = 'pending' RETURNING kind, task_id");
                st->bind(1, static_cast<std::int64_t>(id));
                st->bindNoCopy(2, owner);
                st->bindNoCopy(3, error);
                if (!st->executeStep())
                    return false;
                kind = st->getColumn(0).getString();
                task_id = st->getColumn(1).getString();
            }
            {
                auto st = use(report_task_key_, "SELECT message_id FROM tasks WHERE task_id = ?1");
                st->bindNoCopy(1, task_id);
                if (st->executeStep()) {
                    const std::int64_t message_id = st->getColumn(0).getInt64();
                    st->tryReset();
                    add_event(message_id, now, kind == "node" ? "report:abandoned" : (kind + ":abandoned").c_str(),
                              detail_json.empty() ? "{}" : detail_json);
                }
            }
            txn.commit();
            return true;
        });
}

Result<std::int64_t> SqliteStore::release_reports(const std::string& owner, std::int64_t id)
{
    return guarded<std::int64_t>(
        [&] { return "Failed to release the reports leased by '" + owner + "'"; },
        [&]() -> Result<std::int64_t> {
            WriteTransaction txn(*this);
            std::int64_t released = 0;
            {
                auto st = use(report_release_,
                              "UPDATE report_outbox SET lease_owner = NULL, lease_until = 0 "
                              "WHERE lease_owner = ?1 AND status = 'pending' AND (?2 = 0 OR id = ?2)");
                st->bindNoCopy(1, owner);
                st->bind(2, static_cast<std::int64_t>(id));
                released = st->exec();
            }
            txn.commit();
            return released;
        });
}

Result<std::int64_t> SqliteStore::discard_node_reports()
{
    return guarded<std::int64_t>(
        [&] { return std::string("Failed to discard node reports"); },
        [&]() -> Result<std::int64_t> {
            {
                // A runner without a task store calls this at every wake: take
                // the write lock only when there is something to delete.
                auto st = use(report_any_node_,
                              "SELECT EXISTS (SELECT 1 FROM report_outbox WHERE kind = 'node' AND status = 'pending')");
                if (!st->executeStep() || st->getColumn(0).getInt() == 0)
                    return std::int64_t{0};
            }
            WriteTransaction txn(*this);
            std::int64_t discarded = 0;
            {
                auto st = use(report_discard_, "DELETE FROM report_outbox WHERE kind = 'node' AND status = 'pending'");
                discarded = st->exec();
            }
            txn.commit();
            return discarded;
        });
}

Result<ReportCounts> SqliteStore::report_counts()
{
    return guarded<ReportCounts>(
        [&] { return std::string("Failed to count the report outbox"); },
        [&]() -> Result<ReportCounts> {
            auto st = use(report_counts_,
                          "SELECT coalesce(sum(status = 'pending'), 0), coalesce(sum(status = 'dead'), 0) "
                          "FROM report_outbox");
            ReportCounts counts;
            if (st->executeStep()) {
                counts.backlog = st->getColumn(0).getInt64();
                counts.dead = st->getColumn(1).getInt64();
            }
            return counts;
        });
}

Result<std::optional<std::int64_t>> SqliteStore::report_due_in_ms(ReportKinds kinds)
{
    return guarded<std::optional<std::int64_t>>(
        [&] { return std::string("Failed to find the next due report"); },
        [&]() -> Result<std::optional<std::int64_t>> {
            auto st = use(report_due_,
                          "SELECT min(max(o.next_attempt_at, o.lease_until)) FROM report_outbox o WHERE "
                          NPS_STORE_REPORT_DUE);
            bind_kinds(*st, 2, kinds);  // ?1 (now) is not used here
            if (!st->executeStep() || st->isColumnNull(0))
                return std::optional<std::int64_t>{};
            return std::optional<std::int64_t>{st->getColumn(0).getInt64() - now_ms()};
        });
}

Result<std::vector<ReportRow>> SqliteStore::dead_reports(std::uint32_t limit)
{
    return guarded<std::vector<ReportRow>>(
        [&] { return std::string("Failed to list dead reports"); },
        [&]() -> Result<std::vector<ReportRow>> {
            auto st = use(report_dead_list_,
                          "SELECT " NPS_STORE_REPORT_COLUMNS " FROM report_outbox WHERE status = 'dead' "
                          "ORDER BY id DESC LIMIT ?1");
            const std::uint32_t n = limit == 0 ? limits::kDefaultTaskListLimit
                                               : std::min(limit, limits::kMaxTaskListLimit);
            st->bind(1, static_cast<std::int64_t>(n));
            std::vector<ReportRow> rows;
            while (st->executeStep())
                rows.push_back(read_report(*st));
            return rows;
        });
}

}  // namespace nps::store::detail
