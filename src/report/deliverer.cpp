// SPDX-License-Identifier: Apache-2.0
// The deliverer's thread: claim due outbox rows, attempt each, record what
// came of it; sleep until notified, a retry falls due or the poll interval
// passes (rows from other processes).
#include "nps/report/deliverer.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <random>
#include <thread>

#include <nlohmann/json.hpp>

#include "nps/base/log.hpp"
#include "delivery.hpp"

namespace nps::report {

namespace {

using Json = nlohmann::json;

// Kept in hand before an attempt: an attempt may take the whole timeout, and
// the lease must still be ours when we record its outcome.
constexpr std::int64_t kLeaseMarginMs = 5000;
// Never spin: the shortest sleep when something is due (a row another
// process holds, a clock step).
constexpr std::int64_t kMinSleepMs = 10;

std::string lease_owner(const std::string& prefix)
{
    std::random_device random;
    const std::uint64_t nonce = (static_cast<std::uint64_t>(random()) << 32) ^ random();
    char text[17];
    std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(nonce));
    return prefix + ":" + std::to_string(::getpid()) + ":" + text;
}

std::string row_name(const store::ReportRow& row)
{
    if (row.kind == store::ReportKind::callback)
        return "the callback of task '" + row.task_id + "' (" + row.state + ")";
    return "the report of node '" + row.node_id + "' of task '" + row.task_id + "' (" + row.state + ")";
}

}  // namespace

struct Deliverer::Impl {
    Impl(DelivererOptions o, const Clock& c, std::unique_ptr<store::Store> s)
        : options(std::move(o)),
          clock(c),
          store(std::move(s)),
          guard(proto::DestinationRules{.error_code = "NOP-CALLBACK-INVALID", .allow = options.callback_allow},
                options.resolver ? *options.resolver : net::system_resolver()),
          owner(lease_owner(options.owner_prefix))
    {
    }

    void run();
    // One claim and its attempts; true when it claimed anything.
    bool deliver_batch();
    void finish(const store::ReportRow& row, const detail::AttemptResult& result);
    void refresh_counts();
    std::int64_t next_wake_ms();
    void store_failed(const Error& error);

    std::int64_t lease_ms() const { return 2 * options.timeout.count() + kLeaseMarginMs; }
    bool nodes_paused() const { return node_pause_until_ms > clock.now_ms(); }

    DelivererOptions options;
    const Clock& clock;
    std::unique_ptr<store::Store> store;  // used by the thread only
    net::DestinationGuard guard;
    std::string owner;

    std::mutex mutex;
    std::condition_variable wake;
    bool notified = false;
    std::atomic<bool> stopping{false};  // also aborts a transfer in progress
    std::thread thread;
    std::once_flag stop_once;

    std::atomic<std::int64_t> backlog{0};
    std::atomic<std::int64_t> dead{0};

    // Thread-only state.
    std::int64_t node_pause_until_ms = 0;  // the task store failed: no node attempts before this
    std::string last_store_error;          // logged once until it changes
    bool task_store_failing = false;       // logged once per outage
};

void Deliverer::Impl::run()
{
    while (!stopping.load()) {
        if (!options.task_store_url) {
            if (auto discarded = store->discard_node_reports(); !discarded)
                store_failed(discarded.error());
        }
        const bool claimed = deliver_batch();
        refresh_counts();
        if (claimed)
            continue;  // more may be due right away

        const std::int64_t sleep_ms = std::max(next_wake_ms() - clock.now_ms(), kMinSleepMs);
        std::unique_lock lock(mutex);
        wake.wait_for(lock, std::chrono::milliseconds(sleep_ms), [this] { return notified || stopping.load(); });
        notified = false;
    }
    // Rows still leased by us are due again at once for anyone.
    if (auto released = store->release_reports(owner, 0); !released)
        store_failed(released.error());
}

bool Deliverer::Impl::deliver_batch()
{
    const bool callbacks_only = !options.task_store_url || nodes_paused();
    auto rows = store->claim_reports({.owner = owner,
                                      .lease_ms = lease_ms(),
                                      .max_rows = options.batch,
                                      .kinds = callbacks_only ? store::ReportKinds::callbacks_only
                                                              : store::ReportKinds::all});
    if (!rows) {
        store_failed(rows.error());
        return false;
    }
    last_store_error.clear();
    const detail::DeliveryContext context{
        .options = options, .store = *store, .callback_guard = guard, .cancel = stopping, .clock = clock};
    for (const store::ReportRow& row : *rows) {
        const bool out_of_lease = row.lease_until_ms - clock.now_ms() < options.timeout.count() + kLeaseMarginMs;
        const bool node_waits = row.kind == store::ReportKind::node && nodes_paused();
        if (stopping.load() || out_of_lease || node_waits) {
            // Not attempted: give it back untouched (no try counted).
            if (auto released = store->release_reports(owner, row.id); !released)
                store_failed(released.error());
            continue;
        }
        const detail::AttemptResult result = row.kind == store::ReportKind::node
                                                 ? detail::deliver_node(context, row)
                                                 : detail::deliver_callback(context, row);
        if (stopping.load() && result.verdict != Verdict::delivered) {
            // Cut short by stop(): not a failure of the destination.
            if (auto released = store->release_reports(owner, row.id); !released)
                store_failed(released.error());
            continue;
        }
        finish(row, result);
    }
    return !rows->empty();
}

