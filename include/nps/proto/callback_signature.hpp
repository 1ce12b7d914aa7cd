// SPDX-License-Identifier: Apache-2.0
// Task callback signatures (NPS-5 §9.4): the header
//   X-NPS-Signature: sha256=<lowercase hex HMAC-SHA256(key, raw body)>
// with key = base64url-decode(callback_secret), which must be 32 bytes.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "nps/base/result.hpp"

namespace nps::proto {

inline constexpr std::string_view kCallbackSignatureHeader = "X-NPS-Signature";
inline constexpr std::size_t kCallbackSecretBytes = 32;

// The 32-byte key of a callback_secret (base64url, padding optional);
// NOP-CALLBACK-INVALID otherwise.
Result<std::string> decode_callback_secret(std::string_view secret_base64url);

// "sha256=" + lowercase hex HMAC-SHA256 of `raw_body`; the secret is checked
// as decode_callback_secret does.
Result<std::string> sign_callback_body(std::string_view secret_base64url, std::string_view raw_body);

// Verifies a received header value in constant time:
//   no header (nullopt)                          → NOP-CALLBACK-HMAC-MISSING
//   wrong format, wrong digest, uppercase hex     → NOP-CALLBACK-HMAC-INVALID
//   the secret itself invalid                     → NOP-CALLBACK-INVALID
Result<void> verify_callback_signature(std::string_view secret_base64url, std::string_view raw_body,
                                       std::optional<std::string_view> signature);

}  // namespace nps::proto
