// SPDX-License-Identifier: Apache-2.0
#include "nps/nop/json_path.hpp"

#include "nps/base/limits.hpp"
#include "nps/proto/error_codes.hpp"

namespace nps::nop {

namespace {

constexpr const char* kMappingError = proto::code::kNopInputMappingError;

Error path_error(std::string_view text, const std::string& problem)
{
    return protocol_error(kMappingError, "JSONPath " + json_excerpt(Json(std::string(text))) + ": " + problem);
}

}  // namespace

Result<JsonPath> parse_json_path(std::string_view text)
{
    if (!text.starts_with("$."))
        return path_error(text, "must start with \"$.\"");
    JsonPath path;
    path.text = std::string(text);
    std::string_view rest = text.substr(2);
    while (true) {
        const auto dot = rest.find('.');
        const std::string_view segment = rest.substr(0, dot);
        if (segment.empty())
            return path_error(text, "has an empty segment");
        if (segment.find_first_of("[]*") != std::string_view::npos)
            return path_error(text, "uses unsupported syntax (only $.a.b.c is supported)");
        path.segments.emplace_back(segment);
        if (path.segments.size() > limits::kMaxMappingPathSegments)
            return path_error(text, "has more than " + std::to_string(limits::kMaxMappingPathSegments) + " segments");
        if (dot == std::string_view::npos)
            break;
        rest.remove_prefix(dot + 1);
    }
    return path;
}

const Json* resolve_json_path(const Json& root, const JsonPath& path, std::size_t skip)
{
    const Json* at = &root;
    for (std::size_t i = skip; i < path.segments.size(); ++i) {
        const std::string& segment = path.segments[i];
        if (!at->is_object())
            return nullptr;
        const auto member = at->find(segment);
        if (member == at->end())
            return nullptr;
        at = &*member;
    }
    return at;
}

}  // namespace nps::nop
