// SPDX-License-Identifier: Apache-2.0
#include "nps/nop/input_mapping.hpp"

#include <exception>

#include "nps/nop/json_path.hpp"
#include "nps/proto/error_codes.hpp"

namespace nps::nop {

namespace {

constexpr const char* kMappingError = proto::code::kNopInputMappingError;

Error mapping_error(const std::string& where, const std::string& problem)
{
    return protocol_error(kMappingError, where + ": " + problem);
}

Result<Json> resolve_one(const Json& path_text, const Json& root, const std::string& where)
{
    if (!path_text.is_string())
        return mapping_error(where, "expected a JSONPath string, got " + std::string(json_type_name(path_text)));
    auto path = parse_json_path(path_text.get_ref<const std::string&>());
    if (!path)
        return mapping_error(where, path.error().message);
    const Json* value = resolve_json_path(root, *path);
    if (value == nullptr)
        return mapping_error(where, json_excerpt(path_text) + " resolved to nothing");
    if (value->is_null())
        return mapping_error(where, json_excerpt(path_text) + " resolved to null");
    return *value;
}

// A mapping value that is a JSONPath: a string starting with "$" (the spec's
// paths start with "$."; any other string is a literal).
bool is_path(const Json& value)
{
    return value.is_string() && value.get_ref<const std::string&>().starts_with('$');
}

Result<Json> apply(std::string_view mapping_json, const Json& root, std::string_view what)
{
    const auto mapping = parse_json(mapping_json);
    if (!mapping || !mapping->is_object())
        return mapping_error(std::string(what), "not a JSON object");
    Json params = Json::object();
    for (auto it = mapping->begin(); it != mapping->end(); ++it) {
        const std::string where = std::string(what) + "." + it.key();
        const Json& spec = it.value();
        if (is_path(spec)) {
            params[it.key()] = NPS_TRY(resolve_one(spec, root, where));
        } else if (spec.is_array()) {
            Json values = Json::array();
            for (std::size_t i = 0; i < spec.size(); ++i)
                values.push_back(is_path(spec[i])
                                     ? NPS_TRY(resolve_one(spec[i], root, where + "[" + std::to_string(i) + "]"))
                                     : spec[i]);
            params[it.key()] = std::move(values);
        } else {
            params[it.key()] = spec;  // a literal, a string not starting with "$" included
        }
    }
    return params;
}

}  // namespace

Result<Json> apply_mapping(std::string_view mapping_json, const Json& root, std::string_view what)
{
    try {
        return apply(mapping_json, root, what);
    } catch (const std::exception& e) {
        return internal_error(std::string(what) + ": " + e.what());
    }
}

Json mapping_root(const Snapshot& results)
{
    Json root = Json::object();
    for (const auto& [id, result] : results)
        root[id] = result;
    return root;
}

Json default_params(const std::vector<std::string>& dependencies, const Snapshot& results)
{
    if (dependencies.size() == 1) {
        const auto only = results.find(dependencies.front());
        if (only != results.end() && only->second.is_object())
            return only->second;
    }
    Json params = Json::object();
    for (const std::string& dep : dependencies) {
        const auto found = results.find(dep);
        if (found != results.end())
            params[dep] = found->second;
    }
    return params;
}

}  // namespace nps::nop
