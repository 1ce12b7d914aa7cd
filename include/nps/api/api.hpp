// SPDX-License-Identifier: Apache-2.0
// The HTTP API of DESIGN.md §3.2: routes a request to its handler and turns
// every failure into the one error body {"status","error","message"}.
//
// Access: requests on the unix socket are trusted (the socket's file mode and
// group guard it). TCP requests must carry `Authorization: Bearer <token>`
// (compared in constant time) unless api.require_token = false is set and no
// token is; /healthz and /metrics are open to loopback peers without it. A
// daemon that requires a token and has none refuses every TCP request (serve
// generates one: daemon/access.hpp). Refusals are 401
// NWP-HTTP-UNAUTHENTICATED with `WWW-Authenticate: Bearer`.
//
// The dashboard (/ui/, docs/dashboard.md) follows the same rules, and on TCP
// also takes a dashboard session (ui/sessions.hpp): its cookie authorises
// every route a token does, except minting login codes; a request with it
// that changes state (any method but GET and HEAD) must also carry the
// session's anti-CSRF token in `X-CSRF-Token`, and an `Origin`, if sent,
// naming this host, else 403 NWP-HTTP-CSRF-INVALID.
//
// Threading: everything runs on the daemon's loop thread (the HTTP server is
// a net::LoopHttpServer on that loop), so a handler must not block. Handlers
// that may wait answer later through the request's Responder:
//  - a long-poll peek (GET /v1/inbox/{nid}?wait=N) that finds nothing is
//    parked with a deadline timer on the loop; a deposit or a lease release
//    through this API re-checks the parked peeks of the inbox, the deadline
//    answers with what is there then, and begin_shutdown() answers them all;
//  - POST /v1/spawnspecs/resolve, which may fetch over the network, runs on
//    another thread (ApiHooks::offload) and answers on the loop;
//  - the live feeds (event streams, followed logs) answer with a stream the
//    LiveFeeds of this API writes as things happen (src/api/live_feeds.hpp).
//  - a deposit is committed on the DepositCommitter's thread, together with
//    those that arrive meanwhile (one fsync for the group), and answered on
//    the loop once durable.
// Other SQLite calls run on the loop (short, local).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "nps/api/frame_body.hpp"
#include "nps/api/metrics.hpp"
#include "nps/api/route_table.hpp"
#include "nps/base/clock.hpp"
#include "nps/config/config.hpp"
#include "nps/event/event_loop.hpp"
#include "nps/net/http_server.hpp"
#include "nps/spawn/resolver.hpp"
#include "nps/store/deposit_committer.hpp"
#include "nps/store/store_pool.hpp"
#include "nps/ui/sessions.hpp"

namespace nps::api {

class LiveFeeds;

// What the daemon found about its host at start, reported by GET /healthz.
struct HostFacts {
    std::string cgroup_mode = "none";      // unified, hybrid, legacy, none
    std::string cgroup_problem;            // why worker cgroups are unavailable, or ""
    // "memory"/"cpu"/"pids" → "v2", "v1" or "" (not enforceable here).
    std::vector<std::pair<std::string, std::string>> limits_enforced_by;
};

// What the daemon wires into the API. Every hook is called on the loop's
// thread and must be cheap.
struct ApiHooks {
    std::function<void()> deposited;                          // a TaskFrame landed in an inbox
    std::function<void(const std::string& task_id)> cancelled;  // a task was cancelled
    std::function<std::string()> metrics;                       // more of GET /metrics (Prometheus text)
    std::function<nlohmann::json()> executor;                   // GET /healthz "executor": an object
    std::function<std::string()> not_ready;                     // GET /readyz: why not ready, "" when ready
    std::function<nlohmann::json()> workers;                    // GET /v1/workers: an array
    std::function<Result<nlohmann::json>()> images;             // GET /v1/images: an array
    // The log directory of the node's running worker, if one runs (a
    // followed log reads it as it grows).
    std::function<std::optional<std::string>(const std::string& task_id, const std::string& node_id)> running_log;
    // Runs `work` (which may block on the network) on another thread, then
    // `done` on the loop's thread. Unset: both run at once, on the loop
    // (tools and tests only: the loop then waits for the network).
    std::function<void(std::function<void()> work, std::function<void()> done)> offload;
};

class Api {
public:
    // `loop` runs the long-poll deadlines; the API lives on its thread.
    Api(const config::Config& config, store::StorePool& stores, const Clock& clock, event::EventLoop& loop,
        HostFacts host = {});
    ~Api();
    Api(const Api&) = delete;
    Api& operator=(const Api&) = delete;

