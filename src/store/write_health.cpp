// SPDX-License-Identifier: Apache-2.0
#include "nps/store/write_health.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>

#include "nps/base/clock.hpp"
#include "nps/base/log.hpp"
#include "nps/base/unique_fd.hpp"

namespace nps::store {

namespace {

struct State {
    std::mutex mutex;
    WriteHealth health;
    std::string path;             // the database whose write failed
    std::int64_t last_probe_ms = 0;
};

State& state()
{
    static State s;
    return s;
}

// True when kStoreProbeBytes can be allocated beside `db_path`.
bool space_is_back(const std::string& db_path)
{
    const std::string probe = db_path + "-space-probe";
    UniqueFd fd(::open(probe.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!fd)
        return false;
    const bool ok = ::posix_fallocate(fd.get(), 0, kStoreProbeBytes) == 0;
    ::unlink(probe.c_str());
    return ok;
}

}  // namespace

WriteHealth write_health()
{
    State& s = state();
    std::lock_guard lock(s.mutex);
    if (s.health.degraded) {
        const std::int64_t now = SystemClock::instance().now_ms();
        if (now - s.last_probe_ms >= kStoreProbeIntervalMs) {
            s.last_probe_ms = now;
            if (!s.path.empty() && space_is_back(s.path)) {
                s.health = {};
                log::info("the task store is writable again (space is free beside " + s.path + ")");
            }
        }
    }
    return s.health;
}

void mark_write_failed(const std::string& path, const std::string& problem)
{
    State& s = state();
    std::lock_guard lock(s.mutex);
    if (!s.health.degraded) {
        s.health.since_ms = SystemClock::instance().now_ms();
        log::warning("the task store is degraded: " + problem);  // once, when it begins
    }
    s.health.degraded = true;
    s.health.problem = problem;
    s.path = path;
    s.last_probe_ms = SystemClock::instance().now_ms();
}

void mark_write_succeeded()
{
    State& s = state();
    std::lock_guard lock(s.mutex);
    if (s.health.degraded) {
        s.health = {};
        log::info("the task store is writable again");
    }
}

}  // namespace nps::store
