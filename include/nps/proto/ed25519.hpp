// SPDX-License-Identifier: Apache-2.0
// Ed25519 (RFC 8032) for NIP and NDP signatures, with OpenSSL 3's EVP API,
// and the text forms the spec and its vectors use:
//   public key  "ed25519:" + base64url(raw 32 bytes)          (NDP §7.4 vectors)
//               "ed25519:" + base64(DER SubjectPublicKeyInfo)  (NIP §4 IdentFrame pub_key)
//   signature   "ed25519:" + base64url(raw 64 bytes)
// Decoding accepts either base64 alphabet, padded or not; the DER form must
// be exactly the 44-byte Ed25519 SPKI. Encoding writes unpadded base64url.
#pragma once

#include <string>
#include <string_view>

#include "nps/base/result.hpp"

namespace nps::proto {

inline constexpr std::size_t kEd25519PublicKeyBytes = 32;
inline constexpr std::size_t kEd25519SeedBytes = 32;
inline constexpr std::size_t kEd25519SignatureBytes = 64;

// Raw 32-byte key of a textual public key; fails with `code` and a message
// naming `what` when the prefix, encoding or length is wrong.
Result<std::string> decode_ed25519_public_key(std::string_view text, std::string_view code, std::string_view what);
// Raw 64-byte signature of "ed25519:<base64url>"; fails like the key.
Result<std::string> decode_ed25519_signature(std::string_view text, std::string_view code, std::string_view what);

// "ed25519:" + unpadded base64url of raw bytes (a key or a signature).
std::string encode_ed25519(std::string_view raw);

// True iff `signature` (raw 64 bytes) is a valid Ed25519 signature of
// `message` under `public_key` (raw 32 bytes). Wrong sizes are false.
bool ed25519_verify(std::string_view public_key, std::string_view message, std::string_view signature);

// For tests and tooling: the raw signature of `message` with the private key
// given by its 32-byte seed, and the seed's raw public key.
Result<std::string> ed25519_sign(std::string_view seed, std::string_view message);
Result<std::string> ed25519_public_key(std::string_view seed);

}  // namespace nps::proto
