// SPDX-License-Identifier: Apache-2.0
// LoopHttpServer on libmicrohttpd: one MHD daemon per listener (TCP and/or
// unix socket), all sharing one handler, with no thread at all: MHD's
// external epoll mode, driven by the owner's loop, connections suspended
// while their answer is pending. (HttpServer runs this same server on a loop
// of its own: threaded_http_server.cpp.)
#include "nps/net/http_server.hpp"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "listen_socket.hpp"
#include "mhd_request.hpp"
#include "nps/base/log.hpp"
#include "nps/base/unique_fd.hpp"
#include "nps/lazy/microhttpd.hpp"
#include "nps/net/http_target.hpp"

namespace nps::net {

namespace {

// MHD_run rounds the loop-mode destructor gives pending work before stopping.
constexpr int kStopRounds = 8;

// What a streamed answer hands MHD per read at most.
constexpr std::size_t kStreamChunkBytes = 16 * 1024;
// Hang-ups taken from the watch epoll per dispatch (the rest: next time).
constexpr int kHangupBatch = 64;

using Clock = std::chrono::steady_clock;

__attribute__((format(printf, 2, 0))) void log_mhd(void* /*cls*/, const char* format, va_list args)
{
    char line[1024];
    std::vsnprintf(line, sizeof line, format, args);
    std::string_view text(line);
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r'))
        text.remove_suffix(1);
    log::warning("http server: " + std::string(text));
}

void log_line(const std::string& text)
{
    log::warning("http server: " + text);
}

class MhdServer;
struct RequestContext;
struct ConnectionState;

}  // namespace

namespace detail {

struct StreamReader;

// What the Responders of one request share. `context` is the live request
// (null once it is answered for good: connection closed, server stopped);
// it points back here while a Responder exists. Single-threaded: the server's
// thread.
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

}  // namespace detail

namespace {

struct Listener;

// Per-connection state, MHD's socket context (MHD_OPTION_NOTIFY_CONNECTION).
// Used on the server's thread.
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
    detail::StreamReader* stream = nullptr;  // the streamed answer in progress (watched likewise while parked)
};

// Per-request state, kept in MHD's *con_cls across access-handler calls.
struct RequestContext {
    MHD_Connection* connection = nullptr;
    ConnectionState* state = nullptr;
    std::string body;
    bool body_too_large = false;
    bool handled = false;    // the handler was called
    bool suspended = false;  // waiting for a Responder
    std::optional<HttpResponse> answer;           // given, not yet queued
    detail::PendingRequest* pending = nullptr;    // while a Responder exists
};

void free_string(void* cls)
{
    delete static_cast<std::string*>(cls);
}

struct Listener {
    MhdServer* server = nullptr;
    bool is_unix = false;
    MHD_Daemon* daemon = nullptr;
    int epoll_fd = -1;  // MHD's epoll fd
    // Every open connection, and the count per counted peer.
    std::unordered_set<ConnectionState*> connections;
    std::unordered_map<std::string, unsigned> per_peer;
};

ConnectionState* state_of(MHD_Connection* connection)
{
    const MHD_ConnectionInfo* info = sym_MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info != nullptr ? static_cast<ConnectionState*>(info->socket_context) : nullptr;
}

class MhdServer final : public LoopHttpServer {
public:
    MhdServer(const HttpServerOptions& options, AsyncHttpHandler handler)
        : options_(options), handler_(std::move(handler))
    {
    }

    ~MhdServer() override
    {
        // No new request reaches the handler from here on.
        stopping_ = true;
        // MHD must not be stopped with suspended connections: resume each
        // unanswered (the access handler then closes it) and let MHD run.
        for (RequestContext* context : std::vector<RequestContext*>(suspended_.begin(), suspended_.end())) {
            if (context->pending != nullptr)
                context->pending->detach();
            unwatch(*context);
            context->suspended = false;
            sym_MHD_resume_connection(context->connection);
        }
        suspended_.clear();
        for (detail::StreamReader* reader : std::vector<detail::StreamReader*>(parked_streams_.begin(),
                                                                               parked_streams_.end()))
            reader->abandon();
        // Also lets answers given just before (begin_shutdown) go out:
        // a few rounds while MHD has work ready.
        for (int round = 0; round < kStopRounds; ++round) {
            dispatch();
            if (next_timeout() != std::chrono::milliseconds(0))
                break;
        }
        if (unix_created_)
            detail::remove_unix_socket_file(*options_.unix_socket, unix_dev_, unix_ino_);
        for (auto& listener : listeners_)
            if (listener->daemon != nullptr)
                sym_MHD_stop_daemon(listener->daemon);
    }

