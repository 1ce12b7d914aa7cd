// SPDX-License-Identifier: Apache-2.0
// The clock seam. Lease, TTL and timeout logic take their time from a Clock so
// tests drive it with FakeClock in milliseconds instead of sleeping.
#pragma once

#include <atomic>
#include <cstdint>

namespace nps {

class Clock {
public:
    virtual ~Clock() = default;
    // Wall-clock time in milliseconds since the Unix epoch. Lease expiries are
    // stored in this unit because several processes share one runner.db.
    virtual std::int64_t now_ms() const = 0;
};

class SystemClock final : public Clock {
public:
    std::int64_t now_ms() const override;
    static const SystemClock& instance();
};

// A settable clock for tests; safe to read from several threads.
class FakeClock final : public Clock {
public:
    explicit FakeClock(std::int64_t start_ms = 1'700'000'000'000) : now_(start_ms) {}
    std::int64_t now_ms() const override { return now_.load(); }
    void set_ms(std::int64_t ms) { now_.store(ms); }
    void advance_ms(std::int64_t ms) { now_.fetch_add(ms); }

private:
    std::atomic<std::int64_t> now_;
};

}  // namespace nps
