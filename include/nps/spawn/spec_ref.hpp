// SPDX-License-Identifier: Apache-2.0
// spawn_spec_ref values (NPS-CR-0007 §5): an inline `spawnspec:` data URI,
// an https:// URL or an nwp:// URL. Resolution itself is in resolver.hpp.
//
// Inline syntax, exactly (docs/spawnspec.md):
//   spawnspec-uri = "spawnspec:" payload        ; scheme case-insensitive
//   payload       = 2*b64url-char [padding]     ; RFC 4648 §5 alphabet A-Z a-z 0-9 - _
//   padding       = "=" / "=="                  ; only if it completes a multiple of 4
// The payload decodes to the SpawnSpec's JSON (UTF-8). No whitespace, no
// percent-encoding, no media type or ";base64," marker, no '+' or '/'
// (standard base64); unused trailing bits must be zero (canonical form).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "nps/base/result.hpp"

namespace nps::spawn {

inline constexpr std::string_view kSpawnSpecScheme = "spawnspec:";

enum class RefKind { inline_data, https, nwp };
const char* to_string(RefKind kind);  // "inline", "https", "nwp"

// By scheme (case-insensitive). Empty, longer than limits::kMaxSpawnSpecRefChars
// or another scheme → NOP-SPAWN-SPEC-INVALID naming the problem.
Result<RefKind> classify_spawn_spec_ref(std::string_view ref);

// Strict base64url as in the grammar above (padding optional but exact);
// nullopt on anything else.
std::optional<std::string> decode_base64url_strict(std::string_view text);

// The JSON text of an inline ref, at most max_json_bytes bytes;
// NOP-SPAWN-SPEC-INVALID otherwise.
Result<std::string> decode_spawnspec_uri(std::string_view ref, std::size_t max_json_bytes);

// "spawnspec:" + unpadded base64url of the JSON.
std::string encode_spawnspec_uri(std::string_view json_text);

// The syntax an announce is checked for: the scheme; an inline payload is
// canonical base64url within the size limit; an https URL is absolute with a
// host and no user-info; an nwp URL parses (proto/nwp_url.hpp). The content
// (SpawnSpec schema) and the destination rules are checked at resolution,
// with the rules and allowlist in force then.
Result<void> check_spawn_spec_ref_syntax(std::string_view ref);

}  // namespace nps::spawn
