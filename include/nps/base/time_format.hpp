// SPDX-License-Identifier: Apache-2.0
// RFC 3339 UTC timestamps with millisecond precision ("2026-11-29T07:51:29.123Z"),
// and the HTTP dates of Retry-After.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace nps {

std::string format_rfc3339_ms(std::int64_t unix_ms);
// Parses "YYYY-MM-DDTHH:MM:SS[.fff…](Z|±HH:MM)"; nullopt if malformed.
std::optional<std::int64_t> parse_rfc3339_ms(std::string_view text);
// Parses an HTTP date (RFC 9110 §5.6.7): the IMF-fixdate "Sun, 06 Nov 1994
// 08:49:37 GMT" and the two obsolete forms a recipient must accept, RFC 850's
// "Sunday, 06-Nov-94 08:49:37 GMT" and asctime's "Sun Nov  6 08:49:37 1994".
// Seconds since the epoch, in 64 bits on every architecture; nullopt if malformed.
std::optional<std::int64_t> parse_http_date(std::string_view text);

}  // namespace nps
