// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the net unit tests: a temp directory, an echo handler and
// a server on a loopback port.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "nps/net/http_client.hpp"
#include "nps/net/http_server.hpp"
#include "temp_dir.hpp"

namespace nps::net::test {

using nps::test::TempDir;

// A server on 127.0.0.1 with a port of the kernel's choosing (the listen
// address in `options` is replaced); throws if it cannot start.
inline std::unique_ptr<HttpServer> start_tcp(HttpHandler handler, HttpServerOptions options = {})
{
    options.tcp_listen = "127.0.0.1:0";
    auto server = HttpServer::start(options, std::move(handler));
    if (!server)
        throw std::runtime_error(server.error().describe());
    return std::move(server).value();
}

// Echoes the request as JSON; status from ?status=, adds "X-Reply: yes".
inline HttpResponse echo(const HttpRequest& request)
{
    nlohmann::json j;
    j["method"] = request.method;
    j["path"] = request.path;
    j["query"] = request.query;
    j["headers"] = request.headers;
    j["body"] = request.body;
    j["body_size"] = request.body.size();
    j["body_too_large"] = request.body_too_large;
    j["from_loopback"] = request.from_loopback;
    j["from_unix_socket"] = request.from_unix_socket;
    HttpResponse response;
    if (request.body_too_large)
        response.status = 413;
    if (auto it = request.query.find("status"); it != request.query.end())
        response.status = std::stoi(it->second);
    // Binary bodies do not survive JSON text; echo them raw on /raw.
    response.body = request.path == "/raw" ? request.body : j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    response.headers.emplace_back("X-Reply", "yes");
    return response;
}

inline std::string tcp_url(const HttpServer& server, const std::string& target)
{
    return "http://127.0.0.1:" + std::to_string(server.tcp_port()) + target;
}

inline ClientResponse must(Result<ClientResponse> result)
{
    if (!result)
        throw std::runtime_error("request failed: " + result.error().describe());
    return std::move(result).value();
}

inline nlohmann::json body_json(const ClientResponse& response)
{
    return nlohmann::json::parse(response.body);
}

inline ClientRequest get(const std::string& url)
{
    ClientRequest request;
    request.url = url;
    return request;
}

}  // namespace nps::net::test