    std::uint16_t tcp_port() const override { return tcp_port_; }

    std::vector<int> fds() const override
    {
        std::vector<int> fds;
        for (const auto& listener : listeners_)
            if (listener->epoll_fd >= 0)
                fds.push_back(listener->epoll_fd);
        if (hangup_watch_)
            fds.push_back(hangup_watch_.get());
        return fds;
    }

    void dispatch() override
    {
        dispatching_ = true;
        close_hung_up();
        enforce_head_deadline(Clock::now());
        for (auto& listener : listeners_) {
            const unsigned before = connections(*listener);
            if (sym_MHD_run(listener->daemon) != MHD_YES)
                log_line("MHD_run failed");
            // At its connection limit MHD takes the listening socket out of
            // its epoll set, and puts it back only at the start of a later
            // run: after a run that closed connections, run again, or a client
            // waiting in the backlog would wait for unrelated traffic.
            if (connections(*listener) < before)
                sym_MHD_run(listener->daemon);
        }
        dispatching_ = false;
    }

    static unsigned connections(const Listener& listener)
    {
        const MHD_DaemonInfo* info = sym_MHD_get_daemon_info(listener.daemon, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
        return info != nullptr ? info->num_connections : 0;
    }

    void set_wakeup(std::function<void()> wakeup) override { wakeup_ = std::move(wakeup); }

    std::optional<std::chrono::milliseconds> next_timeout() const override
    {
        std::optional<std::chrono::milliseconds> earliest;
        if (auto deadline = earliest_head_deadline()) {
            const auto left = std::chrono::ceil<std::chrono::milliseconds>(*deadline - Clock::now());
            earliest = std::max(left, std::chrono::milliseconds(0));
        }
        for (const auto& listener : listeners_) {
            MHD_UNSIGNED_LONG_LONG ms = 0;
            if (sym_MHD_get_timeout(listener->daemon, &ms) != MHD_YES)
                continue;
            const auto timeout = std::chrono::milliseconds(
                static_cast<std::int64_t>(std::min<MHD_UNSIGNED_LONG_LONG>(ms, 24ULL * 3600 * 1000)));
            if (!earliest || timeout < *earliest)
                earliest = timeout;
        }
        return earliest;
    }

    std::size_t pending_requests() const override { return suspended_.size(); }

    // A streamed answer has nothing to send: suspend its connection until
    // the producer writes (StreamReader::read, from inside MHD_run).
    void park(detail::StreamReader& reader)
    {
        reader.parked = true;
        parked_streams_.insert(&reader);
        sym_MHD_suspend_connection(reader.connection);
        if (reader.state != nullptr)
            watch_fd(*reader.state);
    }

    // The producer wrote (or the stream ended or is gone): MHD reads again.
    void unpark(detail::StreamReader& reader)
    {
        if (!reader.parked)
            return;
        forget(reader);
        sym_MHD_resume_connection(reader.connection);
        if (!dispatching_ && !stopping_ && wakeup_)
            wakeup_();
    }

    // Drops the bookkeeping of a parked reader (also when it is freed).
    void forget(detail::StreamReader& reader)
    {
        if (reader.parked && reader.state != nullptr)
            ::epoll_ctl(hangup_watch_.get(), EPOLL_CTL_DEL, reader.state->fd, nullptr);
        reader.parked = false;
        parked_streams_.erase(&reader);
    }

    std::size_t open_connections() const override
    {
        std::size_t count = 0;
        for (const auto& listener : listeners_)
            count += connections(*listener);
        return count;
    }

    Result<void> start()
    {
        if (!options_.tcp_listen && !options_.unix_socket)
            return internal_error("Failed to start HTTP server: no TCP address and no unix socket given");
        hangup_watch_ = UniqueFd(::epoll_create1(EPOLL_CLOEXEC));
        if (!hangup_watch_)
            return system_error_errno("Failed to create the epoll fd watching parked HTTP connections");

        // Bind everything before starting any thread, so a bind error leaves nothing running.
        std::optional<detail::TcpListener> tcp;
        std::optional<detail::UnixListener> unix_listener;
        if (options_.tcp_listen) {
            tcp = NPS_TRY(detail::open_tcp_listener(*options_.tcp_listen));
            tcp_port_ = tcp->port;
        }
        if (options_.unix_socket) {
            unix_listener = NPS_TRY(detail::open_unix_listener(*options_.unix_socket, options_.unix_socket_mode,
                                                                         options_.unix_socket_group));
            unix_created_ = true;
            unix_dev_ = unix_listener->dev;
            unix_ino_ = unix_listener->ino;
        }
        if (tcp)
            NPS_TRY_VOID(start_daemon(std::move(tcp->fd), false, tcp->ipv6, *options_.tcp_listen));
        if (unix_listener)
            NPS_TRY_VOID(start_daemon(std::move(unix_listener->fd), true, false,
                                      "unix:" + *options_.unix_socket));
        return {};
    }

    // A Responder answered (detail::PendingRequest::respond).
    void answered(RequestContext& context, HttpResponse response)
    {
        if (response.status < 200 || response.status > 999) {
            log_line("handler returned invalid HTTP status " + std::to_string(response.status));
            response = detail::internal_error_response();
        }
        context.answer = std::move(response);
        if (context.suspended) {
            // MHD calls the access handler again, which queues the answer,
            // in its next run: ask the owner for one unless in one now (the
            // owner asks next_timeout() afterwards, which says 0).
            unwatch(context);
            context.suspended = false;
            suspended_.erase(&context);
            sym_MHD_resume_connection(context.connection);
            if (!dispatching_ && !stopping_ && wakeup_)
                wakeup_();
        }
    }

private:
    Result<void> start_daemon(UniqueFd fd, bool is_unix, bool ipv6, const std::string& name)
    {
        auto listener = std::make_unique<Listener>();
        listener->server = this;
        listener->is_unix = is_unix;

        // No internal thread: the owner runs MHD (MHD_run) when its epoll fd is ready.
        unsigned flags = static_cast<unsigned>(MHD_USE_ERROR_LOG) | static_cast<unsigned>(MHD_USE_EPOLL) |
                         static_cast<unsigned>(MHD_ALLOW_SUSPEND_RESUME);
        const int fl = ::fcntl(fd.get(), F_GETFL);
        if (fl < 0 || ::fcntl(fd.get(), F_SETFL, fl | O_NONBLOCK) != 0)
            return system_error_errno("Failed to make the listening socket of '" + name + "' non-blocking");
        if (ipv6)
            flags |= static_cast<unsigned>(MHD_USE_IPv6);

        const MHD_LogCallback logger = &log_mhd;
        const MHD_RequestCompletedCallback completed = &MhdServer::on_completed;
        const MHD_AccessHandlerCallback access = &MhdServer::on_access;
        const MHD_NotifyConnectionCallback notify = &MhdServer::on_connection;
        using Unescape = size_t (*)(void*, MHD_Connection*, char*);
        const Unescape unescape = &MhdServer::on_unescape;
        // Our accept policy (eviction, per-peer cap) decides below
        // max_connections; MHD's own cap is the hard stop above it.
        const MHD_AcceptPolicyCallback accept_policy = &MhdServer::on_accept;
        const unsigned mhd_limit = options_.max_connections + limits::kHttpConnectionEvictionSlack;
        const MHD_socket socket_fd = fd.release();  // MHD owns it from here, also on failure
        MHD_Daemon* daemon = sym_MHD_start_daemon(
            flags, 0, accept_policy, listener.get(), access, listener.get(),
            MHD_OPTION_EXTERNAL_LOGGER, logger, nullptr,  // must come first
            MHD_OPTION_LISTEN_SOCKET, socket_fd,
            MHD_OPTION_CONNECTION_LIMIT, static_cast<unsigned int>(mhd_limit),
            MHD_OPTION_CONNECTION_TIMEOUT, static_cast<unsigned int>(options_.connection_timeout_seconds),
            MHD_OPTION_CONNECTION_MEMORY_LIMIT, static_cast<size_t>(limits::kHttpConnectionMemoryBytes),
            MHD_OPTION_NOTIFY_COMPLETED, completed, listener.get(),
            MHD_OPTION_NOTIFY_CONNECTION, notify, listener.get(),
            MHD_OPTION_UNESCAPE_CALLBACK, unescape, listener.get(),
            MHD_OPTION_END);
        if (daemon == nullptr)
            return internal_error("Failed to start the HTTP server on '" + name + "' (libmicrohttpd refused; see the log)");
        listener->daemon = daemon;
        const MHD_DaemonInfo* info = sym_MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_EPOLL_FD);
        if (info == nullptr || info->epoll_fd < 0) {
            sym_MHD_stop_daemon(daemon);
            return internal_error("Failed to start the HTTP server on '" + name +
                                  "': libmicrohttpd has no epoll fd (built without epoll?)");
        }
        listener->epoll_fd = info->epoll_fd;
        listeners_.push_back(std::move(listener));
        return {};
    }

