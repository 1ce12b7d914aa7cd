// SPDX-License-Identifier: Apache-2.0
// Internal: MhdServer, the LoopHttpServer on libmicrohttpd. One MHD daemon per
// listener (TCP and/or unix socket), all sharing one handler, with no thread
// at all: MHD's external epoll mode, driven by the owner's loop, connections
// suspended while their answer is pending. (HttpServer runs this same server
// on a loop of its own: threaded_http_server.cpp.)
//
// Its parts, one file each:
//   mhd_server.cpp              start, stop and the owner's loop (fds, dispatch, timeouts)
//   mhd_server_connections.cpp  connections: accept policy, per-peer caps, the head
//                               deadline, hang-ups of suspended connections
//   mhd_server_requests.cpp     requests: body, handler, Responders, queued answers
//   mhd_server_streams.cpp      streamed answers (ResponseStream)
//
// Single-threaded: everything here runs on the owner's thread, inside or
// between its dispatch() calls.
#pragma once

#include <sys/socket.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "nps/base/result.hpp"
#include "nps/base/unique_fd.hpp"
#include "nps/lazy/microhttpd.hpp"
#include "nps/net/http_server.hpp"
#include "nps/net/response_stream.hpp"

namespace nps::net::detail {

using Clock = std::chrono::steady_clock;

class MhdServer;
struct RequestContext;
struct ConnectionState;
struct Listener;

// What the Responders of one request share. `context` is the live request
// (null once it is answered for good: connection closed, server stopped);
// it points back here while a Responder exists.
struct PendingRequest {
    MhdServer* server = nullptr;
    RequestContext* context = nullptr;
    std::string what;  // "GET /path", for the log
    bool answered = false;

    PendingRequest(MhdServer* s, RequestContext* c, std::string w);
    ~PendingRequest();
    PendingRequest(const PendingRequest&) = delete;
    PendingRequest& operator=(const PendingRequest&) = delete;

    bool respond(HttpResponse response);
    void detach();
};

// The server's end of a ResponseStream: MHD's content reader for one
// streamed answer, owned by its MHD response (freed with it). While the
// stream has nothing to send the connection is parked (suspended) and
// watched for a hang-up, like a pending request; the stream's data_ready
// resumes it.
struct StreamReader {
    std::shared_ptr<ResponseStream> stream;
    MhdServer* server = nullptr;
    MHD_Connection* connection = nullptr;
    ConnectionState* state = nullptr;
    bool parked = false;

    // Hooks the stream's data_ready to this reader.
    static void attach(StreamReader& reader);
    static ssize_t read(void* cls, std::uint64_t pos, char* into, std::size_t max);
    static void release(void* cls);
    // The client left or the server stops: the producer hears of it, and the
    // connection closes at the next read.
    void abandon();
};

// Per-connection state, MHD's socket context (MHD_OPTION_NOTIFY_CONNECTION).
struct ConnectionState {
    MHD_Connection* connection = nullptr;
    Listener* listener = nullptr;
    int fd = -1;
    std::string peer;               // address bytes when counted per peer, else empty
    Clock::time_point head_since;   // the head deadline counts from here
    bool in_request = false;        // head complete, request not finished
    bool evicted = false;           // shut down (head deadline or eviction); MHD closes it next run
    bool bad_target = false;        // the unescape callback found a bad byte in this request's target
    RequestContext* suspended = nullptr;  // parked and watched for a hang-up
    StreamReader* stream = nullptr;       // the streamed answer in progress (watched likewise while parked)
};

// Per-request state, kept in MHD's *con_cls across access-handler calls.
struct RequestContext {
    MHD_Connection* connection = nullptr;
    ConnectionState* state = nullptr;
    std::string body;
    bool body_too_large = false;
    bool handled = false;    // the handler was called
    bool suspended = false;  // waiting for a Responder
    std::optional<HttpResponse> answer;  // given, not yet queued
    PendingRequest* pending = nullptr;   // while a Responder exists
};

// One MHD daemon and its connections.
struct Listener {
    MhdServer* server = nullptr;
    bool is_unix = false;
    MHD_Daemon* daemon = nullptr;
    int epoll_fd = -1;  // MHD's epoll fd
    // Every open connection, and the count per counted peer.
    std::unordered_set<ConnectionState*> connections;
    std::unordered_map<std::string, unsigned> per_peer;
};

// The ConnectionState MHD keeps for `connection`; null before NOTIFY_STARTED.
ConnectionState* state_of(MHD_Connection* connection);
// A warning of the server's own ("http server: <text>").
void log_line(const std::string& text);

class MhdServer final : public LoopHttpServer {
public:
    MhdServer(const HttpServerOptions& options, AsyncHttpHandler handler);
    ~MhdServer() override;

