// SPDX-License-Identifier: Apache-2.0
// DelivererOptions from the configuration ([report], [store], [runner]).
#include "nps/report/deliverer.hpp"

namespace nps::report {

Result<DelivererOptions> deliverer_options(const config::Config& config)
{
    const config::ReportPolicy& r = config.report;
    DelivererOptions options{
        .database_path = config.database_path(),
        .synchronous = config.synchronous,
        .owner_prefix = config.runner_nid.empty() ? std::string("nps-runner") : config.runner_nid,
        .task_store_url = r.task_store_url,
        .task_store_token = r.task_store_token,
        .npsd_url = r.npsd_url,
        .npsd_token = r.npsd_token,
        .ca_file = r.ca_file,
        .timeout = std::chrono::seconds(r.timeout_seconds),
        .retry_initial = std::chrono::milliseconds(r.retry_initial_ms),
        .retry_max = std::chrono::milliseconds(r.retry_max_ms),
        .max_age = std::chrono::seconds(r.max_age_seconds),
    };
    for (const std::string& text : r.callback_allow_destinations) {
        auto entry = proto::parse_destination_allow_entry(text);
        if (!entry)
            return internal_error("report.callback_allow_destinations: " + entry.error().message);
        options.callback_allow.push_back(std::move(*entry));
    }
    return options;
}

}  // namespace nps::report
