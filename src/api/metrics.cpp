// SPDX-License-Identifier: Apache-2.0
#include "nps/api/metrics.hpp"

#include <sstream>

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

void counter(std::ostringstream& out, const char* name, const char* help, const char* labels,
             const std::atomic<std::uint64_t>& value, bool header = true)
{
    if (header) {
        out << "# HELP " << name << ' ' << help << '\n';
        out << "# TYPE " << name << " counter\n";
    }
    out << name << labels << ' ' << value.load(std::memory_order_relaxed) << '\n';
}

}  // namespace

std::string Metrics::render(const std::string& extra) const
{
    std::ostringstream out;
    counter(out, "nps_http_requests_total", "HTTP requests received.", "", http_requests);
    counter(out, "nps_http_responses_total", "HTTP responses by status class.", "{class=\"2xx\"}",
            http_responses_2xx);
    counter(out, "nps_http_responses_total", "", "{class=\"4xx\"}", http_responses_4xx, false);
    counter(out, "nps_http_responses_total", "", "{class=\"5xx\"}", http_responses_5xx, false);
    counter(out, "nps_inbox_deposits_total", "TaskFrames accepted into an inbox.", "", deposits);
    counter(out, "nps_inbox_deposits_duplicate_total", "Idempotent re-deposits of a known task.", "",
            deposits_duplicate);
    counter(out, "nps_claims_total", "Claim attempts by outcome.", "{outcome=\"granted\"}", claims_granted);
    counter(out, "nps_claims_total", "", "{outcome=\"reclaimed\"}", claims_reclaimed, false);
    counter(out, "nps_claims_total", "", "{outcome=\"conflict\"}", claims_conflict, false);
    counter(out, "nps_claims_total", "", "{outcome=\"empty\"}", claims_empty, false);
    counter(out, "nps_lease_renewals_total", "Lease renewals by outcome.", "{outcome=\"granted\"}", renewals);
    counter(out, "nps_lease_renewals_total", "", "{outcome=\"conflict\"}", renewals_conflict, false);
    counter(out, "nps_node_results_total", "Node results recorded.", "", node_results);
    counter(out, "nps_inbox_expired_total", "Messages swept after their TTL.", "", expired_swept);
    out << extra;
    return out.str();
}

}  // namespace nps::api
