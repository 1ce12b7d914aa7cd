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

std::string member_path(std::string_view parent, std::string_view key)
{
    std::string out(parent);
    if (is_plain_key(key)) {
        if (!out.empty())
            out += '.';
        out += key;
    } else {
        out += '[';
        out += quote_text(key);
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
