// SPDX-License-Identifier: Apache-2.0
// match_route(): literal segments before placeholders, 405 with the methods
// of the most specific pattern, 404 for no pattern, placeholders captured.
#include <doctest/doctest.h>

#include "nps/api/route_table.hpp"

using nps::api::match_route;
using nps::api::PathParams;
using nps::api::Route;
using nps::api::RouteMatch;

namespace {

// Matching never calls a handler.
void none(nps::api::Api&, const nps::net::HttpRequest&, const PathParams&, const nps::api::Reply&) {}

constexpr Route kTable[] = {
    {"health", "GET", "/healthz", none},
    {"deposit", "POST", "/v1/inbox/{nid}", none},
    {"peek", "GET", "/v1/inbox/{nid}", none},
    {"ack", "DELETE", "/v1/inbox/{nid}/{message_id}", none},
    {"depth", "GET", "/v1/inbox/{nid}/depth", none},
    {"node", "PATCH", "/v1/tasks/{task_id}/nodes/{node_id}", none},
    {"sdk", "POST", "/task", none},
};

const char* found(const RouteMatch& match)
{
    return match.kind == RouteMatch::Kind::found ? match.route->name : "(none)";
}

}  // namespace

TEST_CASE("the method picks among one pattern's routes; placeholders are captured in order")
{
    CHECK(std::string(found(match_route(kTable, "GET", "/v1/inbox/urn:nps:node:a:b"))) == "peek");
    const auto deposit = match_route(kTable, "POST", "/v1/inbox/urn:nps:node:a:b");
    CHECK(std::string(found(deposit)) == "deposit");
    CHECK(deposit.params == PathParams{"urn:nps:node:a:b"});
    const auto node = match_route(kTable, "PATCH", "/v1/tasks/t-1/nodes/n0");
    CHECK(std::string(found(node)) == "node");
    CHECK(node.params == PathParams{"t-1", "n0"});
    CHECK(std::string(found(match_route(kTable, "POST", "/task"))) == "sdk");
    CHECK(std::string(found(match_route(kTable, "GET", "/healthz/"))) == "health");  // one trailing slash
}

TEST_CASE("a literal segment shadows a placeholder, whatever the method")
{
    CHECK(std::string(found(match_route(kTable, "GET", "/v1/inbox/n/depth"))) == "depth");
    CHECK(std::string(found(match_route(kTable, "DELETE", "/v1/inbox/n/42"))) == "ack");
    const auto wrong = match_route(kTable, "DELETE", "/v1/inbox/n/depth");  // not an ack of message "depth"
    CHECK(wrong.kind == RouteMatch::Kind::wrong_method);
    CHECK(wrong.allow == "GET");
}

TEST_CASE("405 names the pattern's methods in table order; 404 for no pattern")
{
    const auto wrong = match_route(kTable, "PUT", "/v1/inbox/n");
    CHECK(wrong.kind == RouteMatch::Kind::wrong_method);
    CHECK(wrong.allow == "POST, GET");
    CHECK(match_route(kTable, "GET", "/task").allow == "POST");
    for (const char* path : {"/", "", "/v1", "/v1/inbox", "/v1/inbox//depth", "/v1/inbox/n/depth/x", "/healthz//",
                             "/v1/tasks/t/nodes/", "/HEALTHZ", "/v1/tasks/t/nodes/n/extra"}) {
        CAPTURE(path);
        CHECK(match_route(kTable, "GET", path).kind == RouteMatch::Kind::not_found);
    }
}
