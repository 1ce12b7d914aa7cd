// SPDX-License-Identifier: Apache-2.0
#include "nps/spawn/resolver.hpp"

#include "nps/base/limits.hpp"
#include "nps/net/http_client.hpp"
#include "nps/proto/error_codes.hpp"
#include "nps/proto/nwp_url.hpp"
#include "nps/proto/task_frame.hpp"
#include "registry_answers.hpp"
#include "spec_rules.hpp"

namespace nps::spawn {

namespace {

using detail::quote_text;

// Every resolution failure is the one NOP code; the message is kept.
Error invalid(const Error& e)
{
    return protocol_error(kSpawnSpecInvalid, e.describe());
}

Error invalid(std::string message) { return protocol_error(kSpawnSpecInvalid, std::move(message)); }

std::string ref_prefix(const std::string& ref) { return "spawn_spec_ref " + quote_text(ref); }

std::string without_trailing_slash(std::string url)
{
    while (!url.empty() && url.back() == '/')
        url.pop_back();
    return url;
}

std::string without_prefix(const std::string& text, std::string_view prefix)
{
    return text.starts_with(prefix) ? text.substr(prefix.size()) : text;
}

std::string host_for_url(const std::string& host)
{
    return host.find(':') != std::string::npos ? "[" + host + "]" : host;
}

}  // namespace

const char* to_string(CacheUse use)
{
    switch (use) {
    case CacheUse::none: return "none";
    case CacheUse::miss: return "miss";
    case CacheUse::hit: return "hit";
    case CacheUse::revalidated: return "revalidated";
    }
    return "none";
}

SpawnSpecResolver::SpawnSpecResolver(ResolverOptions options, const Clock& clock, AnnounceLookup local_announces)
    : options_(std::move(options)),
      clock_(clock),
      local_announces_(std::move(local_announces)),
      guard_(std::make_unique<net::DestinationGuard>(
          proto::DestinationRules{.error_code = kSpawnSpecInvalid, .allow = options_.allow_destinations},
          options_.host_resolver ? *options_.host_resolver : net::system_resolver())),
      cache_(options_.cache_entries)
{
}

SpawnSpecResolver::~SpawnSpecResolver() = default;

Result<Resolution> SpawnSpecResolver::resolve_agent(const std::string& nid)
{
    const std::string who = "Agent " + quote_text(nid);
    if (!proto::is_valid_nid(nid))
        return invalid(who + ": not a NID (urn:nps:…)");
    auto found = find_announce(nid);
    if (!found)
        return invalid(who + ": " + found.error().describe());
    const store::Announce& announce = found->announce;
    if (announce.activation_mode == "resident")
        return invalid(who + " is resident (activation_mode \"resident\"): it is reached at its endpoint, not spawned");
    if (announce.spawn_spec_ref.empty())
        return invalid(who + ": its announce (" + found->source + ") has no spawn_spec_ref");
    auto resolution = resolve_ref(announce.spawn_spec_ref);
    if (!resolution)
        return invalid(who + ": " + resolution.error().message);
    resolution->agent = nid;
    resolution->announce_source = found->source;
    resolution->activation_mode = announce.activation_mode;
    return resolution;
}

Result<SpawnSpecResolver::Announced> SpawnSpecResolver::find_announce(const std::string& nid)
{
    auto local = local_announces_
                     ? local_announces_(nid)
                     : Result<store::Announce>(protocol_error(proto::code::kNdpResolveNotFound, "no local registry"));
    if (local)
        return Announced{std::move(*local), "local"};
    const Error& error = local.error();
    if (error.code != proto::code::kNdpResolveNotFound && error.code != proto::code::kNdpResolveStale)
        return internal_error("the local NDP registry failed: " + error.describe());
    if (!options_.registry_url)
        return internal_error(error.message + " (local NDP registry; no spawn.registry_url to ask)");
    auto remote = ask_registry(nid, error);
    if (!remote)
        return std::move(remote).error();
    return Announced{std::move(*remote), "registry"};
}

Result<store::Announce> SpawnSpecResolver::ask_registry(const std::string& nid, const Error& local_error)
{
    const std::string url = without_trailing_slash(*options_.registry_url) + "/v1/ndp/resolve?nid=" + net::url_encode(nid);
    const std::string context = local_error.message + " (local NDP registry); the registry '" + url + "' ";
    auto response = net::trusted_get({
        .url = url,
        .ca_file = options_.ca_file,
        .timeout_ms = options_.fetch.timeout_ms,
        .max_body_bytes = limits::kMaxNdpRegistryAnswerBytes,
    });
    if (!response)
        return internal_error(context + "failed: " + response.error().describe());
    if (response->status == 404)
        return internal_error(context + "does not know it either (HTTP 404)");
    if (response->status != 200)
        return internal_error(context + "answered HTTP " + std::to_string(response->status));
    auto announce = detail::decode_registry_announce(response->body, nid);
    if (!announce)
        return internal_error(context + "answered with an unusable announce: " + announce.error().message);
    return announce;
}

Result<std::string> SpawnSpecResolver::nwp_to_https(const std::string& ref)
{
    const auto nwp = proto::parse_nwp_url(ref);
    if (!nwp)
        return invalid(ref_prefix(ref) + ": not an nwp:// URL (nwp://host[:port]/node-path, segments of A-Z a-z 0-9 _ . -, "
                                          "no query)");
    std::string host = nwp->host;
    std::uint16_t port = nwp->port;
    if (options_.nwp_resolver_url) {
        const std::string url =
            without_trailing_slash(*options_.nwp_resolver_url) + "/v1/resolve?target=" + net::url_encode(ref);
        auto response = net::trusted_get({
            .url = url,
            .ca_file = options_.ca_file,
            .timeout_ms = options_.fetch.timeout_ms,
            .max_body_bytes = limits::kMaxNdpRegistryAnswerBytes,
        });
        const std::string context = ref_prefix(ref) + ": the nwp resolver '" + url + "' ";
        if (!response)
            return invalid(context + "failed: " + response.error().describe());
        if (response->status != 200)
            return invalid(context + "answered HTTP " + std::to_string(response->status));
        auto endpoint = detail::decode_nwp_resolution(response->body);
        if (!endpoint)
            return invalid(context + "answered with an unusable resolution: " + endpoint.error().message);
        host = endpoint->host;
        port = endpoint->port;
    }
    return "https://" + host_for_url(host) + ":" + std::to_string(port) + nwp->path;
}

Result<Resolution> SpawnSpecResolver::resolve_ref(const std::string& ref)
{
    auto kind = classify_spawn_spec_ref(ref);
    if (!kind)
        return invalid(kind.error());
    if (*kind != RefKind::inline_data)
        return resolve_remote(ref, *kind);

    auto json = decode_spawnspec_uri(ref, options_.fetch.max_body_bytes);
    if (!json)
        return invalid(ref_prefix(ref) + ": " + without_prefix(json.error().message, "spawn_spec_ref: "));
    auto spec = parse_spawn_spec(*json, options_.fetch.max_body_bytes);
    if (!spec)
        return invalid(ref_prefix(ref) + ": inline SpawnSpec: " + spec.error().message);
    Resolution resolution{.spec = std::move(*spec), .spawn_spec_ref = ref, .kind = RefKind::inline_data};
    return resolution;
}

Result<Resolution> SpawnSpecResolver::resolve_remote(const std::string& ref, RefKind kind)
{
    Resolution resolution{.spawn_spec_ref = ref, .kind = kind};
    const std::optional<CachedSpec> cached = cache_.get(ref);
    if (cached && cached->fresh_until_ms > clock_.now_ms()) {
        resolution.spec = cached->spec;
        resolution.cache = CacheUse::hit;
        resolution.fetched_url = cached->final_url;
        return resolution;
    }

    std::string url = ref;
    std::string what = ref_prefix(ref);
    if (kind == RefKind::nwp) {
        url = NPS_TRY(nwp_to_https(ref));
        what += " (as " + quote_text(url) + ")";
    }
    net::GuardedGetRequest request{
        .url = url,
        .what = what,
        .guard = guard_.get(),
        .ca_file = options_.ca_file,
        .limits = options_.fetch,
        .headers = {{"Accept", "application/json"}},
    };
    if (cached) {
        request.validators_url = cached->final_url;
        request.if_none_match = cached->etag;
        request.if_modified_since = cached->last_modified;
    }
    auto response = net::guarded_get(request);
    if (!response) {
        const Error& e = response.error();
        return invalid(e.message.starts_with(what) ? e.describe() : what + ": " + e.describe());
    }

    const std::int64_t now = clock_.now_ms();
    if (response->status == 304 && cached) {
        CachedSpec refreshed = *cached;
        const auto etag = response->headers.count("etag") ? usable_validator(response->headers.at("etag")) : std::nullopt;
        if (etag)
            refreshed.etag = etag;
        const bool has_validator = refreshed.etag || refreshed.last_modified;
        const Freshness freshness =
            freshness_from_headers(response->headers, has_validator, options_.cache_max_age_seconds);
        refreshed.fresh_until_ms = now + freshness.fresh_for_ms;
        if (freshness.storable)
            cache_.put(ref, refreshed);
        else
            cache_.erase(ref);
        resolution.spec = std::move(refreshed.spec);
        resolution.cache = CacheUse::revalidated;
        resolution.fetched_url = response->final_url;
        return resolution;
    }

    auto spec = parse_spawn_spec(response->body, options_.fetch.max_body_bytes);
    if (!spec) {
        cache_.erase(ref);
        return invalid(what + ": the body of " + quote_text(response->final_url) + " is not a valid SpawnSpec: " +
                       spec.error().message);
    }
    CachedSpec entry{.spec = *spec, .final_url = response->final_url};
    if (const auto it = response->headers.find("etag"); it != response->headers.end())
        entry.etag = usable_validator(it->second);
    if (const auto it = response->headers.find("last-modified"); it != response->headers.end())
        entry.last_modified = usable_validator(it->second);
    const Freshness freshness = freshness_from_headers(response->headers, entry.etag || entry.last_modified,
                                                       options_.cache_max_age_seconds);
    entry.fresh_until_ms = now + freshness.fresh_for_ms;
    if (freshness.storable)
        cache_.put(ref, std::move(entry));
    else
        cache_.erase(ref);
    resolution.spec = std::move(*spec);
    resolution.cache = CacheUse::miss;
    resolution.fetched_url = response->final_url;
    return resolution;
}

}  // namespace nps::spawn
