// SPDX-License-Identifier: Apache-2.0
// Process-wide counters exported at GET /metrics in the Prometheus text
// format (version 0.0.4). Lock-free: the loop and pool threads only increment.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace nps::api {

struct Metrics {
    std::atomic<std::uint64_t> http_requests{0};
    std::atomic<std::uint64_t> http_responses_2xx{0};
    std::atomic<std::uint64_t> http_responses_4xx{0};
    std::atomic<std::uint64_t> http_responses_5xx{0};
    std::atomic<std::uint64_t> deposits{0};
    std::atomic<std::uint64_t> deposits_duplicate{0};
    std::atomic<std::uint64_t> claims_granted{0};
    std::atomic<std::uint64_t> claims_reclaimed{0};
    std::atomic<std::uint64_t> claims_conflict{0};
    std::atomic<std::uint64_t> claims_empty{0};
    std::atomic<std::uint64_t> renewals{0};
    std::atomic<std::uint64_t> renewals_conflict{0};
    std::atomic<std::uint64_t> node_results{0};
    std::atomic<std::uint64_t> expired_swept{0};

    void count_response(int status);
    // The text exposition; `extra` is appended verbatim (gauges read at scrape time).
    std::string render(const std::string& extra) const;
};

}  // namespace nps::api
