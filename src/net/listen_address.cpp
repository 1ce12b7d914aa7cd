// SPDX-License-Identifier: Apache-2.0
// Listen-address parsing and the loopback test.
#include <arpa/inet.h>
#include <netinet/in.h>

#include <cctype>
#include <cstdint>
#include <string>
#include <utility>

#include "nps/base/ascii.hpp"
#include "nps/net/http_server.hpp"

namespace nps::net {

namespace {

Error bad_address(const std::string& text, const std::string& why)
{
    return internal_error("Invalid listen address '" + text + "': " + why);
}

bool valid_hostname(const std::string& host)
{
    if (host.empty() || host.size() > 253)
        return false;
    for (char c : host) {
        const auto u = static_cast<unsigned char>(c);
        if (!std::isalnum(u) && c != '.' && c != '-' && c != '_')
            return false;
    }
    return true;
}

}  // namespace

Result<std::pair<std::string, std::uint16_t>> parse_listen_address(const std::string& text)
{
    std::string host;
    std::string port_text;
    if (!text.empty() && text.front() == '[') {
        const auto close = text.find(']');
        if (close == std::string::npos)
            return bad_address(text, "missing ']' after the IPv6 address");
        host = text.substr(1, close - 1);
        if (close + 1 >= text.size() || text[close + 1] != ':')
            return bad_address(text, "expected [IPv6]:PORT");
        port_text = text.substr(close + 2);
        in6_addr a6{};
        if (host.empty() || inet_pton(AF_INET6, host.c_str(), &a6) != 1)
            return bad_address(text, "'" + host + "' is not an IPv6 address");
    } else {
        const auto colon = text.rfind(':');
        if (colon == std::string::npos)
            return bad_address(text, "expected HOST:PORT");
        host = text.substr(0, colon);
        port_text = text.substr(colon + 1);
        if (host.find(':') != std::string::npos)
            return bad_address(text, "IPv6 addresses must be bracketed, as in [::1]:17437");
        if (host.empty())
            return bad_address(text, "missing host");
        if (!valid_hostname(host))
            return bad_address(text, "'" + host + "' is not a valid host");
    }

    if (port_text.empty())
        return bad_address(text, "missing port");
    if (port_text.size() > 5)
        return bad_address(text, "port out of range 0..65535");
    unsigned long port = 0;
    for (char c : port_text) {
        if (c < '0' || c > '9')
            return bad_address(text, "port '" + port_text + "' is not a number");
        port = port * 10 + static_cast<unsigned long>(c - '0');
    }
    if (port > 65535)
        return bad_address(text, "port out of range 0..65535");
    return std::pair<std::string, std::uint16_t>{std::move(host), static_cast<std::uint16_t>(port)};
}

bool is_loopback_host(const std::string& host_in)
{
    std::string host = host_in;
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
        host = host.substr(1, host.size() - 2);
    const std::string lower = ascii_lower(host);
    if (lower == "localhost" || lower == "localhost.")
        return true;

    in_addr a4{};
    if (inet_pton(AF_INET, host.c_str(), &a4) == 1)
        return (ntohl(a4.s_addr) >> 24) == 127;
    in6_addr a6{};
    if (inet_pton(AF_INET6, host.c_str(), &a6) == 1) {
        if (IN6_IS_ADDR_LOOPBACK(&a6))
            return true;
        return IN6_IS_ADDR_V4MAPPED(&a6) && a6.s6_addr[12] == 127;
    }
    return false;
}

}  // namespace nps::net
