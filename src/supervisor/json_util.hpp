// SPDX-License-Identifier: Apache-2.0
// Internal: the JSON helpers the worker protocol shares.
#pragma once

#include <simdjson.h>

#include <string>
#include <string_view>

namespace nps::supervisor::detail {

// Parses `text` into `parser`. simdjson 3.0.1 refuses integers beyond 64
// bits, which JSON allows: such a text is parsed in its RFC 8785 form
// (numbers as doubles) instead. False when the text is not JSON.
bool parse_json(simdjson::dom::parser& parser, std::string_view text, simdjson::dom::element& out);

}  // namespace nps::supervisor::detail
