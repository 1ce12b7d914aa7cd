// SPDX-License-Identifier: Apache-2.0
// JSON values inside the DAG engine: node results, mapped params, condition
// operands and aggregates are nlohmann::json values; what crosses the
// TaskHost boundary is canonical (RFC 8785) text.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "nps/base/result.hpp"

namespace nps::nop {

using Json = nlohmann::json;

// Results of the completed nodes a condition or a mapping may read:
// node id → that node's result.
using Snapshot = std::map<std::string, Json, std::less<>>;

// The value of a JSON text, or nullopt when it is not JSON, nests deeper than
// limits::kMaxJsonDepth, or has a number that is not finite as a double.
// Never throws.
std::optional<Json> parse_json(std::string_view text);

// The RFC 8785 canonical text of a value (proto::jcs_canonicalize of its
// serialization). Fails only for values no JSON text can hold. Never throws.
Result<std::string> canonical_json(const Json& value);

// "null", "a boolean", "a number", "a string", "an array", "an object".
std::string_view json_type_name(const Json& value);

// The value as short text for an error message: its JSON form, cut after 64
// bytes with "...".
std::string json_excerpt(const Json& value);

}  // namespace nps::nop
