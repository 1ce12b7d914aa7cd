// SPDX-License-Identifier: Apache-2.0
// The JSONPath subset shared by input_mapping, compensate_params_mapping and
// conditions (NPS-5 §3.1.3, the SDK subset; digest §2.4): "$." followed by 1
// to limits::kMaxMappingPathSegments non-empty segments separated by '.'.
// No brackets, wildcards, filters or array indexes. Resolution walks object
// members only: a missing member, or a step through anything but an object,
// gives "no value" (the caller decides whether that is null or an error).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "nps/base/result.hpp"
#include "nps/nop/json_value.hpp"

namespace nps::nop {

struct JsonPath {
    std::vector<std::string> segments;  // "$.fetch.value" → {"fetch", "value"}
    std::string text;                   // as written
};

// NOP-INPUT-MAPPING-ERROR naming the problem and the path when `text` is
// outside the subset (the decoder already refused such mappings; conditions
// re-label the error).
Result<JsonPath> parse_json_path(std::string_view text);

// The value at `path` below `root` (segments[skip] is a member of root), or
// nullptr when there is none. skip = 1 walks the rest of a path whose first
// segment (a node id) the caller has already looked up.
const Json* resolve_json_path(const Json& root, const JsonPath& path, std::size_t skip = 0);

}  // namespace nps::nop
