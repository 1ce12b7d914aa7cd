// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include "nps/spawn/spec_cache.hpp"

using namespace nps::spawn;
using Headers = std::map<std::string, std::string>;

TEST_CASE("spec cache: freshness from Cache-Control and Age")
{
    const std::int64_t cap = 3600;
    CHECK(freshness_from_headers({{"cache-control", "max-age=60"}}, false, cap).fresh_for_ms == 60'000);
    CHECK(freshness_from_headers({{"cache-control", "max-age=60"}}, false, cap).storable);
    CHECK(freshness_from_headers({{"cache-control", "public, MAX-AGE = 120 , must-revalidate"}}, true, cap)
              .fresh_for_ms == 120'000);
    CHECK(freshness_from_headers({{"cache-control", "max-age=\"30\""}}, false, cap).fresh_for_ms == 30'000);
    CHECK(freshness_from_headers({{"cache-control", "max-age=100, max-age=10"}}, false, cap).fresh_for_ms == 10'000);
    CHECK(freshness_from_headers({{"cache-control", "max-age=100"}, {"age", "30"}}, false, cap).fresh_for_ms ==
          70'000);
    CHECK(freshness_from_headers({{"cache-control", "max-age=999999999999"}}, false, cap).fresh_for_ms ==
          cap * 1000);  // capped

    // Stored but revalidated on every use.
    const auto no_cache = freshness_from_headers({{"cache-control", "no-cache, max-age=60"}}, true, cap);
    CHECK(no_cache.storable);
    CHECK(no_cache.fresh_for_ms == 0);
    CHECK(freshness_from_headers({}, true, cap).storable);
    CHECK(freshness_from_headers({}, true, cap).fresh_for_ms == 0);
    CHECK(freshness_from_headers({{"cache-control", "max-age=abc"}}, true, cap).fresh_for_ms == 0);
    CHECK(freshness_from_headers({{"cache-control", "max-age=60"}, {"age", "600"}}, true, cap).fresh_for_ms == 0);

    // Not stored.
    CHECK_FALSE(freshness_from_headers({{"cache-control", "no-store, max-age=60"}}, true, cap).storable);
    CHECK_FALSE(freshness_from_headers({}, false, cap).storable);
    CHECK_FALSE(freshness_from_headers({{"cache-control", "no-cache"}}, false, cap).storable);
    CHECK_FALSE(freshness_from_headers({{"cache-control", "max-age=60"}}, false, 0).storable);
}

TEST_CASE("spec cache: validators must be printable and bounded")
{
    CHECK(usable_validator("\"abc\"") == "\"abc\"");
    CHECK(usable_validator("W/\"v1\"") == "W/\"v1\"");
    CHECK(usable_validator("Tue, 15 Nov 1994 12:45:26 GMT"));
    CHECK_FALSE(usable_validator(""));
    CHECK_FALSE(usable_validator("a\rb"));
    CHECK_FALSE(usable_validator("caf\xc3\xa9"));
    CHECK_FALSE(usable_validator(std::string(2000, 'a')));
}

TEST_CASE("spec cache: least recently used entries leave first")
{
    SpawnSpecCache cache(2);
    auto entry = [](const std::string& image) { return CachedSpec{.spec = SpawnSpec{.image = image}}; };
    cache.put("a", entry("a"));
    cache.put("b", entry("b"));
    CHECK(cache.get("a"));  // a is now the most recent
    cache.put("c", entry("c"));
    CHECK(cache.size() == 2);
    CHECK(cache.get("a")->spec.image == "a");
    CHECK_FALSE(cache.get("b"));
    CHECK(cache.get("c"));
    cache.put("a", entry("a2"));
    CHECK(cache.get("a")->spec.image == "a2");
    cache.erase("a");
    CHECK_FALSE(cache.get("a"));
    CHECK(cache.size() == 1);

    SpawnSpecCache off(0);
    off.put("a", entry("a"));
    CHECK(off.size() == 0);
}