    // Binds the listeners and starts an MHD daemon on each.
    Result<void> start();

    // LoopHttpServer (mhd_server.cpp).
    std::uint16_t tcp_port() const override { return tcp_port_; }
    std::vector<int> fds() const override;
    void dispatch() override;
    void set_wakeup(std::function<void()> wakeup) override { wakeup_ = std::move(wakeup); }
    std::optional<std::chrono::milliseconds> next_timeout() const override;
    std::size_t pending_requests() const override { return suspended_.size(); }
    std::size_t open_connections() const override;

    // A Responder answered (PendingRequest::respond; mhd_server_requests.cpp).
    void answered(RequestContext& context, HttpResponse response);

    // Streamed answers (mhd_server_streams.cpp). park: the stream has nothing
    // to send, so its connection is suspended until the producer writes;
    // unpark: the producer wrote (or the stream ended or is gone), MHD reads
    // again; forget: drops the bookkeeping of a parked reader (also when it
    // is freed).
    void park(StreamReader& reader);
    void unpark(StreamReader& reader);
    void forget(StreamReader& reader);

private:
    // mhd_server.cpp
    Result<void> start_daemon(UniqueFd fd, bool is_unix, bool ipv6, const std::string& name);
    static unsigned connections(const Listener& listener);
    // Asks the owner for a dispatch() unless one runs now.
    void wake_owner();

    // mhd_server_connections.cpp
    static void on_connection(void* cls, MHD_Connection* connection, void** socket_context,
                              MHD_ConnectionNotificationCode code);
    static MHD_Result on_accept(void* cls, const sockaddr* addr, socklen_t addrlen);
    static void evict(ConnectionState& state);
    static size_t on_unescape(void* cls, MHD_Connection* connection, char* text);
    void enforce_head_deadline(Clock::time_point now);
    std::optional<Clock::time_point> earliest_head_deadline() const;
    // A suspended connection is watched for its client leaving (MHD does
    // not watch it while suspended).
    void watch(RequestContext& context);
    bool watch_fd(ConnectionState& state);
    void unwatch(RequestContext& context);
    void unwatch_fd(int fd);
    void close_hung_up();

    // mhd_server_requests.cpp
    static MHD_Result on_access(void* cls, MHD_Connection* connection, const char* url, const char* method,
                                const char* version, const char* upload_data, size_t* upload_data_size,
                                void** con_cls);
    static void on_completed(void* cls, MHD_Connection* connection, void** con_cls,
                             MHD_RequestTerminationCode code);
    HttpRequest build_request(const Listener& listener, MHD_Connection* connection, const char* url,
                              const char* method, RequestContext& context) const;
    void call_handler(const Listener& listener, MHD_Connection* connection, const char* url, const char* method,
                      RequestContext& context);
    MHD_Result respond(const Listener& listener, MHD_Connection* connection, const char* url, const char* method,
                       RequestContext& context);
    MHD_Result queue(MHD_Connection* connection, ConnectionState* state, HttpResponse response);

    HttpServerOptions options_;
    AsyncHttpHandler handler_;
    std::vector<std::unique_ptr<Listener>> listeners_;
    std::unordered_set<RequestContext*> suspended_;       // waiting for a Responder
    std::unordered_set<StreamReader*> parked_streams_;    // streamed answers waiting for data
    std::function<void()> wakeup_;                        // dispatch() is due
    UniqueFd hangup_watch_;                               // epoll over suspended connections
    bool dispatching_ = false;
    bool stopping_ = false;  // the destructor runs
    std::uint16_t tcp_port_ = 0;
    bool unix_created_ = false;
    dev_t unix_dev_ = 0;
    ino_t unix_ino_ = 0;
};

}  // namespace nps::net::detail
