// SPDX-License-Identifier: Apache-2.0
// POST /v1/spawnspecs/resolve: SpawnSpec resolution as the supervisor does it,
// exposed so operators (and the black-box TC-N3-Spawn tests) can see what an
// agent NID or a spawn_spec_ref resolves to, or exactly why it does not.
#include <exception>
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "nps/api/api.hpp"
#include "nps/api/json_io.hpp"
#include "nps/base/limits.hpp"
#include "nps/executor/executor_options.hpp"
#include "nps/proto/error_codes.hpp"
#include "nps/spawn/spawn_ceilings.hpp"

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

namespace {

struct SpawnQuery {
    std::optional<std::string> agent;
    std::optional<std::string> ref;
};

Result<SpawnQuery> spawn_query(const net::HttpRequest& request)
{
    auto body = NPS_TRY(parse_json_object(request.body));
    for (const auto& [key, _] : body.items())
        if (key != "agent" && key != "spawn_spec_ref")
            return protocol_error(proto::code::kNwpHttpParamInvalid,
                                  "Unknown field '" + key + "' (expected 'agent' or 'spawn_spec_ref')");
    // A ref longer than the announce limit is the resolver's to refuse
    // (NOP-SPAWN-SPEC-INVALID); the body cap bounds it here.
    SpawnQuery query;
    query.agent = NPS_TRY(optional_string(body, "agent", limits::kMaxNidChars));
    query.ref = NPS_TRY(optional_string(body, "spawn_spec_ref", limits::kMaxBodyBytes));
    if (query.agent.has_value() == query.ref.has_value())
        return protocol_error(proto::code::kNwpHttpParamInvalid,
                              "Give exactly one of 'agent' (a NID) and 'spawn_spec_ref'");
    return query;
}

}  // namespace

// Resolving may fetch over the network (a remote registry, an https ref), so
// it runs off the loop (hooks_.offload) and answers when done.
void Api::resolve_spawn_spec(const net::HttpRequest& request, const Reply& reply)
{
    auto query = spawn_query(request);
    if (!query)
        return reply(std::move(query).error());
    auto outcome = std::make_shared<std::optional<Result<spawn::Resolution>>>();
    // `work` runs on another thread: it captures no Reply (a Responder is
    // the loop thread's), only what it fills in.
    auto work = [this, q = std::move(*query), outcome] {
        try {
            *outcome = q.agent ? spawn_resolver_.resolve_agent(*q.agent) : spawn_resolver_.resolve_ref(*q.ref);
        } catch (const std::exception& e) {
            *outcome = Result<spawn::Resolution>(internal_error(std::string("Internal error: ") + e.what()));
        }
    };
    auto done = [this, reply, outcome] {
        if (!*outcome)
            return reply(internal_error("SpawnSpec resolution did not run"));
        auto& resolution = **outcome;
        if (!resolution)
            return reply(resolution.error());
        // As a launch would refuse it (on the loop: a reload changes the ceilings here).
        if (auto within = spawn::check_spawn_ceilings(resolution->spec, executor::spawn_ceilings(config_.workers));
            !within)
            return reply(within.error());
        reply(json_response(200, resolution_json(*resolution)));
    };
    if (hooks_.offload) {
        hooks_.offload(std::move(work), std::move(done));
    } else {
        work();
        done();
    }
}

}  // namespace nps::api
