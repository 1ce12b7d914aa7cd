// SPDX-License-Identifier: Apache-2.0
#include "nps/base/quote.hpp"

#include <cstddef>

namespace nps {

namespace {

constexpr std::size_t kMaxQuotedBytes = 64;

}  // namespace

std::string quote_text(std::string_view text)
{
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out = "'";
    const std::string_view shown = text.substr(0, kMaxQuotedBytes);
    for (char c : shown) {
        const auto b = static_cast<unsigned char>(c);
        if (b < 0x20 || b == 0x7f || c == '\'' || c == '\\') {
            out += "\\x";
            out += kHex[b >> 4];
            out += kHex[b & 0xf];
        } else {
            out += c;
        }
    }
    if (shown.size() < text.size())
        out += "...";
    out += '\'';
    return out;
}

}  // namespace nps
