// SPDX-License-Identifier: Apache-2.0
// Fuzzes the request-target percent-decoder and its check: decoding never
// lengthens the text, leaves a text without '%' unchanged, and what the check
// accepts has no control byte (in particular no NUL) and re-encodes to
// itself when every byte is escaped.
#include <cstddef>
#include <cstdint>
#include <string>

#include "nps/net/http_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string text(reinterpret_cast<const char*>(data), size);
    const std::string decoded = nps::net::percent_decode(text);
    if (decoded.size() > text.size())
        __builtin_trap();
    if (text.find('%') == std::string::npos && decoded != text)
        __builtin_trap();
    if (nps::net::is_clean_target_text(decoded)) {
        for (unsigned char c : decoded)
            if (c < 0x20 || c == 0x7f)
                __builtin_trap();
    }
    // Every byte escaped decodes back to the original bytes.
    static const char kHex[] = "0123456789ABCDEF";
    std::string escaped;
    for (unsigned char c : text) {
        escaped.push_back('%');
        escaped.push_back(kHex[c >> 4]);
        escaped.push_back(kHex[c & 15]);
    }
    if (nps::net::percent_decode(escaped) != text)
        __builtin_trap();
    return 0;
}
