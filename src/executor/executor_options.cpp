// SPDX-License-Identifier: Apache-2.0
#include "nps/executor/executor_options.hpp"

#include <unistd.h>

#include <algorithm>

namespace nps::executor {

std::int64_t WorkerPolicy::default_max_cpu_millicores()
{
    const long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
    return std::max<std::int64_t>(std::int64_t{4000}, cpus > 0 ? cpus * 1000 : 0);
}

supervisor::SupervisorOptions supervisor_options(const WorkerPolicy& policy)
{
    supervisor::SupervisorOptions options;
    options.max_concurrent = policy.max_concurrent;
    options.default_idle_timeout = std::chrono::seconds(policy.default_idle_timeout_seconds);
    options.default_max_runtime = std::chrono::seconds(policy.default_max_runtime_seconds);
    options.stop_grace = std::chrono::seconds(policy.stop_grace_seconds);
    options.log_limits = {.max_bytes = policy.log_max_bytes, .keep = policy.log_keep};
    options.spawn_pool = policy.spawn_pool;
    return options;
}

spawn::SpawnCeilings spawn_ceilings(const WorkerPolicy& policy)
{
    return {.max_memory_bytes = policy.max_memory_bytes,
            .max_cpu_millicores = policy.max_cpu_millicores,
            .max_runtime_seconds = policy.max_runtime_seconds_ceiling};
}

}  // namespace nps::executor
