// SPDX-License-Identifier: Apache-2.0
// The NDP registry consistency rules (NPS-4 §3.2.1, §7.3–§7.5) as a pure,
// in-memory model: no SQLite, time from a Clock. The store's announce path
// can run an announce through admit() and persist what it decides.
//
// admit() follows the normative order; no failed step changes anything:
//   0. §3.1 wire types: ttl a present uint32, timestamp RFC 3339, a present
//      graph_seq a uint64 (absent = 0 only at local-dev), health in its enum,
//      node_roles known ("gateway" → NDP-ANNOUNCE-ROLE-REMOVED, others →
//      NDP-ANNOUNCE-ROLE-UNKNOWN), bridge protocol fields arrays of
//      non-empty strings, a bridge role with at least one of them
//                                         → NDP-ANNOUNCE-PROFILE-VIOLATION
//   1. the signature verdict (announce.hpp check_announce_trust) → its error
//   2. replay window (300 s outside local-dev) → NDP-ANNOUNCE-SIGNATURE-INVALID
//   3. graph_seq below the NID's fence → NDP-GRAPH-SEQ-ROLLBACK; equal with
//      an equal wire form → duplicate (dropped); equal signed body →
//      refresh; equal seq, other body → NDP-ANNOUNCE-CONFLICT
//   4. ttl 0 → removed (the fence stays)
//   5. (last_seen ?? timestamp) + ttl not after the admission time
//                                         → NDP-ANNOUNCE-STALE
//   6. insert, refresh or replace.
// Not thread-safe: one owner, or a lock around it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nps/base/clock.hpp"
#include "nps/base/limits.hpp"
#include "nps/base/result.hpp"

namespace nps::proto::ndp {

enum class RegistryProfile { local_dev, org_private, public_federated };
std::optional<RegistryProfile> registry_profile_from_name(std::string_view name);  // "local-dev", …

enum class Decision { accepted, duplicate, refreshed, removed, rejected };
std::string_view decision_name(Decision decision);  // "accepted", …

struct Admission {
    Decision decision = Decision::rejected;
    std::optional<Error> error;  // set iff rejected
};

// A live (or expired but not yet replaced) registry entry.
struct RegistryEntry {
    std::string nid;
    std::uint64_t graph_seq = 0;
    std::uint32_t ttl_seconds = 0;
    std::int64_t timestamp_ms = 0;
    std::optional<std::int64_t> last_seen_ms;
    std::string health = "healthy";
    std::vector<std::string> node_roles;
    std::optional<std::string> cluster_anchor;
    std::uint64_t cluster_epoch = 1;
    std::vector<std::string> bridge_protocols;          // outbound
    std::vector<std::string> bridge_inbound_protocols;
    std::string signed_body;                            // announce_signed_body
    std::string frame_json;                             // the announce as admitted

    std::int64_t fresh_until_ms() const { return last_seen_ms.value_or(timestamp_ms) + std::int64_t{ttl_seconds} * 1000; }
    bool live_at(std::int64_t now_ms) const { return fresh_until_ms() > now_ms; }
};

// What §7.4 rules 3 and 5 read of one announce, for callers that keep
// their own registry (the daemon's announce route keeps it in the store).
struct AnnounceFacts {
    std::uint64_t graph_seq = 0;  // absent = 0 (local-dev)
    bool has_graph_seq = false;
    std::optional<std::int64_t> seen_at_ms;      // last_seen ?? timestamp
    std::optional<std::int64_t> fresh_until_ms;  // seen_at + ttl, when both are present
    std::string signed_body;  // announce_signed_body
    std::string wire_form;    // announce_wire_form
};
// Only the fields above are checked: graph_seq a uint64, timestamp and
// last_seen RFC 3339, ttl a uint32 (NDP-ANNOUNCE-PROFILE-VIOLATION).
Result<AnnounceFacts> announce_facts(std::string_view frame_json);

// §7.4 rule 3, `incoming` against the NID's fence (nullptr: none → accepted):
// a lower graph_seq → NDP-GRAPH-SEQ-ROLLBACK; the same with an equal wire
// form → duplicate (drop it); the same signed content → refreshed; other
// content under the same graph_seq → NDP-ANNOUNCE-CONFLICT; higher → accepted.
Result<Decision> check_sequence(std::string_view nid, const AnnounceFacts& incoming, const AnnounceFacts* fence);

enum class BridgeDirection { inbound, outbound };

struct RegistryOptions {
    RegistryProfile profile = RegistryProfile::local_dev;
    const Clock* clock = &SystemClock::instance();
    std::size_t max_entries = limits::kMaxNdpRegistryEntries;  // NIDs tracked (fences included)
};

class RegistryModel {
public:
    explicit RegistryModel(RegistryOptions options = {});

    // `signature` is the verdict of check_announce_trust for this frame (an
    // error rejects the announce at step 1). The admission time is the clock's
    // now, or `received_at_ms` when the caller knows when it arrived.
    Admission admit(std::string_view frame_json, const Result<void>& signature,
                    std::optional<std::int64_t> received_at_ms = std::nullopt);

    // NIDs whose entry is live at the clock's now, sorted.
    std::vector<std::string> live_nids() const;
    // The highest accepted graph_seq per NID (fences survive ttl 0 and expiry).
    std::map<std::string, std::uint64_t> highest_sequences() const;

    // NDP-RESOLVE-NOT-FOUND when unknown or removed; NDP-RESOLVE-STALE when
    // its freshness has passed (never served).
    Result<RegistryEntry> resolve(std::string_view nid) const;
    // The live entry with `cluster_anchor` at the highest cluster_epoch;
    // NDP-CLUSTER-SPLIT when two share it; NDP-RESOLVE-NOT-FOUND when none.
    Result<RegistryEntry> resolve_cluster(std::string_view cluster_anchor) const;
    // Live bridges declaring `protocol` in that direction, by NID.
    std::vector<std::string> bridges(BridgeDirection direction, std::string_view protocol) const;

private:
    RegistryOptions options_;
    std::map<std::string, RegistryEntry, std::less<>> entries_;
    std::map<std::string, AnnounceFacts, std::less<>> fences_;
};

}  // namespace nps::proto::ndp
