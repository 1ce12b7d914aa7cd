// SPDX-License-Identifier: Apache-2.0
// The executor's options: how it claims tasks ([runner]), the policy of its
// workers ([workers]) and what it starts them with. The defaults here are the
// shipped ones; config/ fills these structs from the file
// (docs/configuration.md) and the daemon hands them over. The executor never
// sees the configuration file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "nps/base/limits.hpp"
#include "nps/image/registry.hpp"
#include "nps/sandbox/userns.hpp"
#include "nps/spawn/resolver.hpp"
#include "nps/spawn/spawn_ceilings.hpp"
#include "nps/supervisor/supervisor.hpp"

namespace nps::executor {

// [runner]: how tasks are claimed and executed (docs/executor.md). Reloadable.
struct ClaimPolicy {
    std::uint32_t lease_seconds = 60;        // asked for each claim; renewed every third of it
    std::uint32_t claim_interval_ms = 500;   // look for claimable tasks (other processes' deposits, expired leases)
    std::size_t max_tasks = 0;               // tasks executed at once; 0: workers.max_concurrent
    bool conformance = false;                // one attempt at a time in portable order (execution = "conformance")
    std::uint32_t shutdown_grace_seconds = 30;  // SIGTERM: running tasks may finish this long, then are stopped
};

// [workers]: the policy of the executor's workers (docs/configuration.md,
// docs/supervisor.md). The supervisor's part defaults to the supervisor's own
// defaults (supervisor/supervisor.hpp, worker_log.hpp).
struct WorkerPolicy {
    std::size_t max_concurrent = supervisor::kDefaultMaxConcurrent;  // running workers; more wait in a queue
    std::uint32_t default_idle_timeout_seconds = 0;    // when the SpawnSpec has none; 0: no idle limit
    std::uint32_t default_max_runtime_seconds =        // when the SpawnSpec has none; 0: no limit
        static_cast<std::uint32_t>(supervisor::kDefaultMaxRuntime.count());
    std::uint32_t stop_grace_seconds =                 // cancel frame → SIGTERM → SIGKILL, this apart
        static_cast<std::uint32_t>(supervisor::kDefaultStopGrace.count());
    std::uint64_t log_max_bytes = supervisor::LogLimits{}.max_bytes;  // per log file (stdout.log, stderr.log)
    std::uint32_t log_keep = supervisor::LogLimits{}.keep;            // rotated files kept per stream
    std::uint32_t log_retention_hours = 168;        // finished workers' logs are deleted after; 0: kept forever
    std::size_t spawn_pool = supervisor::kDefaultSpawnPool;  // parked sandbox children (docs/supervisor.md); 0: none
    bool spawn_server = true;  // other workers cloned by a small fork of the daemon (docs/supervisor.md)
    // The process of a worker prepared ahead is held before its execve, so
    // its dispatch only releases it (docs/supervisor.md "Workers held
    // before their execve").
    bool hold_ahead = true;
    // How long, after a task, a worker of its first agent is kept prepared
    // and held for the next task's first node (docs/executor.md "A worker
    // kept warm for the next task"); 0: none. Needs hold_ahead.
    std::uint32_t warm_seconds = 2;
    // A worker's disk: its overlay upper, /tmp and /dev/shm together (docs/sandbox.md "Disk").
    std::uint64_t default_disk = limits::kDefaultWorkerDiskBytes;  // every worker's; `run` without --disk
    std::uint64_t max_disk = limits::kDefaultMaxWorkerDiskBytes;   // ceiling of default_disk and `run --disk`
    // Total of all workers' log directories: above it, finished workers'
    // logs go, oldest first; 0: no cap.
    std::uint64_t logs_max_bytes = std::uint64_t{1} << 30;
    // Limits of a worker whose SpawnSpec sets none (0: no limit of that
    // kind), and the ceilings of what a SpawnSpec may ask (0: no ceiling);
    // each ceiling is at least its default (docs/configuration.md "Limits"
    // says why these values).
    std::int64_t default_memory_bytes = std::int64_t{512} << 20;  // 512Mi
    std::int64_t default_cpu_millicores = 1000;                 // 1 CPU
    std::int64_t default_pids = 256;
    std::int64_t max_memory_bytes = std::int64_t{4} << 30;      // 4Gi
    std::int64_t max_cpu_millicores = default_max_cpu_millicores();
    std::int64_t max_pids = 4096;
    std::uint32_t max_runtime_seconds_ceiling = 24 * 3600;

    // max_cpu's default: 4 CPUs, or all of this host's online CPUs if it has more.
    static std::int64_t default_max_cpu_millicores();
};

// The supervisor's options under `policy` (log_root, cgroup_base and clock
// are the caller's).
supervisor::SupervisorOptions supervisor_options(const WorkerPolicy& policy);

// The ceilings of `policy` on what a SpawnSpec may ask.
spawn::SpawnCeilings spawn_ceilings(const WorkerPolicy& policy);

struct ExecutorOptions {
    std::string state_dir;              // workers/ and logs/ beneath; the image store's runner.db
    std::string runner_nid;             // names this runner's leases
    std::vector<std::string> inboxes;   // claimed round-robin; empty: none (an API-only daemon)
    ClaimPolicy claims;
    WorkerPolicy workers;
    // [sandbox]
    bool allow_unenforced_limits = false;    // run workers with a limit the host cannot enforce (warned)
    std::vector<std::string> seccomp_allow;  // system calls allowed beyond the default filter
    sandbox::UsernsMode user_namespace = sandbox::UsernsMode::automatic;
    std::uint32_t userns_first_host_id = sandbox::kDefaultUsernsFirstHostId;  // slot i maps ids onto first + i*count..
    std::uint32_t userns_id_count = sandbox::kDefaultUsernsIdCount;
    image::RegistrySettings registries;  // pulls of images the store lacks
    spawn::ResolverOptions resolver;     // agent NID → SpawnSpec
};

}  // namespace nps::executor
