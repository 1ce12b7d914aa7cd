// SPDX-License-Identifier: Apache-2.0
// Watching work live through the daemon (issue 18): `ps` and GET
// /v1/workers of a running sandboxed worker, `status` listing it, and a
// worker's progress frames in the task and its event log.
#include <doctest/doctest.h>

#include <algorithm>

#include "executor_fixture.hpp"

namespace nps::test {
namespace {

using Json = nlohmann::json;

const std::string kSleeper = "urn:nps:agent:exec.test:ps-sleeper";
const std::string kProgress = "urn:nps:agent:exec.test:progress";
const std::string kEcho = "urn:nps:agent:exec.test:echo";
const std::string kFail = "urn:nps:agent:exec.test:fail";

std::vector<std::string> client_args(ExecutorFixture& f, std::vector<std::string> args)
{
    args.insert(args.end(), {"--server", "unix:" + f.runner().socket_path()});
    return args;
}

}  // namespace

TEST_CASE("ps and GET /v1/workers show a running worker with its task, pid, usage and limits; status lists it")
{
    ExecutorFixture f("[workers]\nstop_grace_seconds = 1\n");
    f.announce(kSleeper, inline_spawn_spec({"/bin/worker", "sleep", "60"}));
    const std::string task_id = f.submit(task_frame_of("ps-task", {dag_node("nap", kSleeper, "nwp://exec.test/nap")}));

    Json workers;
    f.wait_until(task_id, [&](const Json&) {
        workers = http("GET", f.runner().url() + "/v1/workers").body;
        return workers["count"] == 1 && workers["workers"][0]["state"] == "running";
    });
    const Json& w = workers["workers"][0];
    CHECK(w["task_id"] == task_id);
    CHECK(w["node_id"] == "nap");
    CHECK(w["attempt"] == 1);
    CHECK(w["agent"] == kSleeper);
    CHECK(w["image"] == kDemoImage);
    REQUIRE(w["pid"].is_number_integer());
    const auto workers_seen = worker_processes_of(f.runner().pid());
    CHECK(std::find(workers_seen.begin(), workers_seen.end(), w["pid"].get<pid_t>()) != workers_seen.end());
    CHECK(w["uptime_seconds"].get<double>() >= 0);
    CHECK(w["started_at"].is_string());
    // Usage comes from the worker's own cgroup; the defaults of [workers] are its limits.
    CHECK(w["memory_bytes"].get<double>() > 0);
    CHECK(w["cpu_seconds"].is_number());
    CHECK(w["limits"]["memory_bytes"] == 512 * 1024 * 1024);
    CHECK(w["limits"]["pids"] == 256);
    CHECK(w["limits"]["cpu_millicores"] == 1000);
    CHECK(w["limits"]["max_runtime_seconds"].is_number());

    auto ps = run_command(client_args(f, {"ps"}));
    CHECK_MESSAGE(ps.exit_status == 0, ps.err);
    CHECK(ps.out.find("TASK") == 0);
    CHECK(ps.out.find(task_id) != std::string::npos);
    CHECK(ps.out.find(std::to_string(w["pid"].get<pid_t>())) != std::string::npos);
    CHECK(ps.out.find("/512.0MiB") != std::string::npos);
    auto ps_json = run_command(client_args(f, {"ps", "--json"}));
    CHECK(Json::parse(ps_json.out)["workers"][0]["node_id"] == "nap");
    auto status = run_command(client_args(f, {"status"}));
    CHECK(status.out.find("running:") != std::string::npos);
    CHECK(status.out.find(task_id) != std::string::npos);

    REQUIRE(http("POST", f.runner().url() + "/v1/tasks/" + task_id + "/cancel").status == 200);
    f.wait_until(task_id, [&](const Json&) { return http("GET", f.runner().url() + "/v1/workers").body["count"] == 0; });
    auto after = run_command(client_args(f, {"ps"}));
    CHECK(after.out == "no workers running\n");
    // The cancellation is counted among the task outcomes.
    auto metrics = http("GET", f.runner().url() + "/metrics");
    CHECK(metrics.raw.find("nps_task_outcomes_total{state=\"cancelled\"} 1\n") != std::string::npos);
}

TEST_CASE("progress frames are recorded: the newest per node in the task, rate-limited <node>:progress events")
{
    ExecutorFixture f;
    f.announce(kProgress, inline_spawn_spec({"/bin/worker", "progress", "6"}));
    const std::string task_id =
        f.submit(task_frame_of("progress-task", {dag_node("p", kProgress, "nwp://exec.test/progress")}));

    // While it runs, GET /v1/tasks/{id} carries the newest frame written.
    Json running = f.wait_until(task_id, [](const Json& t) { return t["nodes"]["p"].contains("progress"); });
    CHECK(running["nodes"]["p"]["progress"]["data"].contains("step"));

    Json task = f.wait_terminal(task_id);
    REQUIRE(task["state"] == "COMPLETED");
    CHECK(task["nodes"]["p"]["result"] == Json{{"steps", 6}});
    std::vector<Json> progress;
    for (const auto& e : task["events"])
        if (e["event"] == "p:progress")
            progress.push_back(e["detail"]);
    // Six frames over ~1.8 s at one event a second at most: fewer events
    // than frames, the first and the newest always among them.
    CHECK(progress.size() >= 2);
    CHECK(progress.size() < 6);
    REQUIRE_FALSE(progress.empty());
    CHECK(progress.front()["seq"] == 0);
    CHECK(progress.back()["seq"] == 5);
    CHECK(progress.back()["data"] == Json{{"step", 5}});
    CHECK(progress.back()["attempt"] == 1);
    CHECK(task["nodes"]["p"]["progress"]["seq"] == 5);
    CHECK(task["nodes"]["p"]["progress"]["at"].is_string());
}

TEST_CASE("invoke runs one node on an agent and prints its result; plain string params reach the worker as they are")
{
    ExecutorFixture f;
    f.announce(kEcho, inline_spawn_spec({"/bin/worker", "echo"}));
    f.announce(kFail, inline_spawn_spec({"/bin/worker", "fail", "NOP-DELEGATE-REJECTED"}));

    auto ran = run_command(client_args(f, {"invoke", kEcho, "--params", R"({"city":"Oslo","days":3})", "--wait"}));
    REQUIRE_MESSAGE(ran.exit_status == 0, ran.err);
    CHECK(Json::parse(ran.out) == Json{{"params", {{"city", "Oslo"}, {"days", 3}}}});

    // Without --wait: the task id, and the task is there to follow.
    auto queued = run_command(client_args(f, {"invoke", kEcho}));
    REQUIRE(queued.exit_status == 0);
    const std::string task_id = queued.out.substr(0, queued.out.size() - 1);
    Json task = f.wait_terminal(task_id);
    CHECK(task["state"] == "COMPLETED");
    CHECK(task["nodes"]["invoke"]["result"] == Json{{"params", Json::object()}});
    const Json frame = Json::parse(run_command(client_args(f, {"task", "show", task_id, "--json"})).out);
    CHECK(frame["nid"] == kInbox);  // the daemon's only inbox, without --to

    auto failed = run_command(client_args(f, {"invoke", kFail, "--wait"}));
    CHECK(failed.exit_status == 1);
    CHECK_MESSAGE(failed.err.find("FAILED: NOP-DELEGATE-REJECTED") != std::string::npos, failed.err);

    auto bad = run_command(client_args(f, {"invoke", kEcho, "--params", "[1]"}));
    CHECK(bad.exit_status == 2);
    auto dollar = run_command(client_args(f, {"invoke", kEcho, "--params", R"({"price":"$5"})"}));
    CHECK(dollar.exit_status == 2);
    CHECK(dollar.err.find("starts with $") != std::string::npos);
}

}  // namespace nps::test
