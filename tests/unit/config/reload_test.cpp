// SPDX-License-Identifier: Apache-2.0
// Configuration reload: which keys take effect, which wait for a restart.
#include <doctest/doctest.h>

#include <algorithm>

#include "nps/config/config.hpp"
#include "nps/config/reload.hpp"

using nps::config::apply_reload;
using nps::config::Config;
using nps::config::parse_config;

namespace {

Config parse(const char* toml)
{
    auto c = parse_config(toml, "test.toml");
    REQUIRE_MESSAGE(c.has_value(), (c ? std::string() : c.error().describe()));
    return *c;
}

bool contains(const std::vector<std::string>& v, const std::string& s)
{
    return std::find(v.begin(), v.end(), s) != v.end();
}

}  // namespace

TEST_CASE("an unchanged file reloads nothing")
{
    Config running = parse("[api]\ntoken = \"0123456789abcdef\"\n");
    auto outcome = apply_reload(running, parse("[api]\ntoken = \"0123456789abcdef\"\n"));
    CHECK(outcome.applied.empty());
    CHECK(outcome.need_restart.empty());
}

TEST_CASE("reloadable keys take their new values")
{
    Config running = parse("");
    const Config fresh = parse(R"(
[runner]
lease_seconds = 90
claim_interval_ms = 250
max_tasks = 3
shutdown_grace_seconds = 7
log_format = "json"
[api]
token = "fedcba9876543210"
allowed_nids = ["urn:nps:agent:a:b"]
[inbox]
default_ttl_seconds = 60
max_depth = 5
max_message_bytes = 4096
[workers]
max_concurrent = 3
default_idle_timeout_seconds = 11
default_max_runtime_seconds = 12
stop_grace_seconds = 2
log_max_bytes = 65536
log_keep = 3
)");
    auto outcome = apply_reload(running, fresh);
    CHECK(outcome.need_restart.empty());
    CHECK(outcome.applied.size() == 16);
    for (const char* key : {"runner.lease_seconds", "runner.claim_interval_ms", "runner.max_tasks",
                            "runner.shutdown_grace_seconds", "runner.log_format", "api.token", "api.allowed_nids",
                            "inbox.default_ttl_seconds", "inbox.max_depth", "inbox.max_message_bytes",
                            "workers.max_concurrent", "workers.default_idle_timeout_seconds",
                            "workers.default_max_runtime_seconds", "workers.stop_grace_seconds",
                            "workers.log_max_bytes", "workers.log_keep"})
        CHECK_MESSAGE(contains(outcome.applied, key), key);
    CHECK(running.executor.lease_seconds == 90);
    CHECK(running.executor.claim_interval_ms == 250);
    CHECK(running.executor.max_tasks == 3);
    CHECK(running.log_json);
    CHECK(running.token.value() == "fedcba9876543210");
    CHECK(running.max_message_bytes == 4096);
    CHECK(running.workers.max_concurrent == 3);
    CHECK(running.workers.default_idle_timeout_seconds == 11);
    CHECK(running.workers.log_keep == 3);
    // A second reload of the same file finds nothing new.
    CHECK(apply_reload(running, fresh).applied.empty());
}

TEST_CASE("keys that need a restart are reported and keep their running values")
{
    Config running = parse("[runner]\nstate_dir = \"/srv/a\"\n");
    const Config fresh = parse(R"(
[runner]
state_dir = "/srv/b"
nid = "urn:nps:node:edge:other"
inboxes = ["urn:nps:agent:a:c"]
execution = "conformance"
[api]
listen = "127.0.0.1:9000"
socket = ""
socket_mode = "0600"
require_token = false
[store]
synchronous = "normal"
progress_synchronous = "full"
[sandbox]
allow_host_network = true
allow_unenforced_limits = true
seccomp_allow = ["acct"]
[images]
gc_max_bytes = "1Gi"
default_registry = "registry.example:5000"
[spawn]
allow_destinations = ["10.0.0.0/8"]
max_redirects = 1
[report]
task_store_url = "https://tasks.example/v1/tasks"
retry_max_ms = 9000
[inbox]
max_depth = 77
)");
    const Config before = running;
    auto outcome = apply_reload(running, fresh);
    CHECK(outcome.applied == std::vector<std::string>{"inbox.max_depth"});
    for (const char* key : {"runner.state_dir", "runner.nid", "runner.inboxes", "runner.execution", "api.listen",
                            "api.socket", "api.socket_mode", "api.require_token", "store.synchronous", "store.progress_synchronous",
                            "sandbox.allow_host_network", "sandbox.allow_unenforced_limits", "sandbox.seccomp_allow",
                            "images.gc_max_bytes", "images.default_registry", "spawn.allow_destinations",
                            "spawn.max_redirects", "report.task_store_url", "report.retry_max_ms"})
        CHECK_MESSAGE(contains(outcome.need_restart, key), key);
    CHECK(outcome.need_restart.size() == 19);
    CHECK(running.state_dir == before.state_dir);
    CHECK(running.runner_nid == before.runner_nid);
    CHECK(running.listen == before.listen);
    CHECK(running.socket == before.socket);
    CHECK(running.synchronous == before.synchronous);
    CHECK(running.allow_host_network == before.allow_host_network);
    CHECK(running.spawn.allow_destinations == before.spawn.allow_destinations);
    CHECK(running.report.task_store_url == before.report.task_store_url);
    CHECK(running.max_depth == 77);
}

TEST_CASE("the reloadable set is policy, never listeners, paths or the sandbox")
{
    auto keys = nps::config::reloadable_keys();
    CHECK(contains(keys, "api.token"));
    CHECK(contains(keys, "workers.max_concurrent"));
    for (const char* key : {"api.listen", "api.socket", "runner.state_dir", "runner.nid", "runner.inboxes",
                            "sandbox.allow_host_network", "sandbox.seccomp_allow", "store.synchronous"})
        CHECK_FALSE_MESSAGE(contains(keys, key), key);
}

TEST_CASE("workers.default_disk and workers.max_disk reload at once")
{
    Config running = parse("");
    auto outcome = apply_reload(running, parse("[workers]\ndefault_disk = \"32Mi\"\nmax_disk = \"512Mi\"\n"));
    CHECK(outcome.need_restart.empty());
    CHECK(contains(outcome.applied, "workers.default_disk"));
    CHECK(contains(outcome.applied, "workers.max_disk"));
    CHECK(running.workers.default_disk == 32ull << 20);
    CHECK(running.workers.max_disk == 512ull << 20);
}
