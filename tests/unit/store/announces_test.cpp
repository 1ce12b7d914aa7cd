// SPDX-License-Identifier: Apache-2.0
// The local NDP registry: insert or replace, ttl, stale, offline.
#include "store_fixture.hpp"

using namespace store_test;
using namespace nps::store;

TEST_CASE_FIXTURE(StoreFixture, "announces: insert or replace, ttl, stale and offline")
{
    const std::string agent = "urn:nps:agent:example.com:worker";
    CHECK(error_code_of(store->resolve_announce(agent)) == "NDP-RESOLVE-NOT-FOUND");

    Announce a{.nid = agent,
               .activation_mode = "ephemeral",
               .spawn_spec_ref = "spawnspec:e30",
               .ttl_seconds = 60,
               .body_json = R"({"nid":"x"})"};
    REQUIRE(store->put_announce(a));
    auto got = store->resolve_announce(agent);
    REQUIRE(got);
    CHECK(got->spawn_spec_ref == "spawnspec:e30");
    CHECK(got->ttl_seconds == std::optional<std::uint32_t>(60));
    CHECK(got->announced_at_ms == clock.now_ms());
    CHECK(got->body_json == R"({"nid":"x"})");

    clock.advance_ms(59'999);
    CHECK(store->resolve_announce(agent));
    clock.advance_ms(1);
    CHECK(error_code_of(store->resolve_announce(agent)) == "NDP-RESOLVE-STALE");

    a.spawn_spec_ref = "https://example.com/spec.json";
    a.ttl_seconds.reset();  // no expiry
    REQUIRE(store->put_announce(a));
    clock.advance_ms(365LL * 24 * 3600 * 1000);
    got = store->resolve_announce(agent);
    REQUIRE(got);
    CHECK(got->spawn_spec_ref == "https://example.com/spec.json");
    CHECK_FALSE(got->ttl_seconds);

    a.ttl_seconds = 0;  // offline
    REQUIRE(store->put_announce(a));
    CHECK(error_code_of(store->resolve_announce(agent)) == "NDP-RESOLVE-NOT-FOUND");

    REQUIRE(store->put_announce({.nid = "urn:nps:agent:example.com:a",
                                 .activation_mode = "resident",
                                 .spawn_spec_ref = "spawnspec:e30",
                                 .body_json = "{}"}));
    auto list = store->list_announces();
    REQUIRE(list);
    REQUIRE(list->size() == 2);
    CHECK(list->front().nid == "urn:nps:agent:example.com:a");
}
