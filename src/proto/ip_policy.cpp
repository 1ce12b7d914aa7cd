// SPDX-License-Identifier: Apache-2.0
#include "nps/proto/ip_policy.hpp"

#include <arpa/inet.h>

#include <cstring>
#include <string>

namespace nps::proto {

namespace {

struct V4Range {
    std::uint8_t a, b, c, d;
    int prefix;
};

// Digest §7 ([R18] remote SpawnSpec fetch); 224.0.0.0/3 covers "≥ 224".
constexpr V4Range kNonPublicV4[] = {
    {0, 0, 0, 0, 8},      {10, 0, 0, 0, 8},      {127, 0, 0, 0, 8},    {100, 64, 0, 0, 10},
    {169, 254, 0, 0, 16}, {172, 16, 0, 0, 12},   {192, 0, 0, 0, 24},   {192, 0, 2, 0, 24},
    {192, 168, 0, 0, 16}, {198, 18, 0, 0, 15},   {198, 51, 100, 0, 24}, {203, 0, 113, 0, 24},
    {224, 0, 0, 0, 3},
};

std::uint32_t v4_value(const std::array<std::uint8_t, 4>& a)
{
    return (std::uint32_t{a[0]} << 24) | (std::uint32_t{a[1]} << 16) | (std::uint32_t{a[2]} << 8) | a[3];
}

bool in_v4_range(std::uint32_t address, const V4Range& r)
{
    const std::uint32_t base = v4_value({r.a, r.b, r.c, r.d});
    const std::uint32_t mask = r.prefix == 0 ? 0 : ~std::uint32_t{0} << (32 - r.prefix);
    return (address & mask) == (base & mask);
}

// True when the first `bits` bits of `address` equal those of `prefix`.
bool has_prefix(const std::array<std::uint8_t, 16>& address, std::initializer_list<std::uint8_t> prefix, int bits)
{
    int i = 0;
    for (std::uint8_t byte : prefix) {
        if (bits <= 0)
            break;
        const int take = bits >= 8 ? 8 : bits;
        const auto mask = static_cast<std::uint8_t>(0xFF << (8 - take));
        if ((address[static_cast<std::size_t>(i)] & mask) != (byte & mask))
            return false;
        bits -= take;
        ++i;
    }
    return true;
}

std::array<std::uint8_t, 4> v4_at(const std::array<std::uint8_t, 16>& a, std::size_t offset)
{
    return {a[offset], a[offset + 1], a[offset + 2], a[offset + 3]};
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

std::optional<IpAddress> parse_ip_literal(std::string_view text)
{
    if (text.empty() || text.size() > INET6_ADDRSTRLEN)
        return std::nullopt;
    const std::string z(text);  // inet_pton needs a NUL-terminated string
    IpAddress address;
    if (text.find(':') == std::string_view::npos) {
        in_addr v4{};
        if (inet_pton(AF_INET, z.c_str(), &v4) != 1)
            return std::nullopt;
        std::memcpy(address.bytes.data(), &v4, 4);
        return address;
    }
    in6_addr v6{};
    if (inet_pton(AF_INET6, z.c_str(), &v6) != 1)
        return std::nullopt;
    address.is_v6 = true;
    std::memcpy(address.bytes.data(), &v6, 16);
    return address;
}

bool is_public_ipv4(const std::array<std::uint8_t, 4>& address)
{
    const std::uint32_t value = v4_value(address);
    for (const V4Range& range : kNonPublicV4)
        if (in_v4_range(value, range))
            return false;
    return true;
}

bool is_public_ipv6(const std::array<std::uint8_t, 16>& a)
{
    // Embedded IPv4 forms are judged by the IPv4 address they reach.
    if (has_prefix(a, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF}, 96))  // ::ffff:a.b.c.d
        return is_public_ipv4(v4_at(a, 12));
    if (has_prefix(a, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 96))  // ::a.b.c.d, ::, ::1
        return is_public_ipv4(v4_at(a, 12));
    if (has_prefix(a, {0x00, 0x64, 0xFF, 0x9B, 0, 0, 0, 0, 0, 0, 0, 0}, 96))  // NAT64
        return is_public_ipv4(v4_at(a, 12));
    if (has_prefix(a, {0x20, 0x02}, 16))  // 6to4
        return is_public_ipv4(v4_at(a, 2));

    if (!has_prefix(a, {0x20}, 3))  // global unicast is 2000::/3; the rest is not public
        return false;
    if (has_prefix(a, {0x20, 0x01, 0x00}, 23))  // IETF protocol assignments, Teredo
        return false;
    if (has_prefix(a, {0x20, 0x01, 0x0D, 0xB8}, 32))  // documentation
        return false;
    if (has_prefix(a, {0x3F, 0xFF, 0x00}, 20))  // documentation (RFC 9637)
        return false;
    return true;
}

bool is_public(const IpAddress& address)
{
    return address.is_v6 ? is_public_ipv6(address.bytes) : is_public_ipv4(v4_at(address.bytes, 0));
}

bool is_public_ip(std::string_view text)
{
    const auto address = parse_ip_literal(text);
    return address && is_public(*address);
}

bool is_ambiguous_numeric_host(std::string_view host)
{
    if (host.empty() || host.size() > 64 || parse_ip_literal(host))
        return false;
    // inet_aton accepts the legacy forms getaddrinfo and curl also accept.
    const std::string z(host);
    in_addr ignored{};
    if (inet_aton(z.c_str(), &ignored) != 0)
        return true;
    // A final label that is all digits (or 0x…) cannot be a DNS name
    // (RFC 1123 §2.1 / WHATWG host parsing treat it as IPv4).
    std::string_view last = host;
    if (last.back() == '.')
        last.remove_suffix(1);
    if (const auto dot = last.rfind('.'); dot != std::string_view::npos)
        last = last.substr(dot + 1);
    if (last.empty())
        return false;
    if (last.size() > 2 && last[0] == '0' && (last[1] == 'x' || last[1] == 'X'))
        return true;
    for (char c : last)
        if (!is_digit(c))
            return false;
    return true;
}

}  // namespace nps::proto
