// SPDX-License-Identifier: Apache-2.0
// RFC 8785 JSON Canonicalization Scheme (JCS).
//
// No JCS library is packaged for C++ in Debian, so this is a small serializer
// over simdjson's DOM: object members sorted by their UTF-16 code units,
// no insignificant whitespace, strings escaped as RFC 8785 §3.2.2.2 says, and
// numbers as IEEE-754 doubles printed the ECMAScript way (§3.2.2.3). It is
// proven against vectors/ncp/anchor_id_vectors.json and RFC 8785's examples.
#pragma once

#include <string>
#include <string_view>

#include "nps/base/result.hpp"

namespace nps::proto {

// Canonical form of a JSON text. Fails (NWP-HTTP-FRAME-BODY-MALFORMED) on
// invalid JSON, on a number that is not finite as a double, and on nesting
// deeper than limits::kMaxJsonDepth.
Result<std::string> jcs_canonicalize(std::string_view json_text);

// ECMAScript Number::toString for a finite double (RFC 8785 §3.2.2.3).
std::string jcs_format_number(double value);

}  // namespace nps::proto
