// SPDX-License-Identifier: Apache-2.0
// Where an outbound request may go: the NPS-5 §9.4 destination rules, shared
// by task callbacks (NOP-CALLBACK-INVALID) and remote SpawnSpec fetches
// (NOP-SPAWN-SPEC-INVALID). Pure policy, no I/O: net/destination_guard.hpp
// adds the DNS resolution and the connection pinning.
//
// A destination is admitted when
//  - the URL is at most limits::kMaxUrlChars, absolute, scheme https, with a
//    host and no user-info;
//  - the host is not a non-standard numeric form ("127.1", "0x7f000001");
//  - an IP-literal host is public (ip_policy.hpp) or inside an allowlisted
//    network; an IPv6 literal is in brackets;
//  - a DNS host is made of valid labels and is not "localhost"/"*.localhost"
//    (unless the name itself is allowlisted);
//  - and, once resolved, the host has at least one address and every address
//    is public, inside an allowlisted network, or belongs to an allowlisted
//    host name (fail closed: one bad answer refuses the whole destination).
//
// The operator allowlist ([spawn] allow_destinations) is empty by default.
// Entries are an IP address ("127.0.0.1", "::1" or "[::1]"), a network in
// CIDR form ("10.20.0.0/16", "fd00::/8"; host bits must be zero), or a host
// name ("specs.lan"; exact, case-insensitive, a trailing dot ignored). An
// IPv4-mapped IPv6 address (::ffff:a.b.c.d) matches IPv4 entries.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "nps/base/result.hpp"
#include "nps/proto/ip_policy.hpp"

namespace nps::proto {

struct DestinationAllowEntry {
    enum class Kind { network, host_name };
    Kind kind = Kind::network;
    IpAddress network{};       // Kind::network: the network address
    int prefix_bits = 0;       // Kind::network: 0..32 (IPv4) or 0..128 (IPv6)
    std::string host_name{};   // Kind::host_name: lower-case, no trailing dot
    std::string text{};        // the entry as written (messages, `config check`)

    bool operator==(const DestinationAllowEntry&) const = default;
};

// Parses one allowlist entry; the error (no protocol code) says what is wrong.
Result<DestinationAllowEntry> parse_destination_allow_entry(std::string_view text);

struct DestinationRules {
    std::string error_code;                      // every refusal carries this code
    std::vector<DestinationAllowEntry> allow{};  // empty: public destinations only
};

// The outcome of the static URL checks.
struct Destination {
    std::string host;                     // as written, without brackets
    std::uint16_t port = 443;             // the URL's port, else 443
    std::optional<IpAddress> literal{};   // set when the host is an IP literal
    bool host_allowlisted = false;        // the host name is an allowlist entry
};

// The static checks. `what` names the URL in messages ("callback_url",
// "spawn_spec_ref"): "callback_url: scheme must be https, got 'http'".
Result<Destination> check_destination_url(std::string_view url, const DestinationRules& rules,
                                          std::string_view what);

// True when a connection to `address` is allowed for `destination`.
bool destination_address_allowed(const Destination& destination, const IpAddress& address,
                                 const DestinationRules& rules);

// The resolved addresses of a destination: non-empty and every one allowed.
Result<void> check_destination_addresses(const Destination& destination, std::span<const IpAddress> addresses,
                                         const DestinationRules& rules, std::string_view what);

// The textual form of an address (RFC 5952 for IPv6, no brackets).
std::string format_ip(const IpAddress& address);

}  // namespace nps::proto
