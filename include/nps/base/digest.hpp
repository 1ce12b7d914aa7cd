// SPDX-License-Identifier: Apache-2.0
// Hashes and encodings used by the protocol: SHA-256 (libcrypto), lowercase
// hex, base64 (standard, as npsd's payload_b64) and base64url (SpawnSpec data
// URIs, callback secrets).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace nps {

using Sha256 = std::array<std::uint8_t, 32>;

Sha256 sha256(std::string_view data);
// Lowercase hex of SHA-256(data).
std::string sha256_hex(std::string_view data);

std::string to_hex(std::string_view bytes);
std::string to_hex(const Sha256& digest);

std::string base64_encode(std::string_view bytes);
// Decodes standard base64 (padding optional); nullopt on any invalid input.
std::optional<std::string> base64_decode(std::string_view text);
std::string base64url_encode(std::string_view bytes);
// Decodes base64url (padding optional); nullopt on any invalid input.
std::optional<std::string> base64url_decode(std::string_view text);

}  // namespace nps
