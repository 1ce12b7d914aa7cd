// SPDX-License-Identifier: Apache-2.0
#include "nps/nop/backoff.hpp"

#include <algorithm>

namespace nps::nop {

std::chrono::milliseconds backoff_delay(const proto::RetryPolicy& policy, std::uint32_t retry)
{
    // Both inputs are uint32, so every product below fits in 64 bits once the
    // multiplier is capped at 2^32; the cap at max_delay_ms does the rest.
    const std::uint64_t initial = policy.initial_delay_ms;
    const std::uint64_t cap = policy.max_delay_ms;
    const std::uint64_t n = std::max<std::uint32_t>(retry, 1);
    std::uint64_t delay = initial;
    switch (policy.backoff) {
    case proto::Backoff::fixed:
        break;
    case proto::Backoff::linear:
        delay = initial * n;
        break;
    case proto::Backoff::exponential:
        delay = n - 1 >= 32 ? initial << 32 : initial << (n - 1);
        break;
    }
    return std::chrono::milliseconds(static_cast<std::int64_t>(std::min(delay, cap)));
}

}  // namespace nps::nop
