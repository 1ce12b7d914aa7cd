// SPDX-License-Identifier: Apache-2.0
// Wake-ups across hosts for a shared PostgreSQL store (docs/scale-out.md).
//
// A runner's own deposits wake its executor directly; a deposit made through
// another host's API would only be seen at the next claim poll
// ([executor] claim_interval_ms). With a PostgreSQL store each daemon keeps
// one LISTEN connection on its event loop: a deposit committed on any host
// NOTIFYs the channel, and every listening runner looks for work at once.
//
// Contract:
//  - The poll stays the correctness path: a lost notification (a listener
//    reconnecting, a pooler in transaction mode that cannot LISTEN) only
//    delays a claim until the next poll.
//  - deposited() is called after the deposit committed, from any thread. It
//    NOTIFYs at most once per kMinNotifyInterval per process: deposits that
//    arrive meanwhile are folded into one notification sent when the
//    interval ends (a NOTIFY in every deposit transaction costs PostgreSQL
//    half its deposit throughput: research/postgresql.md).
//  - `woken` runs on the loop thread for every notification received,
//    this runner's own included.
//  - A lost listener connection is reconnected with backoff (1 s doubling
//    to 30 s); healthy() is false meanwhile.
//  - For the embedded SQLite store open() returns nullptr: every depositor
//    is this process.
#pragma once

#include <chrono>
#include <functional>
#include <memory>

#include "nps/base/result.hpp"
#include "nps/event/event_loop.hpp"
#include "nps/store/store.hpp"

namespace nps::store {

inline constexpr std::chrono::milliseconds kMinNotifyInterval{20};

class DepositSignal {
public:
    static Result<std::unique_ptr<DepositSignal>> open(const OpenOptions& options, event::EventLoop& loop,
                                                       std::function<void()> woken);
    virtual ~DepositSignal() = default;

    virtual void deposited() = 0;
    virtual bool healthy() const = 0;
    // Notifications received so far (tests, /metrics).
    virtual std::uint64_t received() const = 0;
};

}  // namespace nps::store
