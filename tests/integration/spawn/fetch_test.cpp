// SPDX-License-Identifier: Apache-2.0
// SpawnSpecResolver over real HTTPS: a python3 server on 127.0.0.1 with a
// certificate from a test CA, reached through the operator allowlist. Checks
// the pinning (a name only our resolver knows still connects, and the
// certificate is verified for that name), every refusal of the destination
// rules on redirects, the size and time limits, and the HTTP cache.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "https_fixture.hpp"
#include "runner_process.hpp"
#include "nps/spawn/resolver.hpp"
#include "temp_dir.hpp"

using namespace nps::spawn;
using nps::test::Route;
using nps::test::SpecServer;
using nps::test::TempDir;
using nps::test::TestPki;
using Json = nlohmann::json;

namespace {

const std::string kSpec = R"({"image":"registry.example.test/worker:1.0","command":["/app/worker"],
  "resource_limits":{"cpu":"500m","memory":"64Mi"},"idle_timeout_seconds":30,"max_runtime_seconds":300})";

struct Env {
    TempDir dir{"nps-spawn-fetch"};
    TestPki pki = nps::test::make_test_pki(dir.path());
    SpecServer server{dir.path(), pki};
    nps::FakeClock clock;
    nps::net::StaticResolver dns;

    Env()
    {
        dns.add("specs.example.test", {"127.0.0.1"});
        dns.add("wrong.example.test", {"127.0.0.1"});
    }

    ResolverOptions options(std::initializer_list<const char*> allow = {"127.0.0.1"})
    {
        ResolverOptions o;
        for (const char* entry : allow)
            o.allow_destinations.push_back(*nps::proto::parse_destination_allow_entry(entry));
        o.ca_file = pki.ca_file;
        o.host_resolver = &dns;
        o.fetch.timeout_ms = 30'000;  // generous: CI machines are shared and loaded
        return o;
    }

    std::unique_ptr<SpawnSpecResolver> resolver(ResolverOptions o)
    {
        return std::make_unique<SpawnSpecResolver>(std::move(o), clock, nullptr);
    }
    std::unique_ptr<SpawnSpecResolver> resolver() { return resolver(options()); }
};

