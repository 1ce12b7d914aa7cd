// SPDX-License-Identifier: Apache-2.0
// parse_spawn_spec(): SpawnSpec JSON → SpawnSpec. simdjson validates UTF-8
// and bounds the nesting; this file rejects duplicate keys itself (the DOM
// keeps them) so no two readers can see different documents.
#include <simdjson.h>

#include <limits>
#include <new>
#include <set>

#include "nps/base/limits.hpp"
#include "nps/proto/json_reader.hpp"
#include "nps/spawn/quantity.hpp"
#include "nps/spawn/spawn_spec.hpp"
#include "spec_rules.hpp"

namespace nps::spawn {

namespace {

using namespace detail;
using simdjson::dom::element;
using simdjson::dom::element_type;
using simdjson::dom::object;

constexpr std::int64_t kBytesPerMiB = 1 << 20;

// The one JSON reader's, with the SpawnSpec's code.
Error wrong_type(element value, std::string_view expected, std::string_view path)
{
    return proto::json::type_error(value, expected, kSpawnSpecInvalid, path);
}

Result<std::string_view> read_string(element value, std::string_view path)
{
    return proto::json::read_string(value, kSpawnSpecInvalid, path);
}

Result<object> read_object(element value, std::string_view path)
{
    return proto::json::read_object(value, kSpawnSpecInvalid, path);
}

Error rule_failed(std::string_view path, const Error& e) { return spec_error(path, e.message); }

// A JSON integer literal (no fraction, no exponent) in [min, max].
Result<std::int64_t> read_integer(element value, std::string_view path, std::int64_t min, std::int64_t max)
{
    std::int64_t v = 0;
    switch (value.type()) {
    case element_type::INT64:
        v = value.get_int64().value_unsafe();
        break;
    case element_type::UINT64:
        return spec_error(path, "must be between " + std::to_string(min) + " and " + std::to_string(max));
    case element_type::DOUBLE:
        return spec_error(path, "expected an integer, got a number with a fraction or exponent");
    default:
        return wrong_type(value, "an integer", path);
    }
    if (v < min || v > max)
        return spec_error(path, "must be between " + std::to_string(min) + " and " + std::to_string(max) + ", got " +
                                    std::to_string(v));
    return v;
}

// Members of `obj` in document order, refusing a repeated key.
template <class Visit>
Result<void> for_each_member(const object& obj, std::string_view path, Visit&& visit)
{
    std::set<std::string_view> seen;
    for (const auto field : obj) {
        if (!seen.insert(field.key).second)
            return spec_error(path.empty() ? std::string_view("SpawnSpec") : path,
                              "duplicate key " + quote_text(field.key));
        NPS_TRY_VOID(visit(field.key, field.value));
    }
    return {};
}

std::string member_path(std::string_view parent, std::string_view key)
{
    return parent.empty() ? std::string(key) : std::string(parent) + "." + std::string(key);
}

Result<void> add_extension(SpawnSpec& spec, std::string name, element value)
{
    if (spec.extensions.size() >= limits::kMaxSpawnSpecExtensions)
        return spec_error(name, "more than " + std::to_string(limits::kMaxSpawnSpecExtensions) + " x- members");
    spec.extensions.emplace(std::move(name), simdjson::minify(value));
    return {};
}

Result<void> decode_command(element value, SpawnSpec& spec)
{
    simdjson::dom::array array;
    if (value.get(array) != simdjson::SUCCESS)
        return wrong_type(value, "an array of strings", "command");
    if (array.size() == 0)
        return spec_error("command", "must not be empty (omit it to use the image's entrypoint)");
    if (array.size() > limits::kMaxSpawnSpecArgs)
        return spec_error("command", "more than " + std::to_string(limits::kMaxSpawnSpecArgs) + " entries");
    for (const element item : array) {
        const std::string path = "command[" + std::to_string(spec.command.size()) + "]";
        const std::string_view argument = NPS_TRY(read_string(item, path));
        if (auto ok = check_argument(argument, spec.command.empty()); !ok)
            return rule_failed(path, ok.error());
        spec.command.emplace_back(argument);
    }
    return {};
}

Result<void> decode_env(element value, SpawnSpec& spec)
{
    const object env = NPS_TRY(read_object(value, "env"));
    if (env.size() > limits::kMaxSpawnSpecEnv)
        return spec_error("env", "more than " + std::to_string(limits::kMaxSpawnSpecEnv) + " variables");
    return for_each_member(env, "env", [&](std::string_view name, element v) -> Result<void> {
        if (auto ok = check_env_name(name); !ok)
            return rule_failed("env", ok.error());
        const std::string path = "env." + std::string(name);
        const std::string_view text = NPS_TRY(read_string(v, path));
        if (auto ok = check_env_value(text); !ok)
            return rule_failed(path, ok.error());
        spec.env.emplace(std::string(name), std::string(text));
        return {};
    });
}

Result<void> decode_resource_limits(element value, SpawnSpec& spec)
{
    const object limits_object = NPS_TRY(read_object(value, "resource_limits"));
    return for_each_member(limits_object, "resource_limits", [&](std::string_view key, element v) -> Result<void> {
        const std::string path = member_path("resource_limits", key);
        if (v.is_null())
            return {};
        if (key == "cpu" || key == "cpu_millicores") {
            if (spec.cpu_millicores)
                return spec_error(path, "give either cpu or cpu_millicores, not both");
            std::int64_t millicores = 0;
            if (key == "cpu") {
                const std::string_view text = NPS_TRY(read_string(v, path));
                auto parsed = parse_cpu_millicores(text);
                if (!parsed)
                    return rule_failed(path, parsed.error());
                millicores = *parsed;
            } else {
                millicores = NPS_TRY(read_integer(v, path, 0, std::numeric_limits<std::int64_t>::max()));
            }
            if (auto ok = check_cpu_millicores(millicores); !ok)
                return rule_failed(path, ok.error());
            spec.cpu_millicores = millicores;
            return {};
        }
        if (key == "memory" || key == "memory_mb") {
            if (spec.memory_bytes)
                return spec_error(path, "give either memory or memory_mb, not both");
            std::int64_t bytes = 0;
            if (key == "memory") {
                const std::string_view text = NPS_TRY(read_string(v, path));
                auto parsed = parse_memory_bytes(text);
                if (!parsed)
                    return rule_failed(path, parsed.error());
                bytes = *parsed;
            } else {
                bytes = NPS_TRY(read_integer(v, path, 1, std::numeric_limits<std::int64_t>::max() / kBytesPerMiB)) *
                        kBytesPerMiB;
            }
            if (auto ok = check_memory_bytes(bytes); !ok)
                return rule_failed(path, ok.error());
            spec.memory_bytes = bytes;
            return {};
        }
        if (key == "cgn_budget") {
            spec.cgn_budget = NPS_TRY(read_integer(v, path, 0, std::numeric_limits<std::int64_t>::max()));
            return {};
        }
        if (key.starts_with("x-"))
            return add_extension(spec, path, v);
        return spec_error(path, "unknown field (allowed: cpu, memory, cgn_budget, x-*)");
    });
}

Result<void> decode_root(const object& root, SpawnSpec& spec)
{
    bool have_image = false;
    std::optional<std::int64_t> idle, max;
    NPS_TRY_VOID(for_each_member(root, "", [&](std::string_view key, element v) -> Result<void> {
        if (v.is_null())
            return {};
        if (key == "image" || key == "oci_image") {
            if (have_image)
                return spec_error(key, "give either image or oci_image, not both");
            have_image = true;
            const std::string_view image = NPS_TRY(read_string(v, key));
            if (auto ok = check_image(image); !ok)
                return rule_failed(key, ok.error());
            spec.image = std::string(image);
            return {};
        }
        if (key == "command")
            return decode_command(v, spec);
        if (key == "env")
            return decode_env(v, spec);
        if (key == "resource_limits")
            return decode_resource_limits(v, spec);
        if (key == "idle_timeout_seconds") {
            idle = NPS_TRY(read_integer(v, key, 1, kMaxTimeoutSeconds));
            return {};
        }
        if (key == "max_runtime_seconds") {
            max = NPS_TRY(read_integer(v, key, 1, kMaxTimeoutSeconds));
            return {};
        }
        if (key.starts_with("x-"))
            return add_extension(spec, std::string(key), v);
        return spec_error(key, "unknown field (see docs/spawnspec.md; vendor fields must start with \"x-\")");
    }));
    if (!have_image)
        return spec_error("image", "required");
    if (idle && max)
        if (auto ok = check_timeouts_together(*idle, *max); !ok)
            return rule_failed("idle_timeout_seconds", ok.error());
    if (idle)
        spec.idle_timeout_seconds = static_cast<std::uint32_t>(*idle);
    if (max)
        spec.max_runtime_seconds = static_cast<std::uint32_t>(*max);
    return {};
}

}  // namespace

Result<SpawnSpec> parse_spawn_spec(std::string_view json_text, std::size_t max_bytes)
{
    if (json_text.size() > max_bytes)
        return spec_error("SpawnSpec", "the document is " + std::to_string(json_text.size()) +
                                           " bytes, more than the limit of " + std::to_string(max_bytes));
    try {
        simdjson::dom::parser parser;
        if (parser.allocate(std::max<std::size_t>(json_text.size(), 64), limits::kMaxSpawnSpecJsonDepth) !=
            simdjson::SUCCESS)
            return internal_error("SpawnSpec: failed to allocate the JSON parser");
        element root_value;
        if (const auto err = parser.parse(json_text.data(), json_text.size()).get(root_value);
            err != simdjson::SUCCESS) {
            if (err == simdjson::DEPTH_ERROR)
                return spec_error("SpawnSpec", "nested deeper than " +
                                                   std::to_string(limits::kMaxSpawnSpecJsonDepth) + " levels");
            return spec_error("SpawnSpec", std::string("not valid JSON: ") + simdjson::error_message(err));
        }
        const object root = NPS_TRY(read_object(root_value, "SpawnSpec"));
        SpawnSpec spec;
        NPS_TRY_VOID(decode_root(root, spec));
        return spec;
    } catch (const std::bad_alloc&) {
        return internal_error("SpawnSpec: out of memory");
    }
}

}  // namespace nps::spawn
