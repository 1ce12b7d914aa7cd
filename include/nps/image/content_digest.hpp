// SPDX-License-Identifier: Apache-2.0
// Content digests as OCI writes them: "sha256:" and 64 lowercase hex digits.
// Only sha256 is supported (the algorithm every producer uses); other
// algorithms are refused by name.
#pragma once

#include <string>
#include <string_view>

#include "nps/base/result.hpp"

namespace nps::image {

inline constexpr std::string_view kSha256Prefix = "sha256:";

// True for exactly "sha256:" + 64 lowercase hex digits.
bool is_sha256_digest(std::string_view digest);
bool is_sha256_hex(std::string_view hex);

// Checks a digest found in `where` ("manifest sha256:…"); the error names
// both and says why ("unsupported digest algorithm 'sha512'").
Result<void> check_digest(std::string_view digest, std::string_view where);

// The hex part of a valid digest.
inline std::string_view digest_hex(std::string_view digest) { return digest.substr(kSha256Prefix.size()); }
inline std::string sha256_digest_of_hex(std::string_view hex) { return std::string(kSha256Prefix) + std::string(hex); }
// "sha256:" + sha256 of data.
std::string digest_of(std::string_view data);
// The first 12 hex digits: how lists show a digest.
std::string short_digest(std::string_view digest);

}  // namespace nps::image
