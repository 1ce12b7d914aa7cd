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

// Canonical form of a JSON text. Fails (NWP-HTTP-FRAME-BODY-MALFORMED, the
// message naming the place, e.g. "a.y[0]: duplicate object key 'k'") on
// invalid JSON (incl. lone surrogates and invalid UTF-8), on a number that is
// not finite as a double, on duplicate object keys (compared after
// unescaping), and on nesting deeper than limits::kMaxJsonDepth. Integer
// literals beyond 64 bits are accepted and read as doubles. Never throws.
Result<std::string> jcs_canonicalize(std::string_view json_text);

// ECMAScript Number::toString for a finite double (RFC 8785 §3.2.2.3):
// "0" for ±0, no exponent for 1e-6 <= |v| < 1e21, "1e+21" / "1e-7" style
// otherwise. Returns "null" for NaN and infinities, which JCS never emits.
std::string jcs_format_number(double value);

}  // namespace nps::proto
