// SPDX-License-Identifier: Apache-2.0
// The HTTP API of DESIGN.md §3.2: routes a request to its handler and turns
// every failure into the one error body {"status","error","message"}.
//
// Access: requests on the unix socket are trusted (the socket's file mode and
// group guard it). TCP requests must carry `Authorization: Bearer <token>`
// whenever a token is configured (GET /healthz excepted); serve refuses to
// start a non-loopback listener without a token.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "nps/api/metrics.hpp"
#include "nps/api/store_pool.hpp"
#include "nps/base/clock.hpp"
#include "nps/config/config.hpp"
#include "nps/net/http_server.hpp"
#include "nps/spawn/resolver.hpp"

namespace nps::api {

// Wakes long-poll readers when a deposit lands (in this process; deposits
// by other processes sharing runner.db are seen by the readers' periodic
// re-check).
class DepositSignal {
public:
    void notify();
    // Waits until notified after `seen` or until deadline_ms (clock time) or
    // at most slice_ms; returns the current generation.
    std::uint64_t wait(std::uint64_t seen, int slice_ms);
    std::uint64_t generation();
    // Wakes every waiter for good (shutdown); later waits return at once.
    void close();
    bool closed();

private:
    std::mutex mutex_;
    std::condition_variable cv_;
    std::uint64_t generation_ = 0;
    bool closed_ = false;
};

// What the daemon found about its host at start, reported by GET /healthz.
struct HostFacts {
    std::string cgroup_mode = "none";      // unified, hybrid, legacy, none
    std::string cgroup_problem;            // why worker cgroups are unavailable, or ""
    // "memory"/"cpu"/"pids" → "v2", "v1" or "" (not enforceable here).
    std::vector<std::pair<std::string, std::string>> limits_enforced_by;
};

// What the daemon's executor wants to hear from the API threads, at once
// (each hook must be thread-safe and cheap: it should only wake a loop).
struct ApiHooks {
    std::function<void()> deposited;                          // a TaskFrame landed in an inbox
    std::function<void(const std::string& task_id)> cancelled;  // a task was cancelled
    std::function<std::string()> metrics;                       // more of GET /metrics (Prometheus text)
    std::function<std::string()> executor;                      // GET /healthz "executor": a JSON object text
};

class Api {
public:
    Api(const config::Config& config, StorePool& stores, const Clock& clock, HostFacts host = {});

    // Set before the HTTP server starts.
    void set_hooks(ApiHooks hooks) { hooks_ = std::move(hooks); }

    net::HttpResponse handle(const net::HttpRequest& request);

    Metrics& metrics() { return metrics_; }

    // Ends pending long-polls so the HTTP server can stop promptly.
    void begin_shutdown() { deposits_.close(); }

private:
    Result<net::HttpResponse> route(const net::HttpRequest& request);
    bool authorized(const net::HttpRequest& request) const;

    // Handlers, one per route (defined in the routes_*.cpp files). An error
    // becomes the error body in handle().
    Result<net::HttpResponse> deposit(const net::HttpRequest& request, const std::string& nid);
    Result<net::HttpResponse> peek(const net::HttpRequest& request, const std::string& nid);
    Result<net::HttpResponse> ack(const std::string& nid, const std::string& message_id);
    Result<net::HttpResponse> depth(const std::string& nid);
    Result<net::HttpResponse> claim(const net::HttpRequest& request, const std::string& nid);
    Result<net::HttpResponse> renew(const net::HttpRequest& request, const std::string& task_id);
    Result<net::HttpResponse> release(const net::HttpRequest& request, const std::string& task_id);
    Result<net::HttpResponse> complete(const net::HttpRequest& request, const std::string& task_id);
    Result<net::HttpResponse> get_task(const std::string& task_id);
    Result<net::HttpResponse> list_tasks(const net::HttpRequest& request);
    Result<net::HttpResponse> report_node(const net::HttpRequest& request, const std::string& task_id,
                                  const std::string& node_id);
    Result<net::HttpResponse> node_log(const net::HttpRequest& request, const std::string& task_id,
                                       const std::string& node_id);
    Result<net::HttpResponse> cancel_task(const std::string& task_id);
    Result<net::HttpResponse> put_announce(const net::HttpRequest& request, const std::string& nid);
    Result<net::HttpResponse> list_announces();
    Result<net::HttpResponse> resolve(const net::HttpRequest& request);
    Result<net::HttpResponse> resolve_spawn_spec(const net::HttpRequest& request);
    Result<net::HttpResponse> healthz();
    Result<net::HttpResponse> render_metrics();

    // NWP-INBOX-NOT-FOUND / NWP-HTTP-PARAM-INVALID for a NID this API does not host.
    Result<void> check_inbox_nid(const std::string& nid) const;

    const config::Config& config_;
    StorePool& stores_;
    const Clock& clock_;
    HostFacts host_;
    Metrics metrics_;
    DepositSignal deposits_;
    ApiHooks hooks_;
    spawn::SpawnSpecResolver spawn_resolver_;  // announces from the store; remote specs cached
};

}  // namespace nps::api
