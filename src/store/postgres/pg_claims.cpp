// SPDX-License-Identifier: Apache-2.0
// The task-claim protocol (NPS-5 §8.1, CR-0007 §4.1–4.2) on PostgreSQL: head
// claims, batch claims and claims of a named task (../claims.cpp is the
// SQLite twin; outcomes and errors match).
//
// The claim is still one UPDATE … RETURNING that takes the lease, sets the
// task RUNNING and (through the tasks_transition trigger) logs
// lease:granted / lease:reclaimed. What SQLite's single writer gave for free
// is a lock here:
//  - A head claim picks its rows in a CTE with FOR UPDATE SKIP LOCKED: a row
//    another claimer holds is passed over, and a row changed since the
//    statement's snapshot is re-checked against the WHERE clause before it
//    is locked. A plain `IN (SELECT … LIMIT n)` would not be re-checked and
//    hands one message to two runners (docs research, postgresql.md §3.6).
//    The UPDATE matches the locked ids with `= ANY(ARRAY(…))`, which plans
//    as an InitPlan over tasks_pkey. Claim order is FIFO by priority for
//    one claimer; concurrent claimers skip each other's rows, so a batch
//    may come back shorter than the claimable messages.
//  - A claim of a named task locks its row (SELECT … FOR UPDATE) before it
//    looks at it, so the decision and the UPDATE see the same row.
//  - A head claim is one statement outside any explicit transaction (one
//    round trip, not BEGIN / claim / COMMIT): it reads "now" itself
//    (nps_now_ms(), the statement's start), so nothing needs to be decided
//    between its steps.
#include <algorithm>

#include "nps/base/limits.hpp"
#include "nps/proto/error_codes.hpp"
#include "nps/store/write_health.hpp"
#include "../lease_rules.hpp"
#include "../state_columns.hpp"
#include "pg_store.hpp"

