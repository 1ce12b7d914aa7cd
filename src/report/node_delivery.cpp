// SPDX-License-Identifier: Apache-2.0
// One node report to the task store: an operator-configured service, so a
// trusted request (http or https, no destination rules), never redirected.
#include "nps/net/guarded_fetch.hpp"
#include "delivery.hpp"

namespace nps::report::detail {

AttemptResult deliver_node(const DeliveryContext& context, const store::ReportRow& row)
{
    const DelivererOptions& options = context.options;
    auto body = node_report_body(row);
    if (!body)
        return {.verdict = Verdict::refused, .error = body.error().describe()};

    net::TrustedRequest request{
        .method = "PATCH",
        .url = node_report_url(*options.task_store_url, row.task_id, row.node_id),
        .ca_file = options.ca_file,
        .timeout_ms = static_cast<int>(options.timeout.count()),
        .max_body_bytes = limits::kMaxReportResponseBytes,
        .headers = {{"Content-Type", "application/json"},
                    {"Accept", "application/json"},
                    {"Idempotency-Key", node_report_idempotency_key(row)}},
        .body = std::move(*body),
        .cancel = &context.cancel,
    };
    if (options.task_store_token)
        request.headers.emplace_back("Authorization", "Bearer " + *options.task_store_token);

    auto response = net::trusted_request(request);
    if (!response)
        return {.verdict = Verdict::retry, .error = response.error().describe()};
    AttemptResult result{.verdict = judge_task_store_status(response->status), .http_status = response->status};
    if (result.verdict != Verdict::delivered)
        result.error = "PATCH '" + request.url + "': " + describe_answer(response->status, response->body);
    if (auto it = response->headers.find("retry-after"); it != response->headers.end())
        result.retry_after_ms = parse_retry_after_ms(it->second, context.clock.now_ms());
    return result;
}

}  // namespace nps::report::detail