    static void on_completed(void* cls, MHD_Connection* connection, void** con_cls,
                             MHD_RequestTerminationCode /*code*/)
    {
        if (ConnectionState* state = state_of(connection)) {
            // A kept-alive connection's next head is due within the timeout.
            state->in_request = false;
            state->head_since = Clock::now();
        }
        auto* context = static_cast<RequestContext*>(*con_cls);
        *con_cls = nullptr;
        if (context == nullptr)
            return;
        if (context->pending != nullptr)
            context->pending->detach();  // its Responders become no-ops
        if (context->suspended) {
            MhdServer& server = *static_cast<Listener*>(cls)->server;
            server.unwatch(*context);
            server.suspended_.erase(context);
        }
        if (context->answer && context->answer->stream)
            context->answer->stream->cancel();  // given, never queued: its producer lets go
        delete context;
    }

    // MHD_OPTION_NOTIFY_CONNECTION: a connection opens or closes.
    static void on_connection(void* cls, MHD_Connection* connection, void** socket_context,
                              MHD_ConnectionNotificationCode code)
    {
        auto* listener = static_cast<Listener*>(cls);
        if (code == MHD_CONNECTION_NOTIFY_STARTED) {
            auto* state = new ConnectionState;
            state->connection = connection;
            state->listener = listener;
            state->head_since = Clock::now();
            if (const MHD_ConnectionInfo* info = sym_MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD))
                state->fd = info->connect_fd;
            if (!listener->is_unix) {
                const MHD_ConnectionInfo* info = sym_MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
                state->peer = detail::peer_key(info != nullptr ? info->client_addr : nullptr);
                if (!state->peer.empty())
                    ++listener->per_peer[state->peer];
            }
            listener->connections.insert(state);
            *socket_context = state;
            return;
        }
        auto* state = static_cast<ConnectionState*>(*socket_context);
        *socket_context = nullptr;
        if (state == nullptr)
            return;
        if (!state->peer.empty()) {
            auto it = listener->per_peer.find(state->peer);
            if (it != listener->per_peer.end() && --it->second == 0)
                listener->per_peer.erase(it);
        }
        listener->connections.erase(state);
        if (state->suspended != nullptr)  // (on_completed unwatches first; never leave a stale pointer)
            ::epoll_ctl(listener->server->hangup_watch_.get(), EPOLL_CTL_DEL, state->fd, nullptr);
        if (state->stream != nullptr) {
            listener->server->forget(*state->stream);
            state->stream->state = nullptr;
        }
        delete state;
    }

