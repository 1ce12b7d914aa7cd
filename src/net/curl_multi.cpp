// SPDX-License-Identifier: Apache-2.0
#include "nps/net/curl_multi.hpp"

#include <sys/epoll.h>

#include "nps/base/log.hpp"
#include "nps/net/curl_easy.hpp"

namespace nps::net {

Result<std::unique_ptr<CurlMulti>> CurlMulti::create(event::EventLoop& loop)
{
    NPS_TRY_VOID(curl::global_init());
    std::unique_ptr<CurlMulti> multi(new CurlMulti(loop));
    multi->multi_ = sym_curl_multi_init();
    if (multi->multi_ == nullptr)
        return internal_error("Failed to create a libcurl multi handle");
    CURLMcode rc = sym_curl_multi_setopt(multi->multi_, CURLMOPT_SOCKETFUNCTION, &CurlMulti::on_socket);
    if (rc == CURLM_OK)
        rc = sym_curl_multi_setopt(multi->multi_, CURLMOPT_SOCKETDATA, static_cast<void*>(multi.get()));
    if (rc == CURLM_OK)
        rc = sym_curl_multi_setopt(multi->multi_, CURLMOPT_TIMERFUNCTION, &CurlMulti::on_timer);
    if (rc == CURLM_OK)
        rc = sym_curl_multi_setopt(multi->multi_, CURLMOPT_TIMERDATA, static_cast<void*>(multi.get()));
    if (rc != CURLM_OK)
        return internal_error(std::string("Failed to set up a libcurl multi handle: ") + sym_curl_multi_strerror(rc));
    return multi;
}

CurlMulti::~CurlMulti()
{
    abort_all();
    closing_ = true;
    loop_.cancel_timer(std::exchange(timer_, 0));
    if (multi_ != nullptr)
        sym_curl_multi_cleanup(multi_);  // closes cached connections; may still call on_socket
    for (const auto& [fd, events] : watched_)
        loop_.remove_fd(fd);
    watched_.clear();
}

Result<CurlMulti::TransferId> CurlMulti::start(CURL* easy, Done done)
{
    const TransferId id = next_id_++;
    transfers_.emplace(id, Transfer{.easy = easy, .done = std::move(done)});
    by_handle_.emplace(easy, id);
    // Calls on_timer at once (a timeout of 0): the transfer starts in the
    // loop's next round, never inside this call.
    const CURLMcode rc = sym_curl_multi_add_handle(multi_, easy);
    if (rc != CURLM_OK) {
        transfers_.erase(id);
        by_handle_.erase(easy);
        return internal_error(std::string("Failed to start a transfer: ") + sym_curl_multi_strerror(rc));
    }
    return id;
}

void CurlMulti::abort(TransferId id)
{
    auto it = transfers_.find(id);
    if (it == transfers_.end())
        return;
    if (!it->second.finished) {
        by_handle_.erase(it->second.easy);
        sym_curl_multi_remove_handle(multi_, it->second.easy);  // may call on_socket (CURL_POLL_REMOVE)
    }
    transfers_.erase(id);
}

void CurlMulti::abort_all()
{
    while (!transfers_.empty())
        abort(transfers_.begin()->first);
}

int CurlMulti::on_socket(CURL*, curl_socket_t fd, int what, void* user, void*)
{
    auto* self = static_cast<CurlMulti*>(user);
    auto it = self->watched_.find(fd);
    if (what == CURL_POLL_REMOVE || self->closing_) {
        if (it != self->watched_.end()) {
            self->loop_.remove_fd(fd);
            self->watched_.erase(it);
        }
        return 0;
    }
    std::uint32_t events = 0;
    if (what == CURL_POLL_IN || what == CURL_POLL_INOUT)
        events |= EPOLLIN;
    if (what == CURL_POLL_OUT || what == CURL_POLL_INOUT)
        events |= EPOLLOUT;
    Result<void> watched;
    if (it != self->watched_.end()) {
        watched = self->loop_.modify_fd(fd, events);
        if (watched)
            it->second = events;
    } else {
        watched = self->loop_.add_fd(fd, events, [self, fd](std::uint32_t ready) {
            int flags = 0;
            if (ready & EPOLLIN)
                flags |= CURL_CSELECT_IN;
            if (ready & EPOLLOUT)
                flags |= CURL_CSELECT_OUT;
            if (ready & (EPOLLERR | EPOLLHUP))
                flags |= CURL_CSELECT_ERR;
            self->socket_action(fd, flags);
        });
        if (watched)
            self->watched_.emplace(fd, events);
    }
    if (!watched) {
        log::error("libcurl multi: " + watched.error().describe());
        return -1;  // curl fails the transfers on this socket
    }
    return 0;
}

int CurlMulti::on_timer(CURLM*, long timeout_ms, void* user)
{
    auto* self = static_cast<CurlMulti*>(user);
    self->loop_.cancel_timer(std::exchange(self->timer_, 0));
    if (timeout_ms < 0 || self->closing_)
        return 0;
    // Never call socket_action from here (curl forbids it): the loop runs
    // the timer in a later round, a timeout of 0 included.
    self->timer_ = self->loop_.add_timer_after(std::chrono::milliseconds(timeout_ms), [self] {
        self->timer_ = 0;
        self->socket_action(CURL_SOCKET_TIMEOUT, 0);
    });
    return 0;
}

void CurlMulti::socket_action(curl_socket_t fd, int events)
{
    int running = 0;
    const CURLMcode rc = sym_curl_multi_socket_action(multi_, fd, events, &running);
    if (rc != CURLM_OK)
        log::error(std::string("libcurl multi: ") + sym_curl_multi_strerror(rc));
    deliver_finished();
}

void CurlMulti::deliver_finished()
{
    // First take every finished transfer out of the multi, then run the
    // callbacks: a callback may start or abort transfers.
    std::vector<TransferId> finished;
    int left = 0;
    while (CURLMsg* message = sym_curl_multi_info_read(multi_, &left)) {
        if (message->msg != CURLMSG_DONE)
            continue;
        auto handle = by_handle_.find(message->easy_handle);
        if (handle == by_handle_.end())
            continue;
        const TransferId id = handle->second;
        by_handle_.erase(handle);
        Transfer& transfer = transfers_.at(id);
        transfer.finished = true;
        transfer.result = message->data.result;
        sym_curl_multi_remove_handle(multi_, transfer.easy);
        finished.push_back(id);
    }
    for (const TransferId id : finished) {
        auto it = transfers_.find(id);
        if (it == transfers_.end())
            continue;  // aborted by an earlier callback
        Done done = std::move(it->second.done);
        const CURLcode result = it->second.result;
        transfers_.erase(it);
        done(result);
    }
}

}  // namespace nps::net
