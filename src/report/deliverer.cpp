// SPDX-License-Identifier: Apache-2.0
// The deliverer on the loop: claim due outbox rows (as many as there are free
// slots), start their transfers, record what came of each in its completion
// callback, and look again — when a slot frees up, when notified, when a
// retry falls due, and every poll interval (rows from other processes).
#include "nps/report/deliverer.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <map>
#include <random>

#include <nlohmann/json.hpp>

#include "nps/base/log.hpp"
#include "nps/event/lifetime.hpp"
#include "nps/net/async_fetch.hpp"
#include "nps/proto/error_codes.hpp"
#include "delivery.hpp"

namespace nps::report {

namespace {

using Json = nlohmann::json;
using TimerId = event::EventLoop::TimerId;
using Steady = std::chrono::steady_clock::time_point;

// Milliseconds on this host's monotonic clock since `since`.
std::int64_t elapsed_ms(Steady since)
{
    return std::chrono::duration_cast<std::chrono::milliseconds>(Steady::clock::now() - since).count();
}

// Kept in hand before an attempt: an attempt may take the whole timeout, and
// the lease must still be ours when we record its outcome.
constexpr std::int64_t kLeaseMarginMs = 5000;
// Never spin: the shortest wait when something is due (a row another
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
    if (row.kind == store::ReportKind::reply)
        return "the completion message of task '" + row.task_id + "' (" + row.state + ") for inbox '" +
               row.reply_to.value_or("") + "'";
    return "the report of node '" + row.node_id + "' of task '" + row.task_id + "' (" + row.state + ")";
}

}  // namespace

struct Deliverer::Impl {
    Impl(DelivererOptions o, const Clock& c, std::unique_ptr<store::Store> s, event::EventLoop& l)
        : options(std::move(o))
        , clock(c)
        , store(std::move(s))
        , guard(
              proto::DestinationRules{.error_code = proto::code::kNopCallbackInvalid, .allow = options.callback_allow},
              options.resolver ? *options.resolver : net::system_resolver())
        , owner(lease_owner(options.owner_prefix))
        , loop(l)
        , post(lifetime.poster(l))
    {
    }

    // Claims what fits in the free slots and starts it; then plans the next look.
    void pump();
    void pump_soon();
    // In how long the next row of the kinds this deliverer claims falls due
    // (≤ 0: now); nullopt when none is pending or the store failed.
    std::optional<std::int64_t> next_due_in();
    // A row claimed at `asked` (this host's monotonic clock, just before
    // the claim): attempted, or given back when its lease is too short.
    void begin(const store::ReportRow& row, Steady asked);
    void answered(std::int64_t row_id, detail::AttemptResult result);
    void finish(const store::ReportRow& row, Steady asked, const detail::AttemptResult& result);
    void release(std::int64_t row_id);
    void refresh_counts();
    void plan_next_look(std::optional<std::int64_t> due_in);
    void store_failed(const Error& error);
    void stop();

    std::size_t node_transfers() const
    {
        return static_cast<std::size_t>(std::count_if(in_flight.begin(), in_flight.end(), [](const auto& entry) {
            return entry.second.row.kind == store::ReportKind::node;
        }));
    }
    std::int64_t lease_ms() const { return 2 * options.timeout.count() + kLeaseMarginMs; }
    bool nodes_paused() const { return node_pause_until_ms > clock.now_ms(); }
    store::ReportKinds claimable() const
    {
        return !options.task_store_url || nodes_paused() ? store::ReportKinds::no_node_reports
                                                         : store::ReportKinds::all;
    }

    DelivererOptions options;
    const Clock& clock;
    std::unique_ptr<store::Store> store;
    net::DestinationGuard guard;  // outlives every request (AsyncFetcher copies it for its lookups)
    std::string owner;
    event::EventLoop& loop;
    event::Lifetime lifetime;  // what notify() posted is dropped after stop()
    event::Poster post;        // notify() from any thread
    std::unique_ptr<net::AsyncFetcher> fetcher;

    struct InFlight {
        store::ReportRow row;
        Steady asked;  // when its claim was asked
        net::AsyncFetcher::Id fetch = 0;
    };
    std::map<std::int64_t, InFlight> in_flight;  // row id →
    TimerId pump_timer = 0;                      // a look in the next round
    TimerId wake_timer = 0;                      // the next planned look
    std::atomic<bool> notified{false};
    bool stopped = false;

    std::atomic<std::int64_t> backlog{0};
    std::atomic<std::int64_t> dead{0};

    std::int64_t node_pause_until_ms = 0;  // the task store failed: no node attempts before this
    std::string last_store_error;          // logged once until it changes
    bool task_store_failing = false;       // logged once per outage
};

