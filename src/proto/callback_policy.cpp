// SPDX-License-Identifier: Apache-2.0
#include "nps/proto/callback_policy.hpp"

#include "message_text.hpp"
#include "nps/base/limits.hpp"
#include "nps/proto/ip_policy.hpp"
#include "nps/proto/url.hpp"

namespace nps::proto {

namespace {

using detail::quoted;

constexpr std::string_view kCallbackInvalid = "NOP-CALLBACK-INVALID";

Error callback_error(std::string_view what, std::string problem)
{
    return protocol_error(std::string(kCallbackInvalid), std::string(what) + ": " + problem);
}

bool is_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

// RFC 1123 host name: labels of 1..63 letters, digits and inner hyphens,
// 253 characters at most, one trailing dot allowed.
bool valid_dns_name(std::string_view host)
{
    if (!host.empty() && host.back() == '.')
        host.remove_suffix(1);
    if (host.empty() || host.size() > 253)
        return false;
    while (true) {
        const auto dot = host.find('.');
        const std::string_view label = host.substr(0, dot);
        if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-')
            return false;
        for (char c : label)
            if (!is_alnum(c) && c != '-')
                return false;
        if (dot == std::string_view::npos)
            return true;
        host.remove_prefix(dot + 1);
    }
}

bool is_localhost_name(std::string_view host)
{
    if (!host.empty() && host.back() == '.')
        host.remove_suffix(1);
    constexpr std::string_view kLocal = "localhost";
    if (iequals(host, kLocal))
        return true;
    return host.size() > kLocal.size() + 1 && host[host.size() - kLocal.size() - 1] == '.' &&
           iequals(host.substr(host.size() - kLocal.size()), kLocal);
}

Result<void> check_host(std::string_view host, bool bracketed, std::string_view what)
{
    if (host.empty())
        return callback_error(what, "the URL has no host");
    if (bracketed) {
        const auto address = parse_ip_literal(host);
        if (!address || !address->is_v6)
            return callback_error(what, "host " + quoted(host) + " is not an IPv6 literal");
        if (!is_public(*address))
            return callback_error(what, "host " + quoted(host) + " is not a public address");
        return {};
    }
    if (const auto address = parse_ip_literal(host)) {
        if (address->is_v6)
            return callback_error(what, "IPv6 host " + quoted(host) + " must be in brackets");
        if (!is_public(*address))
            return callback_error(what, "host " + quoted(host) + " is not a public address");
        return {};
    }
    if (is_ambiguous_numeric_host(host))
        return callback_error(what, "host " + quoted(host) + " is a non-standard numeric address");
    if (!valid_dns_name(host))
        return callback_error(what, "host " + quoted(host) + " is not a valid DNS name");
    if (is_localhost_name(host))
        return callback_error(what, "host " + quoted(host) + " is a loopback name");
    return {};
}

}  // namespace

Result<void> check_callback_url(std::string_view url, std::string_view what)
{
    if (url.size() > limits::kMaxUrlChars)
        return callback_error(what, "longer than " + std::to_string(limits::kMaxUrlChars) + " characters");
    const auto parts = split_url(url);
    if (!parts)
        return callback_error(what, "not an absolute URL: " + quoted(url));
    if (!iequals(parts->scheme, "https"))
        return callback_error(what, "scheme must be https, got " + quoted(parts->scheme));
    if (parts->has_userinfo)
        return callback_error(what, "user-info in the URL is not allowed");
    return check_host(parts->host, parts->host_is_bracketed, what);
}

Result<void> check_callback_destination(std::string_view url, std::span<const std::string> resolved_ips,
                                        std::string_view what)
{
    NPS_TRY_VOID(check_callback_url(url, what));
    if (resolved_ips.empty())
        return callback_error(what, "the host resolved to no addresses");
    for (const std::string& ip : resolved_ips) {
        const auto address = parse_ip_literal(ip);
        if (!address)
            return callback_error(what, "resolved address " + quoted(ip) + " is not an IP address");
        if (!is_public(*address))
            return callback_error(what, "the host resolves to non-public address " + quoted(ip));
    }
    return {};
}

}  // namespace nps::proto
