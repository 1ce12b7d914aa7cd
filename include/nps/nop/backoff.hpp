// SPDX-License-Identifier: Apache-2.0
// The delay before a retry (NPS-5 §3.1.4; the spec's formula is garbled, this
// is the SDK reading, digest §2.5). For retry n (1 = the retry after attempt
// 1 failed): fixed = initial_delay_ms; linear = initial_delay_ms · n;
// exponential = initial_delay_ms · 2^(n−1); always capped at max_delay_ms.
// The arithmetic saturates, so any n is safe.
#pragma once

#include <chrono>
#include <cstdint>

#include "nps/proto/task_frame.hpp"

namespace nps::nop {

std::chrono::milliseconds backoff_delay(const proto::RetryPolicy& policy, std::uint32_t retry);

}  // namespace nps::nop
