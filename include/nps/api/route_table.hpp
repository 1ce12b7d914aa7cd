// SPDX-License-Identifier: Apache-2.0
// The API's routes as one table, and how a request finds its route in it.
//
// A route is a method and a path pattern of literal segments and {name}
// placeholders; a placeholder matches one non-empty segment, taken as it is
// (the HTTP server has already percent-decoded the path). A path matches a
// pattern of as many segments (one trailing slash is tolerated). Of the
// patterns that match, the most specific wins — compared segment by segment,
// a literal before a placeholder — so /v1/inbox/{nid}/depth shadows
// /v1/inbox/{nid}/{message_id} whatever the method. The winning pattern's
// route for the request's method answers; with none, the request gets 405
// and the methods that pattern has; with no pattern at all, 404.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "nps/base/result.hpp"
#include "nps/net/http_server.hpp"

namespace nps::api {

class Api;

// The placeholders' segments of a matched path, in pattern order.
using PathParams = std::vector<std::string>;
// Answers one request (now, or later from the loop).
using Reply = std::function<void(Result<net::HttpResponse>)>;
using RouteHandler = void (*)(Api& api, const net::HttpRequest& request, const PathParams& params,
                              const Reply& reply);

struct Route {
    const char* name;     // the route's name in GET /.nwm
    const char* method;   // GET, POST, PUT, PATCH, DELETE
    const char* pattern;  // e.g. /v1/tasks/{task_id}/nodes/{node_id}
    RouteHandler handler;
};

struct RouteMatch {
    enum class Kind { found, wrong_method, not_found };
    Kind kind = Kind::not_found;
    const Route* route = nullptr;  // found
    PathParams params{};           // found
    std::string allow{};           // wrong_method: "GET, DELETE", in table order
};

RouteMatch match_route(std::span<const Route> routes, std::string_view method, std::string_view path);

}  // namespace nps::api
