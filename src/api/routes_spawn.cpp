// SPDX-License-Identifier: Apache-2.0
// POST /v1/spawnspecs/resolve: SpawnSpec resolution as the supervisor does it,
// exposed so operators (and the black-box TC-N3-Spawn tests) can see what an
// agent NID or a spawn_spec_ref resolves to, or exactly why it does not.
#include <nlohmann/json.hpp>

#include "nps/api/api.hpp"
#include "nps/api/json_io.hpp"
#include "nps/base/limits.hpp"

namespace nps::api {

namespace {

Json nullable(const std::optional<std::int64_t>& value) { return value ? Json(*value) : Json(nullptr); }

Json resolution_json(const spawn::Resolution& r)
{
    Json announce = nullptr;
    if (r.agent)
        announce = {{"source", r.announce_source}, {"activation_mode", r.activation_mode}};
    return {
        {"spawn_spec", Json::parse(spawn::spawn_spec_to_json(r.spec))},
        {"limits",
         {{"cpu_millicores", nullable(r.spec.cpu_millicores)},
          {"memory_bytes", nullable(r.spec.memory_bytes)},
          {"cgn_budget", nullable(r.spec.cgn_budget)},
          {"idle_timeout_seconds", r.spec.idle_timeout_seconds ? Json(*r.spec.idle_timeout_seconds) : Json(nullptr)},
          {"max_runtime_seconds", r.spec.max_runtime_seconds ? Json(*r.spec.max_runtime_seconds) : Json(nullptr)}}},
        {"spawn_spec_ref", r.spawn_spec_ref},
        {"source", spawn::to_string(r.kind)},
        {"fetched_url", r.fetched_url.empty() ? Json(nullptr) : Json(r.fetched_url)},
        {"cache", spawn::to_string(r.cache)},
        {"agent", r.agent ? Json(*r.agent) : Json(nullptr)},
        {"announce", announce},
    };
}

}  // namespace

Result<net::HttpResponse> Api::resolve_spawn_spec(const net::HttpRequest& request)
{
    auto body = NPS_TRY(parse_json_object(request.body));
    for (const auto& [key, _] : body.items())
        if (key != "agent" && key != "spawn_spec_ref")
            return protocol_error("NWP-HTTP-PARAM-INVALID",
                                  "Unknown field '" + key + "' (expected 'agent' or 'spawn_spec_ref')");
    // A ref longer than the announce limit is the resolver's to refuse
    // (NOP-SPAWN-SPEC-INVALID); the body cap bounds it here.
    auto agent = NPS_TRY(optional_string(body, "agent", limits::kMaxNidChars));
    auto ref = NPS_TRY(optional_string(body, "spawn_spec_ref", limits::kMaxBodyBytes));
    if (agent.has_value() == ref.has_value())
        return protocol_error("NWP-HTTP-PARAM-INVALID", "Give exactly one of 'agent' (a NID) and 'spawn_spec_ref'");
    auto resolution = agent ? spawn_resolver_.resolve_agent(*agent) : spawn_resolver_.resolve_ref(*ref);
    if (!resolution)
        return std::move(resolution).error();
    return json_response(200, resolution_json(*resolution));
}

}  // namespace nps::api
