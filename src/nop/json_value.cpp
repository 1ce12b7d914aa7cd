// SPDX-License-Identifier: Apache-2.0
#include "nps/nop/json_value.hpp"

#include <cmath>
#include <exception>

#include "nps/base/limits.hpp"
#include "nps/proto/jcs.hpp"

namespace nps::nop {

namespace {

// Deepest nesting of arrays/objects, strings skipped. A linear scan first, so
// a hostile text never reaches the parser with unbounded nesting.
std::size_t nesting_depth(std::string_view text)
{
    std::size_t depth = 0;
    std::size_t deepest = 0;
    bool in_string = false;
    bool escaped = false;
    for (char c : text) {
        if (in_string) {
            if (escaped)
                escaped = false;
            else if (c == '\\')
                escaped = true;
            else if (c == '"')
                in_string = false;
            continue;
        }
        if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > deepest)
                deepest = depth;
        } else if ((c == ']' || c == '}') && depth > 0) {
            --depth;
        }
    }
    return deepest;
}

bool all_numbers_finite(const Json& value)
{
    switch (value.type()) {
    case Json::value_t::number_float:
        return std::isfinite(value.get<double>());
    case Json::value_t::array:
    case Json::value_t::object:
        for (const Json& item : value)
            if (!all_numbers_finite(item))
                return false;
        return true;
    default:
        return true;
    }
}

}  // namespace

std::optional<Json> parse_json(std::string_view text)
{
    if (nesting_depth(text) > limits::kMaxJsonDepth)
        return std::nullopt;
    try {
        Json value = Json::parse(text, nullptr, /*allow_exceptions=*/false);
        if (value.is_discarded() || !all_numbers_finite(value))
            return std::nullopt;
        return value;
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

Result<std::string> canonical_json(const Json& value)
{
    std::string text;
    try {
        text = value.dump();
    } catch (const std::exception& e) {
        return internal_error(std::string("Failed to serialize a JSON value: ") + e.what());
    }
    auto canonical = proto::jcs_canonicalize(text);
    if (!canonical)
        return internal_error("Failed to canonicalize a JSON value: " + canonical.error().message);
    return std::move(canonical).value();
}

std::string_view json_type_name(const Json& value)
{
    switch (value.type()) {
    case Json::value_t::null: return "null";
    case Json::value_t::boolean: return "a boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
    case Json::value_t::number_float: return "a number";
    case Json::value_t::string: return "a string";
    case Json::value_t::array: return "an array";
    case Json::value_t::object: return "an object";
    default: return "a value";
    }
}

std::string json_excerpt(const Json& value)
{
    std::string text = value.dump(-1, ' ', false, Json::error_handler_t::replace);
    constexpr std::size_t kMax = 64;
    if (text.size() > kMax) {
        std::size_t cut = kMax;
        while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80)
            --cut;  // never split a UTF-8 sequence
        text = text.substr(0, cut) + "...";
    }
    return text;
}

}  // namespace nps::nop
