// SPDX-License-Identifier: Apache-2.0
// The operator's ceilings on a SpawnSpec's limits: within them a spec gets
// what it asks, above any of them it is refused naming field, value and key.
#include <doctest/doctest.h>

#include "nps/executor/executor_options.hpp"
#include "nps/config/config.hpp"
#include "nps/spawn/spawn_ceilings.hpp"

using nps::spawn::check_spawn_ceilings;
using nps::spawn::SpawnCeilings;
using nps::spawn::SpawnSpec;

namespace {

const SpawnCeilings kShipped = nps::executor::spawn_ceilings(nps::executor::WorkerPolicy{});

SpawnSpec spec_of(const char* json)
{
    auto spec = nps::spawn::parse_spawn_spec(json, 1 << 16);
    REQUIRE_MESSAGE(spec, (spec ? "" : spec.error().message));
    return *spec;
}

std::string refusal(const SpawnSpec& spec, const SpawnCeilings& ceilings = kShipped)
{
    auto r = check_spawn_ceilings(spec, ceilings);
    REQUIRE(!r);
    CHECK(r.error().code == "NOP-SPAWN-SPEC-INVALID");
    return r.error().message;
}

}  // namespace

TEST_CASE("the shipped ceilings are [workers]' defaults")
{
    CHECK(kShipped.max_memory_bytes == 4ll << 30);
    CHECK(kShipped.max_cpu_millicores >= 4000);
    CHECK(kShipped.max_runtime_seconds == 86'400u);
}

TEST_CASE("a SpawnSpec within the ceilings, or silent about limits, passes")
{
    CHECK(check_spawn_ceilings(spec_of(R"({"image":"w"})"), kShipped));
    CHECK(check_spawn_ceilings(
        spec_of(R"({"image":"w","resource_limits":{"memory":"4Gi","cpu":"4"},"idle_timeout_seconds":86400,
                    "max_runtime_seconds":86400})"),
        kShipped));
    CHECK(check_spawn_ceilings(spec_of(R"({"image":"w","resource_limits":{"memory":"64Mi","cpu":"100m"}})"), kShipped));
    // 0: no ceiling of that kind.
    CHECK(check_spawn_ceilings(spec_of(R"({"image":"w","resource_limits":{"memory":"100Ti"},"max_runtime_seconds":2147483647})"),
                               SpawnCeilings{}));
}

TEST_CASE("each field above its ceiling is refused, naming field, value and ceiling")
{
    CHECK(refusal(spec_of(R"({"image":"w","resource_limits":{"memory":"100Ti"}})")) ==
          "resource_limits.memory: 100Ti exceeds the operator's ceiling workers.max_memory = 4Gi");
    // The NDP alias is normalised; the message names the CR-0007 field.
    CHECK(refusal(spec_of(R"({"image":"w","resource_limits":{"memory_mb":4097}})")) ==
          "resource_limits.memory: 4097Mi exceeds the operator's ceiling workers.max_memory = 4Gi");
    CHECK(refusal(spec_of(R"({"image":"w","resource_limits":{"cpu":"8500m"}})"), {.max_cpu_millicores = 4000}) ==
          "resource_limits.cpu: 8500m exceeds the operator's ceiling workers.max_cpu = 4");
    // 68 years.
    CHECK(refusal(spec_of(R"({"image":"w","max_runtime_seconds":2147483647})")) ==
          "max_runtime_seconds: 2147483647 exceeds the operator's ceiling workers.max_runtime_seconds_ceiling = 86400");
    CHECK(refusal(spec_of(R"({"image":"w","idle_timeout_seconds":86401})")) ==
          "idle_timeout_seconds: 86401 exceeds the operator's ceiling workers.max_runtime_seconds_ceiling = 86400");
    // One byte over is over.
    CHECK(refusal(spec_of(R"({"image":"w","resource_limits":{"memory":"1Mi"}})"), {.max_memory_bytes = 1048575})
              .starts_with("resource_limits.memory: 1Mi exceeds"));
}

TEST_CASE("the ceilings follow a changed policy")
{
    nps::executor::WorkerPolicy policy;
    policy.max_memory_bytes = 256ll << 20;
    policy.max_cpu_millicores = 500;
    policy.max_runtime_seconds_ceiling = 60;
    auto ceilings = nps::executor::spawn_ceilings(policy);
    CHECK(refusal(spec_of(R"({"image":"w","resource_limits":{"memory":"257Mi"}})"), ceilings) ==
          "resource_limits.memory: 257Mi exceeds the operator's ceiling workers.max_memory = 256Mi");
    CHECK(refusal(spec_of(R"({"image":"w","resource_limits":{"cpu":"1"}})"), ceilings) ==
          "resource_limits.cpu: 1 exceeds the operator's ceiling workers.max_cpu = 500m");
    CHECK(refusal(spec_of(R"({"image":"w","max_runtime_seconds":61})"), ceilings).starts_with("max_runtime_seconds: 61"));
    CHECK(check_spawn_ceilings(spec_of(R"({"image":"w","max_runtime_seconds":60,"idle_timeout_seconds":60})"), ceilings));
}