    // MHD's accept policy: the per-peer cap, and at the
    // listener's cap room made by evicting the oldest connection without a
    // complete head.
    static MHD_Result on_accept(void* cls, const sockaddr* addr, socklen_t /*addrlen*/)
    {
        auto* listener = static_cast<Listener*>(cls);
        MhdServer& server = *listener->server;
        if (server.stopping_)
            return MHD_NO;
        if (!listener->is_unix) {
            const std::string peer = detail::peer_key(addr);
            if (!peer.empty()) {
                auto it = listener->per_peer.find(peer);
                if (it != listener->per_peer.end() && it->second >= server.options_.max_connections_per_peer)
                    return MHD_NO;
            }
        }
        std::size_t live = 0;
        ConnectionState* oldest = nullptr;
        for (ConnectionState* state : listener->connections) {
            if (state->evicted)
                continue;
            ++live;
            if (!state->in_request && (oldest == nullptr || state->head_since < oldest->head_since))
                oldest = state;
        }
        if (live < server.options_.max_connections)
            return MHD_YES;
        if (oldest == nullptr)
            return MHD_NO;  // every connection is busy with a request
        evict(*oldest);
        return MHD_YES;
    }

    // Closes a connection MHD still owns: shutting the socket down makes MHD
    // read EOF (its epoll fd reports it) and close it in its next run.
    static void evict(ConnectionState& state)
    {
        state.evicted = true;
        if (state.fd >= 0)
            ::shutdown(state.fd, SHUT_RDWR);
    }

