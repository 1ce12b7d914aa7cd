// SPDX-License-Identifier: Apache-2.0
#include "nps/proto/destination_policy.hpp"

#include <arpa/inet.h>

#include <cstring>

#include "message_text.hpp"
#include "nps/base/ascii.hpp"
#include "nps/base/limits.hpp"
#include "nps/proto/url.hpp"

namespace nps::proto {

namespace {

using detail::quote_text;

Error refusal(const DestinationRules& rules, std::string_view what, const std::string& problem)
{
    return protocol_error(rules.error_code, std::string(what) + ": " + problem);
}

bool is_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }


std::string_view without_trailing_dot(std::string_view host)
{
    if (!host.empty() && host.back() == '.')
        host.remove_suffix(1);
    return host;
}

std::string normalized_name(std::string_view host)
{
    std::string out(without_trailing_dot(host));
    for (char& c : out)
        c = ascii_lower(c);
    return out;
}

// RFC 1123 host name: labels of 1..63 letters, digits and inner hyphens,
// 253 characters at most, one trailing dot allowed.
bool valid_dns_name(std::string_view host)
{
    host = without_trailing_dot(host);
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
    host = without_trailing_dot(host);
    constexpr std::string_view kLocal = "localhost";
    if (iequals(host, kLocal))
        return true;
    return host.size() > kLocal.size() + 1 && host[host.size() - kLocal.size() - 1] == '.' &&
           iequals(host.substr(host.size() - kLocal.size()), kLocal);
}

// ::ffff:a.b.c.d is the IPv4 address it maps; everything else is itself.
IpAddress unmapped(const IpAddress& address)
{
    static constexpr std::uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF};
    if (!address.is_v6 || std::memcmp(address.bytes.data(), kMapped, sizeof kMapped) != 0)
        return address;
    IpAddress v4;
    std::memcpy(v4.bytes.data(), address.bytes.data() + 12, 4);
    return v4;
}

bool in_network(const IpAddress& address, const DestinationAllowEntry& entry)
{
    const IpAddress a = unmapped(address);
    if (a.is_v6 != entry.network.is_v6)
        return false;
    int bits = entry.prefix_bits;
    for (std::size_t i = 0; bits > 0; ++i, bits -= 8) {
        const int take = bits >= 8 ? 8 : bits;
        const auto mask = static_cast<std::uint8_t>(0xFF << (8 - take));
        if ((a.bytes[i] & mask) != (entry.network.bytes[i] & mask))
            return false;
    }
    return true;
}

bool in_allowed_network(const IpAddress& address, const DestinationRules& rules)
{
    for (const auto& entry : rules.allow)
        if (entry.kind == DestinationAllowEntry::Kind::network && in_network(address, entry))
            return true;
    return false;
}

bool host_name_allowlisted(std::string_view host, const DestinationRules& rules)
{
    if (rules.allow.empty())
        return false;
    const std::string name = normalized_name(host);
    for (const auto& entry : rules.allow)
        if (entry.kind == DestinationAllowEntry::Kind::host_name && entry.host_name == name)
            return true;
    return false;
}

bool literal_allowed(const IpAddress& address, const DestinationRules& rules)
{
    return is_public(address) || in_allowed_network(address, rules);
}

}  // namespace

std::string format_ip(const IpAddress& address)
{
    char text[INET6_ADDRSTRLEN] = {};
    inet_ntop(address.is_v6 ? AF_INET6 : AF_INET, address.bytes.data(), text, sizeof text);
    return text;
}

