// SPDX-License-Identifier: Apache-2.0
// Percent-decoding of a request target's path and query parameters, and the
// check every decoded part must pass before a route sees it (docs/api.md
// "Limits and timeouts"). The HTTP server runs both from libmicrohttpd's
// unescape callback, so a decoded NUL is seen (MHD hands the handler
// NUL-terminated strings: "/pipe%00zz/depth" would otherwise arrive as
// "/pipe").
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace nps::net {

// Decodes "%HH" (either case) in place and returns the decoded length
// (never more than `size`). '+' stays '+'; a '%' not followed by two hex
// digits stays as it is. The same decoding libmicrohttpd applies by default.
std::size_t percent_decode_in_place(char* text, std::size_t size);
std::string percent_decode(std::string_view text);

// True when `decoded` is well-formed UTF-8 (no overlong forms, surrogates or
// code points above U+10FFFF) without control characters: no byte below
// 0x20 and no 0x7f (so no NUL, CR, LF or TAB).
bool is_clean_target_text(std::string_view decoded);

}  // namespace nps::net
