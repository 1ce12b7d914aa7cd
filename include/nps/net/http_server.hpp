// SPDX-License-Identifier: Apache-2.0
// A small HTTP/1.1 server on libmicrohttpd, listening on a TCP address and/or
// a unix socket, handing each complete request to one handler.
//
// One server, two ways to own it:
//
//  - LoopHttpServer (what the daemon uses): no thread of its own. MHD runs
//    in its "external epoll" mode: each listener has an epoll fd (fds()) that
//    the owner watches for EPOLLIN in its own event loop; on readiness, and
//    when next_timeout() says so, the owner calls dispatch(), which accepts,
//    reads, calls handlers, and writes without blocking. Everything happens
//    on the owner's thread, so a handler needs no locking and must never
//    block: one that cannot answer at once keeps its Responder and calls it
//    later (on the same thread). The connection is suspended meanwhile (no
//    fd is watched for it, no timeout runs; it still counts towards
//    max_connections) and resumed when answered; the owner's wake-up
//    callback then asks for a dispatch().
//    A slow client cannot stall others: MHD reads and writes partially.
//
//  - HttpServer (tests and tools that want a server without a loop): that
//    same LoopHttpServer on an event loop and thread of its own, each
//    request's synchronous handler on a thread of its own, so a handler may
//    block without stalling other requests; it must be thread-safe. Every
//    limit below applies alike.
//
// Bodies above max_body_bytes are not buffered: the handler sees
// body_too_large=true and an empty body and should answer 413. The rest of
// such an upload is read and discarded (so the client sees the answer), except
// that a request announcing an oversize Content-Length with
// "Expect: 100-continue" is answered at once, before any body is sent.
//
// Connection limits (docs/api.md "Limits and timeouts"):
//  - a request head (request line and headers) must be complete within
//    head_timeout_seconds of the accept, or of the end of the previous
//    response on a kept-alive connection; else the connection is closed (a
//    client dripping one byte a second is not "idle" to MHD's own timeout);
//  - at max_connections a new connection evicts the oldest one that has no
//    complete request head (instead of being refused), so a flood of
//    half-open connections cannot lock a well-behaved client out;
//  - a non-loopback peer address holds at most max_connections_per_peer;
//  - a suspended connection (answer pending) is watched for its client
//    closing (EPOLLRDHUP): it is closed at once, its Responders become no-ops.
//    A client that half-closes (shutdown(SHUT_WR)) after its request counts
//    as gone.
//
// Request framing and target, answered 400 with an
// NPS-CLIENT-BAD-FRAME error body and "Connection: close", the handler never
// called: a path or query parameter that after percent-decoding holds a
// control character (NUL included) or invalid UTF-8 (http_target.hpp); more
// than one Content-Length value unless all are equal; Content-Length together
// with Transfer-Encoding (RFC 9112 §6.3). A request head beyond MHD's
// per-connection memory gets MHD's own 431/414.
//
// Streamed answers: an HttpResponse with `stream` set goes
// out chunked as its producer writes (response_stream.hpp); while it has
// nothing to send its connection is parked and watched for hang-ups like a
// pending request, and it counts towards max_connections.
//
// A handler that throws gets a 500 with the NPS-SERVER-INTERNAL error body;
// the exception is logged to stderr and the server keeps serving. So does a
// request whose every Responder was dropped unanswered.
#pragma once

#include <sys/types.h>

#include <chrono>
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
#include "nps/net/response_stream.hpp"

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
    // Set: the body is this stream's, sent as it is written (chunked;
    // LoopHttpServer only, see response_stream.hpp), and `body` is ignored.
    std::shared_ptr<ResponseStream> stream;
};

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

namespace detail {
struct PendingRequest;
}

// The way back to one request's connection (LoopHttpServer). Copyable: all
// copies answer the same request, and only the first answer counts. Use (and
// destroy) it on the server's thread only (the thread calling dispatch()):
// during the handler call or at any time later; no need to check for the client having
// gone away or the server having stopped: respond() is then a no-op. When the
// last copy is destroyed unanswered, the client gets a 500.
class Responder {
public:
    Responder() = default;
    explicit Responder(std::shared_ptr<detail::PendingRequest> pending);

