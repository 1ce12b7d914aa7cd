// SPDX-License-Identifier: Apache-2.0
// The [report] section and the deliverer options it gives.
#include <doctest/doctest.h>

#include <fstream>

#include "config_errors.hpp"
#include "nps/daemon/daemon.hpp"
#include "nps/config/config.hpp"
#include "nps/report/deliverer.hpp"
#include "temp_dir.hpp"

using nps::config::parse_config;
using nps::config::test::error_of;

namespace {

bool says(const std::string& toml, const std::string& needle)
{
    const std::string message = error_of(toml);
    INFO(message);
    return message.find(needle) != std::string::npos;
}

}  // namespace

TEST_CASE("[report] defaults: no task store, the spec's callback rules, 24 h of retries")
{
    auto c = parse_config("", "test.toml");
    REQUIRE(c);
    const auto& r = c->report;
    CHECK_FALSE(r.task_store_url);
    CHECK_FALSE(r.task_store_token);
    CHECK_FALSE(r.ca_file);
    CHECK(r.timeout_seconds == 10);
    CHECK(r.retry_initial_ms == 1000);
    CHECK(r.retry_max_ms == 300'000);
    CHECK(r.max_age_seconds == 86'400);
    CHECK(r.callback_allow_destinations.empty());

    const auto options = nps::daemon::deliverer_options(*c);
    CHECK(options.store.path == c->state_dir + "/runner.db");
    CHECK(options.store.url.empty());
    CHECK(options.owner_prefix == c->runner_nid);
    CHECK_FALSE(options.task_store_url);
    CHECK(options.timeout == std::chrono::seconds(10));
    CHECK(options.max_age == std::chrono::hours(24));
    CHECK(options.callback_allow.empty());
}

TEST_CASE("[report] every key is read")
{
    auto c = parse_config(R"(
[store]
synchronous = "normal"
[report]
task_store_url = "https://orchestrator.lan:8443/v1/tasks/"
task_store_token = "s3cret-token"
ca_file = "/etc/nps-runner/orchestrator-ca.pem"
timeout_seconds = 3
retry_initial_ms = 50
retry_max_ms = 2000
max_age_seconds = 600
callback_allow_destinations = ["127.0.0.1", "10.0.0.0/8", "hooks.lan"]
)", "test.toml");
    REQUIRE_MESSAGE(c, (c ? std::string() : c.error().message));
    const auto& r = c->report;
    CHECK(r.task_store_url == "https://orchestrator.lan:8443/v1/tasks");  // the trailing '/' dropped
    CHECK(r.task_store_token == "s3cret-token");
    CHECK(r.ca_file == "/etc/nps-runner/orchestrator-ca.pem");
    CHECK(r.timeout_seconds == 3);
    CHECK(r.retry_initial_ms == 50);
    CHECK(r.retry_max_ms == 2000);
    CHECK(r.max_age_seconds == 600);
    CHECK(r.callback_allow_destinations.size() == 3);

    const auto options = nps::daemon::deliverer_options(*c);
    CHECK(options.store.synchronous == nps::store::Synchronous::normal);
    CHECK(options.task_store_url == "https://orchestrator.lan:8443/v1/tasks");
    CHECK(options.task_store_token == "s3cret-token");
    CHECK(options.timeout == std::chrono::seconds(3));
    CHECK(options.retry_initial == std::chrono::milliseconds(50));
    CHECK(options.retry_max == std::chrono::milliseconds(2000));
    CHECK(options.max_age == std::chrono::seconds(600));
    CHECK(options.callback_allow.size() == 3);
}

TEST_CASE("[report] the token may come from a file")
{
    nps::test::TempDir dir;
    {
        std::ofstream(dir / "token") << "from-a-file\n";
    }
    auto c = parse_config("[report]\ntask_store_url = \"http://127.0.0.1:9000/v1/tasks\"\n"
                          "task_store_token_file = \"" + dir / "token" + "\"\n", "test.toml");
    REQUIRE_MESSAGE(c, (c ? std::string() : c.error().message));
    CHECK(c->report.task_store_token == "from-a-file");
    CHECK(says("[report]\ntask_store_url = \"http://127.0.0.1:9000\"\ntask_store_token_file = \"" + dir / "missing" +
                   "\"\n",
               "report.task_store_token_file"));
}

TEST_CASE("[report] invalid values are refused naming the key")
{
    CHECK(says("[report]\nnope = 1\n", "report.nope: unknown key"));
    CHECK(says("[report]\ntask_store_url = \"ftp://x/y\"\n", "report.task_store_url"));
    CHECK(says("[report]\ntask_store_url = \"https://user:pw@x/y\"\n", "report.task_store_url"));
    CHECK(says("[report]\ntask_store_url = \"https://x/y?a=1\"\n", "report.task_store_url"));
    CHECK(says("[report]\ntask_store_token = \"abc\"\n", "task_store_url is not"));
    CHECK(says("[report]\ntask_store_url = \"https://x/y\"\ntask_store_token = \"a b\"\n",
               "report.task_store_token"));
    CHECK(says("[report]\ntask_store_url = \"https://x/y\"\ntask_store_token = \"\"\n", "report.task_store_token"));
    CHECK(says("[report]\ntask_store_url = \"https://x/y\"\ntask_store_token = \"a\"\ntask_store_token_file = \"/t\"\n",
               "not both"));
    CHECK(says("[report]\nca_file = \"relative.pem\"\n", "report.ca_file"));
    CHECK(says("[report]\ntimeout_seconds = 0\n", "report.timeout_seconds: must be between 1 and 300"));
    CHECK(says("[report]\nretry_initial_ms = 5\n", "report.retry_initial_ms"));
    CHECK(says("[report]\nretry_max_ms = 3600001\n", "report.retry_max_ms"));
    CHECK(says("[report]\nretry_initial_ms = 5000\nretry_max_ms = 1000\n", "must not exceed retry_max_ms"));
    CHECK(says("[report]\nmax_age_seconds = 10\n", "report.max_age_seconds"));
    CHECK(says("[report]\ncallback_allow_destinations = [\"10.0.0.1/8\"]\n", "report.callback_allow_destinations"));
    CHECK(says("[report]\ncallback_allow_destinations = \"127.0.0.1\"\n", "report.callback_allow_destinations"));
}
