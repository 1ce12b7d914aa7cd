// SPDX-License-Identifier: Apache-2.0
#include "nps/base/random_id.hpp"

#include <sys/random.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <vector>

namespace nps {

namespace {

Result<void> fill_random(std::uint8_t* out, std::size_t size, const std::string& what)
{
    std::size_t got = 0;
    while (got < size) {
        const ssize_t n = ::getrandom(out + got, size - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return system_error_errno("Failed to draw random bytes for " + what + " (getrandom)");
        got += static_cast<std::size_t>(n);
    }
    return {};
}

}  // namespace

Result<std::string> random_hex(std::size_t bytes, const std::string& what)
{
    std::vector<std::uint8_t> b(bytes);
    NPS_TRY(fill_random(b.data(), b.size(), what));
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string text;
    text.reserve(2 * bytes);
    for (const std::uint8_t byte : b) {
        text.push_back(kDigits[byte >> 4]);
        text.push_back(kDigits[byte & 0x0f]);
    }
    return text;
}

Result<std::string> random_uuid()
{
    std::uint8_t b[16];
    NPS_TRY(fill_random(b, sizeof b, "a task id"));
    b[6] = static_cast<std::uint8_t>((b[6] & 0x0f) | 0x40);  // version 4
    b[8] = static_cast<std::uint8_t>((b[8] & 0x3f) | 0x80);  // RFC 4122 variant
    char text[37];
    std::snprintf(text, sizeof text, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
                  b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
    return std::string(text);
}

}  // namespace nps
