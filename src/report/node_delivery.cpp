// SPDX-License-Identifier: Apache-2.0
// One node report to the task store: an operator-configured service, so a
// trusted request (http or https, no destination rules), never redirected.
#include "delivery.hpp"

namespace nps::report::detail {

TrustedAttempt prepare_node(const DelivererOptions& options, const store::ReportRow& row)
{
    TrustedAttempt attempt;
    auto body = node_report_body(row);
    if (!body) {
        attempt.decided = AttemptResult{.verdict = Verdict::refused, .error = body.error().describe()};
        return attempt;
    }
    attempt.request = net::TrustedRequest{
        .method = "PATCH",
        .url = node_report_url(*options.task_store_url, row.task_id, row.node_id),
        .ca_file = options.ca_file,
        .timeout_ms = static_cast<int>(options.timeout.count()),
        .max_body_bytes = limits::kMaxReportResponseBytes,
        .headers = {{"Content-Type", "application/json"},
                    {"Accept", "application/json"},
                    {"Idempotency-Key", node_report_idempotency_key(row)}},
        .body = std::move(*body),
    };
    if (options.task_store_token)
        attempt.request.headers.emplace_back("Authorization", "Bearer " + *options.task_store_token);
    return attempt;
}

AttemptResult judge_trusted(const net::TrustedRequest& request, const Result<net::FetchedResponse>& response,
                            const Clock& clock)
{
    if (!response)
        return {.verdict = Verdict::retry, .error = response.error().describe()};
    AttemptResult result{.verdict = judge_task_store_status(response->status), .http_status = response->status};
    if (result.verdict != Verdict::delivered)
        result.error = request.method + " '" + request.url + "': " + describe_answer(response->status, response->body);
    if (auto it = response->headers.find("retry-after"); it != response->headers.end())
        result.retry_after_ms = parse_retry_after_ms(it->second, clock.now_ms());
    return result;
}

}  // namespace nps::report::detail
