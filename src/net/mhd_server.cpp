// SPDX-License-Identifier: Apache-2.0
// MhdServer (mhd_server.hpp): start, stop, and the owner's loop.
#include "mhd_server.hpp"

#include <fcntl.h>
#include <sys/epoll.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <string_view>

#include "listen_socket.hpp"
#include "nps/base/log.hpp"

namespace nps::net {

namespace detail {

namespace {

// MHD_run rounds the destructor gives pending work before stopping.
constexpr int kStopRounds = 8;

__attribute__((format(printf, 2, 0))) void log_mhd(void* /*cls*/, const char* format, va_list args)
{
    char line[1024];
    std::vsnprintf(line, sizeof line, format, args);
    std::string_view text(line);
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r'))
        text.remove_suffix(1);
    log_line(std::string(text));
}

}  // namespace

void log_line(const std::string& text)
{
    log::warning("http server: " + text);
}

MhdServer::MhdServer(const HttpServerOptions& options, AsyncHttpHandler handler)
    : options_(options), handler_(std::move(handler))
{
}

MhdServer::~MhdServer()
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
    for (StreamReader* reader : std::vector<StreamReader*>(parked_streams_.begin(), parked_streams_.end()))
        reader->abandon();
    // Also lets answers given just before (begin_shutdown) go out:
    // a few rounds while MHD has work ready.
    for (int round = 0; round < kStopRounds; ++round) {
        dispatch();
        if (next_timeout() != std::chrono::milliseconds(0))
            break;
    }
    if (unix_created_)
        remove_unix_socket_file(*options_.unix_socket, unix_dev_, unix_ino_);
    for (auto& listener : listeners_)
        if (listener->daemon != nullptr)
            sym_MHD_stop_daemon(listener->daemon);
}

Result<void> MhdServer::start()
{
    if (!options_.tcp_listen && !options_.unix_socket)
        return internal_error("Failed to start HTTP server: no TCP address and no unix socket given");
    hangup_watch_ = UniqueFd(::epoll_create1(EPOLL_CLOEXEC));
    if (!hangup_watch_)
        return system_error_errno("Failed to create the epoll fd watching parked HTTP connections");

    // Bind everything before starting any daemon, so a bind error leaves nothing running.
    std::optional<TcpListener> tcp;
    std::optional<UnixListener> unix_listener;
    if (options_.tcp_listen) {
        tcp = NPS_TRY(open_tcp_listener(*options_.tcp_listen));
        tcp_port_ = tcp->port;
    }
    if (options_.unix_socket) {
        unix_listener = NPS_TRY(open_unix_listener(*options_.unix_socket, options_.unix_socket_mode,
                                                   options_.unix_socket_group));
        unix_created_ = true;
        unix_dev_ = unix_listener->dev;
        unix_ino_ = unix_listener->ino;
    }
    if (tcp)
        NPS_TRY_VOID(start_daemon(std::move(tcp->fd), false, tcp->ipv6, *options_.tcp_listen));
    if (unix_listener)
        NPS_TRY_VOID(start_daemon(std::move(unix_listener->fd), true, false, "unix:" + *options_.unix_socket));
    return {};
}

Result<void> MhdServer::start_daemon(UniqueFd fd, bool is_unix, bool ipv6, const std::string& name)
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

std::vector<int> MhdServer::fds() const
{
    std::vector<int> fds;
    for (const auto& listener : listeners_)
        if (listener->epoll_fd >= 0)
            fds.push_back(listener->epoll_fd);
    if (hangup_watch_)
        fds.push_back(hangup_watch_.get());
    return fds;
}

void MhdServer::dispatch()
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

void MhdServer::wake_owner()
{
    if (!dispatching_ && !stopping_ && wakeup_)
        wakeup_();
}

unsigned MhdServer::connections(const Listener& listener)
{
    const MHD_DaemonInfo* info = sym_MHD_get_daemon_info(listener.daemon, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
    return info != nullptr ? info->num_connections : 0;
}

std::size_t MhdServer::open_connections() const
{
    std::size_t count = 0;
    for (const auto& listener : listeners_)
        count += connections(*listener);
    return count;
}

std::optional<std::chrono::milliseconds> MhdServer::next_timeout() const
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

}  // namespace detail

Result<std::unique_ptr<LoopHttpServer>> LoopHttpServer::start(const HttpServerOptions& options,
                                                              AsyncHttpHandler handler)
{
    if (!handler)
        return internal_error("Failed to start HTTP server: no handler");
    auto server = std::make_unique<detail::MhdServer>(options, std::move(handler));
    NPS_TRY_VOID(server->start());
    return std::unique_ptr<LoopHttpServer>(std::move(server));
}

}  // namespace nps::net
