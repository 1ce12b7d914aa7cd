// SPDX-License-Identifier: Apache-2.0
// From the one reader of untrusted JSON (json_reader.hpp) to a value to hold
// and build on: code that keeps a document (the API's request bodies, an
// image's manifests) holds it as nlohmann::json, but never lets nlohmann
// parse untrusted text.
#pragma once

#include <simdjson.h>

#include <cstddef>
#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

namespace nps::proto::json {

// A copy of `value` as nlohmann::json; nullopt when it nests deeper than
// `max_depth` (a container at the top is depth 1). Numbers keep their kind
// as nlohmann's own parser would make them (a non-negative integer is
// unsigned); of a repeated key the last member wins, as there.
std::optional<nlohmann::json> to_value(simdjson::dom::element value, std::size_t max_depth);

// Untrusted text to a held value: parse_document, then to_value. nullopt
// when the text is not JSON or nests deeper than `max_depth`.
std::optional<nlohmann::json> parse_to_value(std::string_view text, std::size_t max_depth);

}  // namespace nps::proto::json
