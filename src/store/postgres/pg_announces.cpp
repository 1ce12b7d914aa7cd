// SPDX-License-Identifier: Apache-2.0
// The local NDP registry on PostgreSQL, as ../announces.cpp: agent NID →
// announce (spawn_spec_ref), with the announce TTL deciding stale and
// offline (NPS-4 §3.1). put_announce serialises the puts of one NID with a
// transaction-scoped advisory lock (a row lock cannot cover an NID not
// stored yet), so the admission callback decides on the announce that the
// write replaces.
#include "pg_store.hpp"

#include "nps/proto/error_codes.hpp"

namespace nps::store::pg {

namespace {

#define NPS_PG_ANNOUNCE_COLUMNS "nid, activation_mode, spawn_spec_ref, ttl_seconds, announced_at, body"

// Every put of one NID, stored or not, queues here until the put before it
// commits or rolls back.
constexpr const char* kLockNid = "SELECT pg_advisory_xact_lock(hashtextextended('nps announce ' || $1::text, 0))";
constexpr const char* kGetLocked = "SELECT " NPS_PG_ANNOUNCE_COLUMNS " FROM announces WHERE nid = $1 FOR UPDATE";
constexpr const char* kGet = "SELECT " NPS_PG_ANNOUNCE_COLUMNS " FROM announces WHERE nid = $1";
constexpr const char* kPut =
    "INSERT INTO announces (" NPS_PG_ANNOUNCE_COLUMNS ") VALUES ($1, $2, $3, $4, $5, $6) "
    "ON CONFLICT (nid) DO UPDATE SET activation_mode = excluded.activation_mode, "
    "spawn_spec_ref = excluded.spawn_spec_ref, ttl_seconds = excluded.ttl_seconds, "
    "announced_at = excluded.announced_at, body = excluded.body";
// COLLATE "C": byte order, as SQLite's BINARY collation sorts.
constexpr const char* kList = "SELECT " NPS_PG_ANNOUNCE_COLUMNS " FROM announces ORDER BY nid COLLATE \"C\"";
constexpr const char* kRemove = "DELETE FROM announces WHERE nid = $1";

Announce read_announce(const Rows& rows, int row)
{
    Announce a;
    a.nid = rows.text(row, 0);
    a.activation_mode = rows.text(row, 1);
    a.spawn_spec_ref = rows.text(row, 2);
    if (!rows.is_null(row, 3))
        a.ttl_seconds = static_cast<std::uint32_t>(rows.integer(row, 3));
    a.announced_at_ms = rows.integer(row, 4);
    a.body_json = rows.text(row, 5);
    return a;
}

}  // namespace

Result<void> PostgresStore::put_announce(const Announce& announce, const AnnounceAdmission& admit)
{
    return guarded<void>(
        [&] { return "Failed to store the announce of '" + announce.nid + "'"; },
        [&]() -> Result<void> {
            Work w(*this);
            Connection& c = w.conn();
            {
                Params p;
                p.text(announce.nid);
                c.query(kLockNid, p);
                const Rows rows = c.query(kGetLocked, p);
                std::optional<Announce> stored;
                if (!rows.empty())
                    stored = read_announce(rows, 0);
                if (!NPS_TRY(admit(stored ? &*stored : nullptr)))
                    return {};
            }
            const std::int64_t now = w.now();
            Params p;
            p.text(announce.nid)
                .text(announce.activation_mode)
                .text(announce.spawn_spec_ref)
                .optional_integer(announce.ttl_seconds ? std::optional<std::int64_t>(*announce.ttl_seconds)
                                                       : std::nullopt)
                .integer(announce.announced_at_ms > 0 && announce.announced_at_ms < now ? announce.announced_at_ms
                                                                                        : now)
                .text(announce.body_json);
            c.query(kPut, p);
            w.commit();
            return {};
        });
}

Result<Announce> PostgresStore::resolve_announce(const std::string& nid)
{
    return guarded<Announce>(
        [&] { return "Failed to resolve '" + nid + "'"; },
        [&]() -> Result<Announce> {
            Params p;
            p.text(nid);
            const Rows rows = conn().query(kGet, p);
            if (rows.empty())
                return protocol_error(proto::code::kNdpResolveNotFound, "No announce for '" + nid + "'");
            Announce a = read_announce(rows, 0);
            if (a.ttl_seconds && *a.ttl_seconds == 0)
                return protocol_error(proto::code::kNdpResolveNotFound,
                                      "'" + nid + "' announced itself offline (ttl 0)");
            if (a.ttl_seconds &&
                a.announced_at_ms + static_cast<std::int64_t>(*a.ttl_seconds) * 1000 <= now_ms())
                return protocol_error(proto::code::kNdpResolveStale, "The announce of '" + nid +
                                                                         "' is older than its ttl of " +
                                                                         std::to_string(*a.ttl_seconds) + " s");
            return a;
        });
}

Result<std::vector<Announce>> PostgresStore::list_announces()
{
    return guarded<std::vector<Announce>>(
        [&] { return std::string("Failed to list announces"); },
        [&]() -> Result<std::vector<Announce>> {
            const Rows rows = conn().query(kList);
            std::vector<Announce> out;
            out.reserve(static_cast<std::size_t>(rows.size()));
            for (int i = 0; i < rows.size(); ++i)
                out.push_back(read_announce(rows, i));
            return out;
        });
}

Result<void> PostgresStore::remove_announce(const std::string& nid)
{
    return guarded<void>(
        [&] { return "Failed to remove the announce of '" + nid + "'"; },
        [&]() -> Result<void> {
            Work w(*this);
            Params p;
            p.text(nid);
            if (w.conn().query(kRemove, p).affected() == 0)
                return protocol_error(proto::code::kNdpResolveNotFound, "No announce for '" + nid + "'");
            w.commit();
            return {};
        });
}

}  // namespace nps::store::pg
