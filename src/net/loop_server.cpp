// SPDX-License-Identifier: Apache-2.0
#include "nps/net/loop_server.hpp"

#include <sys/epoll.h>

namespace nps::net {

Result<std::unique_ptr<LoopServer>> LoopServer::attach(event::EventLoop& loop,
                                                       std::unique_ptr<LoopHttpServer> server)
{
    if (!server)
        return internal_error("Failed to attach the HTTP server to the loop: no server");
    std::unique_ptr<LoopServer> bound(new LoopServer(loop, std::move(server)));
    bound->server_->set_wakeup([b = bound.get()] { b->dispatch_soon(); });
    for (int fd : bound->server_->fds()) {
        NPS_TRY_VOID(loop.add_fd(fd, EPOLLIN, [b = bound.get()](std::uint32_t) { b->dispatch(); }));
        bound->fds_.push_back(fd);
    }
    // Connections may already wait in the backlog; and this arms the timer.
    bound->dispatch_soon();
    return bound;
}

LoopServer::LoopServer(event::EventLoop& loop, std::unique_ptr<LoopHttpServer> server)
    : loop_(loop), server_(std::move(server))
{
}

LoopServer::~LoopServer()
{
    for (int fd : fds_)
        loop_.remove_fd(fd);
    loop_.cancel_timer(timer_);
    server_.reset();
}

void LoopServer::dispatch()
{
    server_->dispatch();
    rearm();
}

void LoopServer::dispatch_soon()
{
    // One timer serves both: MHD's timeout and "at once".
    loop_.cancel_timer(timer_);
    timer_ = loop_.defer([this] {
        timer_ = 0;
        dispatch();
    });
}

void LoopServer::rearm()
{
    loop_.cancel_timer(timer_);
    timer_ = 0;
    if (auto timeout = server_->next_timeout())
        timer_ = loop_.add_timer_after(*timeout, [this] {
            timer_ = 0;
            dispatch();
        });
}

}  // namespace nps::net