    // MHD_OPTION_UNESCAPE_CALLBACK: the path, and each query parameter's key
    // and value, of every request, before the access handler sees them.
    static size_t on_unescape(void* /*cls*/, MHD_Connection* connection, char* text)
    {
        const std::size_t size = percent_decode_in_place(text, std::strlen(text));
        text[size] = '\0';
        if (!is_clean_target_text(std::string_view(text, size)))
            if (ConnectionState* state = state_of(connection))
                state->bad_target = true;
        return size;
    }

    void enforce_head_deadline(Clock::time_point now)
    {
        const auto timeout = std::chrono::seconds(options_.head_timeout_seconds);
        for (auto& listener : listeners_)
            for (ConnectionState* state : listener->connections)
                if (!state->in_request && !state->evicted && now - state->head_since >= timeout)
                    evict(*state);
    }

    std::optional<Clock::time_point> earliest_head_deadline() const
    {
        std::optional<Clock::time_point> earliest;
        for (const auto& listener : listeners_)
            for (const ConnectionState* state : listener->connections)
                if (!state->in_request && !state->evicted && (!earliest || state->head_since < *earliest))
                    earliest = state->head_since;
        if (earliest)
            *earliest += std::chrono::seconds(options_.head_timeout_seconds);
        return earliest;
    }

    // A suspended connection is watched for its client leaving (MHD does not
    // watch it while suspended).
    void watch(RequestContext& context)
    {
        if (context.state != nullptr && watch_fd(*context.state))
            context.state->suspended = &context;
    }

    bool watch_fd(ConnectionState& state)
    {
        if (!hangup_watch_ || state.fd < 0)
            return false;
        epoll_event event{};
        event.events = EPOLLRDHUP;
        event.data.ptr = &state;
        return ::epoll_ctl(hangup_watch_.get(), EPOLL_CTL_ADD, state.fd, &event) == 0;
    }

    void unwatch(RequestContext& context)
    {
        ConnectionState* state = context.state;
        if (state == nullptr || state->suspended != &context)
            return;
        state->suspended = nullptr;
        ::epoll_ctl(hangup_watch_.get(), EPOLL_CTL_DEL, state->fd, nullptr);
    }

    // Closes the suspended connections whose client hung up: resumed without
    // an answer, the access handler closes them.
    void close_hung_up()
    {
        if (!hangup_watch_)
            return;
        epoll_event events[kHangupBatch];
        const int n = ::epoll_wait(hangup_watch_.get(), events, kHangupBatch, 0);
        for (int i = 0; i < n; ++i) {
            auto* state = static_cast<ConnectionState*>(events[i].data.ptr);
            if (state->stream != nullptr && state->stream->parked) {
                state->stream->abandon();
                continue;
            }
            RequestContext* context = state->suspended;
            if (context == nullptr || !context->suspended)
                continue;
            unwatch(*context);
            if (context->pending != nullptr)
                context->pending->detach();  // its Responders become no-ops
            context->suspended = false;
            suspended_.erase(context);
            sym_MHD_resume_connection(context->connection);
        }
    }

