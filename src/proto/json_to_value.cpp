// SPDX-License-Identifier: Apache-2.0
#include "nps/proto/json_to_value.hpp"

#include <cstdint>
#include <string>
#include <string_view>

#include "nps/proto/json_reader.hpp"

namespace nps::proto::json {

namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;

// `depth` counts the containers entered so far; the recursion is bounded
// by max_depth, so the stack is too.
bool copy(element value, std::size_t depth, std::size_t max_depth, nlohmann::json& out)
{
    switch (value.type()) {
    case element_type::OBJECT: {
        simdjson::dom::object object;
        if (depth + 1 > max_depth || value.get(object) != simdjson::SUCCESS)
            return false;
        out = nlohmann::json::object();
        for (const auto field : object)
            if (!copy(field.value, depth + 1, max_depth, out[std::string(field.key)]))
                return false;
        return true;
    }
    case element_type::ARRAY: {
        simdjson::dom::array array;
        if (depth + 1 > max_depth || value.get(array) != simdjson::SUCCESS)
            return false;
        out = nlohmann::json::array();
        for (const element item : array)
            if (!copy(item, depth + 1, max_depth, out.emplace_back()))
                return false;
        return true;
    }
    case element_type::STRING:
        out = std::string(value.get_string().value_unsafe());
        return true;
    case element_type::INT64: {
        const std::int64_t v = value.get_int64().value_unsafe();
        if (v >= 0)
            out = static_cast<std::uint64_t>(v);
        else
            out = v;
        return true;
    }
    case element_type::UINT64:
        out = value.get_uint64().value_unsafe();
        return true;
    case element_type::DOUBLE:
        out = value.get_double().value_unsafe();
        return true;
    case element_type::BOOL:
        out = value.get_bool().value_unsafe();
        return true;
    case element_type::NULL_VALUE:
        out = nullptr;
        return true;
    }
    return false;
}

}  // namespace

std::optional<nlohmann::json> to_value(element value, std::size_t max_depth)
{
    nlohmann::json out;
    if (!copy(value, 0, max_depth, out))
        return std::nullopt;
    return out;
}

std::optional<nlohmann::json> parse_to_value(std::string_view text, std::size_t max_depth)
{
    simdjson::dom::parser parser;  // per call: no buffer kept for the thread's life
    const auto root = parse_document(parser, text, "JSON text");
    if (!root)
        return std::nullopt;
    return to_value(*root, max_depth);
}

}  // namespace nps::proto::json
