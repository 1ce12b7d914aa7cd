// SPDX-License-Identifier: Apache-2.0
#include "nps/image/content_digest.hpp"

#include "nps/base/digest.hpp"

namespace nps::image {

bool is_sha256_hex(std::string_view hex)
{
    if (hex.size() != 64)
        return false;
    for (char c : hex)
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return false;
    return true;
}

bool is_sha256_digest(std::string_view digest)
{
    return digest.substr(0, kSha256Prefix.size()) == kSha256Prefix && is_sha256_hex(digest.substr(kSha256Prefix.size()));
}

Result<void> check_digest(std::string_view digest, std::string_view where)
{
    if (is_sha256_digest(digest))
        return {};
    const std::string prefix = "Invalid digest '" + std::string(digest.substr(0, 100)) + "' in " + std::string(where);
    const auto colon = digest.find(':');
    if (colon == std::string_view::npos || colon == 0)
        return internal_error(prefix + ": not ALGORITHM:HEX");
    const std::string_view algorithm = digest.substr(0, colon);
    if (algorithm != "sha256")
        return internal_error(prefix + ": unsupported digest algorithm '" + std::string(algorithm.substr(0, 32)) +
                              "' (only sha256 is supported)");
    return internal_error(prefix + ": a sha256 digest is 64 lowercase hex digits");
}

std::string digest_of(std::string_view data)
{
    return std::string(kSha256Prefix) + sha256_hex(data);
}

std::string short_digest(std::string_view digest)
{
    if (digest.substr(0, kSha256Prefix.size()) == kSha256Prefix)
        digest.remove_prefix(kSha256Prefix.size());
    return std::string(digest.substr(0, 12));
}

}  // namespace nps::image
