// SPDX-License-Identifier: Apache-2.0
// The JSON type of a simdjson DOM value in words, for error messages of the
// decoders of untrusted JSON (TaskFrames, SpawnSpecs).
#pragma once

#include <simdjson.h>

#include <string_view>

namespace nps::proto {

// "an object", "an array", "a string", "a number", "a boolean", "null".
std::string_view json_type_name(simdjson::dom::element value);

}  // namespace nps::proto
