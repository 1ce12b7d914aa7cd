// SPDX-License-Identifier: Apache-2.0
#include "nps/spawn/spawn_ceilings.hpp"

#include "nps/spawn/quantity.hpp"
#include "spec_rules.hpp"

namespace nps::spawn {

namespace {

Error above(std::string_view field, const std::string& value, std::string_view key, const std::string& ceiling)
{
    return detail::spec_error(field, value + " exceeds the operator's ceiling workers." + std::string(key) + " = " +
                                         ceiling);
}

}  // namespace

Result<void> check_spawn_ceilings(const SpawnSpec& spec, const SpawnCeilings& ceilings)
{
    if (ceilings.max_memory_bytes > 0 && spec.memory_bytes && *spec.memory_bytes > ceilings.max_memory_bytes)
        return above("resource_limits.memory", format_memory_quantity(*spec.memory_bytes), "max_memory",
                     format_memory_quantity(ceilings.max_memory_bytes));
    if (ceilings.max_cpu_millicores > 0 && spec.cpu_millicores && *spec.cpu_millicores > ceilings.max_cpu_millicores)
        return above("resource_limits.cpu", format_cpu_quantity(*spec.cpu_millicores), "max_cpu",
                     format_cpu_quantity(ceilings.max_cpu_millicores));
    const std::uint32_t runtime = ceilings.max_runtime_seconds;
    if (runtime > 0 && spec.max_runtime_seconds && *spec.max_runtime_seconds > runtime)
        return above("max_runtime_seconds", std::to_string(*spec.max_runtime_seconds), "max_runtime_seconds_ceiling",
                     std::to_string(runtime));
    if (runtime > 0 && spec.idle_timeout_seconds && *spec.idle_timeout_seconds > runtime)
        return above("idle_timeout_seconds", std::to_string(*spec.idle_timeout_seconds),
                     "max_runtime_seconds_ceiling", std::to_string(runtime));
    return {};
}

}  // namespace nps::spawn
