// SPDX-License-Identifier: Apache-2.0
// Internal to report/: one delivery attempt of one outbox row, in two halves
// around the loop-driven transfer (deliverer.cpp runs it on a
// net::AsyncFetcher): prepare_* builds the request (or decides at once), and
// judge_* turns the answer into an AttemptResult, which the deliverer turns
// into a store update.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "nps/base/clock.hpp"
#include "nps/base/result.hpp"
#include "nps/net/destination_guard.hpp"
#include "nps/net/guarded_fetch.hpp"
#include "nps/report/deliverer.hpp"
#include "nps/report/report_messages.hpp"
#include "nps/store/store.hpp"

namespace nps::report::detail {

struct AttemptResult {
    Verdict verdict = Verdict::retry;
    std::string error{};                          // retry / refused: what happened, naming the destination
    long http_status = 0;                         // 0: no HTTP answer
    std::optional<std::int64_t> retry_after_ms{}; // the receiver asked for this delay
};

// A request to an operator-configured service (task store, npsd), or the
// outcome decided without one.
struct TrustedAttempt {
    std::optional<AttemptResult> decided{};  // set: nothing to send
    net::TrustedRequest request{};
};

// PATCH of a node row to the task store (options.task_store_url is set).
TrustedAttempt prepare_node(const DelivererOptions& options, const store::ReportRow& row);
// The answer of an operator-configured service (task store, npsd).
AttemptResult judge_trusted(const net::TrustedRequest& request, const Result<net::FetchedResponse>& response,
                            const Clock& clock);

// POST of a callback row to its callback_url, through `guard` (which must
// outlive the request).
struct CallbackAttempt {
    std::optional<AttemptResult> decided{};  // set: nothing to send
    net::GuardedRequest request{};
};
CallbackAttempt prepare_callback(const DelivererOptions& options, store::Store& store,
                                 const net::DestinationGuard& guard, const store::ReportRow& row);
AttemptResult judge_callback(const Result<net::FetchedResponse>& response, const Clock& clock);

// A completion message of a reply row: the POST to options.npsd_url, or,
// without one, decided at once by depositing it into `store`'s own inbox.
TrustedAttempt prepare_reply(const DelivererOptions& options, store::Store& store, const store::ReportRow& row);

}  // namespace nps::report::detail