void Deliverer::Impl::pump_soon()
{
    if (!stopped && pump_timer == 0)
        pump_timer = loop.defer([this] {
            pump_timer = 0;
            pump();
        });
}

void Deliverer::Impl::pump()
{
    if (stopped)
        return;
    if (!options.task_store_url) {
        if (auto discarded = store->discard_node_reports(); !discarded)
            store_failed(discarded.error());
    }
    const std::size_t room = options.batch - std::min<std::size_t>(in_flight.size(), options.batch);
    // A read first: the claim is a write transaction, which would wait for
    // the write lock (a deposit's commit and its fsync) on the loop even
    // when, as after most records, nothing is due.
    std::optional<std::int64_t> due_in = room > 0 ? next_due_in() : std::nullopt;
    if (due_in && *due_in <= 0) {
        const Steady asked = Steady::clock::now();
        auto rows = store->claim_reports({.owner = owner,
                                          .lease_ms = lease_ms(),
                                          .max_rows = static_cast<std::uint32_t>(room),
                                          .kinds = claimable()});
        if (!rows) {
            store_failed(rows.error());
        } else {
            last_store_error.clear();
            for (const store::ReportRow& row : *rows)
                begin(row, asked);
        }
        due_in = in_flight.size() < options.batch ? next_due_in() : std::nullopt;
    }
    refresh_counts();
    plan_next_look(due_in);
}

std::optional<std::int64_t> Deliverer::Impl::next_due_in()
{
    auto due_in = store->report_due_in_ms(claimable());
    if (!due_in) {
        store_failed(due_in.error());
        return std::nullopt;
    }
    return *due_in;
}

void Deliverer::Impl::begin(const store::ReportRow& row, Steady asked)
{
    // The claim leased the row for lease_ms() from a moment no earlier than
    // `asked`: too little of that left (a slow claim) and it is not tried.
    const bool out_of_lease = lease_ms() - elapsed_ms(asked) < options.timeout.count() + kLeaseMarginMs;
    // While the task store is failing, one node report at a time probes it
    // (one request per backoff period, not one per pending report); the
    // first success lets the backlog drain concurrently again.
    const bool node_waits = row.kind == store::ReportKind::node &&
                            (nodes_paused() || (task_store_failing && node_transfers() > 0));
    if (out_of_lease || node_waits) {
        release(row.id);  // not attempted: given back untouched (no try counted)
        return;
    }
    const std::int64_t id = row.id;
    net::AsyncFetcher::Id fetch = 0;
    if (row.kind != store::ReportKind::callback) {  // node reports and completion messages
        const bool reply = row.kind == store::ReportKind::reply;
        detail::TrustedAttempt attempt =
            reply ? detail::prepare_reply(options, *store, row) : detail::prepare_node(options, row);
        if (attempt.decided) {
            if (reply && !options.npsd_url && attempt.decided->verdict == Verdict::delivered &&
                options.notice_deposited)
                options.notice_deposited(row.reply_to.value_or(""));
            return finish(row, asked, *attempt.decided);
        }
        fetch = fetcher->trusted(attempt.request, [this, id, request = attempt.request](
                                                      Result<net::FetchedResponse> response) {
            answered(id, detail::judge_trusted(request, response, clock));
        });
    } else {
        detail::CallbackAttempt attempt = detail::prepare_callback(options, *store, guard, row);
        if (attempt.decided)
            return finish(row, asked, *attempt.decided);
        fetch = fetcher->guarded(std::move(attempt.request), [this, id](Result<net::FetchedResponse> response) {
            answered(id, detail::judge_callback(response, clock));
        });
    }
    in_flight.emplace(id, InFlight{.row = row, .asked = asked, .fetch = fetch});
}

void Deliverer::Impl::answered(std::int64_t row_id, detail::AttemptResult result)
{
    auto it = in_flight.find(row_id);
    if (it == in_flight.end())
        return;
    const store::ReportRow row = std::move(it->second.row);
    const Steady asked = it->second.asked;
    in_flight.erase(it);
    finish(row, asked, result);
    pump_soon();  // a slot is free
}

void Deliverer::Impl::release(std::int64_t row_id)
{
    if (auto released = store->release_reports(owner, row_id); !released)
        store_failed(released.error());
}