    // Set before the HTTP server starts.
    void set_hooks(ApiHooks hooks);
    // The dashboard's origin for login URLs ("http://127.0.0.1:7070"), once
    // the TCP listener's port is known; unset without a TCP listener.
    void set_dashboard_origin(std::string origin) { dashboard_origin_ = std::move(origin); }

    // The net::AsyncHttpHandler: answers through `responder`, now or later.
    void handle(const net::HttpRequest& request, net::Responder responder);

    Metrics& metrics() { return metrics_; }

    // Answers every parked long-poll with what its inbox holds now, and
    // every later one at once, so the HTTP server can stop promptly.
    void begin_shutdown();
    // Re-checks parked long-polls (all inboxes, or one): for writers in this
    // process other than the API's own routes, which call it themselves.
    void wake_waiters(const std::optional<std::string>& nid = std::nullopt);
    // Long-polls parked now (tests, metrics).
    std::size_t parked_requests() const { return parked_.size(); }
    // The executor (or another writer in this process) recorded something:
    // live feeds look now instead of at their next poll.
    void recorded();

private:
    // A Reply (route_table.hpp) answers one request: an error becomes the
    // error body; counted, logged.

    struct ParkedPeek {
        std::string nid;
        std::uint32_t batch = 0;
        Reply reply;
        event::EventLoop::TimerId deadline = 0;
    };

    void finish(const std::string& what, Result<net::HttpResponse> result,
                const std::optional<AnswerFraming>& framing, const net::Responder& responder);
    // Routes the request whose body read_request_body() has made JSON,
    // through route_table() (routes.cpp).
    void dispatch(const net::HttpRequest& request, const Reply& reply);
    static std::span<const Route> route_table();
    // By the socket, the token, or an open TCP API (not a dashboard session).
    bool authorized(const net::HttpRequest& request) const;
    // A dashboard session's state-changing request without its anti-CSRF
    // token (or from another origin): the refusal, else nullopt.
    std::optional<net::HttpResponse> csrf_refusal(const net::HttpRequest& request, const ui::Session& session) const;

