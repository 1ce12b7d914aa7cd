// SPDX-License-Identifier: Apache-2.0
// The operator's ceilings on what a SpawnSpec may ask ([workers] max_memory,
// max_cpu, max_runtime_seconds_ceiling; docs/configuration.md "Limits").
// A SpawnSpec within them gets what it asks; one above any of them is
// refused before anything is started, everywhere a SpawnSpec becomes a
// worker (the daemon's launch and preflight, POST /v1/spawnspecs/resolve).
#pragma once

#include <cstdint>

#include "nps/base/result.hpp"
#include "nps/spawn/spawn_spec.hpp"

namespace nps::spawn {

// 0: no ceiling of that kind.
struct SpawnCeilings {
    std::int64_t max_memory_bytes = 0;
    std::int64_t max_cpu_millicores = 0;
    std::uint32_t max_runtime_seconds = 0;  // bounds max_runtime_seconds and idle_timeout_seconds
};

// NOP-SPAWN-SPEC-INVALID naming the field, its value and the ceiling, for
// the first field above its ceiling: "resource_limits.memory: 100Ti exceeds
// the operator's ceiling workers.max_memory = 4Gi". Fields the SpawnSpec
// leaves out are not checked (the operator's defaults apply to them, and
// the configuration keeps those within the ceilings).
Result<void> check_spawn_ceilings(const SpawnSpec& spec, const SpawnCeilings& ceilings);

}  // namespace nps::spawn
