// SPDX-License-Identifier: Apache-2.0
// SpawnSpecResolver without a network: inline refs, announce lookups and the
// refusals the guard makes before connecting. Fetching over real HTTPS is in
// tests/integration/spawn.
#include <doctest/doctest.h>

#include "nps/spawn/resolver.hpp"

using namespace nps::spawn;
using nps::Result;
using nps::store::Announce;

namespace {

const std::string kAgent = "urn:nps:agent:example.test:worker";

struct Fixture {
    nps::FakeClock clock;
    nps::net::StaticResolver dns;
    std::map<std::string, Result<Announce>> announces;
    SpawnSpecResolver resolver;

    explicit Fixture(ResolverOptions options = {})
        : resolver(with_dns(std::move(options)), clock, [this](const std::string& nid) -> Result<Announce> {
              const auto it = announces.find(nid);
              if (it == announces.end())
                  return nps::protocol_error("NDP-RESOLVE-NOT-FOUND", "No announce for '" + nid + "'");
              return it->second;
          })
    {
    }

    ResolverOptions with_dns(ResolverOptions options)
    {
        options.host_resolver = &dns;
        options.fetch.timeout_ms = 2000;
        return options;
    }

    void announce(const std::string& ref, const std::string& mode = "ephemeral")
    {
        announces.insert_or_assign(kAgent, Announce{.nid = kAgent, .activation_mode = mode, .spawn_spec_ref = ref});
    }
};

std::string failure(const Result<Resolution>& r)
{
    REQUIRE_FALSE(r);
    CHECK(r.error().code == "NOP-SPAWN-SPEC-INVALID");
    return r.error().message;
}

bool contains(const std::string& text, const std::string& part)
{
    return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("resolver: an inline ref resolves without a network")
{
    Fixture f;
    const std::string ref = encode_spawnspec_uri(R"({"image":"busybox","idle_timeout_seconds":5})");
    auto r = f.resolver.resolve_ref(ref);
    REQUIRE_MESSAGE(r, r.error().message);
    CHECK(r->spec.image == "busybox");
    CHECK(r->spec.idle_timeout_seconds == 5u);
    CHECK(r->kind == RefKind::inline_data);
    CHECK(r->cache == CacheUse::none);
    CHECK(r->fetched_url.empty());
    CHECK_FALSE(r->agent);
}

TEST_CASE("resolver: agent NID → local announce → SpawnSpec")
{
    Fixture f;
    f.announce(encode_spawnspec_uri(R"({"image":"busybox"})"));
    auto r = f.resolver.resolve_agent(kAgent);
    REQUIRE_MESSAGE(r, r.error().message);
    CHECK(r->agent == kAgent);
    CHECK(r->announce_source == "local");
    CHECK(r->activation_mode == "ephemeral");
    CHECK(r->spec.image == "busybox");

    f.announce(encode_spawnspec_uri(R"({"image":"busybox"})"), "hybrid");
    CHECK(f.resolver.resolve_agent(kAgent));
}

TEST_CASE("resolver: every agent failure says what failed")
{
    Fixture f;
    CHECK(failure(f.resolver.resolve_agent("not-a-nid")) == "Agent 'not-a-nid': not a NID (urn:nps:…)");
    CHECK(failure(f.resolver.resolve_agent(kAgent)) ==
          "Agent '" + kAgent + "': No announce for '" + kAgent +
              "' (local NDP registry; no spawn.registry_url to ask)");

    f.announces.insert_or_assign(kAgent, nps::protocol_error("NDP-RESOLVE-STALE", "The announce is older than its ttl"));
    CHECK(contains(failure(f.resolver.resolve_agent(kAgent)), "The announce is older than its ttl"));

    f.announces.insert_or_assign(kAgent, nps::internal_error("Failed to resolve: database is locked"));
    CHECK(contains(failure(f.resolver.resolve_agent(kAgent)), "the local NDP registry failed"));

    f.announce("", "resident");
    CHECK(contains(failure(f.resolver.resolve_agent(kAgent)), "is resident"));
    f.announce("");
    CHECK(contains(failure(f.resolver.resolve_agent(kAgent)), "has no spawn_spec_ref"));

    f.announce(encode_spawnspec_uri(R"({"command":["x"]})"));
    const std::string no_image = failure(f.resolver.resolve_agent(kAgent));
    CHECK(contains(no_image, "Agent '" + kAgent + "': spawn_spec_ref 'spawnspec:"));
    CHECK(contains(no_image, "inline SpawnSpec: image: required"));

    f.announce("spawnspec:e30=x");
    CHECK(contains(failure(f.resolver.resolve_agent(kAgent)), "not canonical base64url"));
}

TEST_CASE("resolver: remote refs refused before any connection")
{
    Fixture f;
    f.dns.add("private.example.test", {"10.1.2.3"});
    f.dns.add("mixed.example.test", {"8.8.8.8", "127.0.0.1"});
    f.dns.add("mapped.example.test", {"::ffff:192.168.1.1"});

    CHECK(contains(failure(f.resolver.resolve_ref("http://8.8.8.8/spec.json")), "neither a spawnspec: data URI"));
    CHECK(contains(failure(f.resolver.resolve_ref("https://10.0.0.8/spec.json")),
                   "spawn_spec_ref 'https://10.0.0.8/spec.json': host '10.0.0.8' is not a public address"));
    CHECK(contains(failure(f.resolver.resolve_ref("https://[::1]/spec.json")), "is not a public address"));
    CHECK(contains(failure(f.resolver.resolve_ref("https://[::ffff:169.254.169.254]/s")), "is not a public address"));
    CHECK(contains(failure(f.resolver.resolve_ref("https://100.64.0.1/s")), "is not a public address"));
    CHECK(contains(failure(f.resolver.resolve_ref("https://192.0.2.1/s")), "is not a public address"));
    CHECK(contains(failure(f.resolver.resolve_ref("https://224.0.0.1/s")), "is not a public address"));
    CHECK(contains(failure(f.resolver.resolve_ref("https://0.0.0.0/s")), "is not a public address"));
    CHECK(contains(failure(f.resolver.resolve_ref("https://user:pw@8.8.8.8/s")), "user-info"));
    CHECK(contains(failure(f.resolver.resolve_ref("https://localhost/s")), "is a loopback name"));
    CHECK(contains(failure(f.resolver.resolve_ref("https://0x7f000001/s")), "non-standard numeric address"));
    CHECK(contains(failure(f.resolver.resolve_ref("https://private.example.test/s")),
                   "the host resolves to non-public address '10.1.2.3'"));
    CHECK(contains(failure(f.resolver.resolve_ref("https://mixed.example.test/s")),
                   "the host resolves to non-public address '127.0.0.1'"));
    CHECK(contains(failure(f.resolver.resolve_ref("https://mapped.example.test/s")),
                   "non-public address '::ffff:192.168.1.1'"));
    CHECK(contains(failure(f.resolver.resolve_ref("https://unknown.example.test/s")),
                   "Failed to resolve 'unknown.example.test'"));
    CHECK(contains(failure(f.resolver.resolve_ref("nwp://10.0.0.8/agents/demo")),
                   "(as 'https://10.0.0.8:17433/agents/demo'): host '10.0.0.8' is not a public address"));
    CHECK(contains(failure(f.resolver.resolve_ref("nwp://example.test")), "not an nwp:// URL"));
}

TEST_CASE("resolver: the allowlist admits named private destinations only")
{
    ResolverOptions options;
    options.allow_destinations.push_back(*nps::proto::parse_destination_allow_entry("127.0.0.0/8"));
    Fixture f(options);
    f.dns.add("lan.example.test", {"127.0.0.1"});
    f.dns.add("other.example.test", {"10.2.0.1"});
    // Admitted, so the failure is the connection (nothing listens on port 1):
    // the message is about the transfer, not the policy.
    const std::string lan = failure(f.resolver.resolve_ref("https://lan.example.test:1/s"));
    CHECK_FALSE(contains(lan, "not a public address"));
    CHECK_FALSE(contains(lan, "non-public address"));
    CHECK(contains(lan, "GET 'https://lan.example.test:1/s' failed"));
    CHECK(contains(failure(f.resolver.resolve_ref("https://127.0.0.1:1/s")), "failed"));
    CHECK(contains(failure(f.resolver.resolve_ref("https://other.example.test/s")), "non-public address '10.2.0.1'"));
}
