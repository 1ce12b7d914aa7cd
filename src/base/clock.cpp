// SPDX-License-Identifier: Apache-2.0
#include "nps/base/clock.hpp"

#include <ctime>

namespace nps {

std::int64_t SystemClock::now_ms() const
{
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}

const SystemClock& SystemClock::instance()
{
    static const SystemClock clock;
    return clock;
}

}  // namespace nps
