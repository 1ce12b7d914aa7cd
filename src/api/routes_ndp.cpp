// SPDX-License-Identifier: Apache-2.0
// The local NDP registry: agent NID → spawn_spec_ref (digest §9.5: the spec
// defines no by-NID registry API, so this minimal one is ours).
#include "nps/api/api.hpp"
#include "nps/api/json_io.hpp"
#include "nps/base/limits.hpp"
#include "nps/base/log.hpp"
#include "nps/base/time_format.hpp"
#include "nps/proto/announce.hpp"
#include "nps/proto/error_codes.hpp"
#include "nps/proto/ndp_registry.hpp"
#include "nps/proto/task_frame.hpp"
#include "nps/spawn/spec_ref.hpp"

namespace nps::api {

namespace {

Json announce_json(const store::Announce& a)
{
    return {
        {"nid", a.nid},
        {"activation_mode", a.activation_mode},
        {"spawn_spec_ref", a.spawn_spec_ref},
        {"ttl", a.ttl_seconds ? Json(*a.ttl_seconds) : Json(nullptr)},
        {"announced_at", format_rfc3339_ms(a.announced_at_ms)},
    };
}

}  // namespace

Result<net::HttpResponse> Api::put_announce(const net::HttpRequest& request, const std::string& nid)
{
    // Any defect in an announce is NDP-ANNOUNCE-INVALID, with the reader's message.
    auto invalid = [](const Error& e) { return protocol_error(proto::code::kNdpAnnounceInvalid, e.message); };
    if (!proto::is_valid_nid(nid))
        return protocol_error(proto::code::kNdpAnnounceInvalid, "'" + nid + "' is not a NID (urn:nps:…)");
    auto body = NPS_TRY(parse_json_object(request.body));
    auto body_nid = optional_string(body, "nid", limits::kMaxNidChars);
    auto mode = optional_string(body, "activation_mode", 16);
    auto ref = optional_string(body, "spawn_spec_ref", limits::kMaxSpawnSpecRefChars);
    auto ttl = optional_uint32(body, "ttl");
    for (const Error* e : {body_nid ? nullptr : &body_nid.error(), mode ? nullptr : &mode.error(),
                           ref ? nullptr : &ref.error(), ttl ? nullptr : &ttl.error()})
        if (e)
            return invalid(*e);
    if (*body_nid && **body_nid != nid)
        return protocol_error(proto::code::kNdpAnnounceInvalid,
                              "Field 'nid' ('" + **body_nid + "') differs from the path NID");
    std::string activation = mode->value_or("ephemeral");  // NDP §3.1: absent means ephemeral
    if (activation != "ephemeral" && activation != "resident" && activation != "hybrid")
        return protocol_error(proto::code::kNdpAnnounceInvalid,
                              "activation_mode '" + activation + "' is not ephemeral, resident or hybrid");
    if (!*ref && activation != "resident")
        return protocol_error(proto::code::kNdpAnnounceInvalid,
                              "Field 'spawn_spec_ref' is required for an " + activation + " agent");
    if (*ref)
        if (auto syntax = spawn::check_spawn_spec_ref_syntax(**ref); !syntax)
            return invalid(syntax.error());
    // The path names the NID of a body without one (a signed body names its
    // own); the frame is stored, checked and compared in that form.
    std::string framed = request.body;
    if (!*body_nid) {
        Json with_nid = body;
        with_nid["nid"] = nid;
        framed = with_nid.dump();
    }
    // NDP §7.4 rule 1, before anything changes: a signature must verify
    // under a trusted key of the NID; [ndp] require_signed refuses unsigned
    // announces and NIDs without a trusted key.
    const auto signature = NPS_TRY(proto::ndp::check_announce_trust(framed, config_.announce_trust));
    auto facts = proto::ndp::announce_facts(framed);
    if (!facts)
        return invalid(facts.error());
    // Rule 5: an announce whose own time plus ttl has passed is stale on arrival.
    const std::int64_t now = clock_.now_ms();
    if (ttl->value_or(1) != 0 && facts->fresh_until_ms && *facts->fresh_until_ms <= now)
        return protocol_error(proto::code::kNdpAnnounceStale, "The announce of '" + nid + "' was fresh only until " +
                                                                  format_rfc3339_ms(*facts->fresh_until_ms) +
                                                                  " (its timestamp plus ttl)");

    // Rule 3, in the store's transaction: once a NID announced a graph_seq,
    // a lower one is refused, an exact retransmission dropped, and other
    // content under the same graph_seq refused. Announces that carry no
    // graph_seq, to a NID that never had one, replace each other
    // (docs/protocol-choices.md "Local announces").
    auto decision = proto::ndp::Decision::accepted;
    auto admit = [&](const store::Announce* stored) -> Result<bool> {
        if (stored == nullptr)
            return true;
        auto fence = proto::ndp::announce_facts(stored->body_json);
        if (!fence)
            return internal_error("The stored announce of '" + nid + "' cannot be read: " + fence.error().message);
        if (!facts->has_graph_seq && !fence->has_graph_seq)
            return true;
        decision = NPS_TRY(proto::ndp::check_sequence(nid, *facts, &*fence));
        return decision != proto::ndp::Decision::duplicate;
    };
    NPS_TRY_VOID(NPS_TRY(stores_.acquire())->put_announce(
        {
            .nid = nid,
            .activation_mode = activation,
            .spawn_spec_ref = ref->value_or(""),
            .ttl_seconds = *ttl,
            .announced_at_ms = facts->seen_at_ms.value_or(0),
            .body_json = framed,
        },
        admit));
    const char* status = decision == proto::ndp::Decision::duplicate ? "duplicate"
                         : ttl->value_or(1) == 0                    ? "offline"
                                                                    : "registered";
    return json_response(200, {{"nid", nid},
                               {"status", status},
                               {"decision", proto::ndp::decision_name(decision)},
                               {"signature", signature == proto::ndp::SignatureStatus::verified ? "verified"
                                                                                                 : "unverified"}});
}

Result<net::HttpResponse> Api::list_announces()
{
    auto store = NPS_TRY(stores_.acquire());
    auto list = NPS_TRY(store->list_announces());
    Json out = Json::array();
    for (const auto& a : list)
        out.push_back(announce_json(a));
    return json_response(200, {{"count", out.size()}, {"announces", std::move(out)}});
}

Result<net::HttpResponse> Api::resolve(const net::HttpRequest& request)
{
    auto it = request.query.find("nid");
    if (it == request.query.end() || !proto::is_valid_nid(it->second))
        return protocol_error(proto::code::kNwpHttpParamInvalid, "Query parameter 'nid' must be a NID (urn:nps:…)");
    auto store = NPS_TRY(stores_.acquire());
    auto announce = NPS_TRY(store->resolve_announce(it->second));
    return json_response(200, announce_json(announce));
}

Result<net::HttpResponse> Api::remove_announce(const std::string& nid)
{
    auto store = NPS_TRY(stores_.acquire());
    NPS_TRY_VOID(store->remove_announce(nid));
    log::info("announce of " + nid + " removed");
    return json_response(200, {{"nid", nid}, {"removed", true}});
}

}  // namespace nps::api