    static MHD_Result on_access(void* cls, MHD_Connection* connection, const char* url, const char* method,
                                const char* /*version*/, const char* upload_data, size_t* upload_data_size,
                                void** con_cls)
    {
        auto* listener = static_cast<Listener*>(cls);
        MhdServer& server = *listener->server;
        try {
            auto* context = static_cast<RequestContext*>(*con_cls);
            if (context == nullptr) {
                if (server.stopping_)
                    return MHD_NO;
                // First call: headers are in, no body yet.
                context = new RequestContext;
                context->connection = connection;
                context->state = state_of(connection);
                *con_cls = context;
                if (context->state != nullptr)
                    context->state->in_request = true;
                const bool bad_target = context->state != nullptr && context->state->bad_target;
                if (bad_target || detail::ambiguous_framing(connection)) {
                    // Answered before any body is read; MHD closes the connection after it.
                    if (context->state != nullptr)
                        context->state->bad_target = false;
                    context->handled = true;
                    context->answer = bad_target ? detail::bad_target_response() : detail::bad_framing_response();
                    return server.respond(*listener, connection, url, method, *context);
                }
                const auto declared = detail::declared_content_length(connection);
                if (declared && *declared > server.options_.max_body_bytes && detail::expects_continue(connection)) {
                    // The client waits for "100 Continue": answer now and it never sends the body.
                    context->body_too_large = true;
                    return server.respond(*listener, connection, url, method, *context);
                }
                return MHD_YES;
            }
            if (*upload_data_size > 0) {
                const std::size_t max = server.options_.max_body_bytes;
                if (!context->body_too_large) {
                    if (context->body.size() + *upload_data_size > max) {
                        context->body_too_large = true;
                        std::string().swap(context->body);
                    } else {
                        context->body.append(upload_data, *upload_data_size);
                    }
                }
                *upload_data_size = 0;  // consumed (or drained)
                return MHD_YES;
            }
            return server.respond(*listener, connection, url, method, *context);
        } catch (const std::exception& e) {
            log_line(std::string("request failed: ") + e.what());
        } catch (...) {
            log_line("request failed: unknown exception");
        }
        return MHD_NO;  // closes the connection
    }

    HttpRequest build_request(const Listener& listener, MHD_Connection* connection, const char* url,
                              const char* method, RequestContext& context) const
    {
        HttpRequest request;
        request.method = method != nullptr ? method : "";
        request.path = url != nullptr ? url : "";
        request.query = detail::request_query(connection);
        request.headers = detail::request_headers(connection);
        request.body = std::move(context.body);
        request.body_too_large = context.body_too_large;
        request.from_unix_socket = listener.is_unix;
        if (!listener.is_unix) {
            const MHD_ConnectionInfo* info = sym_MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
            request.from_loopback = info != nullptr && detail::is_loopback_sockaddr(info->client_addr);
        }
        return request;
    }

    // Calls the handler with a Responder for `context`. Afterwards the
    // request is answered (context.answer) or a Responder was kept.
    void call_handler(const Listener& listener, MHD_Connection* connection, const char* url, const char* method,
                      RequestContext& context)
    {
        context.handled = true;
        std::string what = std::string(method != nullptr ? method : "") + " " + (url != nullptr ? url : "");
        auto pending = std::make_shared<detail::PendingRequest>(this, &context, what);
        try {
            const HttpRequest request = build_request(listener, connection, url, method, context);
            handler_(request, Responder(pending));
        } catch (const std::exception& e) {
            log_line("handler failed on " + what + ": " + e.what());
            pending->respond(detail::internal_error_response());
        } catch (...) {
            log_line("handler failed on " + what + ": unknown exception");
            pending->respond(detail::internal_error_response());
        }
        // The last Responder gone unanswered answers 500 (~PendingRequest).
        pending.reset();
    }

    MHD_Result respond(const Listener& listener, MHD_Connection* connection, const char* url, const char* method,
                       RequestContext& context)
    {
        if (!context.answer) {
            if (context.handled || stopping_)
                return MHD_NO;  // resumed unanswered: the server is stopping
            call_handler(listener, connection, url, method, context);
        }
        if (!context.answer) {
            context.suspended = true;
            suspended_.insert(&context);
            sym_MHD_suspend_connection(connection);
            watch(context);
            return MHD_YES;
        }
        HttpResponse response = std::move(*context.answer);
        context.answer.reset();
        return queue(connection, context.state, std::move(response));
    }

