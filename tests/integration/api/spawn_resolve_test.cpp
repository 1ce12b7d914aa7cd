// SPDX-License-Identifier: Apache-2.0
// Black-box SpawnSpec resolution through the real daemon: NDP announces over
// the API and the CLI, then POST /v1/spawnspecs/resolve, the resolution a
// worker spawn performs. TC-N3-Spawn-01 (inline), -02 (https:// from a
// loopback HTTPS server with a test CA, nwp://), -03 (every failure →
// 400 NOP-SPAWN-SPEC-INVALID saying what failed). Failing the DAG node with
// that error is the DAG engine's part; this suite proves the resolution.
#include <doctest/doctest.h>

#include "https_fixture.hpp"
#include "nps/base/digest.hpp"
#include "nps/net/http_client.hpp"
#include "nps/spawn/spec_ref.hpp"
#include "runner_process.hpp"

#include <chrono>
#include <thread>

using nps::test::check_error;
using nps::test::http;
using nps::test::Reply;
using nps::test::Route;
using nps::test::run_command;
using nps::test::RunnerOptions;
using nps::test::RunnerProcess;
using nps::test::SpecServer;
using nps::test::TempDir;
using Json = nlohmann::json;

namespace {

const std::string kSpec = R"({"image":"registry.example.test/worker:1.0","command":["/app/worker","--serve"],
  "env":{"MODE":"test"},"resource_limits":{"cpu":"500m","memory":"512Mi","cgn_budget":50000},
  "idle_timeout_seconds":30,"max_runtime_seconds":300})";

std::string padded_base64url(const std::string& text)
{
    std::string out = nps::base64url_encode(text);
    while (out.size() % 4 != 0)
        out += '=';
    return out;
}

std::string agent(const std::string& name) { return "urn:nps:agent:example.test:" + name; }

struct Setup {
    TempDir dir{"nps-spawn-api"};
    nps::test::TestPki pki = nps::test::make_test_pki(dir.path());
    SpecServer specs{dir.path(), pki};
    SpecServer registry{dir.path(), std::nullopt};  // a remote NDP registry (plain http, operator-configured)
    TempDir state{"nps-spawn-api-state"};
    std::unique_ptr<RunnerProcess> runner;

    explicit Setup(const std::string& extra_config = "")
    {
        const std::string config = "[spawn]\nallow_destinations = [\"127.0.0.1\", \"localhost\"]\nca_file = \"" +
                                   pki.ca_file + "\"\nregistry_url = \"" + registry.url("") + "\"\n" + extra_config;
        runner = std::make_unique<RunnerProcess>(RunnerOptions{.state_dir = state.path(), .config_text = config});
        REQUIRE_MESSAGE(runner->start(), runner->log());
    }

    Reply announce(const std::string& nid, const Json& body)
    {
        return http("PUT", runner->url() + "/v1/ndp/announces/" + nps::net::url_encode(nid), body.dump());
    }
    Reply announce_ref(const std::string& nid, const std::string& ref)
    {
        return announce(nid, Json{{"activation_mode", "ephemeral"}, {"spawn_spec_ref", ref}});
    }
    Reply resolve(const Json& body) { return http("POST", runner->url() + "/v1/spawnspecs/resolve", body.dump()); }
    Reply resolve_agent(const std::string& nid) { return resolve(Json{{"agent", nid}}); }

    std::vector<std::string> cli(std::vector<std::string> args) const
    {
        args.insert(args.end(), {"--server", "unix:" + runner->socket_path(), "--config", state.file("config.toml")});
        return args;
    }
};

// A failed resolution: 400 NOP-SPAWN-SPEC-INVALID (NPS-CLIENT-BAD-PARAM) whose
// message contains `why`.
void check_invalid(const Reply& reply, const std::string& why)
{
    check_error(reply, 400, "NOP-SPAWN-SPEC-INVALID");
    CHECK(reply.body["status"] == "NPS-CLIENT-BAD-PARAM");
    const std::string message = reply.body.value("message", "");
    CHECK_MESSAGE(message.find(why) != std::string::npos, "message: " << message << "\nexpected: " << why);
}

}  // namespace

