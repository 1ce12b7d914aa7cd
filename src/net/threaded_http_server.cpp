// SPDX-License-Identifier: Apache-2.0
// HttpServer: the one HTTP server (LoopHttpServer) on an event loop of its
// own, run by a thread of its own; each request's handler runs on a thread
// of its own, so a handler may block, and its answer goes back to the loop
// (the only thread that touches the server and its Responders).
#include <atomic>
#include <list>
#include <map>
#include <mutex>
#include <thread>

#include "nps/base/log.hpp"
#include "nps/event/event_loop.hpp"
#include "nps/net/http_server.hpp"
#include "nps/net/loop_server.hpp"

namespace nps::net {

namespace {

class ThreadedHttpServer final : public HttpServer {
public:
    explicit ThreadedHttpServer(HttpHandler handler) : handler_(std::move(handler)) {}

    Result<void> start(const HttpServerOptions& options)
    {
        loop_ = NPS_TRY(event::EventLoop::create());
        auto server = NPS_TRY(LoopHttpServer::start(
            options, [this](const HttpRequest& request, Responder responder) { handle(request, std::move(responder)); }));
        port_ = server->tcp_port();
        served_ = NPS_TRY(LoopServer::attach(*loop_, std::move(server)));
        loop_thread_ = std::thread([this] {
            if (auto ran = loop_->run(); !ran)
                log::error("http server: its event loop failed: " + ran.error().describe());
        });
        return {};
    }

    ~ThreadedHttpServer() override
    {
        {
            std::lock_guard lock(mutex_);
            stopping_ = true;  // requests from here on are refused
        }
        // In-flight handlers finish; their answers are posted to the loop,
        // which still runs and sends them.
        for (;;) {
            std::list<Worker> taken;
            {
                std::lock_guard lock(mutex_);
                taken.swap(workers_);
            }
            if (taken.empty())
                break;
            for (Worker& worker : taken)
                worker.thread.join();
        }
        if (!loop_thread_.joinable()) {
            served_.reset();  // start() failed before the loop ran
            return;
        }
        // After the answers posted before it: close the server on its thread.
        loop_->post([this] {
            waiting_.clear();
            served_.reset();
            loop_->stop();
        });
        loop_thread_.join();
    }

    std::uint16_t tcp_port() const override { return port_; }

private:
    struct Worker {
        std::thread thread;
        std::atomic<bool> done{false};
    };

    // On the loop's thread: the request goes to a handler thread of its own.
    void handle(const HttpRequest& request, Responder responder)
    {
        std::lock_guard lock(mutex_);
        if (stopping_) {
            HttpResponse refused;
            refused.status = 503;
            refused.body = R"({"status":"NPS-SERVER-UNAVAILABLE","error":"NPS-SERVER-UNAVAILABLE",)"
                           R"("message":"the server is stopping"})";
            responder.respond(std::move(refused));
            return;
        }
        for (auto it = workers_.begin(); it != workers_.end();) {  // reap the finished ones
            if (it->done.load()) {
                it->thread.join();
                it = workers_.erase(it);
            } else {
                ++it;
            }
        }
        const std::uint64_t id = ++last_id_;
        waiting_.emplace(id, std::move(responder));
        Worker& worker = workers_.emplace_back();
        worker.thread = std::thread([this, &worker, id, request] {
            std::optional<HttpResponse> response;
            try {
                response = handler_(request);
            } catch (const std::exception& e) {
                log::warning("http server: handler failed on " + request.method + " " + request.path + ": " +
                             e.what());
            } catch (...) {
                log::warning("http server: handler failed on " + request.method + " " + request.path);
            }
            // No answer: the Responder goes unanswered, which answers 500.
            loop_->post([this, id, response = std::move(response)]() mutable {
                auto it = waiting_.find(id);
                if (it == waiting_.end())
                    return;
                if (response)
                    it->second.respond(std::move(*response));
                waiting_.erase(it);
            });
            worker.done = true;
        });
    }

    HttpHandler handler_;
    std::unique_ptr<event::EventLoop> loop_;
    std::unique_ptr<LoopServer> served_;  // the loop's thread only, once it runs
    std::uint16_t port_ = 0;
    std::thread loop_thread_;
    std::map<std::uint64_t, Responder> waiting_;  // the loop's thread only
    std::uint64_t last_id_ = 0;                   // the loop's thread only
    std::mutex mutex_;                            // guards workers_ and stopping_
    std::list<Worker> workers_;
    bool stopping_ = false;
};

}  // namespace

Result<std::unique_ptr<HttpServer>> HttpServer::start(const HttpServerOptions& options, HttpHandler handler)
{
    if (!handler)
        return internal_error("Failed to start HTTP server: no handler");
    auto server = std::make_unique<ThreadedHttpServer>(std::move(handler));
    NPS_TRY_VOID(server->start(options));
    return std::unique_ptr<HttpServer>(std::move(server));
}

}  // namespace nps::net
