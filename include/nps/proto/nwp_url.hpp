// SPDX-License-Identifier: Apache-2.0
// nwp:// operation URLs (NPS-3 §3.1): nwp://host[:port]/node-path[/sub-path].
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace nps::proto {

inline constexpr std::uint16_t kDefaultNwpPort = 17433;

struct NwpUrl {
    std::string host;
    std::uint16_t port = kDefaultNwpPort;
    std::string path;  // "/node-path[/sub-path]"
};

// Accepts "nwp://" (scheme case-insensitive), a host of letters, digits, '.',
// '-' or a bracketed IPv6 literal, an optional port, and a path of one or
// more segments of [A-Za-z0-9_.-] (so ".schema" and ".nwm" fit), at most
// limits::kMaxUrlChars in all. No user-info, query or fragment.
std::optional<NwpUrl> parse_nwp_url(std::string_view url);

inline bool is_valid_nwp_url(std::string_view url) { return parse_nwp_url(url).has_value(); }

}  // namespace nps::proto
