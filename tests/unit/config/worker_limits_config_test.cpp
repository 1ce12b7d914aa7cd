// SPDX-License-Identifier: Apache-2.0
// [workers] limits: the shipped defaults and ceilings, their spellings, and
// the refusals that name the keys involved.
#include <doctest/doctest.h>

#include <unistd.h>

#include <string>

#include "nps/config/config.hpp"
#include "nps/config/reload.hpp"

using nps::config::parse_config;

namespace {

bool contains(const std::string& text, const std::string& part)
{
    return text.find(part) != std::string::npos;
}

std::string refusal(const std::string& toml)
{
    auto c = parse_config(toml, "limits.toml");
    REQUIRE_MESSAGE(!c, toml);
    return c.error().message;
}

}  // namespace

TEST_CASE("[workers] limits: safe defaults and ceilings out of the box")
{
    auto c = parse_config("", "empty.toml");
    REQUIRE(c);
    const auto& w = c->workers;
    CHECK(w.default_memory_bytes == 512ll << 20);
    CHECK(w.default_cpu_millicores == 1000);
    CHECK(w.default_pids == 256);
    CHECK(w.max_memory_bytes == 4ll << 30);
    const long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
    CHECK(w.max_cpu_millicores == std::max<std::int64_t>(4000, cpus * 1000));
    CHECK(w.max_pids == 4096);
    CHECK(w.max_runtime_seconds_ceiling == 86'400u);
    CHECK(w.logs_max_bytes == 1ull << 30);
    // Every ceiling holds its default, the runtime defaults included.
    CHECK(w.default_memory_bytes <= w.max_memory_bytes);
    CHECK(w.default_cpu_millicores <= w.max_cpu_millicores);
    CHECK(w.default_pids <= w.max_pids);
    CHECK(w.default_max_runtime_seconds <= w.max_runtime_seconds_ceiling);
    // A missing default file gives the same.
    auto missing = nps::config::load_config("/nonexistent/nps-runner.toml", false);
    REQUIRE(missing);
    CHECK(missing->workers.default_pids == 256);
    CHECK(missing->workers.max_memory_bytes == w.max_memory_bytes);
}

TEST_CASE("[workers] limits: quantities, integers and 0 for none")
{
    auto c = parse_config(R"([workers]
default_memory = "256Mi"
default_cpu = "500m"
default_pids = 64
max_memory = 8589934592
max_cpu = 8
max_pids = 100000
max_runtime_seconds_ceiling = 3600
default_max_runtime_seconds = 600
logs_max_bytes = "20Mi"
)",
                          "set.toml");
    REQUIRE_MESSAGE(c, (c ? "" : c.error().message));
    const auto& w = c->workers;
    CHECK(w.default_memory_bytes == 256ll << 20);
    CHECK(w.default_cpu_millicores == 500);
    CHECK(w.default_pids == 64);
    CHECK(w.max_memory_bytes == 8ll << 30);
    CHECK(w.max_cpu_millicores == 8000);
    CHECK(w.max_pids == 100'000);
    CHECK(w.max_runtime_seconds_ceiling == 3600u);
    CHECK(w.logs_max_bytes == 20u << 20);

    auto none = parse_config(R"([workers]
default_memory = "0"
max_memory = "0"
default_cpu = 0
max_cpu = "0"
default_pids = 0
max_pids = 0
default_max_runtime_seconds = 0
max_runtime_seconds_ceiling = 0
logs_max_bytes = 0
)",
                             "none.toml");
    REQUIRE_MESSAGE(none, (none ? "" : none.error().message));
    CHECK(none->workers.default_memory_bytes == 0);
    CHECK(none->workers.max_memory_bytes == 0);
    CHECK(none->workers.default_cpu_millicores == 0);
    CHECK(none->workers.default_pids == 0);
    CHECK(none->workers.max_runtime_seconds_ceiling == 0u);
    CHECK(none->workers.logs_max_bytes == 0u);

    // A default may be raised up to a raised ceiling; no ceiling admits any default.
    CHECK(parse_config("[workers]\ndefault_memory = \"2Gi\"\n", "t.toml"));
    CHECK(parse_config("[workers]\nmax_memory = 0\ndefault_memory = \"64Gi\"\n", "t.toml"));
}

