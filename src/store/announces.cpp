// SPDX-License-Identifier: Apache-2.0
// The local NDP registry: agent NID → announce (spawn_spec_ref), with the
// announce TTL deciding stale and offline (NPS-4 §3.1).
#include "sqlite_store.hpp"

#include "nps/proto/error_codes.hpp"

namespace nps::store::detail {

namespace {

Announce read_announce(const SQLite::Statement& st)
{
    Announce a;
    a.nid = st.getColumn(0).getString();
    a.activation_mode = st.getColumn(1).getString();
    a.spawn_spec_ref = st.getColumn(2).getString();
    if (!st.isColumnNull(3))
        a.ttl_seconds = st.getColumn(3).getUInt();
    a.announced_at_ms = st.getColumn(4).getInt64();
    a.body_json = st.getColumn(5).getString();
    return a;
}

#define NPS_STORE_ANNOUNCE_COLUMNS "nid, activation_mode, spawn_spec_ref, ttl_seconds, announced_at, body"

}  // namespace

Result<void> SqliteStore::put_announce(const Announce& announce, const AnnounceAdmission& admit)
{
    return guarded<void>(
        [&] { return "Failed to store the announce of '" + announce.nid + "'"; },
        [&]() -> Result<void> {
            WriteTransaction txn(*this);
            {
                std::optional<Announce> stored;
                {
                    auto st =
                        use(announce_get_, "SELECT " NPS_STORE_ANNOUNCE_COLUMNS " FROM announces WHERE nid = ?1");
                    st->bindNoCopy(1, announce.nid);
                    if (st->executeStep())
                        stored = read_announce(*st);
                }
                if (!NPS_TRY(admit(stored ? &*stored : nullptr)))
                    return {};
            }
            {
                auto st = use(announce_put_,
                              "INSERT OR REPLACE INTO announces (" NPS_STORE_ANNOUNCE_COLUMNS ") "
                              "VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
                st->bindNoCopy(1, announce.nid);
                st->bindNoCopy(2, announce.activation_mode);
                st->bindNoCopy(3, announce.spawn_spec_ref);
                if (announce.ttl_seconds)
                    st->bind(4, *announce.ttl_seconds);
                else
                    st->bind(4);
                const std::int64_t now = now_ms();
                st->bind(5, announce.announced_at_ms > 0 && announce.announced_at_ms < now ? announce.announced_at_ms
                                                                                          : now);
                st->bindNoCopy(6, announce.body_json);
                st->exec();
            }
            txn.commit();
            return {};
        });
}

Result<Announce> SqliteStore::resolve_announce(const std::string& nid)
{
    return guarded<Announce>(
        [&] { return "Failed to resolve '" + nid + "'"; },
        [&]() -> Result<Announce> {
            auto st = use(announce_get_, "SELECT " NPS_STORE_ANNOUNCE_COLUMNS " FROM announces WHERE nid = ?1");
            st->bindNoCopy(1, nid);
            if (!st->executeStep())
                return protocol_error(proto::code::kNdpResolveNotFound, "No announce for '" + nid + "'");
            Announce a = read_announce(*st);
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

Result<std::vector<Announce>> SqliteStore::list_announces()
{
    return guarded<std::vector<Announce>>(
        [&] { return std::string("Failed to list announces"); },
        [&]() -> Result<std::vector<Announce>> {
            auto st = use(announce_list_, "SELECT " NPS_STORE_ANNOUNCE_COLUMNS " FROM announces ORDER BY nid");
            std::vector<Announce> out;
            while (st->executeStep())
                out.push_back(read_announce(*st));
            return out;
        });
}

Result<void> SqliteStore::remove_announce(const std::string& nid)
{
    return guarded<void>(
        [&] { return "Failed to remove the announce of '" + nid + "'"; },
        [&]() -> Result<void> {
            WriteTransaction txn(*this);
            auto st = use(announce_remove_, "DELETE FROM announces WHERE nid = ?1");
            st->bindNoCopy(1, nid);
            if (st->exec() == 0)
                return protocol_error(proto::code::kNdpResolveNotFound, "No announce for '" + nid + "'");
            txn.commit();
            return {};
        });
}

}  // namespace nps::store::detail
