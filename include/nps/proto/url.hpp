// SPDX-License-Identifier: Apache-2.0
// Splitting an absolute URL ("scheme://[userinfo@]host[:port][/path][?q][#f]")
// into its parts, for the policy checks on callback, SpawnSpec and nwp://
// URLs. Only the generic syntax is checked here; each policy adds its rules.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace nps::proto {

struct UrlParts {
    std::string_view scheme;    // as written; compare case-insensitively
    bool has_userinfo = false;  // an '@' in the authority
    std::string_view userinfo;
    std::string_view host;      // without brackets for an IPv6 literal
    bool host_is_bracketed = false;
    std::optional<std::uint16_t> port;
    std::string_view rest;      // path, query and fragment, "" or starting with '/', '?' or '#'
};

// nullopt when: no "scheme://", the scheme is not [A-Za-z][A-Za-z0-9+.-]*,
// the URL holds a control character, space or backslash, a bracketed host is
// unterminated, or the port is empty, non-numeric, 0 or above 65535.
// The views point into `url`.
std::optional<UrlParts> split_url(std::string_view url);

// ASCII case-insensitive equality.
bool iequals(std::string_view a, std::string_view b);

}  // namespace nps::proto
