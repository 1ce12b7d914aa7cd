// SPDX-License-Identifier: Apache-2.0
// DepositSignal on PostgreSQL: LISTEN/NOTIFY on the event loop
// (nps/store/deposit_signal.hpp).
//
// The listener is an ordinary blocking libpq connection whose socket the
// loop watches: when it is readable, PQconsumeInput reads what arrived
// without blocking and PQnotifies hands the notifications out. The same
// connection sends NOTIFY (one round trip, on the loop, at most once per
// kMinNotifyInterval).
#include <sys/epoll.h>

#include <algorithm>
#include <atomic>

#include "nps/base/log.hpp"
#include "nps/event/lifetime.hpp"
#include "nps/lazy/pq.hpp"
#include "nps/store/deposit_signal.hpp"
#include "pg_connection.hpp"

namespace nps::store {

namespace {

constexpr const char* kListen = "LISTEN nps_deposits";
constexpr const char* kNotify = "NOTIFY nps_deposits";
constexpr std::chrono::seconds kFirstBackoff{1};
constexpr std::chrono::seconds kMaxBackoff{30};

class PgDepositSignal final : public DepositSignal {
public:
    PgDepositSignal(std::string url, event::EventLoop& loop, std::function<void()> woken)
        : url_(std::move(url)), loop_(loop), woken_(std::move(woken)), post_(lifetime_.poster(loop))
    {
    }

    ~PgDepositSignal() override
    {
        lifetime_.end();
        loop_.cancel_timer(notify_timer_);
        loop_.cancel_timer(reconnect_timer_);
        disconnect();
    }

    // On the loop thread: the first connection; a failure is retried later.
    void start() { connect(); }

    void deposited() override
    {
        post_([this] { want_notify(); });
    }

    bool healthy() const override { return healthy_.load(); }
    std::uint64_t received() const override { return received_.load(); }

private:
    void connect()
    {
        reconnect_timer_ = 0;
        try {
            conn_ = std::make_unique<pg::Connection>(url_);
            conn_->exec(kListen);
            fd_ = sym_PQsocket(conn_->handle());
            auto watched = loop_.add_fd(fd_, EPOLLIN, [this](std::uint32_t) { readable(); });
            if (!watched)
                throw pg::PgFailure(std::string(pg::kConnectionLost), watched.error().describe());
            healthy_ = true;
            backoff_ = kFirstBackoff;
            if (reconnects_++ > 0)
                log::info("store: the deposit listener is connected again");
            // Deposits made while we were away were not signalled to us:
            // look once now.
            wake();
        } catch (const std::exception& e) {
            lost(e.what());
        }
    }

    void disconnect()
    {
        if (fd_ >= 0)
            loop_.remove_fd(fd_);
        fd_ = -1;
        conn_.reset();
    }

    void lost(const std::string& why)
    {
        disconnect();
        if (healthy_.exchange(false) || !reported_) {
            reported_ = true;
            log::warning("store: the deposit listener lost its connection (" + why + "); claims fall back to "
                         "polling, reconnecting in " + std::to_string(backoff_.count()) + " s");
        }
        reconnect_timer_ = loop_.add_timer_after(backoff_, [this] { connect(); });
        backoff_ = std::min(backoff_ * 2, kMaxBackoff);
    }

    void readable()
    {
        if (!conn_)
            return;
        if (sym_PQconsumeInput(conn_->handle()) == 0) {
            lost(sym_PQerrorMessage(conn_->handle()));
            return;
        }
        drain();
    }

    void drain()
    {
        bool any = false;
        while (PGnotify* n = sym_PQnotifies(conn_->handle())) {
            sym_PQfreemem(n);
            ++received_;
            any = true;
        }
        if (any)
            wake();
    }

    void wake()
    {
        if (woken_)
            woken_();
    }

    void want_notify()
    {
        if (notify_timer_)
            return;  // one is already due: this deposit rides along
        const auto due = last_notify_ + kMinNotifyInterval;
        if (event::EventLoop::now() >= due) {
            notify();
            return;
        }
        notify_timer_ = loop_.add_timer(due, [this] {
            notify_timer_ = 0;
            notify();
        });
    }

    void notify()
    {
        last_notify_ = event::EventLoop::now();
        if (!conn_)
            return;  // the others poll until we are back
        try {
            conn_->exec(kNotify);
            drain();  // notifications that arrived during the round trip
        } catch (const std::exception& e) {
            lost(e.what());
        }
    }

    std::string url_;
    event::EventLoop& loop_;
    std::function<void()> woken_;
    event::Lifetime lifetime_;
    event::Poster post_;
    std::unique_ptr<pg::Connection> conn_;
    int fd_ = -1;
    std::atomic<bool> healthy_{false};
    std::atomic<std::uint64_t> received_{0};
    std::uint64_t reconnects_ = 0;
    bool reported_ = false;  // the first failure to connect was logged
    std::chrono::seconds backoff_ = kFirstBackoff;
    event::EventLoop::TimePoint last_notify_{};
    event::EventLoop::TimerId notify_timer_ = 0;
    event::EventLoop::TimerId reconnect_timer_ = 0;
};

}  // namespace

Result<std::unique_ptr<DepositSignal>> DepositSignal::open(const OpenOptions& options, event::EventLoop& loop,
                                                           std::function<void()> woken)
{
    if (options.url.empty())
        return std::unique_ptr<DepositSignal>();
    auto signal = std::make_unique<PgDepositSignal>(pg::with_connect_timeout(options.url), loop, std::move(woken));
    signal->start();
    return std::unique_ptr<DepositSignal>(std::move(signal));
}

}  // namespace nps::store
