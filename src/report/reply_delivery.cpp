// SPDX-License-Identifier: Apache-2.0
// One completion message (a reply row): to the configured npsd, an
// operator-configured service like the task store (a trusted request, never
// redirected), or into this runner's own inbox of the reply_to NID.
#include "delivery.hpp"

namespace nps::report::detail {

namespace {

TrustedAttempt reply_decided(Verdict verdict, std::string error = {})
{
    TrustedAttempt attempt;
    attempt.decided = AttemptResult{.verdict = verdict, .error = std::move(error)};
    return attempt;
}

}  // namespace

TrustedAttempt prepare_reply(const DelivererOptions& options, store::Store& store, const store::ReportRow& row)
{
    if (!row.reply_to || row.reply_to->empty())
        return reply_decided(Verdict::refused, "the report has no reply_to NID");
    auto task = store.task(row.task_id);
    if (!task)
        return reply_decided(Verdict::retry, task.error().describe());
    auto nodes = store.node_results(row.task_id);
    if (!nodes)
        return reply_decided(Verdict::retry, nodes.error().describe());
    auto events = store.events(row.task_id);
    if (!events)
        return reply_decided(Verdict::retry, events.error().describe());
    std::string body = completion_message_body(*task, *nodes, *events);

    if (!options.npsd_url) {
        auto deposited = store.deposit_notice({.nid = *row.reply_to,
                                               .source = completion_idempotency_key(*task),
                                               .payload = std::move(body),
                                               .content_type = "application/json"});
        if (!deposited)
            return reply_decided(Verdict::retry, "inbox '" + *row.reply_to + "': " + deposited.error().describe());
        return reply_decided(Verdict::delivered);
    }
    TrustedAttempt attempt;
    attempt.request = net::TrustedRequest{
        .method = "POST",
        .url = npsd_inbox_url(*options.npsd_url, *row.reply_to),
        .ca_file = options.ca_file,
        .timeout_ms = static_cast<int>(options.timeout.count()),
        .max_body_bytes = limits::kMaxReportResponseBytes,
        .headers = {{"Content-Type", "application/json"},
                    {"Accept", "application/json"},
                    {"Idempotency-Key", completion_idempotency_key(*task)}},
        .body = std::move(body),
    };
    if (options.npsd_token)
        attempt.request.headers.emplace_back("Authorization", "Bearer " + *options.npsd_token);
    return attempt;
}

}  // namespace nps::report::detail
