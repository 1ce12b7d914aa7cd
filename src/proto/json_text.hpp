// SPDX-License-Identifier: Apache-2.0
// Internal: preparing untrusted JSON text for simdjson's DOM parser.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace nps::proto::detail {

// simdjson 3.0.1 rejects integer literals outside the 64-bit range, although
// JSON allows them and I-JSON/JCS read every number as a double. Returns a
// copy of `text` in which each integer literal of 20 or more digits carries
// a ".0" suffix (same value, now parsed as a double), or nullopt when the text
// has no such literal and can be parsed as it is. Strings are left alone;
// invalid JSON stays invalid.
std::optional<std::string> widen_big_integers(std::string_view text);

}  // namespace nps::proto::detail
