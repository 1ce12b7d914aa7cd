// SPDX-License-Identifier: Apache-2.0
// [workers]: concurrency, idle and runtime defaults, logs, the spawn pool,
// and the limits a SpawnSpec gets by default and may ask up to.
#include <climits>

#include "nps/base/limits.hpp"
#include "nps/spawn/quantity.hpp"
#include "sections.hpp"

namespace nps::config::detail {

namespace {

// Bounds of [workers] keys added for issue 14 (docs/configuration.md "Limits").
constexpr std::int64_t kMaxWorkerPids = 4'194'304;              // the kernel's PID_MAX_LIMIT
constexpr std::int64_t kMaxRuntimeSecondsCeiling = 2'147'483'647;  // a SpawnSpec's own maximum
constexpr std::uint64_t kMaxWorkerLogsTotalBytes = std::uint64_t{1} << 50;

// [workers] limits: the defaults a SpawnSpec without limits gets, the
// ceilings it may ask up to, each ceiling at least its default.
Result<void> apply_worker_limits(const TableReader& t, executor::WorkerPolicy& w)
{
    for (auto [key, target] : {std::pair{"default_memory", &w.default_memory_bytes},
                               std::pair{"max_memory", &w.max_memory_bytes}}) {
        if (auto v = NPS_TRY(t.byte_size(key, 0, static_cast<std::uint64_t>(INT64_MAX)))) {
            if (*v != 0 && *v < static_cast<std::uint64_t>(limits::kMinMemoryBytes))
                return t.fail(key, "must be 0 (no limit) or at least 1Mi");
            *target = static_cast<std::int64_t>(*v);
        }
    }
    if (auto v = NPS_TRY(t.cpu_quantity("default_cpu")))
        w.default_cpu_millicores = *v;
    if (auto v = NPS_TRY(t.cpu_quantity("max_cpu")))
        w.max_cpu_millicores = *v;
    if (auto v = NPS_TRY(t.integer("default_pids", 0, kMaxWorkerPids)))
        w.default_pids = *v;
    if (auto v = NPS_TRY(t.integer("max_pids", 0, kMaxWorkerPids)))
        w.max_pids = *v;
    if (auto v = NPS_TRY(t.integer("max_runtime_seconds_ceiling", 0, kMaxRuntimeSecondsCeiling)))
        w.max_runtime_seconds_ceiling = static_cast<std::uint32_t>(*v);

    // A default of 0 is "no limit", which no ceiling admits.
    using Show = std::string (*)(std::int64_t);
    struct Pair {
        const char* default_key;
        std::int64_t default_value;
        const char* max_key;
        std::int64_t max_value;
        Show show;
    };
    const Show plain = [](std::int64_t v) { return std::to_string(v); };
    const Pair pairs[] = {
        {"default_memory", w.default_memory_bytes, "max_memory", w.max_memory_bytes, spawn::format_memory_quantity},
        {"default_cpu", w.default_cpu_millicores, "max_cpu", w.max_cpu_millicores, spawn::format_cpu_quantity},
        {"default_pids", w.default_pids, "max_pids", w.max_pids, plain},
        {"default_max_runtime_seconds", w.default_max_runtime_seconds, "max_runtime_seconds_ceiling",
         w.max_runtime_seconds_ceiling, plain},
    };
    for (const Pair& p : pairs) {
        if (p.max_value == 0 || (p.default_value != 0 && p.default_value <= p.max_value))
            continue;
        const std::string shown = p.default_value == 0 ? "0 (no limit)" : p.show(p.default_value);
        return t.fail(p.max_key, p.show(p.max_value) + " is below workers." + p.default_key + " = " + shown +
                                     ": a ceiling must be at least its default (set workers." + p.max_key +
                                     " = 0 for no ceiling)");
    }
    // default_idle_timeout_seconds ≤ default_max_runtime_seconds (checked
    // before) ≤ the runtime ceiling, so the idle default is within it too.
    return {};
}

}  // namespace

Result<void> apply_workers(const TableReader& t, Config& c)
{
    NPS_TRY_VOID(t.check_keys({"max_concurrent", "default_idle_timeout_seconds", "default_max_runtime_seconds",
                                "stop_grace_seconds", "log_max_bytes", "log_keep", "log_retention_hours",
                                "spawn_pool", "spawn_server", "hold_ahead", "warm_seconds", "logs_max_bytes", "default_memory", "default_cpu", "default_pids",
                                "max_memory", "max_cpu", "max_pids", "max_runtime_seconds_ceiling", "default_disk", "max_disk"}));
    executor::WorkerPolicy& w = c.workers;
    if (auto v = NPS_TRY(t.integer("max_concurrent", 1, static_cast<std::int64_t>(limits::kMaxConcurrentWorkers))))
        w.max_concurrent = static_cast<std::size_t>(*v);
    if (auto v = NPS_TRY(t.integer("default_idle_timeout_seconds", 0, limits::kMaxRunSeconds)))
        w.default_idle_timeout_seconds = static_cast<std::uint32_t>(*v);
    if (auto v = NPS_TRY(t.integer("default_max_runtime_seconds", 0, limits::kMaxRunSeconds)))
        w.default_max_runtime_seconds = static_cast<std::uint32_t>(*v);
    if (auto v = NPS_TRY(t.integer("stop_grace_seconds", 0, limits::kMaxStopGraceSeconds)))
        w.stop_grace_seconds = static_cast<std::uint32_t>(*v);
    if (auto v = NPS_TRY(t.byte_size("log_max_bytes", limits::kMinWorkerLogBytes, limits::kMaxWorkerLogBytes)))
        w.log_max_bytes = *v;
    if (auto v = NPS_TRY(t.integer("log_keep", 0, limits::kMaxWorkerLogKeep)))
        w.log_keep = static_cast<std::uint32_t>(*v);
    if (auto v = NPS_TRY(t.integer("log_retention_hours", 0, limits::kMaxWorkerLogRetentionHours)))
        w.log_retention_hours = static_cast<std::uint32_t>(*v);
    if (auto v = NPS_TRY(t.integer("spawn_pool", 0, static_cast<std::int64_t>(limits::kSpawnPoolMaxSize))))
        w.spawn_pool = static_cast<std::size_t>(*v);
    if (auto v = NPS_TRY(t.boolean("spawn_server")))
        w.spawn_server = *v;
    if (auto v = NPS_TRY(t.boolean("hold_ahead")))
        w.hold_ahead = *v;
    if (auto v = NPS_TRY(t.integer("warm_seconds", 0, limits::kMaxWarmSeconds)))
        w.warm_seconds = static_cast<std::uint32_t>(*v);
    if (auto v = NPS_TRY(t.byte_size("max_disk", limits::kMinWorkerDiskBytes, limits::kMaxWorkerDiskBytes)))
        w.max_disk = *v;
    if (auto v = NPS_TRY(t.byte_size("default_disk", limits::kMinWorkerDiskBytes, limits::kMaxWorkerDiskBytes)))
        w.default_disk = *v;
    if (w.default_disk > w.max_disk)
        return t.fail("default_disk", "must not exceed max_disk (" + std::to_string(w.max_disk) + " bytes)");
    if (auto v = NPS_TRY(t.byte_size("logs_max_bytes", 0, kMaxWorkerLogsTotalBytes)))
        w.logs_max_bytes = *v;
    if (w.default_idle_timeout_seconds > 0 && w.default_max_runtime_seconds > 0 &&
        w.default_idle_timeout_seconds > w.default_max_runtime_seconds)
        return t.fail("default_idle_timeout_seconds", "must not exceed default_max_runtime_seconds");
    return apply_worker_limits(t, w);
}

}  // namespace nps::config::detail