    // Answers the request; true if this was the answer (false: answered
    // before, connection closed, server stopped, or an empty Responder).
    bool respond(HttpResponse response) const;
    void operator()(HttpResponse response) const { respond(std::move(response)); }
    // Not yet answered and the connection still open (a client leaving
    // while its connection is suspended is noticed).
    bool pending() const;

private:
    std::shared_ptr<detail::PendingRequest> pending_;
};

// The request is only valid during the call; copy what is kept.
using AsyncHttpHandler = std::function<void(const HttpRequest&, Responder)>;

struct HttpServerOptions {
    std::optional<std::string> tcp_listen;   // "127.0.0.1:17437", "[::1]:0", "0.0.0.0:17437"; port 0 = any
    std::optional<std::string> unix_socket;  // path; a stale socket file (nobody listening) is replaced,
                                             // a live socket or any other file is an error; parent dir created 0755
    mode_t unix_socket_mode = 0660;
    std::optional<gid_t> unix_socket_group;  // the socket file's group (owner stays ours); none: our own group
    std::size_t max_body_bytes = limits::kMaxBodyBytes;
    unsigned max_connections = limits::kMaxHttpConnections;  // per listener (TCP and unix socket each)
    unsigned connection_timeout_seconds = limits::kHttpConnectionTimeoutSeconds;  // idle
    // See "Connection limits" above:
    unsigned head_timeout_seconds = limits::kHttpRequestHeadTimeoutSeconds;
    unsigned max_connections_per_peer = limits::kMaxHttpConnectionsPerPeer;  // non-loopback TCP peers
};

class HttpServer {
public:
    // Binds and starts serving. Errors name the address: "Failed to bind
    // '127.0.0.1:17437': Address already in use".
    static Result<std::unique_ptr<HttpServer>> start(const HttpServerOptions& options, HttpHandler handler);
    // Waits for in-flight handlers (a long-poll handler must therefore be
    // woken by the caller first; requests arriving meanwhile get 503), sends
    // their answers, closes every connection, removes the socket file it created.
    virtual ~HttpServer() = default;

    // The bound TCP port (useful with port 0), or 0 without a TCP listener.
    virtual std::uint16_t tcp_port() const = 0;
};

// The server on the owner's event loop (see the top of this file). Not
// thread-safe: every call, and every Responder call, from one thread.
class LoopHttpServer {
public:
    // Binds and starts listening (no thread); errors as HttpServer::start.
    static Result<std::unique_ptr<LoopHttpServer>> start(const HttpServerOptions& options, AsyncHttpHandler handler);
    // Closes every connection (a suspended one without an answer: its
    // Responders become no-ops) and removes the socket file it created. The
    // owner unregisters fds() first.
    virtual ~LoopHttpServer() = default;

    // One epoll fd per listener (TCP, unix socket) and one watching suspended
    // connections for hang-ups, owned by the server: watch each for EPOLLIN
    // (level-triggered) and call dispatch() when ready.
    virtual std::vector<int> fds() const = 0;
    // Does all the work that is ready on every listener without blocking:
    // accepts, reads, runs handlers, sends answers given since, closes idle
    // connections that timed out, connections past their head deadline and
    // suspended connections whose client has gone.
    virtual void dispatch() = 0;
    // Call dispatch() at the latest after this long even if no fd became
    // ready (0: at once); nullopt: only when an fd becomes ready. Ask again
    // after each dispatch() and after a wake-up.
    virtual std::optional<std::chrono::milliseconds> next_timeout() const = 0;
    // `wakeup` is called when a Responder answers outside dispatch() (a timer,
    // another fd's callback): dispatch() is then due at once, and no fd says
    // so (libmicrohttpd's resume signal does not reach its epoll fd in the
    // external-epoll mode). Called on the server's thread; set before serving.
    virtual void set_wakeup(std::function<void()> wakeup) = 0;

    virtual std::uint16_t tcp_port() const = 0;
    // Requests whose handler returned without answering and that are still
    // waiting for their Responder (their connections are suspended).
    virtual std::size_t pending_requests() const = 0;
    // Open connections on all listeners (the nps_http_connections metric).
    virtual std::size_t open_connections() const = 0;
};

// Splits "host:port" / "[v6]:port"; fails with a message naming the text.
Result<std::pair<std::string, std::uint16_t>> parse_listen_address(const std::string& text);
// True for 127.0.0.0/8, ::1 and "localhost".
bool is_loopback_host(const std::string& host);

}  // namespace nps::net