TEST_CASE("TC-N3-Spawn-01: an inline spawnspec: ref, announced over the CLI and the API, resolves")
{
    Setup s;
    const std::string ref = nps::spawn::encode_spawnspec_uri(kSpec);
    auto put = run_command(s.cli({"announce", agent("inline"), "--spawn-spec", ref, "--ttl", "600"}));
    REQUIRE_MESSAGE(put.exit_status == 0, put.err);
    CHECK(put.out == agent("inline") + " registered\n");

    auto r = s.resolve_agent(agent("inline"));
    REQUIRE_MESSAGE(r.status == 200, r.raw);
    CHECK(r.body["agent"] == agent("inline"));
    CHECK(r.body["announce"] == Json{{"source", "local"}, {"activation_mode", "ephemeral"}});
    CHECK(r.body["source"] == "inline");
    CHECK(r.body["cache"] == "none");
    CHECK(r.body["fetched_url"].is_null());
    CHECK(r.body["spawn_spec"] == Json::parse(kSpec));  // already in normal form
    CHECK(r.body["limits"] == Json{{"cpu_millicores", 500},
                                   {"memory_bytes", 512 << 20},
                                   {"cgn_budget", 50000},
                                   {"idle_timeout_seconds", 30},
                                   {"max_runtime_seconds", 300}});

    // The ref itself, without an agent: padded or not, scheme in any case.
    auto padded = s.resolve(Json{{"spawn_spec_ref", "SPAWNSPEC:" + padded_base64url(R"({"image":"busybox"})")}});
    REQUIRE_MESSAGE(padded.status == 200, padded.raw);
    CHECK(padded.body["spawn_spec"] == Json{{"image", "busybox"}});
    check_invalid(s.resolve(Json{{"spawn_spec_ref", "spawnspec:" + nps::base64_encode("{\"a\":\"\xfb\xff\"}")}}),
                  "not canonical base64url");  // standard base64 ('+', '/') is not base64url
    const std::string json = R"({"oci_image":"busybox","resource_limits":{"memory_mb":64}})";
    auto aliased = s.resolve(Json{{"spawn_spec_ref", "spawnspec:" + padded_base64url(json)}});
    REQUIRE_MESSAGE(aliased.status == 200, aliased.raw);
    CHECK(aliased.body["spawn_spec"] == Json{{"image", "busybox"}, {"resource_limits", {{"memory", "64Mi"}}}});

    auto shown = run_command(s.cli({"announce", "resolve", agent("inline")}));
    REQUIRE_MESSAGE(shown.exit_status == 0, shown.err);
    CHECK(Json::parse(shown.out) == Json::parse(kSpec));
    CHECK(shown.err.find("source inline") != std::string::npos);
}

TEST_CASE("TC-N3-Spawn-02: https:// from a loopback HTTPS server with a test CA, and nwp://")
{
    Setup s;
    s.specs.set("/agents/demo", Route{.headers = {{"Cache-Control", "max-age=300"}}, .body = kSpec, .etag = "\"1\""});
    const std::string https_ref = s.specs.url("/agents/demo");
    REQUIRE(s.announce_ref(agent("https"), https_ref).status == 200);
    auto first = s.resolve_agent(agent("https"));
    REQUIRE_MESSAGE(first.status == 200, first.raw);
    CHECK(first.body["source"] == "https");
    CHECK(first.body["cache"] == "miss");
    CHECK(first.body["fetched_url"] == https_ref);
    CHECK(first.body["spawn_spec"] == Json::parse(kSpec));
    auto again = s.resolve_agent(agent("https"));
    REQUIRE(again.status == 200);
    CHECK(again.body["cache"] == "hit");
    CHECK(s.specs.hits("/agents/demo") == 1);

    // nwp:// without an nwp resolver: https on the URL's host and port.
    const std::string nwp_ref = "nwp://127.0.0.1:" + std::to_string(s.specs.port()) + "/agents/demo";
    REQUIRE(s.announce_ref(agent("nwp"), nwp_ref).status == 200);
    auto nwp = s.resolve_agent(agent("nwp"));
    REQUIRE_MESSAGE(nwp.status == 200, nwp.raw);
    CHECK(nwp.body["source"] == "nwp");
    CHECK(nwp.body["fetched_url"] == https_ref);
    CHECK(nwp.body["spawn_spec"] == Json::parse(kSpec));
}

TEST_CASE("TC-N3-Spawn-02: nwp:// through an nwp resolver, to a host name resolved by the system")
{
    TempDir dir{"nps-spawn-nwp"};
    SpecServer nwp_registry(dir.path(), std::nullopt);
    Setup s("nwp_resolver_url = \"" + nwp_registry.url("") + "\"\n");
    s.specs.set("/agents/demo", Route{.body = kSpec});
    nwp_registry.set("/v1/resolve", Route{.body = Json{{"target", "nwp://spawn.example.test/agents/demo"},
                                                       {"resolved", {{"host", "localhost"}, {"port", s.specs.port()}}}}
                                              .dump()});
    REQUIRE(s.announce_ref(agent("nwp"), "nwp://spawn.example.test/agents/demo").status == 200);
    auto r = s.resolve_agent(agent("nwp"));
    REQUIRE_MESSAGE(r.status == 200, r.raw);
    CHECK(r.body["fetched_url"] == s.specs.url("/agents/demo", "localhost"));
    CHECK(s.specs.requests().back()["host"] == "localhost:" + std::to_string(s.specs.port()));
}

