// SPDX-License-Identifier: Apache-2.0
// input_mapping and compensate_params_mapping (NPS-5 §3.1.3; the SDK
// JSONPath subset: "$." then at most 8 dot-separated segments).
#include "jcs_dom.hpp"
#include "message_text.hpp"
#include "nps/base/limits.hpp"
#include "task_frame_parts.hpp"

namespace nps::proto::detail {

std::optional<std::string> mapping_path_problem(std::string_view text)
{
    if (!text.starts_with("$."))
        return "expected a JSONPath starting with \"$.\", got " + quote_text(text);
    std::string_view rest = text.substr(2);
    std::size_t segments = 0;
    while (true) {
        const auto dot = rest.find('.');
        const std::string_view segment = rest.substr(0, dot);
        if (segment.empty())
            return "empty segment in JSONPath " + quote_text(text);
        if (segment.find_first_of("[]*") != std::string_view::npos)
            return "unsupported JSONPath syntax in " + quote_text(text) + " (only $.a.b.c is supported)";
        ++segments;
        if (dot == std::string_view::npos)
            break;
        rest.remove_prefix(dot + 1);
    }
    if (segments > limits::kMaxMappingPathSegments)
        return "JSONPath " + quote_text(text) + " has " + std::to_string(segments) + " segments, the limit is " +
               std::to_string(limits::kMaxMappingPathSegments);
    return std::nullopt;
}

namespace {

Result<void> check_path_value(element value, const std::string& path)
{
    const std::string_view text = NPS_TRY(read_string(value, kMappingError, path));
    if (auto problem = mapping_path_problem(text))
        return field_error(kMappingError, path, *problem);
    return {};
}

bool is_path_string(element value)
{
    std::string_view text;
    return value.get(text) == simdjson::SUCCESS && text.starts_with('$');
}

// A string starting with "$" is a path and must be a valid one; an array
// holds paths (merging several upstreams) and literals; anything else,
// other strings included, is a literal passed through unchanged
// (docs/dag-engine.md "input_mapping").
Result<void> check_mapping_value(element value, const std::string& path)
{
    if (is_path_string(value))
        return check_path_value(value, path);
    if (value.type() == simdjson::dom::element_type::ARRAY) {
        const array items = NPS_TRY(read_array(value, kDagInvalid, path));
        std::size_t i = 0;
        for (element item : items) {
            if (is_path_string(item))
                NPS_TRY_VOID(check_path_value(item, index_path(path, i)));
            ++i;
        }
    }
    return {};
}

}  // namespace

Result<std::string> decode_mapping(element value, const std::string& path)
{
    const object mapping = NPS_TRY(read_object(value, kDagInvalid, path));
    for (auto field : mapping) {
        const std::string field_path = member_path(path, field.key);
        if (field.key.empty())
            return detail::field_error(kMappingError, field_path, "parameter name is empty");
        NPS_TRY_VOID(check_mapping_value(field.value, field_path));
    }
    return jcs_of(value, path);
}

}  // namespace nps::proto::detail