    MHD_Result queue(MHD_Connection* connection, ConnectionState* state, HttpResponse response)
    {
        MHD_Response* mhd_response = nullptr;
        if (response.stream) {
            auto* reader = new detail::StreamReader{response.stream, this, connection, state};
            if (state != nullptr)
                state->stream = reader;
            detail::StreamReader::attach(*reader);
            mhd_response = sym_MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, kStreamChunkBytes,
                                                             &detail::StreamReader::read, reader,
                                                             &detail::StreamReader::release);
            if (mhd_response == nullptr) {
                detail::StreamReader::release(reader);
                return MHD_NO;
            }
        } else {
            auto* body = new std::string(std::move(response.body));
            mhd_response = sym_MHD_create_response_from_buffer_with_free_callback_cls(body->size(), body->data(),
                                                                                  &free_string, body);
            if (mhd_response == nullptr) {
                delete body;
                return MHD_NO;
            }
        }
        if (!response.content_type.empty())
            sym_MHD_add_response_header(mhd_response, MHD_HTTP_HEADER_CONTENT_TYPE, response.content_type.c_str());
        for (const auto& [name, value] : response.headers)
            if (sym_MHD_add_response_header(mhd_response, name.c_str(), value.c_str()) != MHD_YES)
                log_line("dropped invalid response header '" + name + "'");
        const MHD_Result result = sym_MHD_queue_response(connection, static_cast<unsigned int>(response.status), mhd_response);
        sym_MHD_destroy_response(mhd_response);
        return result;
    }

    HttpServerOptions options_;
    AsyncHttpHandler handler_;
    std::vector<std::unique_ptr<Listener>> listeners_;
    std::unordered_set<RequestContext*> suspended_;  // waiting for a Responder
    std::unordered_set<detail::StreamReader*> parked_streams_;  // streamed answers waiting for data
    std::function<void()> wakeup_;                    // dispatch() is due
    UniqueFd hangup_watch_;                           // epoll over suspended connections
    bool dispatching_ = false;
    bool stopping_ = false;  // the destructor runs
    std::uint16_t tcp_port_ = 0;
    bool unix_created_ = false;
    dev_t unix_dev_ = 0;
    ino_t unix_ino_ = 0;
};

}  // namespace

namespace detail {

PendingRequest::PendingRequest(MhdServer* s, RequestContext* c, std::string w)
    : server(s), context(c), what(std::move(w))
{
    context->pending = this;
}

PendingRequest::~PendingRequest()
{
    if (context != nullptr && !answered) {
        log_line("no answer to " + what + " (every Responder dropped)");
        respond(detail::internal_error_response());
    }
    detach();
}

bool PendingRequest::respond(HttpResponse response)
{
    if (answered || context == nullptr)
        return false;
    answered = true;
    RequestContext* c = context;
    detach();
    server->answered(*c, std::move(response));
    return true;
}

void PendingRequest::detach()
{
    if (context != nullptr && context->pending == this)
        context->pending = nullptr;
    context = nullptr;
}

void StreamReader::attach(StreamReader& reader)
{
    reader.stream->data_ready_ = [r = &reader] {
        if (r->parked)
            r->server->unpark(*r);
    };
}

ssize_t StreamReader::read(void* cls, std::uint64_t /*pos*/, char* into, std::size_t max)
{
    auto& reader = *static_cast<StreamReader*>(cls);
    ResponseStream& stream = *reader.stream;
    if (stream.gone())
        return MHD_CONTENT_READER_END_WITH_ERROR;  // closes the connection
    if (stream.has_data())
        return static_cast<ssize_t>(stream.take(into, max));
    if (stream.ended())
        return MHD_CONTENT_READER_END_OF_STREAM;
    reader.server->park(reader);
    return 0;
}

void StreamReader::release(void* cls)
{
    auto* reader = static_cast<StreamReader*>(cls);
    reader->server->forget(*reader);
    if (reader->state != nullptr && reader->state->stream == reader)
        reader->state->stream = nullptr;
    reader->stream->data_ready_ = nullptr;
    reader->stream->mark_gone();  // a no-op after end()
    delete reader;
}

void StreamReader::abandon()
{
    server->unpark(*this);
    stream->mark_gone();
}

}  // namespace detail

Responder::Responder(std::shared_ptr<detail::PendingRequest> pending) : pending_(std::move(pending)) {}

bool Responder::respond(HttpResponse response) const
{
    return pending_ != nullptr && pending_->respond(std::move(response));
}

bool Responder::pending() const
{
    return pending_ != nullptr && !pending_->answered && pending_->context != nullptr;
}

Result<std::unique_ptr<LoopHttpServer>> LoopHttpServer::start(const HttpServerOptions& options,
                                                              AsyncHttpHandler handler)
{
    if (!handler)
        return internal_error("Failed to start HTTP server: no handler");
    auto server = std::make_unique<MhdServer>(options, std::move(handler));
    NPS_TRY_VOID(server->start());
    return std::unique_ptr<LoopHttpServer>(std::move(server));
}

}  // namespace nps::net
