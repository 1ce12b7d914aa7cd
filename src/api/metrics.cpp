// SPDX-License-Identifier: Apache-2.0
#include "nps/api/metrics.hpp"

#include "nps/base/prometheus_text.hpp"

namespace nps::api {

void Metrics::count_response(int status)
{
    if (status >= 500)
        ++http_responses_5xx;
    else if (status >= 400)
        ++http_responses_4xx;
    else
        ++http_responses_2xx;
}

namespace {

using prometheus::Type;

std::uint64_t read(const std::atomic<std::uint64_t>& counter)
{
    return counter.load(std::memory_order_relaxed);
}

}  // namespace

std::string Metrics::render(const std::string& extra) const
{
    using prometheus::label;
    std::string out;
    prometheus::metric(out, "nps_http_requests_total", Type::counter, "HTTP requests received.", read(http_requests));
    prometheus::family(out, "nps_http_responses_total", Type::counter, "HTTP responses by status class.");
    prometheus::sample(out, "nps_http_responses_total", label("class", "2xx"), read(http_responses_2xx));
    prometheus::sample(out, "nps_http_responses_total", label("class", "4xx"), read(http_responses_4xx));
    prometheus::sample(out, "nps_http_responses_total", label("class", "5xx"), read(http_responses_5xx));
    prometheus::metric(out, "nps_inbox_deposits_total", Type::counter, "TaskFrames accepted into an inbox.",
                       read(deposits));
    prometheus::metric(out, "nps_inbox_deposits_duplicate_total", Type::counter,
                       "Idempotent re-deposits of a known task.", read(deposits_duplicate));
    prometheus::family(out, "nps_claims_total", Type::counter, "Claim attempts by outcome.");
    prometheus::sample(out, "nps_claims_total", label("outcome", "granted"), read(claims_granted));
    prometheus::sample(out, "nps_claims_total", label("outcome", "reclaimed"), read(claims_reclaimed));
    prometheus::sample(out, "nps_claims_total", label("outcome", "conflict"), read(claims_conflict));
    prometheus::sample(out, "nps_claims_total", label("outcome", "empty"), read(claims_empty));
    prometheus::family(out, "nps_lease_renewals_total", Type::counter, "Lease renewals by outcome.");
    prometheus::sample(out, "nps_lease_renewals_total", label("outcome", "granted"), read(renewals));
    prometheus::sample(out, "nps_lease_renewals_total", label("outcome", "conflict"), read(renewals_conflict));
    prometheus::metric(out, "nps_node_results_total", Type::counter, "Node results recorded.", read(node_results));
    prometheus::metric(out, "nps_inbox_expired_total", Type::counter, "Messages swept after their TTL.",
                       read(expired_swept));
    out += extra;
    return out;
}

}  // namespace nps::api