namespace nps::store::pg {

namespace {

// Columns the claim UPDATEs return, in this order (new values: expires_at
// is INT64_MAX, prev_owner the owner whose expired lease was replaced). The
// payload comes along in the same statement: any consumer of a queue has to
// read what it claimed.
#define NPS_PG_CLAIM_RETURNING                                                                      \
    " RETURNING t.message_id, t.nid, t.task_id, t.content_type, t.priority, t.enqueued_at, "        \
    "t.expires_at, t.prev_owner, t.claims, t.dedup_key, t.dag_hash, "                               \
    "(SELECT f.payload FROM frames f WHERE f.message_id = t.message_id)"

// SET right-hand sides see the old row: prev_owner gets the owner whose
// lease (necessarily expired, by the WHERE) this claim replaces, or NULL.
// The first claim also ends the TTL.
#define NPS_PG_CLAIM_SET                                                                            \
    "UPDATE tasks t SET prev_owner = t.lease_owner, lease_owner = $2, lease_expiry = $3, "          \
    "claims = t.claims + 1, expires_at = 9223372036854775807, state = 'RUNNING', updated_at = $4 "

// $1 nid, $2 runner, $3 lease length in ms, $4 now (NULL: the database's),
// $5 max count, $6 message ids to pass over. Returns the claim columns, then the lease expiry.
constexpr const char* kClaimHeadSql =
    "WITH n AS MATERIALIZED (SELECT coalesce($4::bigint, nps_now_ms()) AS now), "
    "c AS (SELECT message_id FROM tasks WHERE nid = $1 AND queue = 'queued' "
    "AND lease_expiry <= (SELECT now FROM n) AND expires_at > (SELECT now FROM n) "
    "AND message_id <> ALL ($6::bigint[]) ORDER BY priority DESC, message_id LIMIT $5 FOR UPDATE SKIP LOCKED) "
    "UPDATE tasks t SET prev_owner = t.lease_owner, lease_owner = $2, lease_expiry = (SELECT now FROM n) + $3, "
    "claims = t.claims + 1, expires_at = 9223372036854775807, state = 'RUNNING', updated_at = (SELECT now FROM n) "
    "WHERE t.message_id = ANY (ARRAY(SELECT message_id FROM c))" NPS_PG_CLAIM_RETURNING ", t.lease_expiry";

// The named task's row, locked for the rest of the claim.
constexpr const char* kClaimTaskLookupSql =
    "SELECT nid, state, dedup_key, message_id, queue, lease_owner, lease_expiry, expires_at "
    "FROM tasks WHERE task_id = $1 FOR UPDATE";

// A claim of a named message by the runner that holds its live lease renews
// it (NPS-5 §8.1's claim table; outcome granted): the new expiry only, no
// new claim, no event. $1 message_id, $2 runner, $3 expiry, $4 now.
constexpr const char* kClaimRenewSql =
    "UPDATE tasks t SET lease_expiry = $3, updated_at = $4 "
    "WHERE t.message_id = $1 AND t.lease_owner = $2 AND t.queue = 'queued' AND t.lease_expiry > $4"
    NPS_PG_CLAIM_RETURNING;

// Claim of one named message: the head claim's guard, except that a message
// under no lease (owner NULL) is taken before a deposit delay ends.
constexpr const char* kClaimTaskSql =
    NPS_PG_CLAIM_SET "WHERE t.message_id = $1 AND t.queue = 'queued' "
    "AND (t.lease_expiry <= $4 OR t.lease_owner IS NULL) AND t.expires_at > $4" NPS_PG_CLAIM_RETURNING;

#undef NPS_PG_CLAIM_SET
#undef NPS_PG_CLAIM_RETURNING

// One row returned by a claim UPDATE.
struct ClaimedRow {
    Message message;
    bool reclaimed = false;  // prev_owner was set: an expired lease was taken over
    std::uint32_t claims = 0;
    std::string dedup_key;
    std::string dag_hash;
};

std::vector<ClaimedRow> read_claimed(const Rows& rows)
{
    std::vector<ClaimedRow> out;
    out.reserve(static_cast<std::size_t>(rows.size()));
    for (int r = 0; r < rows.size(); ++r) {
        ClaimedRow c;
        c.message = read_message(rows, r, 0);
        c.reclaimed = !rows.is_null(r, kMessageColumnCount);
        c.claims = static_cast<std::uint32_t>(rows.integer(r, kMessageColumnCount + 1));
        c.dedup_key = rows.text(r, kMessageColumnCount + 2);
        c.dag_hash = rows.text(r, kMessageColumnCount + 3);
        c.message.payload = rows.bytes(r, kMessageColumnCount + 4);
        out.push_back(std::move(c));
    }
    return out;
}

// The leases for the rows a claim UPDATE returned, in claim order.
std::vector<Lease> finish_claims(const std::string& runner_nid, std::int64_t expiry, std::vector<ClaimedRow>& claimed)
{
    // RETURNING order is unspecified: hand leases out in claim order.
    std::sort(claimed.begin(), claimed.end(), [](const ClaimedRow& a, const ClaimedRow& b) {
        if (a.message.priority != b.message.priority)
            return a.message.priority > b.message.priority;
        return a.message.message_id < b.message.message_id;
    });
    std::vector<Lease> leases(claimed.size());
    for (std::size_t i = 0; i < claimed.size(); ++i) {
        Lease& lease = leases[i];
        lease.outcome = claimed[i].reclaimed ? ClaimOutcome::reclaimed : ClaimOutcome::granted;
        lease.task_id = claimed[i].message.task_id;
        lease.runner_nid = runner_nid;
        lease.dedup_key = std::move(claimed[i].dedup_key);
        lease.dag_hash = std::move(claimed[i].dag_hash);
        lease.lease_expiry_ms = expiry;
        lease.claims = claimed[i].claims;
        lease.message = std::move(claimed[i].message);
    }
    return leases;
}

std::int64_t lease_expiry_at(std::int64_t now, std::uint32_t lease_seconds)
{
    return now + static_cast<std::int64_t>(clamp_lease_seconds(lease_seconds)) * 1000;
}

// Up to max_count head claims of nid's inbox, in one statement of their own.
std::vector<Lease> claim_head(PostgresStore& store, const std::string& nid, const std::string& runner_nid,
                              std::uint32_t lease_seconds, std::uint32_t max_count,
                              const std::vector<std::int64_t>& passing_over)
{
    Params p;
    p.text(nid)
        .text(runner_nid)
        .integer(static_cast<std::int64_t>(clamp_lease_seconds(lease_seconds)) * 1000)
        .optional_integer(store.database_clock() ? std::nullopt : std::optional(store.clock().now_ms()))
        .integer(max_count)
        .integer_array(passing_over);
    const Rows rows = store.conn().query(kClaimHeadSql, p);
    mark_write_succeeded();
    if (rows.empty())
        return {};
    const std::int64_t expiry = rows.integer(0, kMessageColumnCount + 5);  // one statement: one expiry
    std::vector<ClaimedRow> claimed = read_claimed(rows);
    return finish_claims(runner_nid, expiry, claimed);
}

}  // namespace

Result<std::optional<Lease>> PostgresStore::claim(const ClaimRequest& request)
{
    return guarded<std::optional<Lease>>(
        [&] {
            return "Failed to claim " + (request.task_id ? "task '" + *request.task_id + "'" : std::string("the head")) +
                   " from inbox '" + request.nid + "'";
        },
        [&]() -> Result<std::optional<Lease>> {
            if (!request.task_id) {
                auto leases = claim_head(*this, request.nid, request.runner_nid, request.lease_seconds, 1,
                                         request.passing_over);
                if (leases.empty())
                    return std::optional<Lease>{};
                return std::optional<Lease>(std::move(leases.front()));
            }

            Work w(*this);
            Connection& conn = w.conn();
            const std::string& task_id = *request.task_id;
            const std::int64_t now = w.now();
            std::int64_t message_id = 0;
            std::string message_state, lease_owner;
            std::int64_t lease_expiry = 0, expires_at = 0;
            {
                Params p;
                p.text(task_id);
                const Rows rows = conn.query(kClaimTaskLookupSql, p);
                if (rows.empty() || rows.text(0, 0) != request.nid)
                    return protocol_error(proto::code::kNopTaskNotFound,
                                          "Task '" + task_id + "' is not in inbox '" + request.nid + "'");
                const proto::TaskState state = detail::task_state_column(rows.text(0, 1), task_id);
                if (proto::is_terminal(state))
                    return protocol_error(proto::code::kNopTaskAlreadyCompleted,
                                          "Task '" + task_id + "' is already " + std::string(proto::to_string(state)));
                if (request.dedup_key && *request.dedup_key != rows.text(0, 2))
                    return protocol_error(proto::code::kNopClaimConflict,
                                          "Task '" + task_id + "': dedup_key does not match the deposited task");
                message_id = rows.integer(0, 3);
                message_state = rows.text(0, 4);
                lease_owner = rows.optional_text(0, 5).value_or("");
                lease_expiry = rows.integer(0, 6);
                expires_at = rows.integer(0, 7);
            }

            const std::int64_t expiry = lease_expiry_at(now, request.lease_seconds);
            Params p;
            p.integer(message_id).text(request.runner_nid).integer(expiry).integer(now);
            std::vector<ClaimedRow> claimed = read_claimed(conn.query(kClaimTaskSql, p));
            // The owner test is the renewal's WHERE clause (compared by the
            // server, as the text it stored).
            if (claimed.empty() && message_state == "queued" && lease_expiry > now) {
                claimed = read_claimed(conn.query(kClaimRenewSql, p));
                for (ClaimedRow& row : claimed)
                    row.reclaimed = false;  // the holder's own lease, renewed
            }
            if (claimed.empty()) {
                return detail::named_claim_refusal(task_id, request.nid,
                                                   {.queue = message_state,
                                                    .owner = lease_owner,
                                                    .lease_expiry = lease_expiry,
                                                    .expires_at = expires_at},
                                                   now);
            }
            auto leases = finish_claims(request.runner_nid, expiry, claimed);
            w.commit();
            return std::optional<Lease>(std::move(leases.front()));
        });
}

Result<std::vector<Lease>> PostgresStore::claim_batch(const std::string& nid, const std::string& runner_nid,
                                                      std::uint32_t lease_seconds, std::uint32_t max_count)
{
    const std::uint32_t count = std::min(max_count, limits::kMaxClaimBatch);
    if (count == 0)
        return std::vector<Lease>{};
    return guarded<std::vector<Lease>>(
        [&] { return "Failed to claim up to " + std::to_string(count) + " tasks from inbox '" + nid + "'"; },
        [&]() -> Result<std::vector<Lease>> {
            return claim_head(*this, nid, runner_nid, lease_seconds, count, {});
        });
}

}  // namespace nps::store::pg
