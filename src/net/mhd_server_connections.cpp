// SPDX-License-Identifier: Apache-2.0
// MhdServer (mhd_server.hpp): its connections. Which are accepted (the
// per-peer cap; at the listener's cap the oldest connection without a
// complete head makes room), the head deadline, the request target's bytes,
// and the hang-ups of suspended connections, which MHD does not watch.
#include <sys/epoll.h>
#include <sys/socket.h>

#include <cstring>
#include <string_view>

#include "mhd_request.hpp"
#include "mhd_server.hpp"
#include "nps/net/http_target.hpp"

namespace nps::net::detail {

namespace {

// Hang-ups taken from the watch epoll per dispatch (the rest: next time).
constexpr int kHangupBatch = 64;

}  // namespace

ConnectionState* state_of(MHD_Connection* connection)
{
    const MHD_ConnectionInfo* info = sym_MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info != nullptr ? static_cast<ConnectionState*>(info->socket_context) : nullptr;
}

// MHD_OPTION_NOTIFY_CONNECTION: a connection opens or closes.
void MhdServer::on_connection(void* cls, MHD_Connection* connection, void** socket_context,
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
            state->peer = peer_key(info != nullptr ? info->client_addr : nullptr);
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
        listener->server->unwatch_fd(state->fd);
    if (state->stream != nullptr) {
        listener->server->forget(*state->stream);
        state->stream->state = nullptr;
    }
    delete state;
}

// MHD's accept policy: the per-peer cap, and at the listener's cap room made
// by evicting the oldest connection without a complete head.
MHD_Result MhdServer::on_accept(void* cls, const sockaddr* addr, socklen_t /*addrlen*/)
{
    auto* listener = static_cast<Listener*>(cls);
    MhdServer& server = *listener->server;
    if (server.stopping_)
        return MHD_NO;
    if (!listener->is_unix) {
        const std::string peer = peer_key(addr);
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
void MhdServer::evict(ConnectionState& state)
{
    state.evicted = true;
    if (state.fd >= 0)
        ::shutdown(state.fd, SHUT_RDWR);
}

// MHD_OPTION_UNESCAPE_CALLBACK: the path, and each query parameter's key
// and value, of every request, before the access handler sees them.
size_t MhdServer::on_unescape(void* /*cls*/, MHD_Connection* connection, char* text)
{
    const std::size_t size = percent_decode_in_place(text, std::strlen(text));
    text[size] = '\0';
    if (!is_clean_target_text(std::string_view(text, size)))
        if (ConnectionState* state = state_of(connection))
            state->bad_target = true;
    return size;
}

void MhdServer::enforce_head_deadline(Clock::time_point now)
{
    const auto timeout = std::chrono::seconds(options_.head_timeout_seconds);
    for (auto& listener : listeners_)
        for (ConnectionState* state : listener->connections)
            if (!state->in_request && !state->evicted && now - state->head_since >= timeout)
                evict(*state);
}

std::optional<Clock::time_point> MhdServer::earliest_head_deadline() const
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

void MhdServer::watch(RequestContext& context)
{
    if (context.state != nullptr && watch_fd(*context.state))
        context.state->suspended = &context;
}

bool MhdServer::watch_fd(ConnectionState& state)
{
    if (!hangup_watch_ || state.fd < 0)
        return false;
    epoll_event event{};
    event.events = EPOLLRDHUP;
    event.data.ptr = &state;
    return ::epoll_ctl(hangup_watch_.get(), EPOLL_CTL_ADD, state.fd, &event) == 0;
}

void MhdServer::unwatch(RequestContext& context)
{
    ConnectionState* state = context.state;
    if (state == nullptr || state->suspended != &context)
        return;
    state->suspended = nullptr;
    unwatch_fd(state->fd);
}

void MhdServer::unwatch_fd(int fd)
{
    ::epoll_ctl(hangup_watch_.get(), EPOLL_CTL_DEL, fd, nullptr);
}

// Closes the suspended connections whose client hung up: resumed without an
// answer, the access handler closes them.
void MhdServer::close_hung_up()
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

}  // namespace nps::net::detail
