// SPDX-License-Identifier: Apache-2.0
// HttpServer and LoopHttpServer on libmicrohttpd: one MHD daemon per listener
// (TCP and/or unix socket), all sharing one handler; either a thread per
// connection, or no thread at all (MHD's external epoll mode, driven by the
// owner's loop, connections suspended while their answer is pending).
#include "nps/net/http_server.hpp"

#include <fcntl.h>
#include <microhttpd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdarg>
#include <cstdio>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "listen_socket.hpp"

namespace nps::net {

const std::string& HttpRequest::header(const std::string& lowercase_name) const
{
    static const std::string empty;
    const auto it = headers.find(lowercase_name);
    return it == headers.end() ? empty : it->second;
}

namespace {

constexpr std::size_t kThreadStackBytes = 1 << 20;
// MHD_run rounds the loop-mode destructor gives pending work before stopping.
constexpr int kStopRounds = 8;

constexpr const char* kInternalErrorBody =
    R"({"status":"NPS-SERVER-INTERNAL","error":"NPS-SERVER-INTERNAL","message":"internal error"})";

__attribute__((format(printf, 2, 0))) void log_mhd(void* /*cls*/, const char* format, va_list args)
{
    char line[1024];
    std::vsnprintf(line, sizeof line, format, args);
    std::string_view text(line);
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r'))
        text.remove_suffix(1);
    std::fprintf(stderr, "nps-runner: http server: %.*s\n", static_cast<int>(text.size()), text.data());
}

void log_line(const std::string& text)
{
    std::fprintf(stderr, "nps-runner: http server: %s\n", text.c_str());
}

class MhdServer;
struct RequestContext;

HttpResponse internal_error_response()
{
    HttpResponse response;
    response.status = 500;
    response.body = kInternalErrorBody;
    return response;
}

}  // namespace

namespace detail {

// What the Responders of one request share. `context` is the live request
// (null once it is answered for good: connection closed, server stopped);
// it points back here while a Responder exists. Single-threaded: the server's
// thread (in thread-per-connection mode, the connection's thread, and only
// during the handler call).
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

}  // namespace detail

namespace {

// Per-request state, kept in MHD's *con_cls across access-handler calls.
struct RequestContext {
    MHD_Connection* connection = nullptr;
    std::string body;
    bool body_too_large = false;
    bool handled = false;    // the handler was called
    bool suspended = false;  // waiting for a Responder
    std::optional<HttpResponse> answer;           // given, not yet queued
    detail::PendingRequest* pending = nullptr;    // while a Responder exists
};

std::string lower(std::string_view text)
{
    std::string out(text);
    for (char& c : out)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

MHD_Result collect_header(void* cls, MHD_ValueKind /*kind*/, const char* key, size_t key_size,
                          const char* value, size_t value_size)
{
    auto& headers = *static_cast<std::map<std::string, std::string>*>(cls);
    std::string name = lower(std::string_view(key, key_size));
    std::string text = value != nullptr ? std::string(value, value_size) : std::string();
    auto [it, inserted] = headers.try_emplace(std::move(name), text);
    if (!inserted)  // a repeated header is a comma-joined list (RFC 9110 §5.3)
        it->second += ", " + text;
    return MHD_YES;
}

MHD_Result collect_argument(void* cls, MHD_ValueKind /*kind*/, const char* key, size_t key_size,
                            const char* value, size_t value_size)
{
    auto& query = *static_cast<std::map<std::string, std::string>*>(cls);
    query[std::string(key, key_size)] = value != nullptr ? std::string(value, value_size) : std::string();
    return MHD_YES;
}

void free_string(void* cls)
{
    delete static_cast<std::string*>(cls);
}

enum class Mode { thread_per_connection, external_loop };

struct Listener {
    MhdServer* server = nullptr;
    bool is_unix = false;
    MHD_Daemon* daemon = nullptr;
    int quiesced_fd = -1;
    int epoll_fd = -1;  // external_loop: MHD's epoll fd
};

// Both kinds of server: one class, the mode decides how MHD runs.
class MhdServer final : public HttpServer, public LoopHttpServer {
public:
    MhdServer(Mode mode, const HttpServerOptions& options, AsyncHttpHandler handler)
        : mode_(mode), options_(options), handler_(std::move(handler))
    {
    }

    ~MhdServer() override
    {
        if (mode_ == Mode::external_loop) {
            // No new request reaches the handler from here on. (Loop mode
            // only: in thread-per-connection mode in-flight requests finish.)
            stopping_ = true;
            // MHD must not be stopped with suspended connections: resume each
            // unanswered (the access handler then closes it) and let MHD run.
            for (RequestContext* context : std::vector<RequestContext*>(suspended_.begin(), suspended_.end())) {
                if (context->pending != nullptr)
                    context->pending->detach();
                context->suspended = false;
                MHD_resume_connection(context->connection);
            }
            suspended_.clear();
            // Also lets answers given just before (begin_shutdown) go out:
            // a few rounds while MHD has work ready.
            for (int round = 0; round < kStopRounds; ++round) {
                dispatch();
                if (next_timeout() != std::chrono::milliseconds(0))
                    break;
            }
        } else {
            // Stop accepting on every listener first, then wait for in-flight
            // requests (MHD_stop_daemon joins the connection threads).
            for (auto& listener : listeners_)
                if (listener->daemon != nullptr)
                    listener->quiesced_fd = MHD_quiesce_daemon(listener->daemon);
        }
        if (unix_created_)
            detail::remove_unix_socket_file(*options_.unix_socket, unix_dev_, unix_ino_);
        for (auto& listener : listeners_) {
            if (listener->daemon != nullptr)
                MHD_stop_daemon(listener->daemon);
            if (listener->quiesced_fd >= 0)
                ::close(listener->quiesced_fd);
        }
    }

    std::uint16_t tcp_port() const override { return tcp_port_; }

    std::vector<int> fds() const override
    {
        std::vector<int> fds;
        for (const auto& listener : listeners_)
            if (listener->epoll_fd >= 0)
                fds.push_back(listener->epoll_fd);
        return fds;
    }

    void dispatch() override
    {
        dispatching_ = true;
        for (auto& listener : listeners_) {
            const unsigned before = connections(*listener);
            if (MHD_run(listener->daemon) != MHD_YES)
                log_line("MHD_run failed");
            // At its connection limit MHD takes the listening socket out of
            // its epoll set, and puts it back only at the start of a later
            // run: after a run that closed connections, run again, or a client
            // waiting in the backlog would wait for unrelated traffic.
            if (connections(*listener) < before)
                MHD_run(listener->daemon);
        }
        dispatching_ = false;
    }

    static unsigned connections(const Listener& listener)
    {
        const MHD_DaemonInfo* info = MHD_get_daemon_info(listener.daemon, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
        return info != nullptr ? info->num_connections : 0;
    }

    void set_wakeup(std::function<void()> wakeup) override { wakeup_ = std::move(wakeup); }

    std::optional<std::chrono::milliseconds> next_timeout() const override
    {
        std::optional<std::chrono::milliseconds> earliest;
        for (const auto& listener : listeners_) {
            MHD_UNSIGNED_LONG_LONG ms = 0;
            if (MHD_get_timeout(listener->daemon, &ms) != MHD_YES)
                continue;
            const auto timeout = std::chrono::milliseconds(
                static_cast<std::int64_t>(std::min<MHD_UNSIGNED_LONG_LONG>(ms, 24ULL * 3600 * 1000)));
            if (!earliest || timeout < *earliest)
                earliest = timeout;
        }
        return earliest;
    }

    std::size_t pending_requests() const override { return suspended_.size(); }

    Result<void> start()
    {
        if (!options_.tcp_listen && !options_.unix_socket)
            return internal_error("Failed to start HTTP server: no TCP address and no unix socket given");

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
            response = internal_error_response();
        }
        context.answer = std::move(response);
        if (context.suspended) {
            // MHD calls the access handler again, which queues the answer,
            // in its next run: ask the owner for one unless in one now (the
            // owner asks next_timeout() afterwards, which says 0).
            context.suspended = false;
            suspended_.erase(&context);
            MHD_resume_connection(context.connection);
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

        unsigned flags = static_cast<unsigned>(MHD_USE_ERROR_LOG);
        if (mode_ == Mode::external_loop) {
            // No internal thread: the owner runs MHD (MHD_run) when its epoll fd is ready.
            flags |= static_cast<unsigned>(MHD_USE_EPOLL) | static_cast<unsigned>(MHD_ALLOW_SUSPEND_RESUME);
            const int fl = ::fcntl(fd.get(), F_GETFL);
            if (fl < 0 || ::fcntl(fd.get(), F_SETFL, fl | O_NONBLOCK) != 0)
                return system_error_errno("Failed to make the listening socket of '" + name + "' non-blocking");
        } else {
            flags |= static_cast<unsigned>(MHD_USE_THREAD_PER_CONNECTION) |
                     static_cast<unsigned>(MHD_USE_INTERNAL_POLLING_THREAD) |
                     static_cast<unsigned>(MHD_USE_ITC);  // needed by MHD_quiesce_daemon
            if (MHD_is_feature_supported(MHD_FEATURE_POLL) == MHD_YES)
                flags |= static_cast<unsigned>(MHD_USE_POLL);  // no FD_SETSIZE limit
        }
        if (ipv6)
            flags |= static_cast<unsigned>(MHD_USE_IPv6);

        const MHD_LogCallback logger = &log_mhd;
        const MHD_RequestCompletedCallback completed = &MhdServer::on_completed;
        const MHD_AccessHandlerCallback access = &MhdServer::on_access;
        const MHD_socket socket_fd = fd.release();  // MHD owns it from here, also on failure
        // Thread-per-connection: handlers run SQLite and JSON code on the
        // connection threads; 1 MiB of (virtual, lazily committed) stack is
        // ample for that. Ignored without threads.
        MHD_Daemon* daemon = MHD_start_daemon(
            flags, 0, nullptr, nullptr, access, listener.get(),
            MHD_OPTION_EXTERNAL_LOGGER, logger, nullptr,  // must come first
            MHD_OPTION_LISTEN_SOCKET, socket_fd,
            MHD_OPTION_CONNECTION_LIMIT, static_cast<unsigned int>(options_.max_connections),
            MHD_OPTION_CONNECTION_TIMEOUT, static_cast<unsigned int>(options_.connection_timeout_seconds),
            MHD_OPTION_THREAD_STACK_SIZE, static_cast<size_t>(kThreadStackBytes),
            MHD_OPTION_NOTIFY_COMPLETED, completed, listener.get(),
            MHD_OPTION_END);
        if (daemon == nullptr)
            return internal_error("Failed to start the HTTP server on '" + name + "' (libmicrohttpd refused; see the log)");
        listener->daemon = daemon;
        if (mode_ == Mode::external_loop) {
            const MHD_DaemonInfo* info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_EPOLL_FD);
            if (info == nullptr || info->epoll_fd < 0) {
                MHD_stop_daemon(daemon);
                return internal_error("Failed to start the HTTP server on '" + name +
                                      "': libmicrohttpd has no epoll fd (built without epoll?)");
            }
            listener->epoll_fd = info->epoll_fd;
        }
        listeners_.push_back(std::move(listener));
        return {};
    }

    static void on_completed(void* cls, MHD_Connection* /*connection*/, void** con_cls,
                             MHD_RequestTerminationCode /*code*/)
    {
        auto* context = static_cast<RequestContext*>(*con_cls);
        *con_cls = nullptr;
        if (context == nullptr)
            return;
        if (context->pending != nullptr)
            context->pending->detach();  // its Responders become no-ops
        if (context->suspended)
            static_cast<Listener*>(cls)->server->suspended_.erase(context);
        delete context;
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
                *con_cls = context;
                if (server.declared_too_large(connection) && expects_continue(connection)) {
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

    bool declared_too_large(MHD_Connection* connection) const
    {
        const char* length = MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (length == nullptr)
            return false;
        const std::string_view text(length);
        unsigned long long value = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        return ec == std::errc() && end == text.data() + text.size() && value > options_.max_body_bytes;
    }

    static bool expects_continue(MHD_Connection* connection)
    {
        const char* expect = MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_EXPECT);
        return expect != nullptr && lower(expect) == "100-continue";
    }

    HttpRequest build_request(const Listener& listener, MHD_Connection* connection, const char* url,
                              const char* method, RequestContext& context) const
    {
        HttpRequest request;
        request.method = method != nullptr ? method : "";
        request.path = url != nullptr ? url : "";
        MHD_get_connection_values_n(connection, MHD_GET_ARGUMENT_KIND, &collect_argument, &request.query);
        MHD_get_connection_values_n(connection, MHD_HEADER_KIND, &collect_header, &request.headers);
        request.body = std::move(context.body);
        request.body_too_large = context.body_too_large;
        request.from_unix_socket = listener.is_unix;
        if (!listener.is_unix) {
            const MHD_ConnectionInfo* info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
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
            pending->respond(internal_error_response());
        } catch (...) {
            log_line("handler failed on " + what + ": unknown exception");
            pending->respond(internal_error_response());
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
            if (mode_ != Mode::external_loop) {
                // Cannot happen (the synchronous handler always answers); never hang a thread on it.
                log_line("handler did not answer " + std::string(method) + " " + url);
                context.answer = internal_error_response();
            } else {
                context.suspended = true;
                suspended_.insert(&context);
                MHD_suspend_connection(connection);
                return MHD_YES;
            }
        }
        HttpResponse response = std::move(*context.answer);
        context.answer.reset();
        return queue(connection, std::move(response));
    }

    static MHD_Result queue(MHD_Connection* connection, HttpResponse response)
    {
        auto* body = new std::string(std::move(response.body));
        MHD_Response* mhd_response = MHD_create_response_from_buffer_with_free_callback_cls(
            body->size(), body->data(), &free_string, body);
        if (mhd_response == nullptr) {
            delete body;
            return MHD_NO;
        }
        if (!response.content_type.empty())
            MHD_add_response_header(mhd_response, MHD_HTTP_HEADER_CONTENT_TYPE, response.content_type.c_str());
        for (const auto& [name, value] : response.headers)
            if (MHD_add_response_header(mhd_response, name.c_str(), value.c_str()) != MHD_YES)
                log_line("dropped invalid response header '" + name + "'");
        const MHD_Result result = MHD_queue_response(connection, static_cast<unsigned int>(response.status), mhd_response);
        MHD_destroy_response(mhd_response);
        return result;
    }

    Mode mode_;
    HttpServerOptions options_;
    AsyncHttpHandler handler_;
    std::vector<std::unique_ptr<Listener>> listeners_;
    std::unordered_set<RequestContext*> suspended_;  // external_loop: waiting for a Responder
    std::function<void()> wakeup_;                    // external_loop: dispatch() is due
    bool dispatching_ = false;
    bool stopping_ = false;  // external_loop: the destructor runs
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
        respond(internal_error_response());
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

Result<std::unique_ptr<HttpServer>> HttpServer::start(const HttpServerOptions& options, HttpHandler handler)
{
    if (!handler)
        return internal_error("Failed to start HTTP server: no handler");
    auto server = std::make_unique<MhdServer>(
        Mode::thread_per_connection, options,
        [handler = std::move(handler)](const HttpRequest& request, Responder responder) {
            responder.respond(handler(request));
        });
    NPS_TRY_VOID(server->start());
    return std::unique_ptr<HttpServer>(std::move(server));
}

Result<std::unique_ptr<LoopHttpServer>> LoopHttpServer::start(const HttpServerOptions& options,
                                                              AsyncHttpHandler handler)
{
    if (!handler)
        return internal_error("Failed to start HTTP server: no handler");
    auto server = std::make_unique<MhdServer>(Mode::external_loop, options, std::move(handler));
    NPS_TRY_VOID(server->start());
    return std::unique_ptr<LoopHttpServer>(std::move(server));
}

}  // namespace nps::net