TEST_CASE("TC-N3-Spawn-03: every resolution failure is 400 NOP-SPAWN-SPEC-INVALID saying what failed")
{
    Setup s;
    s.specs.set("/to-private", Route{.status = 302, .headers = {{"Location", "https://169.254.169.254/latest/meta-data"}}});
    s.specs.set("/big", Route{.body_bytes = 64 * 1024 + 1});
    s.specs.set("/not-json", Route{.body = "{\"image\": "});
    s.specs.set("/no-image", Route{.body = R"({"command":["/app/worker"]})"});
    s.specs.set("/gone", Route{.status = 404});

    struct Case {
        std::string name;
        std::string ref;
        std::string why;
    };
    const std::vector<Case> remote = {
        {"unresolvable", "https://spawnspec-test.invalid/spec.json", "Failed to resolve 'spawnspec-test.invalid'"},
        {"private-literal", "https://10.0.0.8/spec.json", "host '10.0.0.8' is not a public address"},
        {"loopback-not-allowed", "https://127.0.0.2:" + std::to_string(s.specs.port()) + "/x",
         "host '127.0.0.2' is not a public address"},
        {"metadata", "https://[::ffff:169.254.169.254]/latest", "is not a public address"},
        {"redirect-to-private", s.specs.url("/to-private"),
         "redirect to 'https://169.254.169.254/latest/meta-data': host '169.254.169.254' is not a public address"},
        {"oversized", s.specs.url("/big"), "the body exceeds 65536 bytes"},
        {"invalid-json", s.specs.url("/not-json"), "is not a valid SpawnSpec: SpawnSpec: not valid JSON"},
        {"schema", s.specs.url("/no-image"), "is not a valid SpawnSpec: image: required"},
        {"not-found", s.specs.url("/gone"), "the server answered HTTP 404"},
        {"nwp-private", "nwp://10.1.1.1/agents/demo", "(as 'https://10.1.1.1:17433/agents/demo'): host '10.1.1.1'"},
    };
    for (const Case& c : remote) {
        CAPTURE(c.name);
        REQUIRE(s.announce_ref(agent(c.name), c.ref).status == 200);
        auto r = s.resolve_agent(agent(c.name));
        check_invalid(r, "Agent '" + agent(c.name) + "': spawn_spec_ref '");
        check_invalid(r, c.why);
    }

    // Each schema violation, inline.
    const std::vector<std::pair<std::string, std::string>> schema = {
        {R"({"command":["/app/worker"]})", "image: required"},
        {R"({"image":"Bad Image"})", "image: 'Bad Image' is not an OCI image reference"},
        {R"({"image":"w","command":"/app/worker"})", "command: expected an array of strings"},
        {R"({"image":"w","command":[]})", "command: must not be empty"},
        {R"({"image":"w","env":{"bad-name":"x"}})", "env: invalid variable name 'bad-name'"},
        {R"({"image":"w","env":{"A":1}})", "env.A: expected a string"},
        {R"({"image":"w","env":{"NPS_ACTION":"x"}})", "reserved"},
        {R"({"image":"w","resource_limits":{"cpu":"lots"}})", "resource_limits.cpu: Invalid CPU quantity 'lots'"},
        {R"({"image":"w","resource_limits":{"memory":"1.5"}})", "resource_limits.memory: Invalid memory quantity"},
        {R"({"image":"w","resource_limits":{"cgn_budget":-1}})", "resource_limits.cgn_budget: must be between 0"},
        {R"({"image":"w","resource_limits":{"disk":"1Gi"}})", "resource_limits.disk: unknown field"},
        {R"({"image":"w","idle_timeout_seconds":0})", "idle_timeout_seconds: must be between 1"},
        {R"({"image":"w","max_runtime_seconds":-1})", "max_runtime_seconds: must be between 1"},
        {R"({"image":"w","idle_timeout_seconds":60,"max_runtime_seconds":30})",
         "idle_timeout_seconds (60) exceeds max_runtime_seconds (30)"},
        {R"({"image":"w","priority":"high"})", "priority: unknown field"},
        {R"({"image":"w","image":"v"})", "duplicate key 'image'"},
    };
    for (const auto& [json, why] : schema) {
        CAPTURE(json);
        check_invalid(s.resolve(Json{{"spawn_spec_ref", nps::spawn::encode_spawnspec_uri(json)}}), why);
    }

    // Announce-level failures.
    check_invalid(s.resolve_agent(agent("never-announced")),
                  "Agent '" + agent("never-announced") + "': No announce for '" + agent("never-announced") +
                      "' (local NDP registry); the registry '");
    REQUIRE(s.announce(agent("resident"), Json{{"activation_mode", "resident"}}).status == 200);
    check_invalid(s.resolve_agent(agent("resident")), "is resident");
    REQUIRE(s.announce(agent("offline"), Json{{"spawn_spec_ref", "spawnspec:e30"}, {"ttl", 0}}).status == 200);
    check_invalid(s.resolve_agent(agent("offline")), "announced itself offline (ttl 0)");
    check_invalid(s.resolve_agent("not-a-nid"), "not a NID");

    // The CLI reports the same.
    auto shown = run_command(s.cli({"announce", "resolve", agent("oversized")}));
    CHECK(shown.exit_status == 1);
    CHECK(shown.err.find("NOP-SPAWN-SPEC-INVALID") != std::string::npos);
    CHECK(shown.err.find("the body exceeds 65536 bytes") != std::string::npos);
}

