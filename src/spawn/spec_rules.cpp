// SPDX-License-Identifier: Apache-2.0
#include "spec_rules.hpp"

#include "nps/base/limits.hpp"
#include "nps/image/content_digest.hpp"
#include "nps/image/reference.hpp"
#include "nps/proto/json_reader.hpp"
#include "nps/spawn/spawn_spec.hpp"

namespace nps::spawn {

namespace detail {

namespace {

Error problem(std::string text) { return internal_error(std::move(text)); }

bool is_env_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_env_char(char c) { return is_env_start(c) || (c >= '0' && c <= '9'); }

}  // namespace

Error spec_error(std::string_view path, std::string_view text)
{
    return proto::json::field_error(kSpawnSpecInvalid, path, text);
}

Result<void> check_image(std::string_view image)
{
    if (image.empty())
        return problem("must not be empty");
    if (!is_valid_image_reference(image))
        return problem(quote_text(image) + " is not an OCI image reference (name[:tag][@sha256:digest])");
    return {};
}

Result<void> check_argument(std::string_view argument, bool first)
{
    if (argument.find('\0') != std::string_view::npos)
        return problem("contains a NUL character");
    if (first && argument.empty())
        return problem("the program (first entry) must not be empty");
    return {};
}

Result<void> check_env_name(std::string_view name)
{
    if (name.empty() || name.size() > limits::kMaxSpawnSpecEnvNameChars || !is_env_start(name.front()))
        return problem("invalid variable name " + quote_text(name) + " (expected [A-Za-z_][A-Za-z0-9_]*)");
    for (char c : name)
        if (!is_env_char(c))
            return problem("invalid variable name " + quote_text(name) + " (expected [A-Za-z_][A-Za-z0-9_]*)");
    if (name.starts_with("NPS_"))
        return problem("variable " + quote_text(name) + " is reserved: the runner sets the NPS_* variables");
    return {};
}

Result<void> check_env_value(std::string_view value)
{
    if (value.find('\0') != std::string_view::npos)
        return problem("contains a NUL character");
    return {};
}

Result<void> check_cpu_millicores(std::int64_t millicores)
{
    if (millicores < limits::kMinCpuMillicores)
        return problem(std::to_string(millicores) + " millicores is below the minimum of " +
                       std::to_string(limits::kMinCpuMillicores) + "m");
    if (millicores > limits::kMaxCpuMillicores)
        return problem(std::to_string(millicores) + " millicores is above the maximum of " +
                       std::to_string(limits::kMaxCpuMillicores) + "m");
    return {};
}

Result<void> check_memory_bytes(std::int64_t bytes)
{
    if (bytes < limits::kMinMemoryBytes)
        return problem(std::to_string(bytes) + " bytes is below the minimum of 1Mi");
    return {};
}

Result<void> check_timeout_seconds(std::int64_t seconds)
{
    if (seconds < 1 || seconds > kMaxTimeoutSeconds)
        return problem("must be between 1 and " + std::to_string(kMaxTimeoutSeconds) + " seconds, got " +
                       std::to_string(seconds));
    return {};
}

Result<void> check_timeouts_together(std::int64_t idle_seconds, std::int64_t max_seconds)
{
    if (idle_seconds > max_seconds)
        return problem("idle_timeout_seconds (" + std::to_string(idle_seconds) + ") exceeds max_runtime_seconds (" +
                       std::to_string(max_seconds) + ")");
    return {};
}

}  // namespace detail

bool is_valid_image_reference(std::string_view reference)
{
    if (reference.empty() || reference.size() > limits::kMaxImageRefChars + 1 + 71)
        return false;
    std::string_view name = reference;
    if (const auto at = reference.find('@'); at != std::string_view::npos) {
        if (!image::is_sha256_digest(reference.substr(at + 1)))
            return false;
        name = reference.substr(0, at);
    }
    return image::parse_image_name(name).has_value();
}

Result<void> validate_spawn_spec(const SpawnSpec& spec)
{
    using namespace detail;
    auto at = [](std::string_view path, const Result<void>& r) -> Result<void> {
        if (!r)
            return spec_error(path, r.error().message);
        return {};
    };
    NPS_TRY_VOID(at("image", check_image(spec.image)));
    if (spec.command.size() > limits::kMaxSpawnSpecArgs)
        return spec_error("command", "more than " + std::to_string(limits::kMaxSpawnSpecArgs) + " entries");
    for (std::size_t i = 0; i < spec.command.size(); ++i)
        NPS_TRY_VOID(at("command[" + std::to_string(i) + "]", check_argument(spec.command[i], i == 0)));
    if (spec.env.size() > limits::kMaxSpawnSpecEnv)
        return spec_error("env", "more than " + std::to_string(limits::kMaxSpawnSpecEnv) + " variables");
    for (const auto& [name, value] : spec.env) {
        NPS_TRY_VOID(at("env", check_env_name(name)));
        NPS_TRY_VOID(at("env." + name, check_env_value(value)));
    }
    if (spec.cpu_millicores)
        NPS_TRY_VOID(at("resource_limits.cpu", check_cpu_millicores(*spec.cpu_millicores)));
    if (spec.memory_bytes)
        NPS_TRY_VOID(at("resource_limits.memory", check_memory_bytes(*spec.memory_bytes)));
    if (spec.cgn_budget && *spec.cgn_budget < 0)
        return spec_error("resource_limits.cgn_budget", "must be an integer >= 0");
    if (spec.idle_timeout_seconds)
        NPS_TRY_VOID(at("idle_timeout_seconds", check_timeout_seconds(*spec.idle_timeout_seconds)));
    if (spec.max_runtime_seconds)
        NPS_TRY_VOID(at("max_runtime_seconds", check_timeout_seconds(*spec.max_runtime_seconds)));
    if (spec.idle_timeout_seconds && spec.max_runtime_seconds)
        NPS_TRY_VOID(at("idle_timeout_seconds",
                        check_timeouts_together(*spec.idle_timeout_seconds, *spec.max_runtime_seconds)));
    if (spec.extensions.size() > limits::kMaxSpawnSpecExtensions)
        return spec_error("extensions", "more than " + std::to_string(limits::kMaxSpawnSpecExtensions) + " members");
    return {};
}

}  // namespace nps::spawn
