// SPDX-License-Identifier: Apache-2.0
// The destination guard: static rules, then every DNS answer.
#include <doctest/doctest.h>

#include "nps/net/destination_guard.hpp"

using namespace nps::net;
using nps::proto::DestinationRules;

namespace {

DestinationRules spawn_rules() { return DestinationRules{.error_code = "NOP-SPAWN-SPEC-INVALID"}; }

}  // namespace

TEST_CASE("destination guard: admits a name whose every answer is public")
{
    StaticResolver dns;
    dns.add("specs.example.test", {"8.8.8.8", "2606:4700:4700::1111", "8.8.8.8"});
    const DestinationGuard guard(spawn_rules(), dns);
    auto admitted = guard.admit("https://specs.example.test:8443/a.json", "spawn_spec_ref", 1000);
    REQUIRE_MESSAGE(admitted, admitted.error().message);
    CHECK(admitted->destination.host == "specs.example.test");
    CHECK(admitted->destination.port == 8443);
    CHECK(admitted->addresses.size() == 2);  // duplicates dropped

    auto literal = guard.admit("https://8.8.4.4/a.json", "spawn_spec_ref", 1000);
    REQUIRE(literal);
    CHECK(literal->addresses.size() == 1);
}

TEST_CASE("destination guard: refusals carry the rules' code and say why")
{
    StaticResolver dns;
    dns.add("mixed.example.test", {"8.8.8.8", "169.254.169.254"});
    dns.add("junk.example.test", {"8.8.8.8", "not-an-ip"});
    const DestinationGuard guard(spawn_rules(), dns);
    auto message = [&](const std::string& url) {
        auto r = guard.admit(url, "spawn_spec_ref", 1000);
        REQUIRE_FALSE(r);
        CHECK(r.error().code == "NOP-SPAWN-SPEC-INVALID");
        return r.error().message;
    };
    CHECK(message("https://mixed.example.test/") ==
          "spawn_spec_ref: the host resolves to non-public address '169.254.169.254'");
    CHECK(message("https://nowhere.example.test/") ==
          "spawn_spec_ref: Failed to resolve 'nowhere.example.test': Name or service not known");
    CHECK(message("https://junk.example.test/").find("is not an IP address") != std::string::npos);
    CHECK(message("http://8.8.8.8/") == "spawn_spec_ref: scheme must be https, got 'http'");
}

TEST_CASE("destination guard: the system resolver answers and fails closed")
{
    const DestinationGuard guard(spawn_rules());
    // RFC 6761: .invalid never resolves.
    auto unresolvable = guard.admit("https://spawnspec-test.invalid/", "spawn_spec_ref", 5000);
    REQUIRE_FALSE(unresolvable);
    CHECK(unresolvable.error().code == "NOP-SPAWN-SPEC-INVALID");
    CHECK(unresolvable.error().message.find("Failed to resolve 'spawnspec-test.invalid'") != std::string::npos);

    auto local = system_resolver().resolve("localhost", 5000);
    REQUIRE_MESSAGE(local, local.error().message);
    CHECK_FALSE(local->empty());
    auto allowed = nps::proto::parse_destination_allow_entry("localhost");
    REQUIRE(allowed);
    const DestinationGuard with_localhost(DestinationRules{.error_code = "X", .allow = {*allowed}});
    CHECK(with_localhost.admit("https://localhost/", "u", 5000));
}
