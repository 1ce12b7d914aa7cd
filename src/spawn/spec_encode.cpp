// SPDX-License-Identifier: Apache-2.0
// spawn_spec_to_json(): the normalised document.
#include <nlohmann/json.hpp>

#include "nps/spawn/quantity.hpp"
#include "nps/spawn/spawn_spec.hpp"

namespace nps::spawn {

namespace {

// Ordered: the normalised document keeps the schema's field order and the
// extensions' own member order.
using Json = nlohmann::ordered_json;

// Extension values were minified from a validated document; parsing them
// again cannot fail, but a defect must not take the process down.
Json extension_value(const std::string& text)
{
    auto value = Json::parse(text, nullptr, /*allow_exceptions=*/false);
    return value.is_discarded() ? Json(text) : value;
}

}  // namespace

std::string spawn_spec_to_json(const SpawnSpec& spec)
{
    Json out = Json::object();
    out["image"] = spec.image;
    if (!spec.command.empty())
        out["command"] = spec.command;
    if (!spec.env.empty())
        out["env"] = spec.env;
    Json limits = Json::object();
    if (spec.cpu_millicores)
        limits["cpu"] = format_cpu_quantity(*spec.cpu_millicores);
    if (spec.memory_bytes)
        limits["memory"] = format_memory_quantity(*spec.memory_bytes);
    if (spec.cgn_budget)
        limits["cgn_budget"] = *spec.cgn_budget;
    static constexpr std::string_view kLimitsPrefix = "resource_limits.";
    for (const auto& [name, text] : spec.extensions)
        if (std::string_view(name).starts_with(kLimitsPrefix))
            limits[name.substr(kLimitsPrefix.size())] = extension_value(text);
    if (!limits.empty())
        out["resource_limits"] = std::move(limits);
    if (spec.idle_timeout_seconds)
        out["idle_timeout_seconds"] = *spec.idle_timeout_seconds;
    if (spec.max_runtime_seconds)
        out["max_runtime_seconds"] = *spec.max_runtime_seconds;
    for (const auto& [name, text] : spec.extensions)
        if (!std::string_view(name).starts_with(kLimitsPrefix))
            out[name] = extension_value(text);
    return out.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace nps::spawn