TEST_CASE("NDP: announce TTL expiry, activation modes and the remote registry")
{
    Setup s;
    const std::string ref = nps::spawn::encode_spawnspec_uri(R"({"image":"busybox"})");
    auto put = run_command(s.cli({"announce", agent("short"), "--spawn-spec", ref, "--ttl", "1"}));
    REQUIRE_MESSAGE(put.exit_status == 0, put.err);
    REQUIRE(s.resolve_agent(agent("short")).status == 200);
    std::this_thread::sleep_for(std::chrono::milliseconds(1200));
    check_invalid(s.resolve_agent(agent("short")), "is older than its ttl of 1 s");

    auto hybrid = run_command(s.cli({"announce", agent("hybrid"), "--spawn-spec", ref, "--activation-mode", "hybrid"}));
    REQUIRE_MESSAGE(hybrid.exit_status == 0, hybrid.err);
    auto r = s.resolve_agent(agent("hybrid"));
    REQUIRE(r.status == 200);
    CHECK(r.body["announce"]["activation_mode"] == "hybrid");
    auto resident = run_command(s.cli({"announce", agent("res"), "--activation-mode", "resident"}));
    CHECK(resident.exit_status == 0);
    CHECK(run_command(s.cli({"announce", agent("x"), "--activation-mode", "sometimes", "--spawn-spec", ref}))
              .exit_status == 2);
    CHECK(run_command(s.cli({"announce", agent("x"), "--spawn-spec", ref, "--ttl", "-1"})).exit_status == 2);

    // Not announced here: the remote registry answers (this runner's API shape).
    s.registry.set("/v1/ndp/resolve", Route{.body = Json{{"nid", agent("remote")},
                                                         {"activation_mode", "ephemeral"},
                                                         {"spawn_spec_ref", ref},
                                                         {"ttl", 60}}
                                                .dump()});
    auto remote = s.resolve_agent(agent("remote"));
    REQUIRE_MESSAGE(remote.status == 200, remote.raw);
    CHECK(remote.body["announce"]["source"] == "registry");
    CHECK(remote.body["spawn_spec"] == Json{{"image", "busybox"}});
}

TEST_CASE("the resolve route validates its body; announces check the ref's syntax")
{
    Setup s;
    const std::string url = s.runner->url() + "/v1/spawnspecs/resolve";
    check_error(http("POST", url, "{}"), 400, "NWP-HTTP-PARAM-INVALID");
    check_error(http("POST", url, Json{{"agent", agent("a")}, {"spawn_spec_ref", "spawnspec:e30"}}.dump()), 400,
                "NWP-HTTP-PARAM-INVALID");
    check_error(http("POST", url, Json{{"agent", agent("a")}, {"extra", 1}}.dump()), 400, "NWP-HTTP-PARAM-INVALID");
    check_error(http("POST", url, Json{{"agent", 7}}.dump()), 400, "NWP-HTTP-PARAM-INVALID");
    check_error(http("POST", url, "not json"), 400, "NWP-HTTP-FRAME-BODY-MALFORMED");
    check_error(http("GET", url), 405, "NWP-HTTP-METHOD-NOT-ALLOWED");
    check_invalid(s.resolve(Json{{"spawn_spec_ref", "spawnspec:" + std::string(70'000, 'A')}}), "longer than 65536");

    for (const char* bad : {"ftp://x/y", "http://8.8.8.8/spec.json", "spawnspec:!!", "https://user:pw@example.com/x", "nwp://example.com"}) {
        CAPTURE(bad);
        auto r = s.announce_ref(agent("bad"), bad);
        check_error(r, 400, "NDP-ANNOUNCE-INVALID");
        CHECK(r.body["message"].get<std::string>().find("spawn_spec_ref") != std::string::npos);
    }
}
