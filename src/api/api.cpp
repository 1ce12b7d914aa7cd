// SPDX-License-Identifier: Apache-2.0
#include "nps/api/api.hpp"

#include <algorithm>
#include <exception>

#include "live_feeds.hpp"
#include "nps/api/json_io.hpp"
#include "nps/api/process_metrics.hpp"
#include "nps/base/digest.hpp"
#include "nps/base/log.hpp"
#include "nps/base/prometheus_text.hpp"
#include "nps/lazy/crypto.hpp"
#include "nps/proto/error_codes.hpp"
#include "nps/proto/task_frame.hpp"
#include "nps/store/write_health.hpp"

namespace nps::api {

Api::Api(const config::Config& config, store::StorePool& stores, const Clock& clock, event::EventLoop& loop,
         HostFacts host)
    : config_(config),
      stores_(stores),
      clock_(clock),
      loop_(loop),
      host_(std::move(host)),
      spawn_resolver_(config.spawn, clock,
                      [this](const std::string& nid) -> Result<store::Announce> {
                          return NPS_TRY(stores_.acquire())->resolve_announce(nid);
                      }),
      feeds_(std::make_unique<LiveFeeds>(stores, loop)),
      sessions_(clock)
{
}

void Api::set_hooks(ApiHooks hooks)
{
    hooks_ = std::move(hooks);
    feeds_->set_running_log_lookup(hooks_.running_log);
}

void Api::recorded()
{
    feeds_->changed();
}

Api::~Api()
{
    *alive_ = false;
    // Parked replies are dropped unanswered: the server is gone by now (or
    // answers 500 if not).
    for (auto& [id, parked] : parked_)
        loop_.cancel_timer(parked.deadline);
}


bool Api::authorized(const net::HttpRequest& request) const
{
    if (request.from_unix_socket)
        return true;
    // Open only by explicit choice (api.require_token = false); a daemon
    // that requires a token but has none refuses every TCP request.
    if (!config_.token)
        return !config_.require_token;
    // Liveness and metrics stay open to loopback peers.
    if ((request.path == "/healthz" || request.path == "/health" || request.path == "/readyz" ||
         request.path == "/metrics" || request.path == "/.nwm") &&
        request.from_loopback)
        return true;
    const std::string& header = request.header("authorization");
    const std::string& expected = *config_.token;
    auto matches = [&expected](std::string_view presented) {
        return presented.size() == expected.size() &&
               sym_CRYPTO_memcmp(presented.data(), expected.data(), expected.size()) == 0;
    };
    static constexpr std::string_view kBearer = "Bearer ";
    if (header.size() > kBearer.size() && header.compare(0, kBearer.size(), kBearer) == 0)
        return matches(std::string_view(header).substr(kBearer.size()));
    // The token as the password of HTTP Basic auth (any user name): what a
    // client sends for a base URL http://user:TOKEN@host/ — the way to give
    // the Python SDK's NopClient, which sends no header of its own, a token.
    static constexpr std::string_view kBasic = "Basic ";
    if (header.size() > kBasic.size() && header.compare(0, kBasic.size(), kBasic) == 0) {
        const auto credentials = base64_decode(std::string_view(header).substr(kBasic.size()));
        if (!credentials || credentials->find(':') == std::string::npos)
            return false;
        return matches(std::string_view(*credentials).substr(credentials->find(':') + 1));
    }
    return false;
}

std::optional<net::HttpResponse> Api::csrf_refusal(const net::HttpRequest& request, const ui::Session& session) const
{
    if (request.method == "GET" || request.method == "HEAD")
        return std::nullopt;
    if (!ui::Sessions::csrf_matches(session, request.header("x-csrf-token")))
        return error_response(proto::code::kNwpHttpCsrfInvalid,
                              "A dashboard request that changes state must carry the session's X-CSRF-Token");
    // A browser names the page's origin; it must be this host's.
    const std::string& origin = request.header("origin");
    if (!origin.empty() && origin != "http://" + request.header("host"))
        return error_response(proto::code::kNwpHttpCsrfInvalid, "Origin '" + origin + "' is not this dashboard's");
    return std::nullopt;
}

Result<void> Api::check_inbox_nid(const std::string& nid) const
{
    if (!proto::is_valid_nid(nid))
        return protocol_error(proto::code::kNwpHttpParamInvalid, "'" + nid + "' is not a NID (urn:nps:…)");
    if (!config_.allowed_nids.empty() &&
        std::find(config_.allowed_nids.begin(), config_.allowed_nids.end(), nid) == config_.allowed_nids.end())
        return protocol_error(proto::code::kNwpInboxNotFound,
                              "No inbox for '" + nid + "' on this runner (api.allowed_nids)");
    return {};
}

void Api::handle(const net::HttpRequest& request, net::Responder responder)
{
    ++metrics_.http_requests;
    // The answer is framed as Accept asks, in the tier of the request's frame once it is read.
    auto framed_reply = [this, responder = std::move(responder),
                         what = request.method + " " + request.path](std::optional<AnswerFraming> framing) -> Reply {
        return [this, responder, what, framing = std::move(framing)](Result<net::HttpResponse> result) {
            finish(what, std::move(result), framing, responder);
        };
    };
    Reply reply = framed_reply(answer_framing(request, std::nullopt));
    try {
        if (request.body_too_large)
            return reply(error_response(proto::code::kNwpHttpBodyTooLarge, "Request body exceeds the size limit"));
        // The dashboard's login: its one-time code is the credential.
        if (request.path == "/ui/login")
            return reply(ui_login(request));
        const bool trusted = authorized(request);
        const ui::Session* session = trusted ? nullptr : session_of(request);
        if (!trusted && !session) {
            if (is_ui_path(request.path))
                return reply(ui_refused(request));
            return reply(error_response(proto::code::kNwpHttpUnauthenticated,
                                        "Missing or wrong bearer token: send 'Authorization: Bearer TOKEN' "
                                        "(api.token, or the token serve generated in <state_dir>/api.token)"));
        }
        if (session)
            if (auto refusal = csrf_refusal(request, *session))
                return reply(std::move(*refusal));
        if (is_ui_path(request.path))
            return reply(ui_route(request, session));
        // Only now, for an authorised client, is a frame body decoded.
        auto body = read_request_body(request, config_.max_message_bytes);
        if (body && body->frame)
            reply = framed_reply(answer_framing(request, body->frame));
        if (!body)
            reply(std::move(body).error());
        else if (!body->frame)
            dispatch(request, reply);
        else if (body->frame->frame_type != proto::ncp::kTaskFrame)
            reply(protocol_error(proto::code::kNwpHttpFrameBodyMalformed,
                                 "This route takes a TaskFrame (0x40), not frame type " +
                                     proto::ncp::frame_byte_text(body->frame->frame_type)));
        else {
            // The routes see the frame's payload as the JSON body it is.
            net::HttpRequest decoded = request;
            decoded.body = std::move(body->json);
            decoded.headers["content-type"] = "application/json";
            dispatch(decoded, reply);
        }
    } catch (const std::exception& e) {
        // No-op if the route answered before throwing.
        reply(error_response(proto::code::kNpsServerInternal, std::string("Internal error: ") + e.what()));
    }
}

void Api::finish(const std::string& what, Result<net::HttpResponse> result,
                 const std::optional<AnswerFraming>& framing, const net::Responder& responder)
{
    if (!responder.pending()) {
        // Answered before, or the client is gone: a stream made for it is let go.
        if (result && result->stream)
            result->stream->cancel();
        return;
    }
    net::HttpResponse response = result ? std::move(*result) : error_response(result.error());
    // The client sees every error; the operator's log gets the server's own
    // failures (5xx), once each, here at the loop owner — but not a health
    // probe's 503: it reports a state (degraded, not ready) that probes ask
    // about several times a second while it lasts.
    const bool probe_answer = response.status == 503 && (what.ends_with(" /healthz") || what.ends_with(" /readyz"));
    if (response.status >= 500 && !probe_answer)
        log::error(what + " failed: " + response.body.substr(0, response.body.find_last_not_of('\n') + 1));
    if (response.status == 401)
        response.headers.emplace_back("WWW-Authenticate", "Bearer");
    if (framing)
        response = framed_response(std::move(response), *framing);
    const int status = response.status;
    const auto stream = response.stream;
    if (responder.respond(std::move(response)))
        metrics_.count_response(status);
    else if (stream)
        stream->cancel();
    // A write through the API (deposit, claim, completion, cancel, …) may
    // have logged events: live feeds look now.
    if (status < 300 && what.rfind("GET ", 0) != 0)
        feeds_->changed();
}

Result<net::HttpResponse> Api::healthz()
{
    nlohmann::json limits = nlohmann::json::object();
    for (const auto& [controller, by] : host_.limits_enforced_by)
        limits[controller] = by.empty() ? nlohmann::json(nullptr) : nlohmann::json(by);
    nlohmann::json cgroup = {{"mode", host_.cgroup_mode}, {"limits", limits}};
    if (!host_.cgroup_problem.empty())
        cgroup["problem"] = host_.cgroup_problem;
    // Which task store, and where (a PostgreSQL URL without its password).
    const nlohmann::json store_info = {
        {"backend", config_.store_url.empty() ? "sqlite" : "postgresql"},
        {"location", config_.store_url.empty() ? config_.database_path() : store::redact_store_url(config_.store_url)}};
    auto store = stores_.acquire();
    if (!store)  // e.g. the database server is unreachable: reconnected on the next request
        return json_response(503, {{"status", "degraded"},
                                   {"version", NPS_RUNNER_VERSION},
                                   {"runner_nid", config_.runner_nid},
                                   {"store", store_info},
                                   {"cgroup", cgroup},
                                   {"problem", "the task store cannot be opened: " + store.error().describe()}});
    // 503 while runner.db cannot be written (disk full, I/O errors): the
    // daemon answers, but deposits and records fail (docs/api.md).
    const store::WriteHealth write = store::write_health();
    nlohmann::json body = {{"status", write.degraded ? "degraded" : "ok"},
                           {"version", NPS_RUNNER_VERSION},
                           {"runner_nid", config_.runner_nid},
                           {"inboxes", config_.inboxes},
                           {"schema_version", (*store)->schema_version()},
                           {"store", store_info},
                           {"cgroup", cgroup}};
    if (hooks_.executor)
        body["executor"] = hooks_.executor();
    if (write.degraded) {
        body["problem"] = write.problem;
        return json_response(503, body);
    }
    return json_response(200, body);
}

Result<net::HttpResponse> Api::health()
{
    return json_response(200, {{"status", "ok"}, {"version", NPS_RUNNER_VERSION}});
}

Result<net::HttpResponse> Api::list_workers()
{
    nlohmann::json workers = nlohmann::json::array();
    if (hooks_.workers)
        workers = hooks_.workers();
    if (!workers.is_array())
        return internal_error("the executor's worker list is not a JSON array");
    return json_response(200, {{"count", workers.size()}, {"workers", std::move(workers)}});
}

Result<net::HttpResponse> Api::readyz()
{
    std::string problem;
    if (auto store = stores_.acquire(); !store)
        problem = "runner.db cannot be opened: " + store.error().describe();
    else if (const store::WriteHealth write = store::write_health(); write.degraded)
        problem = "runner.db cannot be written: " + write.problem;
    else if (hooks_.not_ready)
        problem = hooks_.not_ready();
    if (!problem.empty())
        return json_response(503, {{"status", "not-ready"}, {"problem", problem}});
    return json_response(200, {{"status", "ready"}});
}

Result<net::HttpResponse> Api::render_metrics()
{
    using prometheus::Type;
    std::string gauges;
    std::optional<std::int64_t> store_bytes;
    if (auto store = stores_.acquire()) {
        if (auto bytes = (*store)->size_bytes())
            store_bytes = *bytes;
        prometheus::family(gauges, "nps_inbox_depth", Type::gauge, "Messages queued per claimed inbox.");
        for (const auto& nid : config_.inboxes)
            if (auto d = (*store)->depth(nid))
                prometheus::sample(gauges, "nps_inbox_depth", prometheus::label("nid", nid), *d);
        if (auto counts = (*store)->report_counts()) {
            prometheus::metric(gauges, "nps_report_backlog", Type::gauge,
                               "Outbox reports (node states, callbacks) not yet delivered.", counts->backlog);
            prometheus::metric(gauges, "nps_report_dead", Type::gauge,
                               "Outbox reports refused or abandoned (kept for inspection).", counts->dead);
        }
    }
    prometheus::metric(gauges, "nps_inbox_deposit_commits_total", Type::counter,
                       "Transactions that committed deposits (group commit: deposits per commit is the group size).",
                       committer_ ? committer_->commits() : 0);
    prometheus::metric(gauges, "nps_store_degraded", Type::gauge,
                       "1 while the task store cannot be written (disk full, I/O error, database connection lost), "
                       "else 0.",
                       store::write_health().degraded ? 1 : 0);
    prometheus::metric(gauges, "nps_api_long_polls_parked", Type::gauge,
                       "Long-poll peeks waiting for a deposit or their deadline.", parked_.size());
    prometheus::metric(gauges, "nps_api_live_feeds", Type::gauge, "Event streams and followed logs open now.",
                       feeds_->open_feeds());
    gauges += render_process_metrics(store_bytes);
    if (hooks_.metrics)
        gauges += hooks_.metrics();
    net::HttpResponse response;
    response.content_type = "text/plain; version=0.0.4; charset=utf-8";
    response.body = metrics_.render(gauges);
    return response;
}

}  // namespace nps::api
