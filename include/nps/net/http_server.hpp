// SPDX-License-Identifier: Apache-2.0
// A small HTTP/1.1 server on libmicrohttpd, listening on a TCP address and/or
// a unix socket, handing each complete request to one Handler.
//
// Threading: one thread per connection (capped by max_connections), so a
// handler may block (long-poll) without stalling other requests. The handler
// must therefore be thread-safe.
//
// Bodies above max_body_bytes are not buffered: the handler sees
// body_too_large=true and an empty body and should answer 413. The rest of
// such an upload is read and discarded (so the client sees the answer), except
// that a request announcing an oversize Content-Length with
// "Expect: 100-continue" is answered at once, before any body is sent.
//
// A handler that throws gets a 500 with the NPS-SERVER-INTERNAL error body;
// the exception is logged to stderr and the server keeps serving.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "nps/base/limits.hpp"
#include "nps/base/result.hpp"

namespace nps::net {

struct HttpRequest {
    std::string method;                          // "GET", "POST", …
    std::string path;                            // percent-decoded path, no query
    std::map<std::string, std::string> query;    // decoded query parameters (last one wins)
    std::map<std::string, std::string> headers;  // header names lower-cased
    std::string body;
    bool body_too_large = false;
    bool from_loopback = false;     // TCP peer in 127.0.0.0/8 or ::1
    bool from_unix_socket = false;  // arrived on the unix socket

    // Header value or empty string.
    const std::string& header(const std::string& lowercase_name) const;
};

struct HttpResponse {
    int status = 200;
    std::string content_type = "application/json";
    std::string body;
    std::vector<std::pair<std::string, std::string>> headers;
};

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

struct HttpServerOptions {
    std::optional<std::string> tcp_listen;   // "127.0.0.1:17437", "[::1]:0", "0.0.0.0:17437"; port 0 = any
    std::optional<std::string> unix_socket;  // path; a stale socket file (nobody listening) is replaced,
                                             // a live socket or any other file is an error; parent dir created 0755
    mode_t unix_socket_mode = 0660;
    std::size_t max_body_bytes = limits::kMaxBodyBytes;
    unsigned max_connections = limits::kMaxHttpConnections;  // per listener (TCP and unix socket each)
    unsigned connection_timeout_seconds = limits::kHttpConnectionTimeoutSeconds;
};

class HttpServer {
public:
    // Binds and starts serving. Errors name the address: "Failed to bind
    // '127.0.0.1:17437': Address already in use".
    static Result<std::unique_ptr<HttpServer>> start(const HttpServerOptions& options, HttpHandler handler);
    // Stops accepting, waits for in-flight requests (a long-poll handler must
    // therefore be woken by the caller first), removes the socket file it created.
    virtual ~HttpServer() = default;

    // The bound TCP port (useful with port 0), or 0 without a TCP listener.
    virtual std::uint16_t tcp_port() const = 0;
};

// Splits "host:port" / "[v6]:port"; fails with a message naming the text.
Result<std::pair<std::string, std::uint16_t>> parse_listen_address(const std::string& text);
// True for 127.0.0.0/8, ::1 and "localhost".
bool is_loopback_host(const std::string& host);

}  // namespace nps::net
