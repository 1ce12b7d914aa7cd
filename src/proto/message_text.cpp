// SPDX-License-Identifier: Apache-2.0
#include "message_text.hpp"

#include <cstdint>

namespace nps::proto::detail {

namespace {

constexpr std::size_t kMaxQuotedBytes = 64;

bool is_plain_key(std::string_view key)
{
    if (key.empty() || key.size() > kMaxQuotedBytes)
        return false;
    for (char c : key) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                        c == '_' || c == '-';
        if (!ok)
            return false;
    }
    return true;
}

}  // namespace

std::string quoted(std::string_view text)
{
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out = "'";
    const std::string_view shown = text.substr(0, kMaxQuotedBytes);
    for (char c : shown) {
        const auto b = static_cast<std::uint8_t>(c);
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

std::string member_path(std::string_view parent, std::string_view key)
{
    std::string out(parent);
    if (is_plain_key(key)) {
        if (!out.empty())
            out += '.';
        out += key;
    } else {
        out += '[';
        out += quoted(key);
        out += ']';
    }
    return out;
}

std::string index_path(std::string_view parent, std::size_t index)
{
    std::string out(parent);
    out += '[';
    out += std::to_string(index);
    out += ']';
    return out;
}

}  // namespace nps::proto::detail
