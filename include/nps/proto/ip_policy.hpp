// SPDX-License-Identifier: Apache-2.0
// Which IP addresses an outbound request (task callback, remote SpawnSpec
// fetch) may reach: only public ones (NPS-5 §9.4; digest §7 "[R18] remote
// SpawnSpec fetch"). The check is fail-closed: anything not known to be
// globally routable unicast is non-public.
//
// Non-public IPv4: 0/8, 10/8, 127/8, 100.64/10, 169.254/16, 172.16/12,
// 192.0.0/24, 192.0.2/24, 192.168/16, 198.18/15, 198.51.100/24,
// 203.0.113/24, and everything from 224.0.0.0 up (multicast, reserved,
// broadcast).
// Non-public IPv6: everything outside 2000::/3 (this covers ::, ::1,
// link-local fe80::/10, site-local fec0::/10, ULA fc00::/7, multicast
// ff00::/8), plus 2001::/23 (IETF protocol assignments, incl. Teredo),
// 2001:db8::/32 and 3fff::/20 (documentation). Addresses that embed an IPv4
// address are judged by that address: IPv4-mapped ::ffff:0:0/96,
// IPv4-compatible ::/96, NAT64 64:ff9b::/96 and 6to4 2002::/16.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace nps::proto {

struct IpAddress {
    bool is_v6 = false;
    // IPv4: bytes[0..3] in network order, the rest zero. IPv6: all 16 bytes.
    std::array<std::uint8_t, 16> bytes{};

    bool operator==(const IpAddress&) const = default;
};

// Strict textual literal: dotted-quad IPv4 ("10.0.0.8") or RFC 4291 IPv6
// without brackets or zone id ("2001:db8::1", "::ffff:10.0.0.1").
// Legacy IPv4 forms ("127.1", "0x7f.0.0.1", "2130706433") are not literals
// here; see is_ambiguous_numeric_host.
std::optional<IpAddress> parse_ip_literal(std::string_view text);

bool is_public_ipv4(const std::array<std::uint8_t, 4>& address);
bool is_public_ipv6(const std::array<std::uint8_t, 16>& address);
bool is_public(const IpAddress& address);

// parse_ip_literal + is_public; false when `text` is not a literal.
bool is_public_ip(std::string_view text);

// True for a host that resolvers would read as an IPv4 address although it is
// not a dotted quad ("127.1", "0x7f000001", "017700000001"). Such hosts are
// rejected outright instead of guessing which address they mean.
bool is_ambiguous_numeric_host(std::string_view host);

}  // namespace nps::proto
