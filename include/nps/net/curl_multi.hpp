// SPDX-License-Identifier: Apache-2.0
// CurlMulti: a libcurl multi handle driven by an event::EventLoop
// through CURLMOPT_SOCKETFUNCTION / CURLMOPT_TIMERFUNCTION and
// curl_multi_socket_action: curl says which sockets to watch for what and
// when it next needs a timeout; the loop reports readiness and the timeout
// back. No thread, no polling: with nothing to do the loop sleeps.
//
// Transfers are configured easy handles, owned by the caller; each one's
// completion callback runs on the loop, outside curl's own callbacks, after
// the handle left the multi (the caller may then read and free it, and start
// or abort other transfers — not destroy the CurlMulti).
//
// Connections are cached per multi (keep-alive between transfers to one
// server) unless a handle forbids it (CURLOPT_FORBID_REUSE); so are DNS
// answers and CURLOPT_RESOLVE entries: clients that pin addresses use a multi
// of their own (async_fetch.hpp).
#pragma once

#include <curl/curl.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "nps/base/result.hpp"
#include "nps/event/event_loop.hpp"

namespace nps::net {

class CurlMulti {
public:
    using TransferId = std::uint64_t;                     // never 0
    using Done = std::function<void(CURLcode result)>;

    // On the loop's thread (or before the loop runs).
    static Result<std::unique_ptr<CurlMulti>> create(event::EventLoop& loop);
    // Aborts every transfer (no Done runs), stops watching its sockets and
    // timer, and closes its connections.
    ~CurlMulti();
    CurlMulti(const CurlMulti&) = delete;
    CurlMulti& operator=(const CurlMulti&) = delete;

    // Starts the transfer of `easy` (not owned; valid until `done` ran or
    // abort()). `done` runs on the loop, never inside this call.
    Result<TransferId> start(CURL* easy, Done done);
    // Removes the transfer from the multi at once (a connection in progress
    // is closed); its Done never runs. No-op for an unknown id.
    void abort(TransferId id);
    void abort_all();
    std::size_t active() const { return transfers_.size(); }

private:
    struct Transfer {
        CURL* easy;
        Done done;
        bool finished = false;
        CURLcode result = CURLE_OK;
    };

    explicit CurlMulti(event::EventLoop& loop) : loop_(loop) {}
    static int on_socket(CURL* easy, curl_socket_t fd, int what, void* user, void* socket_user);
    static int on_timer(CURLM* multi, long timeout_ms, void* user);
    void socket_action(curl_socket_t fd, int events);
    void deliver_finished();

    event::EventLoop& loop_;
    CURLM* multi_ = nullptr;
    std::map<TransferId, Transfer> transfers_;
    std::map<CURL*, TransferId> by_handle_;
    std::map<int, std::uint32_t> watched_;  // fd → epoll events
    event::EventLoop::TimerId timer_ = 0;
    TransferId next_id_ = 1;
    bool closing_ = false;
};

}  // namespace nps::net
