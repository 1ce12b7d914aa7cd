// SPDX-License-Identifier: Apache-2.0
// NDP registry consistency model (see nps/proto/ndp_registry.hpp).
#include "nps/proto/ndp_registry.hpp"

#include <algorithm>
#include <limits>

#include "message_text.hpp"
#include "nps/base/time_format.hpp"
#include "nps/proto/announce.hpp"
#include "nps/proto/error_codes.hpp"
#include "nps/proto/json_reader.hpp"
#include "nps/proto/task_frame.hpp"

namespace nps::proto::ndp {

namespace {

using namespace detail;
using namespace json;

constexpr std::string_view kProfile = code::kNdpAnnounceProfileViolation;

Result<std::int64_t> read_time(element value, std::string_view path)
{
    const std::string_view text = NPS_TRY(read_string(value, kProfile, path));
    const auto ms = parse_rfc3339_ms(text);
    if (!ms)
        return field_error(kProfile, path, "not an RFC 3339 time: " + detail::quote_text(text));
    return *ms;
}

// An array of non-empty strings (bridge protocols), or of known roles.
Result<std::vector<std::string>> read_string_list(element value, std::string_view path)
{
    const array arr = NPS_TRY(read_array(value, kProfile, path));
    std::vector<std::string> out;
    std::size_t index = 0;
    for (element item : arr) {
        const std::string item_path = index_path(path, index++);
        if (out.size() >= limits::kMaxNdpRolesOrProtocols)
            return field_error(kProfile, path, "more than " + std::to_string(limits::kMaxNdpRolesOrProtocols) +
                                                   " entries");
        const std::string_view s = NPS_TRY(read_string(item, kProfile, item_path));
        if (s.empty())
            return field_error(kProfile, item_path, "must not be empty");
        out.emplace_back(s);
    }
    return out;
}

Result<void> check_roles(const std::vector<std::string>& roles)
{
    static constexpr std::string_view kKnown[] = {"memory", "action", "complex", "anchor", "bridge"};
    for (const auto& role : roles) {
        if (role == "gateway")
            return protocol_error(code::kNdpAnnounceRoleRemoved,
                                  "node_roles: 'gateway' was removed (NPS-CR-0001); use 'anchor' or 'bridge'");
        if (std::find(std::begin(kKnown), std::end(kKnown), role) == std::end(kKnown))
            return protocol_error(code::kNdpAnnounceRoleUnknown,
                                  "node_roles: unknown role " + detail::quote_text(role));
    }
    return {};
}

bool has(const std::vector<std::string>& list, std::string_view value)
{
    return std::find(list.begin(), list.end(), value) != list.end();
}

// §3.1 wire types into an entry (signed_body and frame_json filled by the caller).
Result<RegistryEntry> read_entry(element root, RegistryProfile profile)
{
    const object obj = NPS_TRY(read_object(root, kProfile, "announce"));
    RegistryEntry e;
    const element nid = NPS_TRY(required_member(obj, "nid", kProfile, "nid"));
    e.nid = std::string(NPS_TRY(read_string(nid, kProfile, "nid")));
    if (!is_valid_nid(e.nid))
        return field_error(kProfile, "nid", "not a NID (urn:nps:…): " + detail::quote_text(e.nid));
    e.ttl_seconds = static_cast<std::uint32_t>(NPS_TRY(read_uint(NPS_TRY(required_member(obj, "ttl", kProfile, "ttl")),
                                                                 kProfile, "ttl", 0,
                                                                 std::numeric_limits<std::uint32_t>::max())));
    e.timestamp_ms = NPS_TRY(read_time(NPS_TRY(required_member(obj, "timestamp", kProfile, "timestamp")), "timestamp"));
    if (auto v = optional_member(obj, "graph_seq"))
        e.graph_seq = NPS_TRY(read_uint(*v, kProfile, "graph_seq", 0, std::numeric_limits<std::uint64_t>::max()));
    else if (profile != RegistryProfile::local_dev)
        return field_error(kProfile, "graph_seq", "required outside the local-dev profile");
    if (auto v = optional_member(obj, "last_seen"))
        e.last_seen_ms = NPS_TRY(read_time(*v, "last_seen"));
    if (auto v = optional_member(obj, "health")) {
        e.health = std::string(NPS_TRY(read_string(*v, kProfile, "health")));
        if (e.health != "healthy" && e.health != "degraded" && e.health != "draining")
            return field_error(kProfile, "health", "not healthy, degraded or draining: " + detail::quote_text(e.health));
    }
    if (auto v = optional_member(obj, "heartbeat_interval_ms"))
        NPS_TRY(read_uint(*v, kProfile, "heartbeat_interval_ms", 0, std::numeric_limits<std::uint32_t>::max()));
    if (auto v = optional_member(obj, "node_roles")) {
        e.node_roles = NPS_TRY(read_string_list(*v, "node_roles"));
        NPS_TRY_VOID(check_roles(e.node_roles));
    }
    if (auto v = optional_member(obj, "cluster_anchor"))
        e.cluster_anchor = std::string(NPS_TRY(read_string(*v, kProfile, "cluster_anchor")));
    if (auto v = optional_member(obj, "cluster_epoch"))
        e.cluster_epoch = NPS_TRY(read_uint(*v, kProfile, "cluster_epoch", 0, std::numeric_limits<std::uint64_t>::max()));
    if (auto v = optional_member(obj, "bridge_protocols"))
        e.bridge_protocols = NPS_TRY(read_string_list(*v, "bridge_protocols"));
    if (auto v = optional_member(obj, "bridge_inbound_protocols"))
        e.bridge_inbound_protocols = NPS_TRY(read_string_list(*v, "bridge_inbound_protocols"));
    if (has(e.node_roles, "bridge") && e.bridge_protocols.empty() && e.bridge_inbound_protocols.empty())
        return field_error(kProfile, "node_roles", "a bridge must declare bridge_protocols or bridge_inbound_protocols");
    if (auto v = optional_member(obj, "capabilities")) {
        const array caps = NPS_TRY(read_array(*v, kProfile, "capabilities"));
        std::size_t index = 0;
        for (element item : caps)
            NPS_TRY(read_string(item, kProfile, index_path("capabilities", index++)));
    }
    return e;
}

Admission rejected(Error error) { return {.decision = Decision::rejected, .error = std::move(error)}; }

}  // namespace

std::optional<RegistryProfile> registry_profile_from_name(std::string_view name)
{
    if (name == "local-dev")
        return RegistryProfile::local_dev;
    if (name == "org-private")
        return RegistryProfile::org_private;
    if (name == "public-federated")
        return RegistryProfile::public_federated;
    return std::nullopt;
}

std::string_view decision_name(Decision decision)
{
    switch (decision) {
    case Decision::accepted: return "accepted";
    case Decision::duplicate: return "duplicate";
    case Decision::refreshed: return "refreshed";
    case Decision::removed: return "removed";
    case Decision::rejected: return "rejected";
    }
    return "rejected";
}

Result<AnnounceFacts> announce_facts(std::string_view frame_json)
{
    simdjson::dom::parser parser;
    const element root = NPS_TRY(json::parse_document(parser, frame_json, "announce"));
    const object obj = NPS_TRY(read_object(root, kProfile, "announce"));
    AnnounceFacts facts;
    if (auto v = optional_member(obj, "graph_seq")) {
        facts.graph_seq = NPS_TRY(read_uint(*v, kProfile, "graph_seq", 0, std::numeric_limits<std::uint64_t>::max()));
        facts.has_graph_seq = true;
    }
    if (auto t = optional_member(obj, "timestamp"))
        facts.seen_at_ms = NPS_TRY(read_time(*t, "timestamp"));
    if (auto v = optional_member(obj, "last_seen"))
        facts.seen_at_ms = NPS_TRY(read_time(*v, "last_seen"));
    if (auto v = optional_member(obj, "ttl")) {
        const auto ttl = NPS_TRY(read_uint(*v, kProfile, "ttl", 0, std::numeric_limits<std::uint32_t>::max()));
        if (facts.seen_at_ms)
            facts.fresh_until_ms = *facts.seen_at_ms + static_cast<std::int64_t>(ttl) * 1000;
    }
    facts.signed_body = NPS_TRY(announce_signed_body(frame_json));
    facts.wire_form = NPS_TRY(announce_wire_form(frame_json));
    return facts;
}

Result<Decision> check_sequence(std::string_view nid, const AnnounceFacts& incoming, const AnnounceFacts* fence)
{
    if (fence == nullptr || incoming.graph_seq > fence->graph_seq)
        return Decision::accepted;
    if (incoming.graph_seq < fence->graph_seq)
        return protocol_error(code::kNdpGraphSeqRollback, "announce of '" + std::string(nid) + "': graph_seq " +
                                                              std::to_string(incoming.graph_seq) +
                                                              " is below the accepted " +
                                                              std::to_string(fence->graph_seq));
    if (incoming.wire_form == fence->wire_form)
        return Decision::duplicate;
    if (incoming.signed_body != fence->signed_body)
        return protocol_error(code::kNdpAnnounceConflict, "announce of '" + std::string(nid) + "': graph_seq " +
                                                              std::to_string(incoming.graph_seq) +
                                                              " was accepted with other signed content");
    return Decision::refreshed;
}

RegistryModel::RegistryModel(RegistryOptions options) : options_(options) {}

Admission RegistryModel::admit(std::string_view frame_json, const Result<void>& signature,
                               std::optional<std::int64_t> received_at_ms)
{
    const std::int64_t at = received_at_ms.value_or(options_.clock->now_ms());

    // 0. wire types.
    simdjson::dom::parser parser;
    auto root = json::parse_document(parser, frame_json, "announce");
    if (!root)
        return rejected(std::move(root).error());
    auto parsed = read_entry(*root, options_.profile);
    if (!parsed)
        return rejected(std::move(parsed).error());
    RegistryEntry entry = std::move(parsed).value();

    // 1. signature and NID binding.
    if (!signature)
        return rejected(signature.error());

    // 2. replay window.
    if (options_.profile != RegistryProfile::local_dev) {
        const std::int64_t skew = entry.timestamp_ms > at ? entry.timestamp_ms - at : at - entry.timestamp_ms;
        if (skew > limits::kNdpReplayWindowSeconds * 1000)
            return rejected(protocol_error(code::kNdpAnnounceSignatureInvalid,
                                           "announce of '" + entry.nid + "': timestamp outside the replay window of " +
                                               std::to_string(limits::kNdpReplayWindowSeconds) + " s"));
    }

    // 3. sequence and covered content.
    auto facts = announce_facts(frame_json);
    if (!facts)
        return rejected(std::move(facts).error());
    const auto fence = fences_.find(entry.nid);
    if (fence == fences_.end() && fences_.size() >= options_.max_entries)
        return rejected(protocol_error(code::kNdpRegistryUnavailable,
                                       "registry holds " + std::to_string(options_.max_entries) + " NIDs, its limit"));
    auto sequence = check_sequence(entry.nid, *facts, fence == fences_.end() ? nullptr : &fence->second);
    if (!sequence)
        return rejected(std::move(sequence).error());
    if (*sequence == Decision::duplicate)
        return {.decision = Decision::duplicate, .error = std::nullopt};
    const bool refresh = *sequence == Decision::refreshed;

    // 4. offline.
    if (entry.ttl_seconds == 0) {
        fences_[entry.nid] = std::move(*facts);
        entries_.erase(entry.nid);
        return {.decision = Decision::removed, .error = std::nullopt};
    }

    // 5. stale on arrival.
    if (!entry.live_at(at))
        return rejected(protocol_error(code::kNdpAnnounceStale, "announce of '" + entry.nid +
                                                                    "' was fresh only until " +
                                                                    format_rfc3339_ms(entry.fresh_until_ms())));

    // 6. store.
    entry.signed_body = facts->signed_body;
    fences_[entry.nid] = std::move(*facts);
    entry.frame_json = std::string(frame_json);
    const std::string nid = entry.nid;
    entries_[nid] = std::move(entry);
    return {.decision = refresh ? Decision::refreshed : Decision::accepted, .error = std::nullopt};
}

std::vector<std::string> RegistryModel::live_nids() const
{
    const std::int64_t now = options_.clock->now_ms();
    std::vector<std::string> out;
    for (const auto& [nid, entry] : entries_)
        if (entry.live_at(now))
            out.push_back(nid);
    return out;
}

std::map<std::string, std::uint64_t> RegistryModel::highest_sequences() const
{
    std::map<std::string, std::uint64_t> out;
    for (const auto& [nid, fence] : fences_)
        out.emplace(nid, fence.graph_seq);
    return out;
}

Result<RegistryEntry> RegistryModel::resolve(std::string_view nid) const
{
    const auto it = entries_.find(nid);
    if (it == entries_.end())
        return protocol_error(code::kNdpResolveNotFound, "no live announce for '" + std::string(nid) + "'");
    if (!it->second.live_at(options_.clock->now_ms()))
        return protocol_error(code::kNdpResolveStale, "the announce of '" + std::string(nid) + "' expired at " +
                                                          format_rfc3339_ms(it->second.fresh_until_ms()));
    return it->second;
}

Result<RegistryEntry> RegistryModel::resolve_cluster(std::string_view cluster_anchor) const
{
    const std::int64_t now = options_.clock->now_ms();
    const RegistryEntry* best = nullptr;
    bool tie = false;
    for (const auto& [nid, entry] : entries_) {
        if (entry.cluster_anchor != cluster_anchor || !entry.live_at(now))
            continue;
        if (best == nullptr || entry.cluster_epoch > best->cluster_epoch) {
            best = &entry;
            tie = false;
        } else if (entry.cluster_epoch == best->cluster_epoch) {
            tie = true;
        }
    }
    if (best == nullptr)
        return protocol_error(code::kNdpResolveNotFound,
                              "no live anchor of cluster '" + std::string(cluster_anchor) + "'");
    if (tie)
        return protocol_error(code::kNdpClusterSplit, "cluster '" + std::string(cluster_anchor) +
                                                          "' has several live anchors at epoch " +
                                                          std::to_string(best->cluster_epoch));
    return *best;
}

std::vector<std::string> RegistryModel::bridges(BridgeDirection direction, std::string_view protocol) const
{
    const std::int64_t now = options_.clock->now_ms();
    std::vector<std::string> out;
    for (const auto& [nid, entry] : entries_) {
        if (!entry.live_at(now) || !has(entry.node_roles, "bridge"))
            continue;
        const auto& list = direction == BridgeDirection::inbound ? entry.bridge_inbound_protocols
                                                                 : entry.bridge_protocols;
        if (has(list, protocol))
            out.push_back(nid);
    }
    return out;  // entries_ is ordered by NID
}

}  // namespace nps::proto::ndp
