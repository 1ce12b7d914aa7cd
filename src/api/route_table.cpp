// SPDX-License-Identifier: Apache-2.0
// Matching a request path against the route table (nps/api/route_table.hpp).
#include "nps/api/route_table.hpp"

#include <optional>

namespace nps::api {

namespace {

std::vector<std::string_view> segments_of(std::string_view path)
{
    std::vector<std::string_view> segments;
    if (path.starts_with('/'))
        path.remove_prefix(1);
    if (path.ends_with('/'))
        path.remove_suffix(1);  // one trailing slash is tolerated
    if (path.empty())
        return segments;
    for (std::size_t start = 0;;) {
        const std::size_t end = path.find('/', start);
        segments.push_back(path.substr(start, end == std::string_view::npos ? path.npos : end - start));
        if (end == std::string_view::npos)
            return segments;
        start = end + 1;
    }
}

bool is_placeholder(std::string_view segment)
{
    return segment.size() > 2 && segment.front() == '{' && segment.back() == '}';
}

// Which of the pattern's segments are literals (true), when it matches
// `path`; nullopt when it does not.
std::optional<std::vector<bool>> literals_matching(std::string_view pattern,
                                                   const std::vector<std::string_view>& path)
{
    const auto wanted = segments_of(pattern);
    if (wanted.size() != path.size())
        return std::nullopt;
    std::vector<bool> literals(wanted.size());
    for (std::size_t i = 0; i < wanted.size(); ++i) {
        literals[i] = !is_placeholder(wanted[i]);
        if (literals[i] ? wanted[i] != path[i] : path[i].empty())
            return std::nullopt;
    }
    return literals;
}

}  // namespace

RouteMatch match_route(std::span<const Route> routes, std::string_view method, std::string_view path)
{
    const auto segments = segments_of(path);
    std::optional<std::vector<bool>> best;  // the most specific matching pattern's literals
    std::vector<const Route*> candidates;   // the routes with that pattern
    for (const Route& route : routes) {
        auto literals = literals_matching(route.pattern, segments);
        if (!literals || (best && *literals < *best))
            continue;
        if (!best || *literals > *best)
            candidates.clear();
        best = std::move(literals);
        candidates.push_back(&route);
    }
    RouteMatch match;
    if (candidates.empty())
        return match;
    for (const Route* route : candidates) {
        if (method != route->method)
            continue;
        match.kind = RouteMatch::Kind::found;
        match.route = route;
        const auto wanted = segments_of(route->pattern);
        for (std::size_t i = 0; i < wanted.size(); ++i)
            if (is_placeholder(wanted[i]))
                match.params.emplace_back(segments[i]);
        return match;
    }
    match.kind = RouteMatch::Kind::wrong_method;
    for (const Route* route : candidates)
        match.allow += (match.allow.empty() ? "" : ", ") + std::string(route->method);
    return match;
}

}  // namespace nps::api
