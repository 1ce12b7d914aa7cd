// SPDX-License-Identifier: Apache-2.0
// One task callback (NPS-5 §9.4). The URL comes from a TaskFrame, i.e. from
// whoever deposited the task, so every hop goes through the destination
// guard and the connection is pinned to the admitted addresses. Only 307 and
// 308 are followed: they keep the method and the body, so the signed body
// goes to a destination that was itself admitted; 301/302/303 would turn
// the POST into a bodiless GET, which is not a delivery.
#include <nlohmann/json.hpp>

#include "nps/proto/callback_signature.hpp"
#include "delivery.hpp"

namespace nps::report::detail {

namespace {

// The TaskFrame's callback_secret, if any (validated when it was deposited;
// sign_callback_body checks it again).
std::optional<std::string> callback_secret(const std::string& payload)
{
    const nlohmann::json frame = nlohmann::json::parse(payload, nullptr, false);
    if (!frame.is_object())
        return std::nullopt;
    auto it = frame.find("callback_secret");
    if (it == frame.end() || !it->is_string())
        return std::nullopt;
    return it->get<std::string>();
}

CallbackAttempt decided(Verdict verdict, std::string error)
{
    CallbackAttempt attempt;
    attempt.decided = AttemptResult{.verdict = verdict, .error = std::move(error)};
    return attempt;
}

}  // namespace

CallbackAttempt prepare_callback(const DelivererOptions& options, store::Store& store,
                                 const net::DestinationGuard& guard, const store::ReportRow& row)
{
    const std::string url = row.callback_url.value_or("");
    // A URL the static rules refuse will be refused on every attempt.
    if (auto checked = proto::check_destination_url(url, guard.rules(), "callback_url"); !checked)
        return decided(Verdict::refused, checked.error().describe());

    auto task = store.task(row.task_id);
    if (!task)
        return decided(Verdict::retry, task.error().describe());
    auto nodes = store.node_results(row.task_id);
    if (!nodes)
        return decided(Verdict::retry, nodes.error().describe());
    std::string body = callback_body(*task, *nodes);

    CallbackAttempt attempt;
    attempt.request = net::GuardedRequest{
        .method = "POST",
        .url = url,
        .what = "callback_url",
        .guard = &guard,
        .ca_file = options.ca_file,
        .limits = {.timeout_ms = static_cast<int>(options.timeout.count()),
                   .max_body_bytes = limits::kMaxReportResponseBytes,
                   .max_redirects = limits::kMaxCallbackRedirects},
        .redirects = net::RedirectRule::method_preserving,
        .headers = {{"Content-Type", "application/json"}, {"Idempotency-Key", callback_idempotency_key(*task)}},
    };
    if (auto secret = callback_secret(task->payload)) {
        auto signature = proto::sign_callback_body(*secret, body);
        if (!signature)
            return decided(Verdict::refused, "callback_secret: " + signature.error().describe());
        attempt.request.headers.emplace_back(std::string(proto::kCallbackSignatureHeader), *signature);
    }
    attempt.request.body = std::move(body);
    return attempt;
}

AttemptResult judge_callback(const Result<net::FetchedResponse>& response, const Clock& clock)
{
    if (!response)
        return {.verdict = Verdict::retry, .error = response.error().describe()};
    AttemptResult result{.verdict = judge_callback_status(response->status), .http_status = response->status};
    if (result.verdict != Verdict::delivered) {
        result.error = "callback_url: " + describe_answer(response->status, response->body);
        if (response->status >= 300 && response->status <= 399)
            result.error += " (a redirect other than 307/308 is not followed for a callback)";
    }
    if (auto it = response->headers.find("retry-after"); it != response->headers.end())
        result.retry_after_ms = parse_retry_after_ms(it->second, clock.now_ms());
    return result;
}

}  // namespace nps::report::detail
