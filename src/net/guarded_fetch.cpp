// SPDX-License-Identifier: Apache-2.0
// guarded_request / trusted_request (and their GET forms) on the libcurl easy
// interface: one handle per hop, so nothing (connections, DNS cache, pinned
// addresses) outlives a hop. The hop itself is hop.cpp; the redirect walk is
// GuardedWalk, shared with the loop-driven client (async_fetch.cpp).
#include "nps/net/guarded_fetch.hpp"

#include "guarded_walk.hpp"
#include "hop.hpp"

namespace nps::net {

namespace detail {

namespace {

using Clock = std::chrono::steady_clock;

bool follows(RedirectRule rule, long status)
{
    switch (rule) {
    case RedirectRule::all:
        return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
    case RedirectRule::method_preserving:
        return status == 307 || status == 308;
    case RedirectRule::none:
        return false;
    }
    return false;
}

}  // namespace

GuardedWalk::GuardedWalk(GuardedRequest request, std::optional<Validators> validators)
    : request_(std::move(request)),
      validators_(std::move(validators)),
      deadline_(Clock::now() + std::chrono::milliseconds(request_.limits.timeout_ms)),
      url_(request_.url)
{
}

Result<void> GuardedWalk::begin()
{
    if (request_.guard == nullptr)
        return internal_error("guarded request: no destination guard");
    auto bundle = ca_bundle(request_.ca_file);
    if (!bundle)
        return fail(bundle.error().describe());
    bundle_ = std::move(*bundle);
    return {};
}

std::string GuardedWalk::what() const
{
    // A redirect target is a new destination and is checked as one.
    return hop_ == 0 ? request_.what : request_.what + ": redirect to " + shown(url_);
}

Result<int> GuardedWalk::time_left() const
{
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - Clock::now()).count();
    if (left <= 0)
        return fail("no answer within " + std::to_string(request_.limits.timeout_ms) + " ms");
    return static_cast<int>(left);
}

HopOptions GuardedWalk::hop_options(const AdmittedDestination& admitted, long timeout_ms) const
{
    HopOptions options;
    // RedirectRule::all follows with a GET (no body), as browsers and curl do for 301/302/303.
    const bool resend = hop_ == 0 || request_.redirects == RedirectRule::method_preserving;
    options.method = resend ? request_.method : "GET";
    if (resend)
        options.body = request_.body;
    options.cancel = request_.cancel;
    options.url = url_;
    options.allowed = admitted.addresses;
    if (!admitted.destination.literal)
        options.resolve_entry = resolve_entry(admitted);
    options.ca_bundle = bundle_;
    options.max_body_bytes = request_.limits.max_body_bytes;
    for (const auto& [name, value] : request_.headers)
        options.header_lines.push_back(name + ": " + value);
    const bool revalidating = validators_ && url_ == validators_->url;
    if (revalidating && validators_->if_none_match)
        options.header_lines.push_back("If-None-Match: " + *validators_->if_none_match);
    if (revalidating && validators_->if_modified_since)
        options.header_lines.push_back("If-Modified-Since: " + *validators_->if_modified_since);
    options.timeout_ms = timeout_ms;
    options.fresh_connection = true;
    return options;
}

Result<std::optional<FetchedResponse>> GuardedWalk::after(HopResult result)
{
    const std::string answered = hop_ == 0 ? std::string("the server") : shown(url_);
    if (follows(request_.redirects, result.status)) {
        if (!result.redirect_url)
            return fail(answered + " answered HTTP " + std::to_string(result.status) + " without a Location");
        if (hop_ >= request_.limits.max_redirects)
            return fail("more than " + std::to_string(request_.limits.max_redirects) + " redirects");
        url_ = *result.redirect_url;
        redirects_.push_back(url_);
        ++hop_;
        return std::optional<FetchedResponse>();
    }
    FetchedResponse response;
    response.status = result.status;
    response.headers = std::move(result.headers);
    response.body = std::move(result.body);
    response.final_url = url_;
    response.redirects = redirects_;
    return std::optional<FetchedResponse>(std::move(response));
}

Error GuardedWalk::fail(const std::string& problem) const
{
    return internal_error(request_.what + ": " + problem);
}

}  // namespace detail

namespace {

// Hops until an answer the rule does not follow; any status is a response.
Result<FetchedResponse> run_guarded(const GuardedRequest& request, std::optional<detail::Validators> validators)
{
    detail::GuardedWalk walk(request, std::move(validators));
    NPS_TRY_VOID(walk.begin());
    for (;;) {
        const int left = NPS_TRY(walk.time_left());
        const AdmittedDestination admitted = NPS_TRY(request.guard->admit(walk.url(), walk.what(), left));
        const int hop_left = NPS_TRY(walk.time_left());
        auto performed = detail::perform_hop(walk.hop_options(admitted, hop_left));
        if (!performed)
            return walk.fail(performed.error().describe());
        auto answer = NPS_TRY(walk.after(std::move(*performed)));
        if (answer)
            return std::move(*answer);
    }
}

}  // namespace

Result<FetchedResponse> guarded_get(const GuardedGetRequest& request)
{
    const GuardedRequest generic{.url = request.url,
                                 .what = request.what,
                                 .guard = request.guard,
                                 .ca_file = request.ca_file,
                                 .limits = request.limits,
                                 .redirects = RedirectRule::all,
                                 .headers = request.headers};
    std::optional<detail::Validators> validators;
    if (!request.validators_url.empty())
        validators = detail::Validators{request.validators_url, request.if_none_match, request.if_modified_since};
    FetchedResponse response = NPS_TRY(run_guarded(generic, std::move(validators)));
    const bool revalidated = response.status == 304 && !request.validators_url.empty() &&
                             response.final_url == request.validators_url;
    if (!revalidated && (response.status < 200 || response.status > 299)) {
        const std::string answered =
            response.redirects.empty() ? std::string("the server") : detail::shown(response.final_url);
        return internal_error(request.what + ": " + answered + " answered HTTP " + std::to_string(response.status));
    }
    return response;
}

Result<FetchedResponse> guarded_request(const GuardedRequest& request)
{
    return run_guarded(request, std::nullopt);
}

Result<FetchedResponse> trusted_get(const TrustedGetRequest& request)
{
    return trusted_request({.url = request.url,
                            .ca_file = request.ca_file,
                            .timeout_ms = request.timeout_ms,
                            .max_body_bytes = request.max_body_bytes,
                            .headers = {{"Accept", "application/json"}}});
}

namespace detail {

Result<HopOptions> trusted_hop_options(const TrustedRequest& request)
{
    HopOptions options;
    options.ca_bundle = NPS_TRY(ca_bundle(request.ca_file));
    options.method = request.method;
    options.body = request.body;
    options.cancel = request.cancel;
    options.url = request.url;
    options.protocols = "http,https";
    options.timeout_ms = request.timeout_ms;
    options.max_body_bytes = request.max_body_bytes;
    for (const auto& [name, value] : request.headers)
        options.header_lines.push_back(name + ": " + value);
    return options;
}

FetchedResponse trusted_response(HopResult result, const std::string& url)
{
    FetchedResponse response;
    response.status = result.status;
    response.headers = std::move(result.headers);
    response.body = std::move(result.body);
    response.final_url = url;
    return response;
}

}  // namespace detail

Result<FetchedResponse> trusted_request(const TrustedRequest& request)
{
    detail::HopResult result = NPS_TRY(detail::perform_hop(NPS_TRY(detail::trusted_hop_options(request))));
    return detail::trusted_response(std::move(result), request.url);
}

}  // namespace nps::net
