// SPDX-License-Identifier: Apache-2.0
// Internal: typed reads of simdjson DOM values for the TaskFrame decoder.
// Every failure is a protocol error with the caller's code and a message
// "<path>: <what was wrong>".
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "nps/base/result.hpp"
#include "nps/proto/json_type.hpp"

namespace nps::proto::detail {

using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::object;

Error field_error(std::string_view code, std::string_view path, std::string_view problem);

using proto::json_type_name;

// Member `key` of `obj`; nullopt when absent or JSON null (optional fields
// treat an explicit null as absent). Duplicate keys were rejected earlier.
std::optional<element> optional_member(const object& obj, std::string_view key);
// Like optional_member, but absent or null is an error "<path>: required".
Result<element> required_member(const object& obj, std::string_view key, std::string_view code,
                                std::string_view path);

// Fails on the first member of `obj` whose key is not in `known`: "<path>.<key>:
// unknown key", with the expected spelling when the key is another spelling
// of a known one (camelCase, other case, no underscores: `inputFrom` →
// "did you mean \"input_from\"?"), else the list of known keys. A frame
// never has a member silently ignored (docs/protocol-choices.md).
Result<void> check_known_members(const object& obj, std::initializer_list<std::string_view> known,
                                 std::string_view code, std::string_view path);

Result<std::string_view> read_string(element value, std::string_view code, std::string_view path);
Result<bool> read_bool(element value, std::string_view code, std::string_view path);
Result<object> read_object(element value, std::string_view code, std::string_view path);
Result<array> read_array(element value, std::string_view code, std::string_view path);
// A JSON integer (no fraction or exponent) in [min, max].
Result<std::uint64_t> read_uint(element value, std::string_view code, std::string_view path, std::uint64_t min,
                                std::uint64_t max);

}  // namespace nps::proto::detail
