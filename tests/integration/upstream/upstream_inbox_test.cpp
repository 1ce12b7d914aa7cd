// SPDX-License-Identifier: Apache-2.0
// serve --upstream-npsd (issue 17 item 8, docs/upstream.md): a runner takes
// the TaskFrames of an inbox on an npsd-compatible server — here a second
// nps-runner's inbox API, which no runner there claims from — into its own
// durable inbox, acks them upstream only after the local deposit, runs them
// as usual, and treats a replay as the idempotent duplicate it is.
#include <doctest/doctest.h>

#include <chrono>
#include <thread>

#include "runner_process.hpp"
#include "temp_dir.hpp"

using nps::test::http;
using nps::test::RunnerOptions;
using nps::test::RunnerProcess;
using Json = nlohmann::json;

namespace {

const std::string kInbox = "urn:nps:agent:upstream.test:jobs";

long depth(const RunnerProcess& r)
{
    auto reply = http("GET", r.url() + "/v1/inbox/" + kInbox + "/depth");
    REQUIRE_MESSAGE(reply.status == 200, reply.raw);
    return reply.body["depth"].get<long>();
}

// Polls `ok` for up to 20 s.
template <typename Ok>
bool eventually(Ok ok)
{
    for (int i = 0; i < 200; ++i) {
        if (ok())
            return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return ok();
}

std::string task_state(const RunnerProcess& r, const std::string& task_id)
{
    auto reply = http("GET", r.url() + "/v1/tasks/" + task_id);
    return reply.status == 200 && reply.body.contains("state") ? reply.body["state"].get<std::string>() : "";
}

void deposit(const RunnerProcess& r, const std::string& task_id)
{
    auto reply = http("POST", r.url() + "/v1/inbox/" + kInbox, nps::test::task_frame(task_id, 2));
    REQUIRE_MESSAGE(reply.status == 201, reply.raw);
}

}  // namespace

TEST_CASE("serve --upstream-npsd takes an npsd inbox's TaskFrames, acks them once durable, and runs them")
{
    nps::test::StartedRunner upstream;  // claims from no inbox: an npsd stand-in
    for (const char* id : {"up-1", "up-2", "up-3"})
        deposit(upstream.runner, id);
    REQUIRE(depth(upstream.runner) == 3);

    nps::test::TempDir dir;
    RunnerProcess local(RunnerOptions{
        .state_dir = dir.path(),
        .config_text = "[upstream]\ntoken = \"" + upstream.runner.token() + "\"\nwait_seconds = 2\n",
        .extra_args = {"--upstream-npsd", upstream.runner.url() + "/", "--inbox", kInbox},
    });
    REQUIRE_MESSAGE(local.start(), local.log());

    // Taken and acked upstream; here each ran (its agent is unknown, so the
    // task ends FAILED, through the ordinary claim and resolution path).
    CHECK_MESSAGE(eventually([&] { return depth(upstream.runner) == 0; }), local.log());
    for (const char* id : {"up-1", "up-2", "up-3"}) {
        CAPTURE(id);
        CHECK_MESSAGE(eventually([&] { return task_state(local, id) == "FAILED"; }), local.log());
        auto events = http("GET", local.url() + "/v1/tasks/" + std::string(id) + "/events");
        if (events.status == 200)
            CHECK(events.raw.find("inbox:deposited") != std::string::npos);
    }

    // A frame arriving after the start is taken too, within a long-poll.
    deposit(upstream.runner, "up-4");
    CHECK_MESSAGE(eventually([&] { return task_state(local, "up-4") == "FAILED"; }), local.log());
    CHECK(eventually([&] { return depth(upstream.runner) == 0; }));
    CHECK(local.log().find("deposited into " + kInbox) != std::string::npos);
}

TEST_CASE("a replayed upstream message is an idempotent duplicate: acked, not run twice")
{
    nps::test::StartedRunner upstream;
    nps::test::TempDir dir;
    // Pull only (no --inbox claims here), so the local inbox can be read.
    RunnerOptions options{
        .state_dir = dir.path(),
        .config_text = "[upstream]\nnpsd_url = \"" + upstream.runner.url() + "\"\ninbox = \"" + kInbox +
                       "\"\ntoken = \"" + upstream.runner.token() + "\"\nwait_seconds = 1\n",
    };
    RunnerProcess local(options);
    REQUIRE_MESSAGE(local.start(), local.log());
    CHECK(local.log().find("is pulled but not claimed") != std::string::npos);

    // What a crash between the local deposit and the upstream ack leaves:
    // the frame in both inboxes. The pull finds it already here.
    deposit(local, "replayed");
    deposit(upstream.runner, "replayed");
    deposit(upstream.runner, "fresh");
    CHECK_MESSAGE(eventually([&] { return depth(upstream.runner) == 0; }), local.log());
    CHECK(depth(local) == 2);  // "replayed" once, "fresh"
    auto listed = http("GET", local.url() + "/v1/inbox/" + kInbox + "?batch=10");
    REQUIRE(listed.status == 200);
    CHECK(listed.body["count"] == 2);

    // The upstream's priority carries over.
    auto high = Json::parse(nps::test::task_frame("urgent", 1));
    auto put = http("POST", upstream.runner.url() + "/v1/inbox/" + kInbox, high.dump(),
                    {{"X-Nps-Inbox-Priority", "77"}});
    REQUIRE_MESSAGE(put.status == 201, put.raw);
    CHECK(eventually([&] { return depth(local) == 3; }));
    auto first = http("GET", local.url() + "/v1/inbox/" + kInbox + "?batch=1");
    REQUIRE(first.status == 200);
    REQUIRE(first.body["count"] == 1);
    CHECK(first.body["messages"][0]["task_id"] == "urgent");
    CHECK(first.body["messages"][0]["priority"] == 77);
}

TEST_CASE("without a reachable upstream the daemon keeps serving and retries; bad settings are refused")
{
    nps::test::TempDir dir;
    RunnerProcess local(RunnerOptions{
        .state_dir = dir.path(),
        .extra_args = {"--upstream-npsd", "http://127.0.0.1:9", "--inbox", kInbox},
    });
    REQUIRE_MESSAGE(local.start(), local.log());
    CHECK(http("GET", local.url() + "/healthz").status == 200);
    CHECK(eventually([&] { return local.log().find("upstream: peek failed, retrying") != std::string::npos; }));
    // A clean stop, though a peek may be in flight.
    CHECK(local.stop() == 0);

    auto bad_flag = nps::test::run_command({"serve", "--state-dir", dir.path(), "--upstream-npsd", "ftp://x"});
    CHECK(bad_flag.exit_status == 2);
    CHECK(bad_flag.err.find("--upstream-npsd 'ftp://x' is not an http(s) URL") != std::string::npos);

    nps::test::TempDir other;
    nps::test::write_file(other.file("bad.toml"), "[upstream]\nnpsd_url = \"https://npsd.example\"\nwait_seconds = 99\n");
    auto bad_key = nps::test::run_command({"serve", "--state-dir", other.path(), "--config", other.file("bad.toml")});
    CHECK(bad_key.exit_status != 0);
    CHECK(bad_key.err.find("upstream.wait_seconds") != std::string::npos);
    nps::test::write_file(other.file("none.toml"), "[upstream]\nnpsd_url = \"https://npsd.example\"\n");
    auto no_inbox = nps::test::run_command({"serve", "--state-dir", other.path(), "--config", other.file("none.toml"),
                                            "--listen", "127.0.0.1:0", "--socket", "none"});
    CHECK(no_inbox.exit_status != 0);
    CHECK(no_inbox.err.find("needs an inbox to pull") != std::string::npos);
}
