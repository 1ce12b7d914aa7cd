// SPDX-License-Identifier: Apache-2.0
// The dashboard's routes (docs/dashboard.md): its pages and files under
// /ui/, the login that turns a one-time code into a session cookie, and
// POST /v1/ui/login-codes, which mints the code for `nps-runner ui`.
#include <string_view>

#include "nps/api/api.hpp"
#include "nps/api/json_io.hpp"
#include "nps/base/time_format.hpp"
#include "nps/net/http_client.hpp"
#include "nps/proto/error_codes.hpp"
#include "nps/proto/json_to_value.hpp"
#include "nps/ui/assets.hpp"

namespace nps::api {

namespace {

using Json = nlohmann::json;

// Nothing but the dashboard's own files: no inline script or style, no
// other origin, no frames, no forms posting elsewhere.
constexpr std::string_view kContentSecurityPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

net::HttpResponse with_page_headers(net::HttpResponse response, std::string_view cache)
{
    response.headers.emplace_back("Content-Security-Policy", std::string(kContentSecurityPolicy));
    response.headers.emplace_back("X-Content-Type-Options", "nosniff");
    response.headers.emplace_back("X-Frame-Options", "DENY");
    response.headers.emplace_back("Referrer-Policy", "no-referrer");
    response.headers.emplace_back("Cache-Control", std::string(cache));
    return response;
}

// A page of plain text in HTML, without script: what a browser without a
// session, or with a spent code, is shown.
net::HttpResponse notice_page(int status, std::string_view title, std::string_view text)
{
    net::HttpResponse response{.status = status, .content_type = "text/html; charset=utf-8"};
    response.body = "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>nps-runner: " +
                    std::string(title) + "</title></head><body class=\"notice\"><main><h1>" + std::string(title) + "</h1><p>" + std::string(text) +
                    "</p></main></body></html>\n";
    return with_page_headers(std::move(response), "no-store");
}

constexpr std::string_view kLoginHelp =
    "Run <code>nps-runner ui</code> on the runner's host (as root or a member of group nps-runner) and "
    "open the URL it prints; each URL logs in once.";

bool is_page(std::string_view path)
{
    if (path == "/ui/" || path == "/ui/tasks" || path == "/ui/workers" || path == "/ui/images")
        return true;
    constexpr std::string_view kTask = "/ui/tasks/";
    return path.starts_with(kTask) && path.size() > kTask.size() &&
           path.find('/', kTask.size()) == std::string_view::npos;
}

net::HttpResponse serve_asset(const net::HttpRequest& request, const ui::Asset& asset)
{
    net::HttpResponse response{.status = 200, .content_type = std::string(asset.content_type)};
    response.headers.emplace_back("ETag", std::string(asset.etag));
    if (request.header("if-none-match") == asset.etag)
        response.status = 304;
    else
        response.body = std::string(asset.body);
    return with_page_headers(std::move(response), "no-cache");
}

std::string session_cookie(std::string_view value, std::int64_t max_age_seconds)
{
    return std::string(ui::kSessionCookie) + "=" + std::string(value) + "; Path=/; HttpOnly; SameSite=Strict; Max-Age=" +
           std::to_string(max_age_seconds);
}

// Where a login may send the browser on: a dashboard page of this origin.
bool is_login_target(std::string_view next)
{
    return next.starts_with("/ui/") && next.find("//") == std::string_view::npos &&
           next.find('\\') == std::string_view::npos;
}

}  // namespace

bool Api::is_ui_path(const std::string& path)
{
    return path == "/ui" || path.starts_with("/ui/") || path.starts_with("/v1/ui/");
}

const ui::Session* Api::session_of(const net::HttpRequest& request)
{
    const auto value = ui::cookie_value(request.header("cookie"), ui::kSessionCookie);
    return value ? sessions_.find(*value) : nullptr;
}

net::HttpResponse Api::ui_refused(const net::HttpRequest& request)
{
    if (request.path.starts_with("/v1/"))
        return error_response(proto::code::kNwpHttpUnauthenticated,
                              "Missing or wrong bearer token or dashboard session");
    return notice_page(401, "Log in to the dashboard", kLoginHelp);
}

net::HttpResponse Api::ui_login(const net::HttpRequest& request)
{
    if (request.method != "GET")
        return method_not_allowed("GET");
    const auto code = request.query.find("code");
    const auto next = request.query.find("next");
    const std::string target = next != request.query.end() && is_login_target(next->second) ? next->second : "/ui/";
    auto session = code != request.query.end() ? sessions_.redeem(code->second)
                                               : Result<std::optional<ui::Session>>(std::optional<ui::Session>{});
    if (!session)
        return error_response(session.error());
    if (!*session)
        return notice_page(401, "This login link is spent or expired",
                           "A login link works once, within two minutes. " + std::string(kLoginHelp));
    net::HttpResponse response{.status = 303, .content_type = "text/plain; charset=utf-8"};
    response.headers.emplace_back("Location", target);
    response.headers.emplace_back("Set-Cookie", session_cookie((*session)->id, ui::kSessionLifetimeMs / 1000));
    response.body = "Logged in: " + target + "\n";
    return with_page_headers(std::move(response), "no-store");
}

Result<net::HttpResponse> Api::ui_route(const net::HttpRequest& request, const ui::Session* session)
{
    const std::string& path = request.path;
    const std::string& m = request.method;
    const bool read = m == "GET" || m == "HEAD";
    if (path == "/v1/ui/login-codes") {
        if (m != "POST")
            return method_not_allowed("POST");
        // A session cannot mint further logins: only the socket or the token.
        if (session)
            return protocol_error(
                proto::code::kNwpHttpCsrfInvalid,
                "A dashboard session cannot issue login codes (use the unix socket or the API token)");
        return issue_login_code(request);
    }
    if (path == "/ui/session") {
        if (!read)
            return method_not_allowed("GET");
        return json_response(200, {{"authenticated_by", session ? "session" : "token"},
                                   {"csrf", session ? Json(session->csrf) : Json(nullptr)},
                                   {"expires_at", session ? Json(format_rfc3339_ms(session->expires_at_ms)) : Json(nullptr)},
                                   {"runner_nid", config_.runner_nid},
                                   {"version", NPS_RUNNER_VERSION}});
    }
    if (path == "/ui/logout") {
        if (m != "POST")
            return method_not_allowed("POST");
        if (session)
            sessions_.end(session->id);
        net::HttpResponse response = json_response(200, {{"logged_out", session != nullptr}});
        response.headers.emplace_back("Set-Cookie", session_cookie("", 0));
        return response;
    }
    if (!read)
        return method_not_allowed("GET");
    if (path == "/ui") {
        net::HttpResponse response{.status = 308, .content_type = "text/plain; charset=utf-8", .body = "/ui/\n"};
        response.headers.emplace_back("Location", "/ui/");
        return response;
    }
    constexpr std::string_view kAssets = "/ui/assets/";
    if (path.starts_with(kAssets)) {
        if (const ui::Asset* asset = ui::find_asset(std::string_view(path).substr(kAssets.size())))
            return serve_asset(request, *asset);
    } else if (is_page(path)) {
        // One page serves every URL; its script draws the view the path names.
        return serve_asset(request, *ui::find_asset("index.html"));
    }
    return notice_page(404, "No such page", "The dashboard has no page at this address. <a href=\"/ui/\">Overview</a>");
}

Result<net::HttpResponse> Api::issue_login_code(const net::HttpRequest& request)
{
    std::string target = "/ui/";
    if (!request.body.empty()) {
        const Json body = proto::json::parse_to_value(request.body, limits::kMaxJsonDepth).value_or(nullptr);
        if (!body.is_object())
            return protocol_error(proto::code::kNwpHttpParamInvalid,
                                  "The body must be a JSON object: {\"task_id\"?: string}");
        for (const auto& [key, value] : body.items()) {
            if (key != "task_id" || !value.is_string() || value.get<std::string>().empty() ||
                value.get<std::string>().size() > limits::kMaxIdChars)
                return protocol_error(proto::code::kNwpHttpParamInvalid,
                                      "Unknown or invalid field '" + key + "': the body is {\"task_id\"?: string}");
            target = "/ui/tasks/" + net::url_encode(value.get<std::string>());
        }
    }
    const ui::LoginCode code = NPS_TRY(sessions_.issue_code());
    const std::string login = "/ui/login?code=" + code.code + "&next=" + net::url_encode(target);
    return json_response(200, {{"code", code.code},
                               {"expires_at", format_rfc3339_ms(code.expires_at_ms)},
                               {"path", login},
                               {"url", dashboard_origin_.empty() ? Json(nullptr) : Json(dashboard_origin_ + login)}});
}

}  // namespace nps::api
