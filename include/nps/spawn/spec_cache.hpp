// SPDX-License-Identifier: Apache-2.0
// The cache of resolved remote SpawnSpecs, so a busy agent is not fetched on
// every spawn. In memory, per process, bounded (least recently used entries
// leave first), thread-safe. It holds validated SpawnSpecs, never raw bodies.
//
// HTTP semantics (a private cache, RFC 9111 subset; docs/spawnspec.md):
//  - Cache-Control no-store: not stored. no-cache: stored, revalidated on
//    every use. max-age=N: fresh for N seconds minus the Age header, capped
//    at the configured maximum. Nothing: stored only when it has a validator,
//    and revalidated on every use. Expires and Pragma are not consulted.
//  - Validators: ETag → If-None-Match, Last-Modified → If-Modified-Since;
//    kept only when printable ASCII of at most limits::kMaxHttpValidatorChars.
//  - A stale entry is never served when revalidation fails: resolution fails.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "nps/spawn/spawn_spec.hpp"

namespace nps::spawn {

struct CachedSpec {
    SpawnSpec spec;
    std::string final_url;                     // the URL that answered (after redirects)
    std::optional<std::string> etag{};
    std::optional<std::string> last_modified{};
    std::int64_t fresh_until_ms = 0;           // Clock time; ≤ now means "revalidate first"
};

struct Freshness {
    bool storable = false;     // false: no-store, or nothing that makes an entry useful
    std::int64_t fresh_for_ms = 0;
};

// Reads Cache-Control and Age (lower-case header names, as the fetcher
// returns them). `has_validator` says whether ETag or Last-Modified is usable.
Freshness freshness_from_headers(const std::map<std::string, std::string>& headers, bool has_validator,
                                 std::int64_t max_age_cap_seconds);

// The header value when it can be sent back as a validator, else nullopt.
std::optional<std::string> usable_validator(std::string_view value);

class SpawnSpecCache {
public:
    explicit SpawnSpecCache(std::size_t max_entries);

    // The entry for `key` (the spawn_spec_ref), refreshed as most recently used.
    std::optional<CachedSpec> get(const std::string& key);
    // Inserts or replaces; evicts the least recently used entry beyond max.
    // No-op when max_entries is 0.
    void put(const std::string& key, CachedSpec entry);
    void erase(const std::string& key);
    std::size_t size() const;

private:
    using Lru = std::list<std::pair<std::string, CachedSpec>>;
    const std::size_t max_entries_;
    mutable std::mutex mutex_;
    Lru entries_;  // front: most recently used
    std::unordered_map<std::string, Lru::iterator> index_;
};

}  // namespace nps::spawn
