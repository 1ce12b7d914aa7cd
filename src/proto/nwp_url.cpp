// SPDX-License-Identifier: Apache-2.0
#include "nps/proto/nwp_url.hpp"

#include "nps/base/limits.hpp"
#include "nps/proto/ip_policy.hpp"
#include "nps/proto/url.hpp"

namespace nps::proto {

namespace {

bool is_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

bool valid_host(std::string_view host, bool bracketed)
{
    if (bracketed) {
        const auto address = parse_ip_literal(host);
        return address && address->is_v6;
    }
    if (host.empty() || host.size() > 253)
        return false;
    for (char c : host)
        if (!is_alnum(c) && c != '.' && c != '-')
            return false;
    return true;
}

// One or more '/'-separated segments of [A-Za-z0-9_.-]; "." and ".." are
// not segments (they would change the path once mapped to HTTP).
bool valid_segment(std::string_view segment)
{
    if (segment.empty() || segment == "." || segment == "..")
        return false;
    for (char c : segment)
        if (!is_alnum(c) && c != '_' && c != '.' && c != '-')
            return false;
    return true;
}

bool valid_path(std::string_view path)
{
    if (path.empty() || path.front() != '/')
        return false;
    path.remove_prefix(1);
    while (true) {
        const auto slash = path.find('/');
        if (!valid_segment(path.substr(0, slash)))
            return false;
        if (slash == std::string_view::npos)
            return true;
        path.remove_prefix(slash + 1);
    }
}

}  // namespace

std::optional<NwpUrl> parse_nwp_url(std::string_view url)
{
    if (url.size() > limits::kMaxUrlChars)
        return std::nullopt;
    const auto parts = split_url(url);
    if (!parts || !iequals(parts->scheme, "nwp") || parts->has_userinfo ||
        !valid_host(parts->host, parts->host_is_bracketed) || !valid_path(parts->rest))
        return std::nullopt;
    NwpUrl out;
    out.host = std::string(parts->host);
    out.port = parts->port.value_or(kDefaultNwpPort);
    out.path = std::string(parts->rest);
    return out;
}

}  // namespace nps::proto
