// SPDX-License-Identifier: Apache-2.0
// What the daemon says about itself: GET /.nwm (the route catalogue as an
// NWP manifest, npsd's parity route) and GET /v1/capabilities (frames,
// encodings, SpawnSpec forms, limits in force, cgroup and namespace modes,
// the NPS-Node-L3 cases and the tests of ours that verify them). docs/api.md,
// "Self-description".
#include "nps/api/api.hpp"
#include "nps/api/json_io.hpp"
#include "nps/base/digest.hpp"
#include "nps/base/limits.hpp"

namespace nps::api {

namespace {

// The dashboard's routes (routed before the table, routes_ui.cpp), listed
// after the table's.
struct UiRoute {
    const char* name;
    const char* method;
    const char* path;
};
constexpr UiRoute kUiRoutes[] = {
    {"dashboard", "GET", "/ui/"},
    {"dashboard_login_code", "POST", "/v1/ui/login-codes"},
};

// The NPS-Node-L3 cases (CR-0007 §8) and the tests of this repository that
// run each one black-box against the real daemon (conformance/README.md).
struct ConformanceCase {
    const char* id;
    const char* verified_by;
};
constexpr ConformanceCase kConformance[] = {
    {"TC-N3-Claim-01", "tc-n3-claim, tc-n3-suite"},
    {"TC-N3-Claim-02", "tc-n3-claim, tc-n3-suite, executor"},
    {"TC-N3-Claim-03", "tc-n3-claim, tc-n3-suite"},
    {"TC-N3-Spawn-01", "tc-n3-spawn, tc-n3-suite"},
    {"TC-N3-Spawn-02", "tc-n3-spawn, tc-n3-suite"},
    {"TC-N3-Spawn-03", "tc-n3-spawn, tc-n3-suite, executor"},
    {"TC-N3-Life-01", "tc-n3-suite, executor"},
    {"TC-N3-Life-02", "tc-n3-suite, executor"},
    {"TC-N3-DAG-01", "tc-n3-suite, executor"},
    {"TC-N3-Saga-01", "tc-n3-suite, executor"},
};

// Every route (the sdk-routes test asks each one): the table's, the dashboard's.
Json routes_json(std::span<const Route> table)
{
    Json routes = Json::array();
    for (const auto& r : table)
        routes.push_back({{"name", r.name}, {"method", r.method}, {"path", r.pattern}});
    for (const auto& r : kUiRoutes)
        routes.push_back({{"name", r.name}, {"method", r.method}, {"path", r.path}});
    return routes;
}

Json limit_or_null(std::int64_t value)
{
    return value > 0 ? Json(value) : Json(nullptr);
}

}  // namespace

Result<net::HttpResponse> Api::manifest(const net::HttpRequest& request)
{
    const Json routes = routes_json(route_table());
    Json endpoints = Json::object();
    for (const auto& r : routes)
        endpoints[r["name"].get<std::string>()] = r["path"];
    const Json body = {
        {"nwp", "0.21"},
        {"node_id", config_.runner_nid},
        {"node_type", "runner"},
        {"display_name", "nps-runner"},
        {"version", NPS_RUNNER_VERSION},
        {"wire_formats", {"json", "msgpack"}},
        {"preferred_format", "json"},
        {"capabilities", {{"inbox", true}, {"claims", true}, {"task_store", true}, {"ndp_registry", true}}},
        {"auth",
         {{"required", config_.require_token || config_.token.has_value()}, {"schemes", {"bearer", "basic"}}}},
        {"endpoints", endpoints},
        {"routes", routes},
    };
    const std::string text = body.dump();
    const std::string version = "\"" + sha256_hex(text).substr(0, 16) + "\"";
    net::HttpResponse response;
    if (request.header("if-none-match") == version) {
        response.status = 304;
        response.content_type.clear();
    } else {
        response.body = text + "\n";
        response.content_type = "application/nwp-manifest+json";
    }
    response.headers.emplace_back("ETag", version);
    response.headers.emplace_back("X-NWM-Version", version.substr(1, version.size() - 2));
    return response;
}

Result<net::HttpResponse> Api::capabilities()
{
    const auto& w = config_.workers;
    Json cgroup_limits = Json::object();
    for (const auto& [controller, by] : host_.limits_enforced_by)
        cgroup_limits[controller] = by.empty() ? Json(nullptr) : Json(by);
    Json conformance = Json::array();
    for (const auto& c : kConformance)
        conformance.push_back({{"id", c.id}, {"verdict", "pass"}, {"verified_by", c.verified_by}});
    Json body = {
        {"runner", {{"nid", config_.runner_nid}, {"version", NPS_RUNNER_VERSION}, {"inboxes", config_.inboxes}}},
        {"frames",
         {{"accepts", {{{"type", "0x40"}, {"name", "TaskFrame"}}}},
          {"to_workers", {{{"type", "0x41"}, {"name", "DelegateFrame"}}}},
          {"from_workers", {{{"type", "0x43"}, {"name", "AlignStream"}}}}}},
        {"encodings",
         {{"request_bodies", {"json", "msgpack"}},
          {"frame_media_types", {"application/x-nps-frame", "application/nwp-frame"}},
          {"framed_answers", {{"success", "CapsFrame 0x04"}, {"error", "ErrorFrame 0xFE"}}},
          {"binary_vector_v1", false}}},
        {"spawn_spec_refs", {"spawnspec:<base64url JSON>", "https://", "nwp://"}},
        {"routes", routes_json(route_table())},
        {"limits",
         {{"dag_nodes", limits::kMaxDagNodes},
          {"delegation_chain", limits::kMaxDelegationChain},
          {"lease_seconds", {{"min", limits::kMinLeaseSeconds}, {"max", limits::kMaxLeaseSeconds}}},
          {"inbox",
           {{"max_depth", config_.max_depth},
            {"max_message_bytes", config_.max_message_bytes},
            {"default_ttl_seconds", config_.default_ttl_seconds}}},
          {"workers",
           {{"max_concurrent", w.max_concurrent},
            {"defaults",
             {{"memory_bytes", limit_or_null(w.default_memory_bytes)},
              {"cpu_millicores", limit_or_null(w.default_cpu_millicores)},
              {"pids", limit_or_null(w.default_pids)},
              {"disk_bytes", limit_or_null(static_cast<std::int64_t>(w.default_disk))},
              {"idle_timeout_seconds", limit_or_null(w.default_idle_timeout_seconds)},
              {"max_runtime_seconds", limit_or_null(w.default_max_runtime_seconds)}}},
            {"ceilings",
             {{"memory_bytes", limit_or_null(w.max_memory_bytes)},
              {"cpu_millicores", limit_or_null(w.max_cpu_millicores)},
              {"pids", limit_or_null(w.max_pids)},
              {"disk_bytes", limit_or_null(static_cast<std::int64_t>(w.max_disk))},
              {"max_runtime_seconds", limit_or_null(w.max_runtime_seconds_ceiling)}}}}}}},
        {"cgroup", {{"mode", host_.cgroup_mode}, {"limits", cgroup_limits}}},
        {"conformance", {{"suite", "NPS-Node-L3 0.2"}, {"cases", conformance}}},
    };
    if (!host_.cgroup_problem.empty())
        body["cgroup"]["problem"] = host_.cgroup_problem;
    // The sandbox as the executor runs it (user and network namespaces).
    if (hooks_.executor) {
        const Json executor = hooks_.executor();
        if (executor.is_object())
            body["namespaces"] = {{"user", executor.value("user_namespace", Json(nullptr))},
                                  {"network", executor.value("network", Json(nullptr))}};
    }
    return json_response(200, body);
}

}  // namespace nps::api
