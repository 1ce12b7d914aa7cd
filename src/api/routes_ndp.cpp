// SPDX-License-Identifier: Apache-2.0
// The local NDP registry: agent NID → spawn_spec_ref (digest §9.5: the spec
// defines no by-NID registry API, so this minimal one is ours).
#include "nps/api/api.hpp"
#include "nps/api/json_io.hpp"
#include "nps/base/limits.hpp"
#include "nps/base/time_format.hpp"
#include "nps/proto/task_frame.hpp"

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

net::HttpResponse Api::put_announce(const net::HttpRequest& request, const std::string& nid)
{
    if (!proto::is_valid_nid(nid))
        return error_response("NDP-ANNOUNCE-INVALID", "'" + nid + "' is not a NID (urn:nps:…)");
    auto body = parse_json_object(request.body);
    if (!body)
        return error_response(body.error());
    auto invalid = [](const Error& e) { return error_response("NDP-ANNOUNCE-INVALID", e.message); };

    auto body_nid = optional_string(*body, "nid", limits::kMaxNidChars);
    if (!body_nid)
        return invalid(body_nid.error());
    if (*body_nid && **body_nid != nid)
        return error_response("NDP-ANNOUNCE-INVALID", "Field 'nid' ('" + **body_nid + "') differs from the path NID");
    auto mode = optional_string(*body, "activation_mode", 16);
    if (!mode)
        return invalid(mode.error());
    std::string activation = mode->value_or("ephemeral");  // NDP §3.1: absent means ephemeral
    if (activation != "ephemeral" && activation != "resident" && activation != "hybrid")
        return error_response("NDP-ANNOUNCE-INVALID",
                              "activation_mode '" + activation + "' is not ephemeral, resident or hybrid");
    auto ref = optional_string(*body, "spawn_spec_ref", limits::kMaxSpawnSpecRefChars);
    if (!ref)
        return invalid(ref.error());
    if (!*ref && activation != "resident")
        return error_response("NDP-ANNOUNCE-INVALID",
                              "Field 'spawn_spec_ref' is required for an " + activation + " agent");
    auto ttl = optional_uint32(*body, "ttl");
    if (!ttl)
        return invalid(ttl.error());

    store::Announce announce{
        .nid = nid,
        .activation_mode = activation,
        .spawn_spec_ref = ref->value_or(""),
        .ttl_seconds = *ttl,
        .announced_at_ms = 0,
        .body_json = body->dump(),
    };
    auto store = stores_.acquire();
    if (!store)
        return error_response(store.error());
    if (auto r = (*store)->put_announce(announce); !r)
        return error_response(r.error());
    return json_response(200, {{"nid", nid}, {"status", (ttl->value_or(1) == 0) ? "offline" : "registered"}});
}

net::HttpResponse Api::list_announces()
{
    auto store = stores_.acquire();
    if (!store)
        return error_response(store.error());
    auto list = (*store)->list_announces();
    if (!list)
        return error_response(list.error());
    Json out = Json::array();
    for (const auto& a : *list)
        out.push_back(announce_json(a));
    return json_response(200, {{"count", out.size()}, {"announces", std::move(out)}});
}

net::HttpResponse Api::resolve(const net::HttpRequest& request)
{
    auto it = request.query.find("nid");
    if (it == request.query.end() || !proto::is_valid_nid(it->second))
        return error_response("NWP-HTTP-PARAM-INVALID", "Query parameter 'nid' must be a NID (urn:nps:…)");
    auto store = stores_.acquire();
    if (!store)
        return error_response(store.error());
    auto announce = (*store)->resolve_announce(it->second);
    if (!announce)
        return error_response(announce.error());
    return json_response(200, announce_json(*announce));
}

}  // namespace nps::api
