// SPDX-License-Identifier: Apache-2.0
// LoopServer: runs a LoopHttpServer on an event::EventLoop. Each of
// the server's epoll fds is watched for EPOLLIN; after every dispatch() one
// loop timer is re-armed from the server's next_timeout(), so MHD's pending
// work and connection timeouts run without any periodic tick; an answer
// given later (the server's wake-up) sets that timer to "at once".
//
// Loop thread only. The destructor unregisters the fds and the timer, then
// destroys the server (closing its connections).
#pragma once

#include <memory>
#include <vector>

#include "nps/base/result.hpp"
#include "nps/event/event_loop.hpp"
#include "nps/net/http_server.hpp"

namespace nps::net {

class LoopServer {
public:
    static Result<std::unique_ptr<LoopServer>> attach(event::EventLoop& loop,
                                                      std::unique_ptr<LoopHttpServer> server);
    ~LoopServer();
    LoopServer(const LoopServer&) = delete;
    LoopServer& operator=(const LoopServer&) = delete;

    LoopHttpServer& server() { return *server_; }

private:
    LoopServer(event::EventLoop& loop, std::unique_ptr<LoopHttpServer> server);
    void dispatch();
    void dispatch_soon();  // a Responder answered: MHD has work now
    void rearm();

    event::EventLoop& loop_;
    std::unique_ptr<LoopHttpServer> server_;
    std::vector<int> fds_;  // registered on the loop
    event::EventLoop::TimerId timer_ = 0;
};

}  // namespace nps::net
