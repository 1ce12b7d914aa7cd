// SPDX-License-Identifier: Apache-2.0
// SpawnSpec schema: the CR-0007 fields, the NDP aliases, extensions, and a
// negative case for every field.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "nps/base/limits.hpp"
#include "nps/spawn/spawn_spec.hpp"

using namespace nps::spawn;
using Json = nlohmann::json;

namespace {

constexpr std::size_t kMax = nps::limits::kDefaultSpawnSpecBytes;

const char* const kFull = R"({"image": "registry.example.test/worker:1.0",
  "command": ["/app/worker", "--serve"],
  "env": {"MODE": "test"},
  "resource_limits": {"cpu": "500m", "memory": "512Mi", "cgn_budget": 50000},
  "idle_timeout_seconds": 30, "max_runtime_seconds": 300})";

// The error message of a rejected document (fails the test if accepted).
std::string rejection(const std::string& json)
{
    auto r = parse_spawn_spec(json, kMax);
    REQUIRE_MESSAGE(!r, "accepted: " << json);
    CHECK(r.error().code == "NOP-SPAWN-SPEC-INVALID");
    return r.error().message;
}

std::string with(const std::string& members) { return R"({"image": "busybox", )" + members + "}"; }

}  // namespace

TEST_CASE("spawn spec: the full portable document (vector nop.spawnspec.001)")
{
    auto spec = parse_spawn_spec(kFull, kMax);
    REQUIRE_MESSAGE(spec, spec.error().message);
    CHECK(spec->image == "registry.example.test/worker:1.0");
    CHECK(spec->command == std::vector<std::string>{"/app/worker", "--serve"});
    CHECK(spec->env == std::map<std::string, std::string>{{"MODE", "test"}});
    CHECK(spec->cpu_millicores == 500);
    CHECK(spec->memory_bytes == 512LL << 20);
    CHECK(spec->cgn_budget == 50000);
    CHECK(spec->idle_timeout_seconds == 30u);
    CHECK(spec->max_runtime_seconds == 300u);
    CHECK(spec->extensions.empty());
    CHECK(validate_spawn_spec(*spec));
}

TEST_CASE("spawn spec: only image is required; explicit nulls are absent")
{
    auto spec = parse_spawn_spec(R"({"image":"busybox"})", kMax);
    REQUIRE(spec);
    CHECK(spec->command.empty());
    CHECK(spec->env.empty());
    CHECK_FALSE(spec->cpu_millicores);
    CHECK_FALSE(spec->memory_bytes);
    CHECK_FALSE(spec->cgn_budget);
    CHECK_FALSE(spec->idle_timeout_seconds);
    CHECK_FALSE(spec->max_runtime_seconds);
    auto nulls = parse_spawn_spec(R"({"image":"busybox","command":null,"env":null,"resource_limits":null,
        "idle_timeout_seconds":null,"max_runtime_seconds":null})", kMax);
    REQUIRE(nulls);
    CHECK(*nulls == *spec);
}

TEST_CASE("spawn spec: image references")
{
    for (const char* ok : {"busybox", "busybox:1.36", "registry.example.test/worker:1.0", "localhost:5000/a/b",
                           "Registry.Example.com/team/app", "ghcr.io/org/app@sha256:"
                                                            "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                           "app:v1@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}) {
        CAPTURE(ok);
        CHECK(is_valid_image_reference(ok));
    }
    for (const char* bad : {"", "Busybox", "busy box", "app:", ":tag", "app@sha256:abc", "app@md5:0123",
                            "/abs/path", "app:tag:again", "app//x"}) {
        CAPTURE(bad);
        CHECK_FALSE(is_valid_image_reference(bad));
    }
}