std::string failure(const nps::Result<Resolution>& r)
{
    REQUIRE_MESSAGE(!r, "resolved to " << (r ? r->spec.image : ""));
    CHECK(r.error().code == "NOP-SPAWN-SPEC-INVALID");
    return r.error().message;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("fetch: https from the loopback server, allowlisted, verified against the test CA")
{
    Env env;
    env.server.set("/spec.json", Route{.headers = {{"Cache-Control", "max-age=60"}}, .body = kSpec});
    auto resolver = env.resolver();
    const std::string url = env.server.url("/spec.json");
    auto first = resolver->resolve_ref(url);
    REQUIRE_MESSAGE(first, first.error().message);
    CHECK(first->spec.image == "registry.example.test/worker:1.0");
    CHECK(first->spec.memory_bytes == 64LL << 20);
    CHECK(first->kind == RefKind::https);
    CHECK(first->cache == CacheUse::miss);
    CHECK(first->fetched_url == url);

    // Fresh for 60 s: the second resolution does not reach the server.
    auto second = resolver->resolve_ref(url);
    REQUIRE(second);
    CHECK(second->cache == CacheUse::hit);
    CHECK(second->spec == first->spec);
    CHECK(env.server.hits("/spec.json") == 1);
    CHECK(env.server.requests().at(0)["accept"] == "application/json");
}

TEST_CASE("fetch: the connection is pinned to the checked address; SNI and the certificate use the name")
{
    Env env;
    env.server.set("/spec.json", Route{.body = kSpec});
    // specs.example.test resolves only in our resolver: curl must use the
    // pinned address, and verifies the certificate for that name.
    auto resolver = env.resolver();
    auto named = resolver->resolve_ref(env.server.url("/spec.json", "specs.example.test"));
    REQUIRE_MESSAGE(named, named.error().message);
    CHECK(env.server.requests().back()["host"] == "specs.example.test:" + std::to_string(env.server.port()));

    // Same address, a name the certificate does not carry: refused by TLS.
    const std::string wrong = failure(resolver->resolve_ref(env.server.url("/spec.json", "wrong.example.test")));
    CHECK(contains(wrong, "wrong.example.test"));
    CHECK(contains(wrong, "failed"));
}

TEST_CASE("fetch: a certificate from another CA, or the system store, is refused")
{
    Env env;
    env.server.set("/spec.json", Route{.body = kSpec});
    auto other = env.options();
    other.ca_file = env.pki.other_ca_file;
    CHECK(contains(failure(env.resolver(other)->resolve_ref(env.server.url("/spec.json"))), "certificate"));
    auto system = env.options();
    system.ca_file.reset();
    CHECK(contains(failure(env.resolver(system)->resolve_ref(env.server.url("/spec.json"))), "certificate"));
    CHECK(env.server.hits("/spec.json") == 0);

    auto missing = env.options();
    missing.ca_file = env.dir.file("absent.pem");
    CHECK(contains(failure(env.resolver(missing)->resolve_ref(env.server.url("/spec.json"))),
                   "Failed to read the CA file '" + env.dir.file("absent.pem") + "'"));
    nps::test::write_file(env.dir.file("empty.pem"), "not a certificate\n");
    auto empty = env.options();
    empty.ca_file = env.dir.file("empty.pem");
    CHECK(contains(failure(env.resolver(empty)->resolve_ref(env.server.url("/spec.json"))), "No PEM certificate in the CA file"));
}

TEST_CASE("fetch: without the allowlist the loopback server is never contacted")
{
    Env env;
    env.server.set("/spec.json", Route{.body = kSpec});
    auto resolver = env.resolver(env.options({}));
    CHECK(contains(failure(resolver->resolve_ref(env.server.url("/spec.json"))),
                   "host '127.0.0.1' is not a public address"));
    CHECK(contains(failure(resolver->resolve_ref(env.server.url("/spec.json", "specs.example.test"))),
                   "the host resolves to non-public address '127.0.0.1'"));
    CHECK(contains(failure(resolver->resolve_ref(env.server.url("/spec.json", "localhost"))),
                   "host 'localhost' is a loopback name"));
    CHECK(env.server.requests().empty());
}

TEST_CASE("fetch: every redirect is a new destination, checked before it is followed")
{
    Env env;
    env.server.set("/spec.json", Route{.body = kSpec});
    env.server.set("/a", Route{.status = 302, .headers = {{"Location", "/b"}}});
    env.server.set("/b", Route{.status = 301, .headers = {{"Location", env.server.url("/spec.json", "specs.example.test")}}});
    env.server.set("/to-private", Route{.status = 302, .headers = {{"Location", "https://169.254.169.254/latest"}}});
    env.server.set("/to-private-name", Route{.status = 307, .headers = {{"Location", "https://private.example.test/x"}}});
    env.server.set("/to-http", Route{.status = 308, .headers = {{"Location", env.server.url("/spec.json").replace(0, 5, "http")}}});
    env.server.set("/loop", Route{.status = 302, .headers = {{"Location", "/loop"}}});
    env.server.set("/no-location", Route{.status = 302});
    env.dns.add("private.example.test", {"192.168.7.7"});
    auto resolver = env.resolver();

    auto followed = resolver->resolve_ref(env.server.url("/a"));
    REQUIRE_MESSAGE(followed, followed.error().message);
    CHECK(followed->fetched_url == env.server.url("/spec.json", "specs.example.test"));

    CHECK(contains(failure(resolver->resolve_ref(env.server.url("/to-private"))),
                   "redirect to 'https://169.254.169.254/latest': host '169.254.169.254' is not a public address"));
    CHECK(contains(failure(resolver->resolve_ref(env.server.url("/to-private-name"))),
                   "the host resolves to non-public address '192.168.7.7'"));
    CHECK(contains(failure(resolver->resolve_ref(env.server.url("/to-http"))), "scheme must be https, got 'http'"));
    CHECK(contains(failure(resolver->resolve_ref(env.server.url("/loop"))), "more than 5 redirects"));
    CHECK(env.server.hits("/loop") == 6);
    CHECK(contains(failure(resolver->resolve_ref(env.server.url("/no-location"))), "without a Location"));

    auto no_redirects = env.options();
    no_redirects.fetch.max_redirects = 0;
    CHECK(contains(failure(env.resolver(no_redirects)->resolve_ref(env.server.url("/a"))), "more than 0 redirects"));
}

TEST_CASE("fetch: size, time, status and content failures")
{
    Env env;
    auto options = env.options();
    options.fetch.max_body_bytes = 1024;
    options.fetch.timeout_ms = 1000;
    auto resolver = env.resolver(options);

    env.server.set("/big", Route{.body_bytes = 1025});
    CHECK(contains(failure(resolver->resolve_ref(env.server.url("/big"))), "the body exceeds 1024 bytes"));
    env.server.set("/fits", Route{.body = std::string(1024 - 20, ' ') + R"({"image":"busybox"})"});
    CHECK(resolver->resolve_ref(env.server.url("/fits")));

    env.server.set("/slow", Route{.body = kSpec, .delay_ms = 3000});
    CHECK(contains(failure(resolver->resolve_ref(env.server.url("/slow"))), "failed"));

    CHECK(contains(failure(resolver->resolve_ref(env.server.url("/missing"))), "the server answered HTTP 404"));
    env.server.set("/error", Route{.status = 500, .body = "boom"});
    CHECK(contains(failure(resolver->resolve_ref(env.server.url("/error"))), "the server answered HTTP 500"));

    env.server.set("/not-json", Route{.body = "<html>hello</html>"});
    CHECK(contains(failure(resolver->resolve_ref(env.server.url("/not-json"))),
                   "is not a valid SpawnSpec: SpawnSpec: not valid JSON"));
    env.server.set("/no-image", Route{.body = R"({"command":["/app/worker"]})"});
    CHECK(contains(failure(resolver->resolve_ref(env.server.url("/no-image"))),
                   "is not a valid SpawnSpec: image: required"));
    env.server.set("/idle-over-max", Route{.body = R"({"image":"w","idle_timeout_seconds":60,"max_runtime_seconds":30})"});
    CHECK(contains(failure(resolver->resolve_ref(env.server.url("/idle-over-max"))), "exceeds max_runtime_seconds"));
    CHECK(resolver->cache().size() == 0);  // failures are never cached
}

TEST_CASE("fetch: ETag revalidation and max-age")
{
    Env env;
    env.server.set("/spec.json", Route{.headers = {{"Cache-Control", "no-cache"}}, .body = kSpec, .etag = "\"v1\""});
    auto resolver = env.resolver();
    const std::string url = env.server.url("/spec.json");

    auto first = resolver->resolve_ref(url);
    REQUIRE_MESSAGE(first, first.error().message);
    CHECK(first->cache == CacheUse::miss);
    auto second = resolver->resolve_ref(url);
    REQUIRE_MESSAGE(second, second.error().message);
    CHECK(second->cache == CacheUse::revalidated);
    CHECK(second->spec == first->spec);
    auto requests = env.server.requests();
    REQUIRE(requests.size() == 2);
    CHECK(requests[0]["if_none_match"].is_null());
    CHECK(requests[1]["if_none_match"] == "\"v1\"");

    // The content changes: the validator no longer matches, the new spec is used.
    env.server.set("/spec.json", Route{.headers = {{"Cache-Control", "max-age=30"}},
                                       .body = R"({"image":"registry.example.test/worker:2.0"})",
                                       .etag = "\"v2\""});
    auto third = resolver->resolve_ref(url);
    REQUIRE(third);
    CHECK(third->cache == CacheUse::miss);
    CHECK(third->spec.image == "registry.example.test/worker:2.0");
    CHECK(resolver->resolve_ref(url)->cache == CacheUse::hit);
    env.clock.advance_ms(31'000);
    auto expired = resolver->resolve_ref(url);
    REQUIRE(expired);
    CHECK(expired->cache == CacheUse::revalidated);
    CHECK(env.server.requests().back()["if_none_match"] == "\"v2\"");
    CHECK(env.server.hits("/spec.json") == 4);

    // no-store: never kept.
    env.server.set("/nostore", Route{.headers = {{"Cache-Control", "no-store"}}, .body = kSpec, .etag = "\"x\""});
    CHECK(resolver->resolve_ref(env.server.url("/nostore"))->cache == CacheUse::miss);
    CHECK(resolver->resolve_ref(env.server.url("/nostore"))->cache == CacheUse::miss);
}

TEST_CASE("fetch: nwp:// maps to https on the URL's host and port, or where the nwp resolver says")
{
    Env env;
    env.server.set("/agents/demo", Route{.body = kSpec});
    auto resolver = env.resolver();
    const std::string direct = "nwp://127.0.0.1:" + std::to_string(env.server.port()) + "/agents/demo";
    auto r = resolver->resolve_ref(direct);
    REQUIRE_MESSAGE(r, r.error().message);
    CHECK(r->kind == RefKind::nwp);
    CHECK(r->fetched_url == env.server.url("/agents/demo"));

    SpecServer registry(env.dir.path(), std::nullopt);  // plain http: an operator-configured service
    registry.set("/v1/resolve", Route{.body = Json{{"target", "nwp://spawn.example.test/agents/demo"},
                                                   {"resolved", {{"host", "specs.example.test"},
                                                                 {"port", env.server.port()},
                                                                 {"ttl", 300}}}}
                                          .dump()});
    auto options = env.options();
    options.nwp_resolver_url = registry.url("/");
    auto via_registry = env.resolver(options)->resolve_ref("nwp://spawn.example.test/agents/demo");
    REQUIRE_MESSAGE(via_registry, via_registry.error().message);
    CHECK(via_registry->fetched_url == env.server.url("/agents/demo", "specs.example.test"));
    const auto asked = registry.requests().at(0);
    CHECK(asked["path"] == "/v1/resolve");
    CHECK(asked["query"] == "target=nwp%3A%2F%2Fspawn.example.test%2Fagents%2Fdemo");

    registry.set("/v1/resolve", Route{.body = Json{{"resolved", {{"host", "10.9.9.9"}, {"port", 443}}}}.dump()});
    CHECK(contains(failure(env.resolver(options)->resolve_ref("nwp://spawn.example.test/agents/demo")),
                   "(as 'https://10.9.9.9:443/agents/demo'): host '10.9.9.9' is not a public address"));
    registry.set("/v1/resolve", Route{.status = 404, .body = R"({"error":"NDP-RESOLVE-NOT-FOUND"})"});
    CHECK(contains(failure(env.resolver(options)->resolve_ref("nwp://spawn.example.test/agents/demo")),
                   "the nwp resolver '" + registry.url("/v1/resolve") + "?target="));
    registry.set("/v1/resolve", Route{.body = R"({"resolved":{"host":"x y","port":0}})"});
    CHECK(contains(failure(env.resolver(options)->resolve_ref("nwp://spawn.example.test/agents/demo")),
                   "unusable resolution"));
}

TEST_CASE("fetch: an agent not announced locally is looked up in the remote registry")
{
    Env env;
    env.server.set("/spec.json", Route{.body = kSpec});
    SpecServer registry(env.dir.path(), std::nullopt);
    const std::string agent = "urn:nps:agent:example.test:remote";
    registry.set("/v1/ndp/resolve", Route{.body = Json{{"nid", agent},
                                                       {"activation_mode", "ephemeral"},
                                                       {"spawn_spec_ref", env.server.url("/spec.json")},
                                                       {"ttl", 60}}
                                              .dump()});
    auto options = env.options();
    options.registry_url = registry.url("");
    SpawnSpecResolver resolver(options, env.clock, nullptr);
    auto r = resolver.resolve_agent(agent);
    REQUIRE_MESSAGE(r, r.error().message);
    CHECK(r->announce_source == "registry");
    CHECK(r->spec.image == "registry.example.test/worker:1.0");
    CHECK(registry.requests().at(0)["query"] == "nid=urn%3Anps%3Aagent%3Aexample.test%3Aremote");

    const std::string other = "urn:nps:agent:example.test:other";
    CHECK(contains(failure(resolver.resolve_agent(other)), "is for '" + agent + "', not the NID asked for"));
    registry.set("/v1/ndp/resolve", Route{.status = 404, .body = R"({"error":"NDP-RESOLVE-NOT-FOUND"})"});
    CHECK(contains(failure(resolver.resolve_agent(agent)), "does not know it either (HTTP 404)"));
}
