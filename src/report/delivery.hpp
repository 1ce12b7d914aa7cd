// SPDX-License-Identifier: Apache-2.0
// Internal to report/: one delivery attempt of one outbox row, and what came
// of it. The deliverer (deliverer.cpp) turns the result into a store update.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>

#include "nps/base/clock.hpp"
#include "nps/net/destination_guard.hpp"
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

struct DeliveryContext {
    const DelivererOptions& options;
    store::Store& store;
    const net::DestinationGuard& callback_guard;
    const std::atomic<bool>& cancel;
    const Clock& clock;
};

// PATCH of a node row to the task store (options.task_store_url is set).
AttemptResult deliver_node(const DeliveryContext& context, const store::ReportRow& row);
// POST of a callback row to its callback_url.
AttemptResult deliver_callback(const DeliveryContext& context, const store::ReportRow& row);

}  // namespace nps::report::detail