TEST_CASE("[workers] limits: a ceiling below its default is refused naming both keys")
{
    auto memory = refusal("[workers]\nmax_memory = \"256Mi\"\n");
    CHECK_MESSAGE(contains(memory, "Invalid configuration in 'limits.toml': workers.max_memory: 256Mi is below "
                                   "workers.default_memory = 512Mi: a ceiling must be at least its default"),
                  memory);
    auto cpu = refusal("[workers]\ndefault_cpu = 2\nmax_cpu = \"1500m\"\n");
    CHECK_MESSAGE(contains(cpu, "workers.max_cpu: 1500m is below workers.default_cpu = 2"), cpu);
    auto pids = refusal("[workers]\ndefault_pids = 5000\n");
    CHECK_MESSAGE(contains(pids, "workers.max_pids: 4096 is below workers.default_pids = 5000"), pids);
    auto runtime = refusal("[workers]\nmax_runtime_seconds_ceiling = 60\n");
    CHECK_MESSAGE(contains(runtime, "workers.max_runtime_seconds_ceiling: 60 is below "
                                    "workers.default_max_runtime_seconds = 14400"),
                  runtime);
    // No ceiling: no runtime default needed.
    CHECK(parse_config("[workers]\ndefault_max_runtime_seconds = 0\nmax_runtime_seconds_ceiling = 0\n"
                       "default_idle_timeout_seconds = 100\n",
                       "t.toml"));
    // "No limit" as a default is above every ceiling but none.
    auto unlimited = refusal("[workers]\ndefault_memory = 0\n");
    CHECK_MESSAGE(contains(unlimited, "workers.max_memory: 4Gi is below workers.default_memory = 0 (no limit)"),
                  unlimited);
    CHECK(contains(unlimited, "set workers.max_memory = 0 for no ceiling"));
    auto forever = refusal("[workers]\ndefault_max_runtime_seconds = 0\n");
    CHECK(contains(forever, "workers.default_max_runtime_seconds = 0 (no limit)"));
}

TEST_CASE("[workers] limits: bad values name the key")
{
    struct Case {
        const char* toml;
        const char* message;
    } cases[] = {
        {"[workers]\ndefault_memory = \"lots\"\n", "workers.default_memory: 'lots' is not a size"},
        {"[workers]\ndefault_memory = \"1Ki\"\n", "workers.default_memory: must be 0 (no limit) or at least 1Mi"},
        {"[workers]\nmax_memory = -1\n", "workers.max_memory: must be between"},
        {"[workers]\ndefault_cpu = \"5m\"\n", "workers.default_cpu: must be 0 (no limit) or between 10m and"},
        {"[workers]\ndefault_cpu = \"fast\"\n", "workers.default_cpu: 'fast' is not a CPU quantity"},
        {"[workers]\nmax_cpu = true\n", "workers.max_cpu: expected a CPU quantity"},
        {"[workers]\ndefault_pids = -1\n", "workers.default_pids: must be between 0 and 4194304"},
        {"[workers]\nmax_pids = \"10\"\n", "workers.max_pids: expected an integer"},
        {"[workers]\nmax_runtime_seconds_ceiling = -5\n", "workers.max_runtime_seconds_ceiling: must be between"},
        {"[workers]\nlogs_max_bytes = \"big\"\n", "workers.logs_max_bytes: 'big' is not a size"},
        {"[workers]\nmax_memroy = \"1Gi\"\n", "workers.max_memroy: unknown key"},
    };
    for (const auto& c : cases) {
        auto message = refusal(c.toml);
        CHECK_MESSAGE(contains(message, c.message), message);
    }
}

TEST_CASE("[workers] limits reload at once")
{
    auto running = parse_config("", "a.toml");
    auto fresh = parse_config(R"([workers]
default_memory = "128Mi"
default_cpu = "250m"
default_pids = 32
max_memory = "1Gi"
max_cpu = 1
max_pids = 64
max_runtime_seconds_ceiling = 14400
logs_max_bytes = "100Mi"
)",
                              "b.toml");
    REQUIRE(running);
    REQUIRE_MESSAGE(fresh, (fresh ? "" : fresh.error().message));
    auto outcome = nps::config::apply_reload(*running, *fresh);
    CHECK(outcome.need_restart.empty());
    CHECK(outcome.applied == std::vector<std::string>{"workers.logs_max_bytes", "workers.default_memory",
                                                      "workers.default_cpu", "workers.default_pids",
                                                      "workers.max_memory", "workers.max_cpu", "workers.max_pids",
                                                      "workers.max_runtime_seconds_ceiling"});
    CHECK(running->workers.default_memory_bytes == 128ll << 20);
    CHECK(running->workers.max_cpu_millicores == 1000);
    CHECK(running->workers.logs_max_bytes == 100u << 20);
}
