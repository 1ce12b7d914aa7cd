// SPDX-License-Identifier: Apache-2.0
// The task-claim protocol (NPS-5 §8.1, CR-0007 §4.1–4.2): head claims,
// batch claims and claims of a named task.
//
// The claim itself is one UPDATE … RETURNING on the task row: it takes the
// lease, sets the task RUNNING and (through the tasks_transition trigger) logs
// lease:granted / lease:reclaimed, all in one statement. So two runners can
// never both win a message, whatever process they live in: SQLite serialises
// writers and the UPDATE re-reads lease_expiry under the write lock.
#include <algorithm>

#include "nps/base/limits.hpp"
#include "nps/proto/error_codes.hpp"
#include "lease_rules.hpp"
#include "sqlite_store.hpp"
#include "state_columns.hpp"

namespace nps::store::detail {

namespace {

// Columns the claim UPDATEs return, in this order. The payload comes along in
// the same statement: any consumer of a queue has to read what it claimed.
#define NPS_STORE_CLAIM_RETURNING                                                                  \
    " RETURNING message_id, nid, task_id, content_type, priority, enqueued_at, expires_at, "       \
    "prev_owner, claims, dedup_key, dag_hash, "                                                    \
    "(SELECT payload FROM frames f WHERE f.message_id = tasks.message_id)"

// SET right-hand sides see the old row: prev_owner gets the owner whose
// lease (necessarily expired, by the WHERE) this claim replaces, or NULL.
// The first claim also ends the TTL.
#define NPS_STORE_CLAIM_SET                                                                        \
    "UPDATE tasks SET prev_owner = lease_owner, lease_owner = ?2, lease_expiry = ?3, "             \
    "claims = claims + 1, expires_at = 9223372036854775807, state = 'RUNNING', updated_at = ?4 "

#define NPS_STORE_CLAIMABLE_HEAD                                                                   \
    "SELECT message_id FROM tasks WHERE nid = ?1 AND queue = 'queued' AND lease_expiry <= ?4 "     \
    "AND expires_at > ?4 AND message_id NOT IN (SELECT value FROM json_each(?6)) "                 \
    "ORDER BY priority DESC, message_id"

constexpr const char* kClaimHeadSql =
    NPS_STORE_CLAIM_SET "WHERE message_id = (" NPS_STORE_CLAIMABLE_HEAD " LIMIT 1)" NPS_STORE_CLAIM_RETURNING;
constexpr const char* kClaimBatchSql =
    NPS_STORE_CLAIM_SET "WHERE message_id IN (" NPS_STORE_CLAIMABLE_HEAD " LIMIT ?5)" NPS_STORE_CLAIM_RETURNING;
// A claim of a named message by the runner that holds its live lease renews
// it (NPS-5 §8.1's claim table; outcome granted): the new expiry only, no
// new claim, no event.
constexpr const char* kClaimRenewSql =
    "UPDATE tasks SET lease_expiry = ?3, updated_at = ?4 "
    "WHERE message_id = ?1 AND lease_owner = ?2 AND queue = 'queued' AND lease_expiry > ?4" NPS_STORE_CLAIM_RETURNING;
// Claim of one named message: the head claim's guard, except that a message
// under no lease (owner NULL) is taken before a deposit delay ends.
constexpr const char* kClaimTaskSql =
    NPS_STORE_CLAIM_SET "WHERE message_id = ?1 AND queue = 'queued' AND (lease_expiry <= ?4 OR lease_owner IS NULL) "
    "AND expires_at > ?4" NPS_STORE_CLAIM_RETURNING;

std::vector<ClaimedRow> read_claimed(SQLite::Statement& st)
{
    std::vector<ClaimedRow> out;
    while (st.executeStep()) {
        ClaimedRow c;
        c.message = read_message(st, 0);
        c.reclaimed = !st.isColumnNull(kMessageColumnCount);
        c.claims = st.getColumn(kMessageColumnCount + 1).getUInt();
        c.dedup_key = st.getColumn(kMessageColumnCount + 2).getString();
        c.dag_hash = st.getColumn(kMessageColumnCount + 3).getString();
        c.message.payload = st.getColumn(kMessageColumnCount + 4).getString();
        out.push_back(std::move(c));
    }
    return out;
}

}  // namespace

const char* claim_head_sql()
{
    return kClaimHeadSql;
}

const char* claim_batch_sql()
{
    return kClaimBatchSql;
}

std::vector<Lease> SqliteStore::finish_claims(const std::string& runner_nid, std::int64_t expiry,
                                              std::vector<ClaimedRow>& claimed)
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

std::vector<Lease> SqliteStore::claim_head_locked(const std::string& nid, const std::string& runner_nid,
                                                  std::uint32_t lease_seconds, std::uint32_t max_count,
                                                  const std::vector<std::int64_t>& passing_over)
{
    const std::int64_t now = now_ms();
    const std::int64_t expiry = now + static_cast<std::int64_t>(clamp_lease_seconds(lease_seconds)) * 1000;
    std::vector<ClaimedRow> claimed;
    {
        auto st = max_count == 1 ? use(claim_head_, kClaimHeadSql) : use(claim_batch_, kClaimBatchSql);
        st->bindNoCopy(1, nid);
        st->bindNoCopy(2, runner_nid);
        st->bind(3, static_cast<std::int64_t>(expiry));
        st->bind(4, static_cast<std::int64_t>(now));
        if (max_count != 1)
            st->bind(5, max_count);
        std::string skipped;  // a JSON array for json_each(); unbound (NULL): none
        if (!passing_over.empty()) {
            for (const std::int64_t id : passing_over)
                skipped += (skipped.empty() ? "[" : ",") + std::to_string(id);
            st->bind(6, skipped + "]");
        } else {
            st->bind(6);
        }
        claimed = read_claimed(*st);
    }
    if (claimed.empty())
        return {};
    return finish_claims(runner_nid, expiry, claimed);
}

Result<std::optional<Lease>> SqliteStore::claim(const ClaimRequest& request)
{
    return guarded<std::optional<Lease>>(
        [&] {
            return "Failed to claim " + (request.task_id ? "task '" + *request.task_id + "'" : std::string("the head")) +
                   " from inbox '" + request.nid + "'";
        },
        [&]() -> Result<std::optional<Lease>> {
            WriteTransaction txn(*this);
            if (!request.task_id) {
                auto leases = claim_head_locked(request.nid, request.runner_nid, request.lease_seconds, 1,
                                                request.passing_over);
                if (leases.empty())
                    return std::optional<Lease>{};  // nothing to commit
                txn.commit();
                return std::optional<Lease>(std::move(leases.front()));
            }

            const std::string& task_id = *request.task_id;
            const std::int64_t now = now_ms();
            std::int64_t message_id = 0;
            std::string message_state, lease_owner;
            std::int64_t lease_expiry = 0, expires_at = 0;
            {
                auto st = use(claim_task_lookup_,
                              "SELECT nid, state, dedup_key, message_id, queue, lease_owner, lease_expiry, "
                              "expires_at FROM tasks WHERE task_id = ?1");
                st->bindNoCopy(1, task_id);
                if (!st->executeStep() || st->getColumn(0).getString() != request.nid)
                    return protocol_error(proto::code::kNopTaskNotFound,
                                          "Task '" + task_id + "' is not in inbox '" + request.nid + "'");
                const proto::TaskState state = task_state_column(st->getColumn(1).getString(), task_id);
                if (proto::is_terminal(state))
                    return protocol_error(proto::code::kNopTaskAlreadyCompleted,
                                          "Task '" + task_id + "' is already " + std::string(proto::to_string(state)));
                if (request.dedup_key && *request.dedup_key != st->getColumn(2).getString())
                    return protocol_error(proto::code::kNopClaimConflict,
                                          "Task '" + task_id + "': dedup_key does not match the deposited task");
                message_id = st->getColumn(3).getInt64();
                message_state = st->getColumn(4).getString();
                lease_owner = st->getColumn(5).getString();
                lease_expiry = st->getColumn(6).getInt64();
                expires_at = st->getColumn(7).getInt64();
            }

            const std::int64_t expiry =
                now + static_cast<std::int64_t>(clamp_lease_seconds(request.lease_seconds)) * 1000;
            std::vector<ClaimedRow> claimed;
            {
                auto st = use(claim_task_, kClaimTaskSql);
                st->bind(1, static_cast<std::int64_t>(message_id));
                st->bindNoCopy(2, request.runner_nid);
                st->bind(3, static_cast<std::int64_t>(expiry));
                st->bind(4, static_cast<std::int64_t>(now));
                claimed = read_claimed(*st);
            }
            if (claimed.empty() && message_state == "queued" && lease_expiry > now &&
                lease_owner == request.runner_nid) {
                auto st = use(claim_renew_, kClaimRenewSql);
                st->bind(1, static_cast<std::int64_t>(message_id));
                st->bindNoCopy(2, request.runner_nid);
                st->bind(3, static_cast<std::int64_t>(expiry));
                st->bind(4, static_cast<std::int64_t>(now));
                claimed = read_claimed(*st);
                for (ClaimedRow& row : claimed)
                    row.reclaimed = false;  // the holder's own lease, renewed
            }
            if (claimed.empty()) {
                return named_claim_refusal(task_id, request.nid,
                                           {.queue = message_state,
                                            .owner = lease_owner,
                                            .lease_expiry = lease_expiry,
                                            .expires_at = expires_at},
                                           now);
            }
            auto leases = finish_claims(request.runner_nid, expiry, claimed);
            txn.commit();
            return std::optional<Lease>(std::move(leases.front()));
        });
}

Result<std::vector<Lease>> SqliteStore::claim_batch(const std::string& nid, const std::string& runner_nid,
                                                    std::uint32_t lease_seconds, std::uint32_t max_count)
{
    const std::uint32_t count = std::min(max_count, limits::kMaxClaimBatch);
    if (count == 0)
        return std::vector<Lease>{};
    return guarded<std::vector<Lease>>(
        [&] { return "Failed to claim up to " + std::to_string(count) + " tasks from inbox '" + nid + "'"; },
        [&]() -> Result<std::vector<Lease>> {
            WriteTransaction txn(*this);
            auto leases = claim_head_locked(nid, runner_nid, lease_seconds, count, {});
            if (!leases.empty())
                txn.commit();
            return leases;
        });
}

}  // namespace nps::store::detail
