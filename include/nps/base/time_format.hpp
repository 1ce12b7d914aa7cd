// SPDX-License-Identifier: Apache-2.0
// RFC 3339 UTC timestamps with millisecond precision ("2026-11-29T07:51:29.123Z").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace nps {

std::string format_rfc3339_ms(std::int64_t unix_ms);
// Parses "YYYY-MM-DDTHH:MM:SS[.fff…](Z|±HH:MM)"; nullopt if malformed.
std::optional<std::int64_t> parse_rfc3339_ms(std::string_view text);

}  // namespace nps
