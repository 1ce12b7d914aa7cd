// SPDX-License-Identifier: Apache-2.0
#include "nps/proto/url.hpp"

#include <cstdint>

#include "nps/base/ascii.hpp"

namespace nps::proto {

namespace {

bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }


bool valid_scheme(std::string_view scheme)
{
    if (scheme.empty() || !is_alpha(scheme.front()))
        return false;
    for (char c : scheme)
        if (!is_alpha(c) && !is_digit(c) && c != '+' && c != '.' && c != '-')
            return false;
    return true;
}

// Control characters, space, DEL and backslash are never part of a URL we
// accept: they are where URL parsers disagree.
bool has_forbidden_char(std::string_view url)
{
    for (char c : url) {
        const auto b = static_cast<std::uint8_t>(c);
        if (b <= 0x20 || b == 0x7f || c == '\\')
            return true;
    }
    return false;
}

std::optional<std::uint16_t> parse_port(std::string_view text)
{
    if (text.empty() || text.size() > 5)
        return std::nullopt;
    std::uint32_t value = 0;
    for (char c : text) {
        if (!is_digit(c))
            return std::nullopt;
        value = value * 10 + static_cast<std::uint32_t>(c - '0');
    }
    if (value == 0 || value > 65535)
        return std::nullopt;
    return static_cast<std::uint16_t>(value);
}

}  // namespace

bool iequals(std::string_view a, std::string_view b)
{
    if (a.size() != b.size())
        return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (ascii_lower(a[i]) != ascii_lower(b[i]))
            return false;
    return true;
}

std::optional<UrlParts> split_url(std::string_view url)
{
    if (has_forbidden_char(url))
        return std::nullopt;
    const auto scheme_end = url.find("://");
    if (scheme_end == std::string_view::npos || !valid_scheme(url.substr(0, scheme_end)))
        return std::nullopt;

    UrlParts parts;
    parts.scheme = url.substr(0, scheme_end);
    std::string_view rest = url.substr(scheme_end + 3);
    const auto authority_end = rest.find_first_of("/?#");
    std::string_view authority = rest.substr(0, authority_end);
    parts.rest = authority_end == std::string_view::npos ? std::string_view{} : rest.substr(authority_end);

    if (const auto at = authority.rfind('@'); at != std::string_view::npos) {
        parts.has_userinfo = true;
        parts.userinfo = authority.substr(0, at);
        authority = authority.substr(at + 1);
    }

    std::string_view port_text;
    bool has_port = false;
    if (!authority.empty() && authority.front() == '[') {
        const auto close = authority.find(']');
        if (close == std::string_view::npos)
            return std::nullopt;
        parts.host = authority.substr(1, close - 1);
        parts.host_is_bracketed = true;
        const std::string_view after = authority.substr(close + 1);
        if (!after.empty()) {
            if (after.front() != ':')
                return std::nullopt;
            has_port = true;
            port_text = after.substr(1);
        }
    } else {
        const auto colon = authority.find(':');
        parts.host = authority.substr(0, colon);
        if (colon != std::string_view::npos) {
            has_port = true;
            port_text = authority.substr(colon + 1);
        }
    }
    if (has_port) {
        parts.port = parse_port(port_text);
        if (!parts.port)
            return std::nullopt;
    }
    return parts;
}

}  // namespace nps::proto