void Deliverer::Impl::finish(const store::ReportRow& row, const detail::AttemptResult& result)
{
    const std::int64_t now = clock.now_ms();
    const std::uint32_t tries = row.tries + 1;
    const bool callback = row.kind == store::ReportKind::callback;
    Result<bool> recorded = false;

    if (result.verdict == Verdict::delivered) {
        if (!callback && task_store_failing) {
            task_store_failing = false;
            log::notice("The task store answers again; delivering the reports held back");
        }
        const std::string detail =
            callback ? Json{{"url", row.callback_url.value_or("")}, {"status", result.http_status},
                            {"attempts", tries}}
                           .dump(-1, ' ', false, Json::error_handler_t::replace)
                     : std::string();
        recorded = store->mark_report_delivered(row.id, owner, detail);
    } else {
        const std::int64_t age = now - row.recorded_at_ms;
        const bool exhausted = callback ? tries >= limits::kCallbackAttempts : age >= options.max_age.count();
        if (result.verdict == Verdict::refused || exhausted) {
            std::string why = result.error;
            if (result.verdict != Verdict::refused)
                why = "gave up after " + std::to_string(tries) + (tries == 1 ? " attempt" : " attempts") +
                      (callback ? "" : " over " + std::to_string(age / 1000) + " s") + ": " + result.error;
            log::error("Failed to deliver " + row_name(row) + ": " + why);
            Json detail = {{"error", why}, {"attempts", tries}};
            if (callback)
                detail["url"] = row.callback_url.value_or("");
            else
                detail.update({{"node_id", row.node_id}, {"state", row.state}});
            recorded = store->mark_report_dead(row.id, owner, why,
                                               detail.dump(-1, ' ', false, Json::error_handler_t::replace));
        } else {
            std::int64_t delay = backoff_ms(tries, options.retry_initial.count(), options.retry_max.count());
            if (result.retry_after_ms)
                delay = std::max(delay, *result.retry_after_ms);
            if (!callback) {
                // The task store itself is failing: hold back every node report
                // until this one is due again (one probe per period).
                node_pause_until_ms = now + delay;
                if (!task_store_failing) {
                    task_store_failing = true;
                    log::warning("Failed to deliver " + row_name(row) + ", retrying with backoff: " + result.error);
                }
            } else if (tries == 1) {
                log::warning("Failed to deliver " + row_name(row) + ", retrying: " + result.error);
            }
            recorded = store->reschedule_report(
                {.id = row.id, .owner = owner, .error = result.error, .next_attempt_at_ms = now + delay});
        }
    }
    if (!recorded)
        store_failed(recorded.error());
}

void Deliverer::Impl::refresh_counts()
{
    auto counts = store->report_counts();
    if (!counts) {
        store_failed(counts.error());
        return;
    }
    backlog.store(counts->backlog);
    dead.store(counts->dead);
}

std::int64_t Deliverer::Impl::next_wake_ms()
{
    const std::int64_t now = clock.now_ms();
    std::int64_t wake_at = now + options.poll.count();
    const bool callbacks_only = !options.task_store_url || nodes_paused();
    auto due = store->next_report_due(callbacks_only ? store::ReportKinds::callbacks_only : store::ReportKinds::all);
    if (!due)
        store_failed(due.error());
    else if (*due)
        wake_at = std::min(wake_at, **due);
    if (options.task_store_url && nodes_paused())
        wake_at = std::min(wake_at, node_pause_until_ms);
    return wake_at;
}

void Deliverer::Impl::store_failed(const Error& error)
{
    const std::string text = error.describe();
    if (text == last_store_error)
        return;
    last_store_error = text;
    log::error("Report outbox: " + text);
}

Deliverer::Deliverer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Result<std::unique_ptr<Deliverer>> Deliverer::start(DelivererOptions options, const Clock& clock)
{
    if (options.task_store_url && options.task_store_url->empty())
        options.task_store_url.reset();
    options.batch = std::clamp<std::uint32_t>(options.batch, 1, 256);
    options.timeout = std::max(options.timeout, std::chrono::milliseconds(1));
    options.poll = std::max(options.poll, std::chrono::milliseconds(kMinSleepMs));
    auto store = NPS_TRY(store::Store::open(
        {.path = options.database_path, .synchronous = options.synchronous}, clock));
    auto impl = std::make_unique<Impl>(std::move(options), clock, std::move(store));
    Impl* raw = impl.get();
    std::unique_ptr<Deliverer> deliverer(new Deliverer(std::move(impl)));
    try {
        raw->thread = std::thread([raw] { raw->run(); });
    } catch (const std::system_error& e) {
        return internal_error(std::string("Failed to start the report deliverer thread: ") + e.what());
    }
    return deliverer;
}

Result<std::unique_ptr<Deliverer>> Deliverer::start(const config::Config& config, const Clock& clock)
{
    return start(NPS_TRY(deliverer_options(config)), clock);
}

Deliverer::~Deliverer()
{
    stop();
}

void Deliverer::notify()
{
    {
        std::lock_guard lock(impl_->mutex);
        impl_->notified = true;
    }
    impl_->wake.notify_one();
}

std::int64_t Deliverer::backlog() const
{
    return impl_->backlog.load();
}

std::int64_t Deliverer::dead() const
{
    return impl_->dead.load();
}

void Deliverer::stop()
{
    std::call_once(impl_->stop_once, [this] {
        {
            std::lock_guard lock(impl_->mutex);
            impl_->stopping.store(true);
        }
        impl_->wake.notify_one();
        if (impl_->thread.joinable())
            impl_->thread.join();
    });
}

}  // namespace nps::report