Result<DestinationAllowEntry> parse_destination_allow_entry(std::string_view text)
{
    auto fail = [&](const std::string& why) {
        return internal_error("Invalid destination " + quote_text(text) + ": " + why);
    };
    if (text.empty())
        return fail("empty");
    if (text.size() > 255)
        return fail("longer than 255 characters");

    std::string_view address_text = text;
    std::optional<int> prefix;
    if (const auto slash = text.find('/'); slash != std::string_view::npos) {
        address_text = text.substr(0, slash);
        const std::string_view digits = text.substr(slash + 1);
        if (digits.empty() || digits.size() > 3 || digits.find_first_not_of("0123456789") != std::string_view::npos)
            return fail("the prefix length after '/' is not a number");
        int value = 0;
        for (char c : digits)
            value = value * 10 + (c - '0');
        prefix = value;
    }
    if (address_text.size() >= 2 && address_text.front() == '[' && address_text.back() == ']')
        address_text = address_text.substr(1, address_text.size() - 2);

    DestinationAllowEntry entry;
    entry.text = std::string(text);
    if (const auto address = parse_ip_literal(address_text)) {
        const int max_bits = address->is_v6 ? 128 : 32;
        const int bits = prefix.value_or(max_bits);
        if (bits > max_bits)
            return fail("prefix length " + std::to_string(bits) + " exceeds " + std::to_string(max_bits));
        entry.network = *address;
        entry.prefix_bits = bits;
        // Host bits set usually mean a typo in the network; refuse rather than guess.
        IpAddress masked = *address;
        for (int bit = bits; bit < max_bits; ++bit)
            masked.bytes[static_cast<std::size_t>(bit / 8)] &= static_cast<std::uint8_t>(~(0x80 >> (bit % 8)));
        if (masked.bytes != address->bytes)
            return fail("host bits are set after the /" + std::to_string(bits) + " prefix (did you mean " +
                        format_ip(masked) + "/" + std::to_string(bits) + "?)");
        return entry;
    }
    if (prefix)
        return fail("a prefix length needs an IP address before the '/'");
    if (is_ambiguous_numeric_host(address_text))
        return fail("a non-standard numeric address; write it as a dotted quad");
    if (!valid_dns_name(address_text))
        return fail("neither an IP address, a CIDR network nor a DNS name");
    entry.kind = DestinationAllowEntry::Kind::host_name;
    entry.host_name = normalized_name(address_text);
    return entry;
}

Result<Destination> check_destination_url(std::string_view url, const DestinationRules& rules, std::string_view what)
{
    if (url.size() > limits::kMaxUrlChars)
        return refusal(rules, what, "longer than " + std::to_string(limits::kMaxUrlChars) + " characters");
    const auto parts = split_url(url);
    if (!parts)
        return refusal(rules, what, "not an absolute URL: " + quote_text(url));
    if (!iequals(parts->scheme, "https"))
        return refusal(rules, what, "scheme must be https, got " + quote_text(parts->scheme));
    if (parts->has_userinfo)
        return refusal(rules, what, "user-info in the URL is not allowed");

    const std::string_view host = parts->host;
    if (host.empty())
        return refusal(rules, what, "the URL has no host");

    Destination destination;
    destination.host = std::string(host);
    destination.port = parts->port.value_or(443);
    if (parts->host_is_bracketed) {
        const auto address = parse_ip_literal(host);
        if (!address || !address->is_v6)
            return refusal(rules, what, "host " + quote_text(host) + " is not an IPv6 literal");
        if (!literal_allowed(*address, rules))
            return refusal(rules, what, "host " + quote_text(host) + " is not a public address");
        destination.literal = address;
        return destination;
    }
    if (const auto address = parse_ip_literal(host)) {
        if (address->is_v6)
            return refusal(rules, what, "IPv6 host " + quote_text(host) + " must be in brackets");
        if (!literal_allowed(*address, rules))
            return refusal(rules, what, "host " + quote_text(host) + " is not a public address");
        destination.literal = address;
        return destination;
    }
    if (is_ambiguous_numeric_host(host))
        return refusal(rules, what, "host " + quote_text(host) + " is a non-standard numeric address");
    if (!valid_dns_name(host))
        return refusal(rules, what, "host " + quote_text(host) + " is not a valid DNS name");
    destination.host_allowlisted = host_name_allowlisted(host, rules);
    if (is_localhost_name(host) && !destination.host_allowlisted)
        return refusal(rules, what, "host " + quote_text(host) + " is a loopback name");
    return destination;
}

bool destination_address_allowed(const Destination& destination, const IpAddress& address,
                                 const DestinationRules& rules)
{
    return destination.host_allowlisted || literal_allowed(address, rules);
}

Result<void> check_destination_addresses(const Destination& destination, std::span<const IpAddress> addresses,
                                         const DestinationRules& rules, std::string_view what)
{
    if (addresses.empty())
        return refusal(rules, what, "the host resolved to no addresses");
    for (const IpAddress& address : addresses)
        if (!destination_address_allowed(destination, address, rules))
            return refusal(rules, what, "the host resolves to non-public address " + quote_text(format_ip(address)));
    return {};
}

}  // namespace nps::proto
