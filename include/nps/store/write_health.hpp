// SPDX-License-Identifier: Apache-2.0
// Whether runner.db can be written, as the last writes found it: one state
// for the process, shared by every connection (they write the same file on
// the same filesystem).
//
// A write that fails with SQLITE_FULL (the disk is full) or SQLITE_IOERR
// marks the store degraded with the reason; the next committed write clears
// it. While degraded, write_health() probes at most once a second whether
// space came back (it reserves kStoreProbeBytes beside the database with
// fallocate and removes them), so /healthz recovers even when nothing else
// writes. The probe never touches runner.db itself.
#pragma once

#include <cstdint>
#include <string>

namespace nps::store {

// The space a probe reserves beside the database to tell that writes can
// succeed again, and how often it runs. (Kept here, not in
// nps/base/limits.hpp, until the next change there: that header is included
// everywhere.)
inline constexpr std::int64_t kStoreProbeBytes = 1 << 20;
inline constexpr std::int64_t kStoreProbeIntervalMs = 1000;

struct WriteHealth {
    bool degraded = false;
    std::string problem;            // why, when degraded: "disk full writing '…': …"
    std::int64_t since_ms = 0;      // wall clock when it became degraded
};

// The current state; probes (see above) when degraded.
WriteHealth write_health();

// Used by the store's connections. An empty path (a PostgreSQL store: no
// file of ours to probe) clears only with the next committed write.
void mark_write_failed(const std::string& path, const std::string& problem);
void mark_write_succeeded();

}  // namespace nps::store
