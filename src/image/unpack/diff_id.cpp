// SPDX-License-Identifier: Apache-2.0
#include "diff_id.hpp"

namespace nps::image::detail {

Result<std::string> sha256_hex_of(std::string_view digest)
{
    constexpr std::string_view kPrefix = "sha256:";
    constexpr std::size_t kHexChars = 64;
    // The hex names a directory, so it is checked exactly, not just trusted.
    bool ok = digest.size() == kPrefix.size() + kHexChars && digest.substr(0, kPrefix.size()) == kPrefix;
    for (std::size_t i = kPrefix.size(); ok && i < digest.size(); ++i) {
        char c = digest[i];
        ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
    }
    if (!ok)
        return internal_error("Invalid layer diff_id '" + std::string(digest.substr(0, 100)) +
                              "': expected sha256:<64 lowercase hex digits>");
    return std::string(digest.substr(kPrefix.size()));
}

}  // namespace nps::image::detail
