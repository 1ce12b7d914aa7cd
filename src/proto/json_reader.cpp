// SPDX-License-Identifier: Apache-2.0
#include "nps/proto/json_reader.hpp"

#include <algorithm>

#include "jcs_dom.hpp"
#include "json_text.hpp"
#include "message_text.hpp"
#include "nps/base/ascii.hpp"

namespace nps::proto::json {

using simdjson::dom::element_type;

Result<element> parse_document(simdjson::dom::parser& parser, std::string_view text, std::string_view what,
                               std::string_view code)
{
    const std::optional<std::string> widened = detail::widen_big_integers(text);
    const std::string_view input = widened ? std::string_view(*widened) : text;
    element root;
    if (const auto err = parser.parse(input.data(), input.size()).get(root); err != simdjson::SUCCESS)
        return protocol_error(std::string(code), std::string(what) + ": invalid JSON: " + simdjson::error_message(err));
    return root;
}

Result<std::string> canonical_json(element value, std::string_view path) { return detail::jcs_of(value, path); }

std::string_view json_type_name(element value)
{
    switch (value.type()) {
    case element_type::OBJECT: return "an object";
    case element_type::ARRAY: return "an array";
    case element_type::STRING: return "a string";
    case element_type::INT64:
    case element_type::UINT64:
    case element_type::DOUBLE: return "a number";
    case element_type::BOOL: return "a boolean";
    case element_type::NULL_VALUE: return "null";
    }
    return "an unknown value";
}

Error field_error(std::string_view code, std::string_view path, std::string_view problem)
{
    std::string message(path);
    message += ": ";
    message += problem;
    return protocol_error(std::string(code), std::move(message));
}

std::optional<element> optional_member(const object& obj, std::string_view key)
{
    element value;
    if (obj.at_key(key).get(value) != simdjson::SUCCESS || value.is_null())
        return std::nullopt;
    return value;
}

Result<element> required_member(const object& obj, std::string_view key, std::string_view code,
                                std::string_view path)
{
    if (auto value = optional_member(obj, key))
        return *value;
    return field_error(code, path, "required");
}

namespace {

// The key without underscores or dashes, lower case: "inputFrom", "input_from"
// and "INPUT-FROM" all fold to "inputfrom".
std::string folded(std::string_view key)
{
    std::string out;
    for (char c : key) {
        if (c == '_' || c == '-')
            continue;
        out += ascii_lower(c);
    }
    return out;
}

}  // namespace

Result<void> check_known_members(const object& obj, std::initializer_list<std::string_view> known,
                                 std::string_view code, std::string_view path)
{
    for (auto [key, value] : obj) {
        (void)value;
        if (std::find(known.begin(), known.end(), key) != known.end())
            continue;
        const std::string where = detail::member_path(path, key);
        const std::string key_folded = folded(key);
        for (std::string_view candidate : known)
            if (folded(candidate) == key_folded)
                return field_error(code, where, "unknown key; did you mean \"" + std::string(candidate) + "\"?");
        std::string list;
        for (std::string_view candidate : known)
            list += (list.empty() ? "" : ", ") + std::string(candidate);
        return field_error(code, where, "unknown key (expected one of: " + list + ")");
    }
    return {};
}

Error type_error(element value, std::string_view expected, std::string_view code, std::string_view path)
{
    std::string problem = "expected ";
    problem += expected;
    problem += ", got ";
    problem += json_type_name(value);
    return field_error(code, path, problem);
}

Result<std::string_view> read_string(element value, std::string_view code, std::string_view path)
{
    std::string_view s;
    if (value.get(s) != simdjson::SUCCESS)
        return type_error(value, "a string", code, path);
    return s;
}

Result<bool> read_bool(element value, std::string_view code, std::string_view path)
{
    bool b = false;
    if (value.get(b) != simdjson::SUCCESS)
        return type_error(value, "a boolean", code, path);
    return b;
}

Result<object> read_object(element value, std::string_view code, std::string_view path)
{
    object obj;
    if (value.get(obj) != simdjson::SUCCESS)
        return type_error(value, "an object", code, path);
    return obj;
}

Result<array> read_array(element value, std::string_view code, std::string_view path)
{
    array arr;
    if (value.get(arr) != simdjson::SUCCESS)
        return type_error(value, "an array", code, path);
    return arr;
}

Result<std::uint64_t> read_uint(element value, std::string_view code, std::string_view path, std::uint64_t min,
                                std::uint64_t max)
{
    const auto range_error = [&](std::string got) {
        return field_error(code, path,
                           "must be an integer from " + std::to_string(min) + " to " + std::to_string(max) +
                               ", got " + got);
    };
    switch (value.type()) {
    case element_type::INT64: {
        std::int64_t v = 0;
        if (value.get(v) != simdjson::SUCCESS)
            break;
        if (v < 0 || static_cast<std::uint64_t>(v) < min || static_cast<std::uint64_t>(v) > max)
            return range_error(std::to_string(v));
        return static_cast<std::uint64_t>(v);
    }
    case element_type::UINT64: {
        std::uint64_t v = 0;
        if (value.get(v) != simdjson::SUCCESS)
            break;
        if (v < min || v > max)
            return range_error(std::to_string(v));
        return v;
    }
    case element_type::DOUBLE:
        return range_error("a number with a fraction or exponent");
    default:
        break;
    }
    return type_error(value, "an integer", code, path);
}

}  // namespace nps::proto::json