void Deliverer::Impl::finish(const store::ReportRow& row, Steady asked, const detail::AttemptResult& result)
{
    // Now on the store's clock, which wrote recorded_at and compares
    // next_attempt_at: on PostgreSQL the database server's, which a host's
    // own wall clock may be hours off (docs/scale-out.md "Clocks").
    const std::int64_t now = row.claimed_at_ms + elapsed_ms(asked);
    const std::uint32_t tries = row.tries + 1;
    const bool callback = row.kind == store::ReportKind::callback;
    const bool node = row.kind == store::ReportKind::node;
    Result<bool> recorded = false;

    if (result.verdict == Verdict::delivered) {
        if (node && task_store_failing) {
            task_store_failing = false;
            log::notice("The task store answers again; delivering the reports held back");
        }
        std::string detail;
        if (callback)
            detail = Json{{"url", row.callback_url.value_or("")}, {"status", result.http_status}, {"attempts", tries}}
                         .dump(-1, ' ', false, Json::error_handler_t::replace);
        else if (!node)  // a completion message: where it went
            detail = Json{{"reply_to", row.reply_to.value_or("")},
                          {"npsd", options.npsd_url ? Json(*options.npsd_url) : Json(nullptr)},
                          {"attempts", tries}}
                         .dump(-1, ' ', false, Json::error_handler_t::replace);
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
            else if (node)
                detail.update({{"node_id", row.node_id}, {"state", row.state}});
            else
                detail["reply_to"] = row.reply_to.value_or("");
            recorded = store->mark_report_dead(row.id, owner, why,
                                               detail.dump(-1, ' ', false, Json::error_handler_t::replace));
        } else {
            std::int64_t delay = backoff_ms(tries, options.retry_initial.count(), options.retry_max.count());
            if (result.retry_after_ms)
                delay = std::max(delay, *result.retry_after_ms);
            if (node) {
                // The task store itself is failing: hold back every node report
                // until this one is due again (one probe per period). Reports
                // already in flight finish on their own.
                node_pause_until_ms = std::max(node_pause_until_ms, clock.now_ms() + delay);
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

// The next look: when the next row falls due (`due_in`, none while every
// slot is busy: a finishing transfer looks again anyway), when the node
// pause ends, or after the poll interval (rows other processes write do not
// notify us), whichever comes first.
void Deliverer::Impl::plan_next_look(std::optional<std::int64_t> due_in)
{
    const std::int64_t now = clock.now_ms();
    std::int64_t wake_at = now + options.poll.count();
    if (due_in)
        wake_at = std::min(wake_at, now + *due_in);
    if (options.task_store_url && nodes_paused())
        wake_at = std::min(wake_at, node_pause_until_ms);
    const std::int64_t delay = std::max(wake_at - now, kMinSleepMs);
    loop.cancel_timer(wake_timer);
    wake_timer = loop.add_timer_after(std::chrono::milliseconds(delay), [this] {
        wake_timer = 0;
        pump();
    });
}

void Deliverer::Impl::store_failed(const Error& error)
{
    const std::string text = error.describe();
    if (text == last_store_error)
        return;
    last_store_error = text;
    log::error("Report outbox: " + text);
}

void Deliverer::Impl::stop()
{
    if (stopped)
        return;
    stopped = true;
    loop.cancel_timer(std::exchange(pump_timer, 0));
    loop.cancel_timer(std::exchange(wake_timer, 0));
    lifetime.end();
    if (fetcher)
        fetcher->abort_all();  // no callback runs; connections in progress are closed
    in_flight.clear();
    // Rows still leased by us are due again at once for anyone.
    release(0);
    refresh_counts();
}

Deliverer::Deliverer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Result<std::unique_ptr<Deliverer>> Deliverer::start(DelivererOptions options, const Clock& clock,
                                                    event::EventLoop& loop)
{
    if (options.task_store_url && options.task_store_url->empty())
        options.task_store_url.reset();
    options.batch = std::clamp<std::uint32_t>(options.batch, 1, 256);
    options.timeout = std::max(options.timeout, std::chrono::milliseconds(1));
    options.poll = std::max(options.poll, std::chrono::milliseconds(kMinSleepMs));
    auto store = NPS_TRY(store::Store::open(options.store, clock));
    auto impl = std::make_unique<Impl>(std::move(options), clock, std::move(store), loop);
    impl->fetcher = net::AsyncFetcher::create(loop);
    impl->pump_soon();
    return std::unique_ptr<Deliverer>(new Deliverer(std::move(impl)));
}

Deliverer::~Deliverer()
{
    stop();
}

void Deliverer::notify()
{
    // One look for any number of notifications before it.
    Impl* impl = impl_.get();
    if (!impl->notified.exchange(true))
        impl->post([impl] {
            impl->notified.store(false);
            impl->pump_soon();
        });
}

std::int64_t Deliverer::backlog() const
{
    return impl_->backlog.load();
}

std::int64_t Deliverer::dead() const
{
    return impl_->dead.load();
}

std::size_t Deliverer::in_flight() const
{
    return impl_->in_flight.size();
}

void Deliverer::stop()
{
    impl_->stop();
}

}  // namespace nps::report
