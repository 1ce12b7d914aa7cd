// SPDX-License-Identifier: Apache-2.0
// The deliverer: takes the rows of the store's report outbox (written by the
// database with every reportable node state and every ending of a task with
// a callback_url) and delivers them, durably and in order per node
// (docs/reporting.md has the protocol and the reasons):
//  - node rows → PATCH {task_store_url}/{task_id}/nodes/{node_id}, body and
//    headers as report_messages.hpp builds them; 2xx → done (row deleted);
//    408 425 429 5xx, other non-4xx answers and transport failures → retried
//    with exponential backoff (retry_initial … retry_max, at least a
//    Retry-After) until the report is max_age old → dead; any other 4xx →
//    dead at once. While the task store fails, node delivery pauses for the
//    backoff (one probe per period, not one request per row).
//    Without a task_store_url the runner's own store is the task store: node
//    rows are deleted unsent.
//  - callback rows → POST callback_url (NPS-5 §9.4): the body rendered from
//    the store at delivery, signed X-NPS-Signature when the TaskFrame has a
//    callback_secret, through the destination guard (https, every address
//    public or allowlisted, pinned, 307/308 followed and re-admitted, other
//    redirects not followed); 3 attempts with exponential backoff, then the
//    row is dead and the task gets the event "callback:abandoned" (success:
//    "callback:delivered"). A URL the static rules refuse, a 3xx other than
//    307/308 or a 4xx other than 408/425/429 abandons at once.
//  - reply rows → a completion message for the TaskFrame's reply_to NID:
//    POST {npsd_url}/v1/inbox/{reply_to} (an operator-configured npsd, a
//    trusted request with its bearer token; judged and retried like a node
//    report, without pausing the others), or without an npsd_url a notice
//    in this store's own inbox of that NID (Store::deposit_notice). Event
//    "reply:delivered" or "reply:abandoned".
//
// Threading: none of its own. It runs on the caller's event loop (the
// daemon's event::EventLoop) with its own Store connection (SQLite on
// the loop: short local statements). It claims up to `batch` due rows and
// runs their transfers at once on libcurl multi handles driven by the loop
// (net/async_fetch.hpp); each answer is recorded in its completion callback,
// which frees a slot and looks again. A callback's DNS lookup runs on a short
// helper thread whose answer is posted back (docs/reporting.md says why).
// Retries and the next due row are loop timers; a loop timer every
// limits::kReportPollMs also looks for rows written by other processes
// sharing runner.db (a look at the outbox, not a tick of the supervision).
// Rows are leased while delivered, so several deliverers (in one or several
// processes) never send one row at once; an expired lease (a crashed
// deliverer) makes the row due again for anyone.
//
// stop() (also the destructor), on the loop's thread, aborts the transfers in
// progress and gives the rows it holds back, synchronously: it returns at
// once, a DNS lookup in progress included (its answer is dropped). All
// processes sharing one runner.db must share the [report] settings (a runner
// without a task store discards node rows).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nps/base/clock.hpp"
#include "nps/base/limits.hpp"
#include "nps/base/result.hpp"
#include "nps/event/event_loop.hpp"
#include "nps/net/host_resolver.hpp"
#include "nps/proto/destination_policy.hpp"
#include "nps/store/store.hpp"

namespace nps::report {

struct DelivererOptions {
    store::OpenOptions store{};                               // the task store (Config::store_options)
    std::string owner_prefix = "nps-runner";                  // names this deliverer's leases (a pid and a nonce are added)
    std::optional<std::string> task_store_url{};              // none: node rows are discarded
    std::optional<std::string> task_store_token{};            // Authorization: Bearer
    std::optional<std::string> npsd_url{};                    // completion messages; none: our own inbox
    std::optional<std::string> npsd_token{};                  // Authorization: Bearer
    std::optional<std::string> ca_file{};                     // besides the system CAs, for both destinations
    std::chrono::milliseconds timeout{limits::kDefaultReportTimeoutSeconds * 1000};  // one attempt
    std::chrono::milliseconds retry_initial{limits::kDefaultReportRetryInitialMs};
    std::chrono::milliseconds retry_max{limits::kDefaultReportRetryMaxMs};
    std::chrono::milliseconds max_age{limits::kDefaultReportMaxAgeSeconds * 1000};  // node rows
    std::vector<proto::DestinationAllowEntry> callback_allow{};
    std::chrono::milliseconds poll{limits::kReportPollMs};
    std::uint32_t batch = limits::kReportClaimBatch;
    // Told on the loop's thread after a completion message became a notice in
    // our own inbox of `nid`, so long-polls parked on it look again.
    std::function<void(const std::string& nid)> notice_deposited{};
    // null: the system resolver. Must outlive the deliverer by a lookup's
    // timeout (a helper thread may still be asking it after stop()).
    const net::HostResolver* resolver = nullptr;
};

class Deliverer {
public:
    // On the loop's thread, or before the loop runs: opens its own Store
    // with options.store (errors name the file or server), registers on `loop` and
    // looks for due rows in the loop's first round. `loop` must outlive it.
    static Result<std::unique_ptr<Deliverer>> start(DelivererOptions options, const Clock& clock,
                                                    event::EventLoop& loop);

    // stop(); on the loop's thread.
    ~Deliverer();
    Deliverer(const Deliverer&) = delete;
    Deliverer& operator=(const Deliverer&) = delete;

    // Something was recorded: look in the loop's next round. Thread-safe and
    // cheap (calls before that look are one look).
    void notify();
    // Rows not yet delivered (pending) and rows given up (dead), in the whole
    // runner.db, as of the last look. Thread-safe.
    std::int64_t backlog() const;
    std::int64_t dead() const;
    // Transfers in progress now (on the loop's thread).
    std::size_t in_flight() const;
    // On the loop's thread; idempotent; see the header comment.
    void stop();

    struct Impl;

private:
    explicit Deliverer(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace nps::report
