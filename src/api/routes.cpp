// SPDX-License-Identifier: Apache-2.0
// Every API route, in one table (nps/api/route_table.hpp): dispatch() finds
// a request's route in it, GET /.nwm lists it. The handlers are Api's
// members in the routes_*.cpp files; those that may answer later (a deposit
// waits for its commit, a long-poll for a message, a SpawnSpec resolution
// for its fetch) are handed the Reply, the others' result is the answer.
// The dashboard's /ui/… and /v1/ui/… paths are routed before this table
// (routes_ui.cpp).
#include "nps/api/api.hpp"
#include "nps/api/json_io.hpp"
#include "nps/proto/error_codes.hpp"

namespace nps::api {

std::span<const Route> Api::route_table()
{
    using Request = net::HttpRequest;
    using Params = PathParams;
    // clang-format off
    static const Route kRoutes[] = {
        {"manifest", "GET", "/.nwm",
         [](Api& a, const Request& r, const Params&, const Reply& reply) { reply(a.manifest(r)); }},
        {"capabilities", "GET", "/v1/capabilities",
         [](Api& a, const Request&, const Params&, const Reply& reply) { reply(a.capabilities()); }},
        {"health", "GET", "/health",
         [](Api& a, const Request&, const Params&, const Reply& reply) { reply(a.health()); }},
        {"healthz", "GET", "/healthz",
         [](Api& a, const Request&, const Params&, const Reply& reply) { reply(a.healthz()); }},
        {"readyz", "GET", "/readyz",
         [](Api& a, const Request&, const Params&, const Reply& reply) { reply(a.readyz()); }},
        {"metrics", "GET", "/metrics",
         [](Api& a, const Request&, const Params&, const Reply& reply) { reply(a.render_metrics()); }},

        {"inbox_long_poll", "GET", "/v1/inbox/{nid}",
         [](Api& a, const Request& r, const Params& p, const Reply& reply) { a.peek(r, p[0], reply); }},
        {"inbox_deposit", "POST", "/v1/inbox/{nid}",
         [](Api& a, const Request& r, const Params& p, const Reply& reply) { a.deposit(r, p[0], reply); }},
        {"inbox_ack", "DELETE", "/v1/inbox/{nid}/{message_id}",
         [](Api& a, const Request&, const Params& p, const Reply& reply) { reply(a.ack(p[0], p[1])); }},
        {"inbox_depth", "GET", "/v1/inbox/{nid}/depth",
         [](Api& a, const Request&, const Params& p, const Reply& reply) { reply(a.depth(p[0])); }},
        {"claim", "POST", "/v1/inbox/{nid}/claims",
         [](Api& a, const Request& r, const Params& p, const Reply& reply) { reply(a.claim(r, p[0])); }},
        {"lease_renew", "POST", "/v1/leases/{task_id}/renew",
         [](Api& a, const Request& r, const Params& p, const Reply& reply) { reply(a.renew(r, p[0])); }},
        {"lease_release", "DELETE", "/v1/leases/{task_id}",
         [](Api& a, const Request& r, const Params& p, const Reply& reply) { reply(a.release(r, p[0])); }},
        {"lease_complete", "POST", "/v1/leases/{task_id}/complete",
         [](Api& a, const Request& r, const Params& p, const Reply& reply) { reply(a.complete(r, p[0])); }},

        {"task_list", "GET", "/v1/tasks",
         [](Api& a, const Request& r, const Params&, const Reply& reply) { reply(a.list_tasks(r)); }},
        {"task_prune", "DELETE", "/v1/tasks",
         [](Api& a, const Request& r, const Params&, const Reply& reply) { reply(a.prune_tasks(r)); }},
        {"task_get", "GET", "/v1/tasks/{task_id}",
         [](Api& a, const Request&, const Params& p, const Reply& reply) { reply(a.get_task(p[0])); }},
        {"task_remove", "DELETE", "/v1/tasks/{task_id}",
         [](Api& a, const Request&, const Params& p, const Reply& reply) { reply(a.remove_task(p[0])); }},
        {"task_cancel", "POST", "/v1/tasks/{task_id}/cancel",
         [](Api& a, const Request&, const Params& p, const Reply& reply) { reply(a.cancel_task(p[0])); }},
        {"task_events", "GET", "/v1/tasks/{task_id}/events",
         [](Api& a, const Request& r, const Params& p, const Reply& reply) { reply(a.task_events(r, p[0])); }},
        {"node_report", "PATCH", "/v1/tasks/{task_id}/nodes/{node_id}",
         [](Api& a, const Request& r, const Params& p, const Reply& reply) { reply(a.report_node(r, p[0], p[1])); }},
        {"node_log", "GET", "/v1/tasks/{task_id}/nodes/{node_id}/log",
         [](Api& a, const Request& r, const Params& p, const Reply& reply) { reply(a.node_log(r, p[0], p[1])); }},
        {"events", "GET", "/v1/events",
         [](Api& a, const Request& r, const Params&, const Reply& reply) { reply(a.all_events(r)); }},
        {"workers", "GET", "/v1/workers",
         [](Api& a, const Request&, const Params&, const Reply& reply) { reply(a.list_workers()); }},
        {"overview", "GET", "/v1/overview",
         [](Api& a, const Request&, const Params&, const Reply& reply) { reply(a.overview()); }},
        {"images", "GET", "/v1/images",
         [](Api& a, const Request&, const Params&, const Reply& reply) { reply(a.list_images()); }},

        {"ndp_announces", "GET", "/v1/ndp/announces",
         [](Api& a, const Request&, const Params&, const Reply& reply) { reply(a.list_announces()); }},
        {"ndp_announce", "PUT", "/v1/ndp/announces/{nid}",
         [](Api& a, const Request& r, const Params& p, const Reply& reply) { reply(a.put_announce(r, p[0])); }},
        {"ndp_announce_remove", "DELETE", "/v1/ndp/announces/{nid}",
         [](Api& a, const Request&, const Params& p, const Reply& reply) { reply(a.remove_announce(p[0])); }},
        {"ndp_resolve", "GET", "/v1/ndp/resolve",
         [](Api& a, const Request& r, const Params&, const Reply& reply) { reply(a.resolve(r)); }},
        {"spawnspec_resolve", "POST", "/v1/spawnspecs/resolve",
         [](Api& a, const Request& r, const Params&, const Reply& reply) { a.resolve_spawn_spec(r, reply); }},

        // The official SDKs' NopClient, on the daemon's root (the inbox
        // api.task_inbox) and under /v1/inbox/{nid} (routes_sdk.cpp).
        {"sdk_task_submit", "POST", "/task",
         [](Api& a, const Request& r, const Params&, const Reply& reply) {
             if (auto nid = a.sdk_inbox())
                 a.deposit(r, *nid, reply);
             else
                 reply(std::move(nid).error());
         }},
        {"sdk_task_status", "GET", "/task/{task_id}",
         [](Api& a, const Request&, const Params& p, const Reply& reply) { reply(a.sdk_task_status({}, p[0])); }},
        {"sdk_task_cancel", "POST", "/task/{task_id}/cancel",
         [](Api& a, const Request&, const Params& p, const Reply& reply) { reply(a.sdk_task_cancel({}, p[0])); }},
        {"sdk_inbox_task_submit", "POST", "/v1/inbox/{nid}/task",
         [](Api& a, const Request& r, const Params& p, const Reply& reply) { a.deposit(r, p[0], reply); }},
        {"sdk_inbox_task_status", "GET", "/v1/inbox/{nid}/task/{task_id}",
         [](Api& a, const Request&, const Params& p, const Reply& reply) { reply(a.sdk_task_status(p[0], p[1])); }},
        {"sdk_inbox_task_cancel", "POST", "/v1/inbox/{nid}/task/{task_id}/cancel",
         [](Api& a, const Request&, const Params& p, const Reply& reply) { reply(a.sdk_task_cancel(p[0], p[1])); }},
    };
    // clang-format on
    return kRoutes;
}

void Api::dispatch(const net::HttpRequest& request, const Reply& reply)
{
    RouteMatch match = match_route(route_table(), request.method, request.path);
    switch (match.kind) {
    case RouteMatch::Kind::found:
        return match.route->handler(*this, request, match.params, reply);
    case RouteMatch::Kind::wrong_method:
        return reply(method_not_allowed(match.allow));
    case RouteMatch::Kind::not_found:
        break;
    }
    reply(error_response(proto::code::kNwpHttpNotFound, "No route for '" + request.path + "'"));
}

}  // namespace nps::api