    // Handlers, one per route (defined in the routes_*.cpp files). An error
    // becomes the error body in finish().
    // POST /v1/inbox/{nid} (and the SDKs' POST …/task): checked here, then
    // committed by the DepositCommitter with others that arrive together,
    // answered once durable.
    void deposit(const net::HttpRequest& request, const std::string& nid, const Reply& reply);
    // The deposit `request` asks for, checked; nullopt for a completion
    // message (deposit_completion_message).
    Result<std::optional<store::DepositRequest>> checked_deposit(const net::HttpRequest& request,
                                                                 const std::string& nid);
    // The answer to a deposit of nid's inbox once its commit is over.
    Result<net::HttpResponse> deposit_answer(const std::string& nid, const std::string& dedup_key,
                                             Result<store::DepositResult> committed);
    Result<net::HttpResponse> deposit_completion_message(const net::HttpRequest& request, const std::string& nid);
    void peek(const net::HttpRequest& request, const std::string& nid, const Reply& reply);
    // The head of the inbox; nullopt when it is empty.
    Result<std::optional<net::HttpResponse>> peek_now(const std::string& nid, std::uint32_t batch);
    void answer_parked(std::uint64_t id);  // with what the inbox holds now
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
    // Live views (routes_live.cpp): read once, or followed (?follow=1).
    Result<net::HttpResponse> node_log(const net::HttpRequest& request, const std::string& task_id,
                                       const std::string& node_id);
    Result<net::HttpResponse> task_events(const net::HttpRequest& request, const std::string& task_id);
    Result<net::HttpResponse> all_events(const net::HttpRequest& request);
    Result<net::HttpResponse> cancel_task(const std::string& task_id);
    Result<net::HttpResponse> remove_task(const std::string& task_id);
    Result<net::HttpResponse> list_workers();
    Result<net::HttpResponse> prune_tasks(const net::HttpRequest& request);
    // The official SDKs' NopClient routes (routes_sdk.cpp) under a base:
    // /v1/inbox/{base_nid}, or (nullopt) the root, whose inbox is sdk_inbox().
    Result<net::HttpResponse> sdk_task_status(const std::optional<std::string>& base_nid, const std::string& task_id);
    Result<net::HttpResponse> sdk_task_cancel(const std::optional<std::string>& base_nid, const std::string& task_id);
    // The task, when it is in the base's inbox.
    Result<store::TaskRecord> sdk_task(const std::optional<std::string>& base_nid, const std::string& task_id);
    // The inbox of POST /task: api.task_inbox, else the first of runner.inboxes.
    Result<std::string> sdk_inbox() const;
    Result<net::HttpResponse> put_announce(const net::HttpRequest& request, const std::string& nid);
    Result<net::HttpResponse> remove_announce(const std::string& nid);
    Result<net::HttpResponse> list_announces();
    Result<net::HttpResponse> resolve(const net::HttpRequest& request);
    void resolve_spawn_spec(const net::HttpRequest& request, const Reply& reply);
    Result<net::HttpResponse> healthz();
    // npsd's liveness and readiness (docs/api.md): /health answers while the
    // daemon does; /readyz is 200 only while runner.db is writable and the
    // claim loop runs (or the daemon has no inbox to claim from).
    Result<net::HttpResponse> health();
    Result<net::HttpResponse> readyz();
    Result<net::HttpResponse> render_metrics();
    // GET /.nwm and GET /v1/capabilities (routes_catalogue.cpp).
    Result<net::HttpResponse> manifest(const net::HttpRequest& request);
    Result<net::HttpResponse> capabilities();
    // GET /v1/overview and GET /v1/images (routes_overview.cpp).
    Result<net::HttpResponse> overview();
    Result<net::HttpResponse> list_images();

    // The dashboard (routes_ui.cpp): /ui/…, /v1/ui/….
    static bool is_ui_path(const std::string& path);
    const ui::Session* session_of(const net::HttpRequest& request);
    Result<net::HttpResponse> ui_route(const net::HttpRequest& request, const ui::Session* session);
    net::HttpResponse ui_login(const net::HttpRequest& request);
    net::HttpResponse ui_refused(const net::HttpRequest& request);
    Result<net::HttpResponse> issue_login_code(const net::HttpRequest& request);

    // NWP-INBOX-NOT-FOUND / NWP-HTTP-PARAM-INVALID for a NID this API does not host.
    Result<void> check_inbox_nid(const std::string& nid) const;

    const config::Config& config_;
    store::StorePool& stores_;
    const Clock& clock_;
    event::EventLoop& loop_;
    HostFacts host_;
    Metrics metrics_;
    ApiHooks hooks_;
    std::map<std::uint64_t, ParkedPeek> parked_;  // long-polls waiting, by id
    std::uint64_t next_parked_ = 1;
    bool shutting_down_ = false;
    spawn::SpawnSpecResolver spawn_resolver_;  // announces from the store; remote specs cached
    std::unique_ptr<LiveFeeds> feeds_;
    ui::Sessions sessions_;
    std::string dashboard_origin_;
    // Deposits' group commit, started by the first deposit. Its answers
    // reach the loop through post(); `alive_` turns those still queued
    // there into no-ops once this API is gone.
    std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
    std::unique_ptr<store::DepositCommitter> committer_;
};

}  // namespace nps::api