TEST_CASE("spawn spec: a negative case for every field")
{
    struct Case {
        std::string json;
        std::string message;
    };
    const std::vector<Case> cases = {
        // document
        {"", "SpawnSpec: not valid JSON"},
        {"[]", "SpawnSpec: expected an object, got an array"},
        {"{\"image\":\"busybox\"", "SpawnSpec: not valid JSON"},
        {R"({"image":"busybox","image":"alpine"})", "SpawnSpec: duplicate key 'image'"},
        {R"({"image":"busybox","extra":1})", "extra: unknown field"},
        {"{\"image\":\"bus\xff\"}", "SpawnSpec: not valid JSON"},
        // image
        {R"({"command":["/app/worker"]})", "image: required"},
        {R"({"image":null})", "image: required"},
        {R"({"image":42})", "image: expected a string, got a number"},
        {R"({"image":""})", "image: must not be empty"},
        {R"({"image":"Not An Image"})", "image: 'Not An Image' is not an OCI image reference"},
        {R"({"image":"busybox","oci_image":"busybox"})", "oci_image: give either image or oci_image, not both"},
        // command
        {with(R"("command":"/bin/sh")"), "command: expected an array of strings, got a string"},
        {with(R"("command":[])"), "command: must not be empty"},
        {with(R"("command":["/bin/sh",1])"), "command[1]: expected a string, got a number"},
        {with(R"("command":[""])"), "command[0]: the program (first entry) must not be empty"},
        {with(R"("command":["/bin/sh","a\u0000b"])"), "command[1]: contains a NUL character"},
        // env
        {with(R"("env":["A=1"])"), "env: expected an object, got an array"},
        {with(R"("env":{"1A":"x"})"), "env: invalid variable name '1A'"},
        {with(R"("env":{"A-B":"x"})"), "env: invalid variable name 'A-B'"},
        {with(R"("env":{"":"x"})"), "env: invalid variable name ''"},
        {with(R"("env":{"NPS_TASK_ID":"x"})"), "env: variable 'NPS_TASK_ID' is reserved"},
        {with(R"("env":{"A":1})"), "env.A: expected a string, got a number"},
        {with(R"("env":{"A":null})"), "env.A: expected a string, got null"},
        {with(R"("env":{"A":"x\u0000"})"), "env.A: contains a NUL character"},
        {with(R"("env":{"A":"1","A":"2"})"), "env: duplicate key 'A'"},
        // resource_limits
        {with(R"("resource_limits":"500m")"), "resource_limits: expected an object, got a string"},
        {with(R"("resource_limits":{"cpu":0.5})"), "resource_limits.cpu: expected a string, got a number"},
        {with(R"("resource_limits":{"cpu":"half"})"), "resource_limits.cpu: Invalid CPU quantity 'half'"},
        {with(R"("resource_limits":{"cpu":"-1"})"), "resource_limits.cpu: Invalid CPU quantity '-1'"},
        {with(R"("resource_limits":{"cpu":"0.5m"})"), "not a whole number of millicores"},
        {with(R"("resource_limits":{"cpu":"5m"})"), "resource_limits.cpu: 5 millicores is below the minimum of 10m"},
        {with(R"("resource_limits":{"cpu":"0"})"), "resource_limits.cpu: 0 millicores is below the minimum"},
        {with(R"("resource_limits":{"memory":512})"), "resource_limits.memory: expected a string, got a number"},
        {with(R"("resource_limits":{"memory":"512MB"})"), "resource_limits.memory: Invalid memory quantity '512MB'"},
        {with(R"("resource_limits":{"memory":"1.5"})"), "not a whole number of bytes"},
        {with(R"("resource_limits":{"memory":"1Ki"})"), "resource_limits.memory: 1024 bytes is below the minimum of 1Mi"},
        {with(R"("resource_limits":{"memory":"9Ei"})"), "resource_limits.memory: Invalid memory quantity '9Ei': out of range"},
        {with(R"("resource_limits":{"cgn_budget":-1})"), "resource_limits.cgn_budget: must be between 0 and"},
        {with(R"("resource_limits":{"cgn_budget":1.5})"), "resource_limits.cgn_budget: expected an integer, got a number "
                                                          "with a fraction or exponent"},
        {with(R"("resource_limits":{"cgn_budget":"50000"})"), "resource_limits.cgn_budget: expected an integer, got a string"},
        {with(R"("resource_limits":{"cgn_budget":18446744073709551615})"), "resource_limits.cgn_budget: must be between"},
        {with(R"("resource_limits":{"gpu":"1"})"), "resource_limits.gpu: unknown field"},
        {with(R"("resource_limits":{"cpu":"1","cpu_millicores":1000})"),
         "resource_limits.cpu_millicores: give either cpu or cpu_millicores, not both"},
        {with(R"("resource_limits":{"memory":"1Gi","memory_mb":1024})"),
         "resource_limits.memory_mb: give either memory or memory_mb, not both"},
        {with(R"("resource_limits":{"cpu_millicores":"500"})"), "resource_limits.cpu_millicores: expected an integer"},
        {with(R"("resource_limits":{"cpu_millicores":5})"), "below the minimum of 10m"},
        {with(R"("resource_limits":{"memory_mb":0})"), "resource_limits.memory_mb: must be between 1 and"},
        // timeouts
        {with(R"("idle_timeout_seconds":0)"), "idle_timeout_seconds: must be between 1 and 2147483647, got 0"},
        {with(R"("idle_timeout_seconds":-5)"), "idle_timeout_seconds: must be between 1 and"},
        {with(R"("idle_timeout_seconds":"30")"), "idle_timeout_seconds: expected an integer, got a string"},
        {with(R"("idle_timeout_seconds":2.5)"), "idle_timeout_seconds: expected an integer, got a number"},
        {with(R"("max_runtime_seconds":0)"), "max_runtime_seconds: must be between 1 and"},
        {with(R"("max_runtime_seconds":2147483648)"), "max_runtime_seconds: must be between 1 and 2147483647"},
        {with(R"("max_runtime_seconds":true)"), "max_runtime_seconds: expected an integer, got a boolean"},
        {with(R"("idle_timeout_seconds":60,"max_runtime_seconds":30)"),
         "idle_timeout_seconds: idle_timeout_seconds (60) exceeds max_runtime_seconds (30)"},
    };
    for (const Case& c : cases) {
        CAPTURE(c.json);
        const std::string message = rejection(c.json);
        CHECK_MESSAGE(message.find(c.message) != std::string::npos, "message: " << message);
    }
}

