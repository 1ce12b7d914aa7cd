// SPDX-License-Identifier: Apache-2.0
// SpawnSpecResolver: agent NID → announce → spawn_spec_ref → validated
// SpawnSpec (NPS-CR-0007 §5, digest §3.3 / §4 / §9 items 5-7).
//
//  - The announce comes from the local NDP registry (the store); for a NID
//    not announced locally (absent, offline or stale) the optional remote
//    registry is asked: GET <registry_url>/v1/ndp/resolve?nid=<nid>, the
//    answer shaped as this runner's own API answers it.
//  - A resident agent (activation_mode "resident") or an announce without a
//    spawn_spec_ref cannot be spawned.
//  - spawnspec: refs decode inline; https:// refs are fetched under the
//    destination guard (net/guarded_fetch.hpp); nwp://host[:port]/path refs
//    are mapped to https://H:P/path, where H:P is what the nwp resolver
//    answers (GET <nwp_resolver_url>/v1/resolve?target=<url>, the
//    nps-registry API) or, without one, the URL's own host and port (default
//    17433). No "/nwp" prefix is added (the reference runner's mapping).
//  - Remote SpawnSpecs are cached (spec_cache.hpp), keyed by the ref.
//  - Every failure is NOP-SPAWN-SPEC-INVALID with a message saying what
//    failed, beginning with the agent or the ref:
//    "Agent 'urn:…': spawn_spec_ref 'https://…': host '10.0.0.8' is not a public address".
// Thread-safe: one resolver serves every API thread and the supervisor.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nps/base/clock.hpp"
#include "nps/base/limits.hpp"
#include "nps/base/result.hpp"
#include "nps/net/guarded_fetch.hpp"
#include "nps/net/host_resolver.hpp"
#include "nps/proto/destination_policy.hpp"
#include "nps/spawn/spawn_spec.hpp"
#include "nps/spawn/spec_cache.hpp"
#include "nps/spawn/spec_ref.hpp"
#include "nps/store/types.hpp"

namespace nps::spawn {

struct ResolverOptions {
    std::vector<proto::DestinationAllowEntry> allow_destinations{};  // empty: public destinations only
    std::optional<std::string> ca_file{};           // PEM CAs trusted besides the system store (fetches, registries)
    std::optional<std::string> registry_url{};      // remote NDP registry for NIDs not announced locally
    std::optional<std::string> nwp_resolver_url{};  // nps-registry for nwp:// targets
    net::FetchLimits fetch{};                       // max_body_bytes is also the SpawnSpec size limit
    std::int64_t cache_max_age_seconds = limits::kDefaultSpawnCacheMaxAgeSeconds;
    std::size_t cache_entries = limits::kDefaultSpawnCacheEntries;  // 0: no cache
    const net::HostResolver* host_resolver = nullptr;  // null: the system resolver
};

// The local announce of a NID (the store in the daemon). Errors
// NDP-RESOLVE-NOT-FOUND and NDP-RESOLVE-STALE send the resolver to the
// remote registry; any other error fails the resolution.
using AnnounceLookup = std::function<Result<store::Announce>(const std::string& nid)>;

enum class CacheUse { none, miss, hit, revalidated };
const char* to_string(CacheUse use);  // "none", "miss", "hit", "revalidated"

struct Resolution {
    SpawnSpec spec;
    std::string spawn_spec_ref;
    RefKind kind = RefKind::inline_data;
    CacheUse cache = CacheUse::none;
    std::string fetched_url{};                   // the https URL that answered; "" for inline
    std::optional<std::string> agent{};          // set by resolve_agent
    std::string announce_source{};               // "local" or "registry" (resolve_agent)
    std::string activation_mode{};               // of the announce (resolve_agent)
};

class SpawnSpecResolver {
public:
    SpawnSpecResolver(ResolverOptions options, const Clock& clock, AnnounceLookup local_announces);
    ~SpawnSpecResolver();
    SpawnSpecResolver(const SpawnSpecResolver&) = delete;
    SpawnSpecResolver& operator=(const SpawnSpecResolver&) = delete;

    Result<Resolution> resolve_agent(const std::string& nid);
    Result<Resolution> resolve_ref(const std::string& spawn_spec_ref);

    SpawnSpecCache& cache() { return cache_; }

private:
    struct Announced {
        store::Announce announce;
        std::string source;
    };
    Result<Announced> find_announce(const std::string& nid);
    Result<store::Announce> ask_registry(const std::string& nid, const Error& local_error);
    Result<std::string> nwp_to_https(const std::string& ref);
    Result<Resolution> resolve_remote(const std::string& ref, RefKind kind);

    ResolverOptions options_;
    const Clock& clock_;
    AnnounceLookup local_announces_;
    std::unique_ptr<net::DestinationGuard> guard_;
    SpawnSpecCache cache_;
};

}  // namespace nps::spawn
