// SPDX-License-Identifier: Apache-2.0
// Writing a string as a JSON string literal, for the few places that build
// JSON text by hand (the worker protocol's encoder, JCS, log lines).
#pragma once

#include <string>
#include <string_view>

namespace nps {

// Appends `s` (assumed valid UTF-8) as a JSON string literal in the RFC 8785
// (JCS) form: '"' and '\' escaped, \b \f \n \r \t short, other control
// characters as \u00xx (lower-case hex), everything else verbatim.
void append_json_string(std::string& out, std::string_view s);

}  // namespace nps
