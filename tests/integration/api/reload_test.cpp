// SPDX-License-Identifier: Apache-2.0
// SIGHUP reloads the real daemon's configuration file: reloadable keys take
// effect at once, a broken file changes nothing, keys that need a restart
// are named in the log and keep their running values. And the daemon's
// retention of worker logs.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/time.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "runner_process.hpp"

using nps::test::check_error;
using nps::test::http;
using nps::test::RunnerOptions;
using nps::test::RunnerProcess;
using nps::test::task_frame;
using nps::test::TempDir;

namespace {

const std::string kInbox = "urn:nps:agent:example.test:worker";
const std::string kTokenA = "aaaaaaaaaaaaaaaa-token-a";
const std::string kTokenB = "bbbbbbbbbbbbbbbb-token-b";

std::string inbox_url(const RunnerProcess& runner)
{
    return runner.url() + "/v1/inbox/" + nps::net::url_encode(kInbox);
}

// Rewrites the config file, sends SIGHUP and waits (≤ 10 s) until the log
// holds one more line containing `expect` than before.
void reload(RunnerProcess& runner, const std::string& dir, const std::string& config, const std::string& expect)
{
    auto count = [&] {
        std::size_t n = 0;
        const std::string log = runner.log();
        for (auto at = log.find(expect); at != std::string::npos; at = log.find(expect, at + 1))
            ++n;
        return n;
    };
    const std::size_t before = count();
    nps::test::write_file(dir + "/config.toml", config);
    REQUIRE(::kill(runner.pid(), SIGHUP) == 0);
    for (int i = 0; i < 1000 && count() == before; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    REQUIRE_MESSAGE(count() > before, "no '" << expect << "' in the log after SIGHUP:\n" << runner.log());
}

std::vector<std::pair<std::string, std::string>> bearer(const std::string& token)
{
    return {{"Authorization", "Bearer " + token}, {"Content-Type", "application/json"}};
}

}  // namespace

TEST_CASE("SIGHUP rotates the API token and limits; a broken file changes nothing")
{
    TempDir dir;
    const std::string config_a = "[api]\ntoken = \"" + kTokenA + "\"\n";
    RunnerProcess runner(RunnerOptions{.state_dir = dir.path(), .config_text = config_a});
    REQUIRE_MESSAGE(runner.start(), runner.log());

    CHECK(http("GET", runner.url() + "/v1/tasks", std::nullopt, bearer(kTokenA)).status == 200);
    check_error(http("GET", runner.url() + "/v1/tasks", std::nullopt, bearer(kTokenB)), 401,
                "NWP-HTTP-UNAUTHENTICATED");
    // Whitespace keeps it valid JSON while it grows past 4096 bytes.
    const std::string big_frame = task_frame("task-big") + std::string(5000, ' ');
    REQUIRE(big_frame.size() > 4096);
    CHECK(http("POST", inbox_url(runner), big_frame, bearer(kTokenA)).status == 201);

    SUBCASE("reloadable keys take effect")
    {
        reload(runner, dir.path(),
               "[api]\ntoken = \"" + kTokenB + "\"\n[inbox]\nmax_message_bytes = 4096\n[workers]\nmax_concurrent = 3\n",
               "configuration reloaded");
        CHECK(runner.log().find("now in effect: api.token, inbox.max_message_bytes, workers.max_concurrent") !=
              std::string::npos);
        check_error(http("GET", runner.url() + "/v1/tasks", std::nullopt, bearer(kTokenA)), 401,
                    "NWP-HTTP-UNAUTHENTICATED");
        CHECK(http("GET", runner.url() + "/v1/tasks", std::nullopt, bearer(kTokenB)).status == 200);
        auto refused = http("POST", inbox_url(runner), task_frame("task-big-2") + std::string(5000, ' '),
                            bearer(kTokenB));
        CHECK(refused.status == 413);
        auto health = http("GET", runner.url() + "/healthz");
        CHECK(health.body["executor"]["max_workers"] == 3);
    }

    SUBCASE("a file that does not load changes nothing")
    {
        reload(runner, dir.path(), "[api]\ntoken = \"" + kTokenB + "\"\n[inbox]\nmax_dept = 5\n",
               "configuration not reloaded");
        CHECK(runner.log().find("inbox.max_dept: unknown key") != std::string::npos);
        CHECK(http("GET", runner.url() + "/v1/tasks", std::nullopt, bearer(kTokenA)).status == 200);
        check_error(http("GET", runner.url() + "/v1/tasks", std::nullopt, bearer(kTokenB)), 401,
                    "NWP-HTTP-UNAUTHENTICATED");
    }

    SUBCASE("keys that need a restart are named and kept")
    {
        // The last of the two lines the reload logs: both are there when it is.
        reload(runner, dir.path(), config_a + "[store]\nsynchronous = \"normal\"\n[sandbox]\nallow_host_network = true\n",
               "no reloadable key changed");
        CHECK(runner.log().find("kept until a restart: store.synchronous, sandbox.allow_host_network") !=
              std::string::npos);
        CHECK(runner.log().find("no reloadable key changed") != std::string::npos);
        CHECK(http("GET", runner.url() + "/v1/tasks", std::nullopt, bearer(kTokenA)).status == 200);
    }

    CHECK(runner.running());
    CHECK(runner.stop() == 0);
}

TEST_CASE("start-up prunes finished workers' logs past [workers] log_retention_hours")
{
    TempDir dir;
    const std::string logs = dir.path() + "/logs";
    auto make = [&](const std::string& name, int hours_ago) {
        const std::string worker = logs + "/" + name;
        std::filesystem::create_directories(worker);
        nps::test::write_file(worker + "/stdout.log", "out\n");
        const auto when = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now() -
                                                               std::chrono::hours(hours_ago));
        struct timeval times[2] = {{when, 0}, {when, 0}};
        REQUIRE(::utimes((worker + "/stdout.log").c_str(), times) == 0);
        REQUIRE(::utimes(worker.c_str(), times) == 0);
    };
    make("w-1-1", 48);
    make("w-1-2", 2);
    RunnerProcess runner(RunnerOptions{.state_dir = dir.path(), .config_text = "[workers]\nlog_retention_hours = 24\n"});
    REQUIRE_MESSAGE(runner.start(), runner.log());
    // The prune removes the directory, then logs it: wait for both, or a
    // stop in between would end the daemon before its log line.
    const std::string pruned = "pruned 1 finished worker log directory older than 24 h";
    for (int i = 0; i < 1000 && (std::filesystem::exists(logs + "/w-1-1") || runner.log().find(pruned) == std::string::npos);
         ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    CHECK_FALSE(std::filesystem::exists(logs + "/w-1-1"));
    CHECK(std::filesystem::exists(logs + "/w-1-2/stdout.log"));
    CHECK(runner.stop() == 0);
    CHECK(runner.log().find(pruned) != std::string::npos);
}