TEST_CASE("spawn spec: size, depth and count limits")
{
    std::string big = with(R"("env":{"A":")" + std::string(kMax, 'x') + "\"}");
    CHECK(rejection(big).find("more than the limit of") != std::string::npos);

    std::string deep = R"({"image":"busybox","x-deep":)";
    for (int i = 0; i < 40; ++i)
        deep += "[";
    for (int i = 0; i < 40; ++i)
        deep += "]";
    deep += "}";
    CHECK(rejection(deep).find("nested deeper than") != std::string::npos);

    Json args = Json::array();
    for (std::size_t i = 0; i <= nps::limits::kMaxSpawnSpecArgs; ++i)
        args.push_back("a");
    CHECK(rejection(Json{{"image", "busybox"}, {"command", args}}.dump()).find("command: more than 1024 entries") !=
          std::string::npos);

    Json env = Json::object();
    for (std::size_t i = 0; i <= nps::limits::kMaxSpawnSpecEnv; ++i)
        env["V" + std::to_string(i)] = "1";
    CHECK(rejection(Json{{"image", "busybox"}, {"env", env}}.dump()).find("env: more than 1024 variables") !=
          std::string::npos);
}

TEST_CASE("spawn spec: NDP-era aliases are normalised")
{
    auto spec = parse_spawn_spec(
        R"({"oci_image":"busybox:1.36","resource_limits":{"cpu_millicores":250,"memory_mb":128}})", kMax);
    REQUIRE_MESSAGE(spec, spec.error().message);
    CHECK(spec->image == "busybox:1.36");
    CHECK(spec->cpu_millicores == 250);
    CHECK(spec->memory_bytes == 128LL << 20);
    CHECK(Json::parse(spawn_spec_to_json(*spec)) ==
          Json::parse(R"({"image":"busybox:1.36","resource_limits":{"cpu":"250m","memory":"128Mi"}})"));
}

TEST_CASE("spawn spec: x- extensions are kept and re-emitted")
{
    auto spec = parse_spawn_spec(
        R"({"image":"busybox","x-vendor":{"tier":"gold","n":[1,2]},"resource_limits":{"x-gpu":"1"}})", kMax);
    REQUIRE_MESSAGE(spec, spec.error().message);
    CHECK(spec->extensions.at("x-vendor") == R"({"tier":"gold","n":[1,2]})");
    CHECK(spec->extensions.at("resource_limits.x-gpu") == R"("1")");
    auto again = parse_spawn_spec(spawn_spec_to_json(*spec), kMax);
    REQUIRE(again);
    CHECK(*again == *spec);
}

TEST_CASE("spawn spec: the normalised document parses back to the same spec")
{
    for (const char* doc : {kFull, R"({"image":"busybox","resource_limits":{"cpu":"2","memory":"1G"}})",
                            R"({"image":"busybox","resource_limits":{"cpu":"1500m","memory":"2000000"}})",
                            R"({"image":"busybox","resource_limits":{"cpu":"0.25","memory":"1.5Gi"}})"}) {
        CAPTURE(doc);
        auto spec = parse_spawn_spec(doc, kMax);
        REQUIRE_MESSAGE(spec, spec.error().message);
        const std::string normalised = spawn_spec_to_json(*spec);
        auto again = parse_spawn_spec(normalised, kMax);
        REQUIRE_MESSAGE(again, again.error().message);
        CHECK(*again == *spec);
    }
    auto spec = parse_spawn_spec(R"({"image":"busybox","resource_limits":{"cpu":"2000m","memory":"1.5Gi"}})", kMax);
    REQUIRE(spec);
    const Json normalised = Json::parse(spawn_spec_to_json(*spec));
    CHECK(normalised["resource_limits"]["cpu"] == "2");
    CHECK(normalised["resource_limits"]["memory"] == "1536Mi");
}

TEST_CASE("spawn spec: validate_spawn_spec applies the parser's rules to a struct")
{
    SpawnSpec spec{.image = "busybox"};
    CHECK(validate_spawn_spec(spec));
    auto bad = spec;
    bad.image = "";
    CHECK(validate_spawn_spec(bad).error().message == "image: must not be empty");
    bad = spec;
    bad.env["NPS_X"] = "1";
    CHECK(validate_spawn_spec(bad).error().message.find("reserved") != std::string::npos);
    bad = spec;
    bad.idle_timeout_seconds = 10;
    bad.max_runtime_seconds = 5;
    CHECK(validate_spawn_spec(bad).error().code == "NOP-SPAWN-SPEC-INVALID");
    bad = spec;
    bad.cpu_millicores = 1;
    CHECK(!validate_spawn_spec(bad));
    bad = spec;
    bad.command = {""};
    CHECK(!validate_spawn_spec(bad));
}
