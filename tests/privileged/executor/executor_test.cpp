// SPDX-License-Identifier: Apache-2.0
// `nps-runner serve` claiming and executing TaskFrames with real sandboxed
// workers from a locally built image: the TC-N3 black-box cases of the
// executor (DAG-01, Saga-01, Life-01/02, Spawn-03 at run time), cancellation,
// shutdown and crash recovery.
#include <signal.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <thread>

#include "executor_fixture.hpp"
#include "report_fixture.hpp"
#include "nps/base/digest.hpp"

namespace nps::test {
namespace {

using Json = nlohmann::json;

const std::string kFetch = "urn:nps:agent:exec.test:fetch";
const std::string kDouble = "urn:nps:agent:exec.test:double";
const std::string kReport = "urn:nps:agent:exec.test:report";
const std::string kSleeper = "urn:nps:agent:exec.test:sleeper";

std::vector<std::string> event_names(const Json& task)
{
    std::vector<std::string> names;
    for (const auto& e : task.at("events"))
        names.push_back(e.at("event").get<std::string>());
    return names;
}

bool has_event(const Json& task, const std::string& name)
{
    auto names = event_names(task);
    return std::find(names.begin(), names.end(), name) != names.end();
}

// Nothing of the runner's workers is left: no process in a worker cgroup,
// no worker cgroup, no worker directory.
std::size_t worker_dirs(const ExecutorFixture& f)
{
    std::error_code ec;
    std::size_t dirs = 0;
    for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(f.state_dir() + "/workers", ec))
        ++dirs;
    return dirs;
}

void check_no_worker_left(ExecutorFixture& f, pid_t runner_pid)
{
    // Reaping, cgroup removal and the rootfs's release happen after the node
    // is recorded (a cancelled worker may take the stop grace, twice, to die).
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    while (std::chrono::steady_clock::now() < deadline &&
           (!worker_processes_of(runner_pid).empty() || !worker_cgroups_of(runner_pid).empty() || worker_dirs(f) > 0))
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const auto left = worker_processes_of(runner_pid);
    const auto groups = worker_cgroups_of(runner_pid);
    INFO("processes left: " << describe_processes(left));
    INFO("cgroups left: " << describe_cgroups(groups));
    CHECK(left.empty());
    CHECK(groups.empty());
    CHECK(worker_dirs(f) == 0);
}

// Worker processes of `runner_pid` running sleep(1).
std::size_t sleeping_workers(pid_t runner_pid)
{
    std::size_t n = 0;
    for (pid_t pid : worker_processes_of(runner_pid))
        if (read_file("/proc/" + std::to_string(pid) + "/comm") == "sleep\n")
            ++n;
    return n;
}

// The value of a /metrics sample (`name{labels}`), -1 when absent.
long metric(ExecutorFixture& f, const std::string& sample)
{
    const std::string text = http("GET", f.runner().url() + "/metrics").raw;
    const auto at = text.find("\n" + sample + " ");
    return at == std::string::npos ? -1 : std::stol(text.substr(at + sample.size() + 2));
}

// The network namespace (`net:[inode]`) of each worker process of
// `runner_pid` seen running sleep(1) until `task_id` ends, by pid.
std::map<pid_t, std::string> sleepers_netns_until_end(ExecutorFixture& f, pid_t runner_pid, const std::string& task_id)
{
    std::map<pid_t, std::string> seen;
    f.wait_until(task_id, [&](const Json& task) {
        for (pid_t pid : worker_processes_of(runner_pid)) {
            if (seen.contains(pid) || read_file("/proc/" + std::to_string(pid) + "/comm") != "sleep\n")
                continue;
            std::error_code ec;
            const auto link = std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/ns/net", ec);
            if (!ec)
                seen[pid] = link.string();
        }
        return task["state"] != "RUNNING" && task["state"] != "PENDING";
    });
    return seen;
}

void announce_pipeline(ExecutorFixture& f)
{
    f.announce(kFetch, inline_spawn_spec({"/bin/worker", "emit", R"({"value":2})"}));
    f.announce(kDouble, inline_spawn_spec({"/bin/worker", "double"}));
    f.announce(kReport, inline_spawn_spec({"/bin/worker", "report"}));
}

Json pipeline_frame(const std::string& task_id)
{
    return task_frame_of(task_id, {dag_node("fetch", kFetch, "nwp://exec.test/fetch/invoke"),
                                   dag_node("double", kDouble, "nwp://exec.test/double/invoke", {"fetch"},
                                            {{"input_mapping", {{"value", "$.fetch.value"}}}}),
                                   dag_node("report", kReport, "nwp://exec.test/report/invoke", {"double"},
                                            {{"input_mapping", {{"answer", "$.double.value"}}}})});
}

}  // namespace

TEST_CASE("TC-N3-DAG-01: a 3-node linear DAG of sandboxed workers completes with mapped results")
{
    ExecutorFixture f;
    announce_pipeline(f);
    std::string task_id = f.submit(pipeline_frame("dag-01"));
    Json task = f.wait_terminal(task_id);
    INFO(task.dump(2));
    CHECK(task["state"] == "COMPLETED");
    CHECK(task["error_code"].is_null());
    CHECK(task["aggregate"] == Json{{"answer", 4}});
    CHECK(task["nodes"]["fetch"]["result"] == Json{{"value", 2}});
    CHECK(task["nodes"]["double"]["result"] == Json{{"value", 4}});
    CHECK(task["nodes"]["report"]["result"] == Json{{"answer", 4}});
    for (const char* node : {"fetch", "double", "report"}) {
        CHECK(task["nodes"][node]["state"] == "COMPLETED");
        CHECK(task["nodes"][node]["attempts"] == 1);
    }
    // The portable order of canonical events, each node's worker in between.
    auto names = event_names(task);
    std::vector<std::string> canonical;
    for (const auto& n : names)
        if (n.rfind("task:", 0) == 0 || n.find(":attempt:") != std::string::npos || n.ends_with(":completed"))
            canonical.push_back(n);
    CHECK(canonical == std::vector<std::string>{"task:running", "fetch:attempt:1", "fetch:completed",
                                                "double:attempt:1", "double:completed", "report:attempt:1",
                                                "report:completed", "task:completed"});
    // double's and report's workers were prepared while their predecessor ran.
    const std::string metrics = http("GET", f.runner().url() + "/metrics").raw;
    CHECK(metrics.find("\nnps_worker_prepared_ahead_total{fate=\"used\"} 2\n") != std::string::npos);
    CHECK(metrics.find("\nnps_worker_prepared_ahead_total{fate=\"unused\"} 0\n") != std::string::npos);
    check_no_worker_left(f, f.runner().pid());
}

TEST_CASE("workers prepared ahead for nodes that never run are released when the task ends")
{
    ExecutorFixture f;
    f.announce(kFetch, inline_spawn_spec({"/bin/sh", "-c", "sleep 1; exit 3"}));
    f.announce(kDouble, inline_spawn_spec({"/bin/true"}));
    f.announce(kReport, inline_spawn_spec({"/bin/true"}));
    Json task = f.wait_terminal(f.submit(task_frame_of(
        "ahead-unused", {dag_node("a", kFetch, "nwp://exec.test/a"), dag_node("b", kDouble, "nwp://exec.test/b", {"a"}),
                         dag_node("c", kReport, "nwp://exec.test/c", {"b"})},
        {{"max_retries", 0}})));
    INFO(task.dump(2));
    CHECK(task["state"] == "FAILED");
    CHECK(task["nodes"]["a"]["state"] == "FAILED");
    // b's and c's workers (two levels ahead: rootfs, directory, user
    // namespace slot) were prepared while a ran, and go back without ever
    // starting — both of them, each once.
    check_no_worker_left(f, f.runner().pid());
    const std::string metrics = http("GET", f.runner().url() + "/metrics").raw;
    CHECK(metrics.find("\nnps_worker_prepared_ahead_total{fate=\"unused\"} 2\n") != std::string::npos);
    CHECK(metrics.find("\nnps_worker_prepared_ahead_total{fate=\"used\"} 0\n") != std::string::npos);
    // Their processes were held meanwhile (a ran for a second), and went
    // with them; so did those kept warm after the task (for a's agent, and
    // for b's and c's, hinted at its start) once stale.
    CHECK(metric(f, "nps_worker_holds_unused_total") == 2 + metric(f, "nps_worker_warm_total{fate=\"unused\"}"));
    CHECK(metric(f, "nps_worker_warm_total{fate=\"unused\"}") <= 3);
    CHECK(metrics.find("\nnps_worker_spawns_total{path=\"held\"} 0\n") != std::string::npos);
    CHECK(f.runner().stop() == 0);
}

TEST_CASE("a node's worker held while its predecessor runs is released at its dispatch, with its own NPS_* variables")
{
    for (const bool hold_ahead : {true, false}) {
        CAPTURE(hold_ahead);
        ExecutorFixture f(hold_ahead ? "" : "\n[workers]\nhold_ahead = false\n");
        f.announce(kFetch, inline_spawn_spec({"/bin/worker", "sleep", "1"}));
        // Its limits count from its release: held for the second a runs, it
        // still has all of its max runtime.
        f.announce(kDouble,
                   inline_spawn_spec({"/bin/sh", "-c",
                                      "read -r frame; sleep 0.5; printf '{\"seq\":0,\"is_final\":true,\"data\":"
                                      "{\"node\":\"%s\",\"attempt\":%s,\"action\":\"%s\"}}\\n' "
                                      "\"$NPS_NODE_ID\" \"$NPS_ATTEMPT\" \"$NPS_ACTION\""},
                                     Json{{"max_runtime_seconds", 1}}));
        Json task = f.wait_terminal(f.submit(task_frame_of(
            hold_ahead ? "held-on" : "held-off",
            {dag_node("a", kFetch, "nwp://exec.test/a"), dag_node("b", kDouble, "nwp://exec.test/b", {"a"})})));
        INFO(task.dump(2));
        CHECK(task["state"] == "COMPLETED");
        CHECK(task["nodes"]["b"]["result"] == Json{{"node", "b"}, {"attempt", 1}, {"action", "nwp://exec.test/b"}});
        const std::string metrics = http("GET", f.runner().url() + "/metrics").raw;
        CHECK(metrics.find("\nnps_worker_spawns_total{path=\"held\"} " + std::string(hold_ahead ? "1" : "0") +
                           "\n") != std::string::npos);
        CHECK(metrics.find("\nnps_worker_holds_unused_total 0\n") != std::string::npos);
        check_no_worker_left(f, f.runner().pid());
    }
}

TEST_CASE("after a task, workers of its first agent and of its first hints are kept warm for the next task, in that task's own namespace")
{
    ExecutorFixture f("\n[workers]\nwarm_seconds = 30\n");
    // Sleeps a second (long enough to be seen), then answers with its own
    // task and node: the variables the release gives a held process.
    f.announce(kSleeper, inline_spawn_spec({"/bin/sh", "-c",
                                            "read -r frame; sleep 1; printf '{\"seq\":0,\"is_final\":true,\"data\":"
                                            "{\"task\":\"%s\",\"node\":\"%s\"}}\\n' \"$NPS_TASK_ID\" \"$NPS_NODE_ID\""}));
    f.announce(kDouble, inline_spawn_spec({"/bin/true"}));
    const pid_t runner = f.runner().pid();

    const std::string first = f.submit(task_frame_of("warm-01", {dag_node("a", kSleeper, "nwp://exec.test/a")}));
    const auto first_netns = sleepers_netns_until_end(f, runner, first);
    Json task = f.wait_terminal(first);
    REQUIRE(task["state"] == "COMPLETED");
    CHECK(task["nodes"]["a"]["result"] == Json{{"task", "warm-01"}, {"node", "a"}});
    REQUIRE(first_netns.size() == 1);
    CHECK(metric(f, "nps_worker_warm_total{fate=\"used\"}") == 0);

    // Kept: its process held in a worker cgroup (a copy of the runner
    // before its execve) and its rootfs prepared, until a task takes it.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while ((worker_cgroups_of(runner).empty() || worker_dirs(f) != 1) && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    const auto groups = worker_cgroups_of(runner);  // one per hierarchy
    REQUIRE(!groups.empty());
    for (const auto& group : groups)
        CHECK(std::filesystem::path(group).filename() == std::filesystem::path(groups.front()).filename());
    CHECK(worker_dirs(f) == 1);
    CHECK(worker_processes_of(runner).empty());  // nothing of the image runs

    // The next task of that agent starts its first node with it; the task's
    // other node joins the namespace it came with, a fresh one: not the
    // previous task's.
    const std::string second = f.submit(task_frame_of(
        "warm-02", {dag_node("a", kSleeper, "nwp://exec.test/a"), dag_node("b", kSleeper, "nwp://exec.test/b", {"a"})}));
    const auto second_netns = sleepers_netns_until_end(f, runner, second);
    task = f.wait_terminal(second);
    INFO(task.dump(2));
    REQUIRE(task["state"] == "COMPLETED");
    CHECK(task["nodes"]["a"]["result"] == Json{{"task", "warm-02"}, {"node", "a"}});
    CHECK(task["nodes"]["b"]["result"] == Json{{"task", "warm-02"}, {"node", "b"}});
    CHECK(metric(f, "nps_worker_warm_total{fate=\"used\"}") == 1);
    REQUIRE(second_netns.size() == 2);
    CHECK(second_netns.begin()->second == second_netns.rbegin()->second);
    CHECK(second_netns.begin()->second != first_netns.begin()->second);

    // After a task that hinted b at its start, b's worker is kept warm
    // beside a's, in the same namespace; the next task of that shape takes
    // both, and its b starts from the held process.
    deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (worker_dirs(f) != 2 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    CHECK(worker_dirs(f) == 2);
    const long held_spawns = metric(f, "nps_worker_spawns_total{path=\"held\"}");
    const std::string third = f.submit(task_frame_of(
        "warm-03", {dag_node("a", kSleeper, "nwp://exec.test/a"), dag_node("b", kSleeper, "nwp://exec.test/b", {"a"})}));
    const auto third_netns = sleepers_netns_until_end(f, runner, third);
    task = f.wait_terminal(third);
    REQUIRE(task["state"] == "COMPLETED");
    CHECK(task["nodes"]["b"]["result"] == Json{{"task", "warm-03"}, {"node", "b"}});
    CHECK(metric(f, "nps_worker_warm_total{fate=\"used\"}") == 3);
    CHECK(metric(f, "nps_worker_spawns_total{path=\"held\"}") == held_spawns + 2);
    REQUIRE(third_netns.size() == 2);
    CHECK(third_netns.begin()->second == third_netns.rbegin()->second);
    CHECK(third_netns.begin()->second != second_netns.begin()->second);

    // A task of another agent does not take them, and they go (unused) when
    // that task ends and one of its agent is kept instead.
    task = f.wait_terminal(f.submit(task_frame_of("warm-04", {dag_node("t", kDouble, "nwp://exec.test/t")})));
    CHECK(task["state"] == "COMPLETED");
    CHECK(metric(f, "nps_worker_warm_total{fate=\"used\"}") == 3);
    CHECK(metric(f, "nps_worker_warm_total{fate=\"unused\"}") == 2);
    CHECK(metric(f, "nps_worker_warm_total{fate=\"failed\"}") == 0);

    // Shutdown drops the one kept: nothing is left behind.
    CHECK(f.runner().stop() == 0);
    CHECK(worker_processes_of(runner).empty());
    CHECK(parked_children_of(runner).empty());
    CHECK(worker_cgroups_of(runner).empty());
    CHECK(worker_dirs(f) == 0);
}

TEST_CASE("a worker kept warm goes after [workers] warm_seconds; warm_seconds = 0 keeps none")
{
    for (const char* seconds : {"1", "0"}) {
        CAPTURE(seconds);
        ExecutorFixture f(std::string("\n[workers]\nwarm_seconds = ") + seconds + "\n");
        f.announce(kDouble, inline_spawn_spec({"/bin/true"}));
        Json task = f.wait_terminal(f.submit(task_frame_of("warm-stale", {dag_node("t", kDouble, "nwp://exec.test/t")})));
        CHECK(task["state"] == "COMPLETED");
        const bool kept = seconds == std::string("1");
        if (kept) {
            auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
            while (metric(f, "nps_worker_warm_total{fate=\"unused\"}") < 1 && std::chrono::steady_clock::now() < deadline)
                std::this_thread::sleep_for(std::chrono::milliseconds(20));
        } else {
            std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // none appears meanwhile
            CHECK(worker_cgroups_of(f.runner().pid()).empty());
            CHECK(worker_dirs(f) == 0);
        }
        check_no_worker_left(f, f.runner().pid());
        CHECK(metric(f, "nps_worker_warm_total{fate=\"unused\"}") == (kept ? 1 : 0));
        CHECK(metric(f, "nps_worker_warm_total{fate=\"used\"}") == 0);
        CHECK(metric(f, "nps_worker_holds_unused_total") == (kept ? 1 : 0));
    }
}

TEST_CASE("tasks one after another take the workers kept warm, those still being prepared too, and all complete")
{
    // Each task is deposited as soon as the previous one ends: its set of
    // warm workers (fetch, double, report) is often taken while the
    // followers are still being prepared, and handed over when they are.
    ExecutorFixture f;
    announce_pipeline(f);
    constexpr int kTasks = 12;
    for (int i = 0; i < kTasks; ++i) {
        const Json task = f.wait_terminal(f.submit(pipeline_frame("b2b-" + std::to_string(i))));
        INFO(task.dump(2));
        REQUIRE(task["state"] == "COMPLETED");
        CHECK(task["nodes"]["report"]["result"]["answer"] == 4);
    }
    CHECK(metric(f, "nps_worker_warm_total{fate=\"used\"}") >= 1);
    CHECK(metric(f, "nps_worker_warm_total{fate=\"failed\"}") == 0);
    // Every worker of every set is counted once: taken, or dropped unused.
    CHECK(metric(f, "nps_worker_warm_total{fate=\"used\"}") + metric(f, "nps_worker_warm_total{fate=\"unused\"}") <=
          3 * kTasks);
    const pid_t runner = f.runner().pid();
    CHECK(f.runner().stop() == 0);  // a task waiting for a handed-over follower would hang this
    CHECK(worker_processes_of(runner).empty());
    CHECK(parked_children_of(runner).empty());
    CHECK(worker_cgroups_of(runner).empty());
    CHECK(worker_dirs(f) == 0);
}

TEST_CASE("workers start from the spawn pool by default, else from the spawn server; both off spawns them directly")
{
    auto pool_ready = [](ExecutorFixture& f) {
        return http("GET", f.runner().url() + "/healthz").body["executor"]["spawn_pool"]["ready"].get<long>();
    };
    SUBCASE("pool on (default)")
    {
        ExecutorFixture f;
        announce_pipeline(f);
        // Parking starts with the daemon; once the pool is full, every worker
        // of a linear DAG finds a parked child (the refill is done long
        // before the next node's rootfs is ready).
        auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
        while (pool_ready(f) < 4 && std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        REQUIRE(pool_ready(f) == 4);
        CHECK(metric(f, "nps_spawn_pool_size") == 4);
        CHECK(parked_children_of(f.runner().pid()).size() == 4);
        Json task = f.wait_terminal(f.submit(pipeline_frame("pool-01")));
        CHECK(task["state"] == "COMPLETED");
        const long pooled = metric(f, "nps_worker_spawns_total{path=\"pool\"}");
        const long server = metric(f, "nps_worker_spawns_total{path=\"server\"}");
        const long held = metric(f, "nps_worker_spawns_total{path=\"held\"}");
        INFO("pooled " << pooled << ", server " << server << ", held " << held);
        CHECK(pooled + server + held == 3);  // a node held while its predecessor ran is released
        CHECK(pooled >= 1);  // the first node's, at least: the pool was full
        CHECK(metric(f, "nps_worker_spawns_total{path=\"direct\"}") == 0);
        check_no_worker_left(f, f.runner().pid());
    }
    SUBCASE("spawn_pool = 0")
    {
        ExecutorFixture f("\n[workers]\nspawn_pool = 0\n");
        announce_pipeline(f);
        Json task = f.wait_terminal(f.submit(pipeline_frame("pool-02")));
        CHECK(task["state"] == "COMPLETED");
        CHECK(metric(f, "nps_spawn_pool_size") == 0);
        CHECK(metric(f, "nps_worker_spawns_total{path=\"pool\"}") == 0);
        CHECK(metric(f, "nps_worker_spawns_total{path=\"server\"}") +
                  metric(f, "nps_worker_spawns_total{path=\"held\"}") == 3);
        CHECK(metric(f, "nps_worker_spawns_total{path=\"direct\"}") == 0);
        check_no_worker_left(f, f.runner().pid());
        CHECK(parked_children_of(f.runner().pid()).empty());
        CHECK(all_cgroups_of(f.runner().pid()).empty());  // no slot was ever made
    }
    SUBCASE("spawn_pool = 0, spawn_server = false")
    {
        ExecutorFixture f("\n[workers]\nspawn_pool = 0\nspawn_server = false\n");
        announce_pipeline(f);
        Json task = f.wait_terminal(f.submit(pipeline_frame("pool-03")));
        CHECK(task["state"] == "COMPLETED");
        CHECK(metric(f, "nps_worker_spawns_total{path=\"server\"}") == 0);
        CHECK(metric(f, "nps_worker_spawns_total{path=\"direct\"}") +
                  metric(f, "nps_worker_spawns_total{path=\"held\"}") == 3);
        check_no_worker_left(f, f.runner().pid());
    }
}

TEST_CASE("TC-N3-DAG-01 reporting: each terminal node state reaches a task store that was down during the run")
{
    report_test::TaskStoreServer task_store;
    task_store.down();
    ExecutorFixture f("\n[report]\ntask_store_url = \"" + task_store.url() +
                      "\"\nretry_initial_ms = 100\nretry_max_ms = 400\n");
    announce_pipeline(f);
    std::string task_id = f.submit(pipeline_frame("dag-01-report"));
    Json task = f.wait_terminal(task_id);
    REQUIRE(task["state"] == "COMPLETED");
    CHECK(task_store.received().empty());  // it was down all along

    task_store.up();
    auto accepted = [&] {
        std::map<std::string, Json> by_key;  // Idempotency-Key → body: replays collapse
        for (const auto& r : task_store.received())
            by_key[r.headers.at("idempotency-key")] = Json::parse(r.body);
        return by_key;
    };
    REQUIRE(report_test::wait_until([&] { return accepted().size() == 3; }, std::chrono::seconds(30)));
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    auto reports = accepted();
    CHECK(reports.size() == 3);  // nothing else arrives: every report once in effect
    std::map<std::string, Json> by_node;
    for (const auto& [key, body] : reports) {
        CHECK(body["task_id"] == task_id);
        CHECK(body["state"] == "COMPLETED");
        CHECK(key == body["dedup_key"].get<std::string>() + ":" + body["node_id"].get<std::string>() + ":COMPLETED");
        by_node[body["node_id"]] = body;
    }
    CHECK(by_node["fetch"]["result"] == Json{{"value", 2}});
    CHECK(by_node["double"]["result"] == Json{{"value", 4}});
    CHECK(by_node["report"]["result"] == Json{{"answer", 4}});
    for (const auto& r : task_store.received())
        CHECK(r.path == "/v1/tasks/" + task_id + "/nodes/" + Json::parse(r.body)["node_id"].get<std::string>());
}

TEST_CASE("a plain command worker (no frame) completes with its exit code, a failing one fails")
{
    ExecutorFixture f;
    f.announce(kFetch, inline_spawn_spec({"/bin/true"}));
    f.announce(kDouble, inline_spawn_spec({"/bin/sh", "-c", "echo oops >&2; exit 3"}));
    Json ok = f.wait_terminal(f.submit(task_frame_of("plain-ok", {dag_node("a", kFetch, "nwp://exec.test/a")})));
    CHECK(ok["state"] == "COMPLETED");
    CHECK(ok["nodes"]["a"]["result"] == Json{{"exit_code", 0}});
    Json bad = f.wait_terminal(
        f.submit(task_frame_of("plain-bad", {dag_node("a", kDouble, "nwp://exec.test/a")}, {{"max_retries", 0}})));
    INFO(bad.dump(2));
    CHECK(bad["state"] == "FAILED");
    CHECK(bad["nodes"]["a"]["state"] == "FAILED");
    CHECK(bad["nodes"]["a"]["killed_reason"] == "exit_status");
    CHECK(!bad["error_code"].is_null());

    // The worker's stderr, through the API and the CLI.
    auto log = http("GET", f.runner().url() + "/v1/tasks/plain-bad/nodes/a/log?stream=stderr");
    REQUIRE_MESSAGE(log.status == 200, log.raw);
    CHECK(log.body["text"] == "oops\n");
    auto shown = run_command({"task", "show", "plain-bad", "--log", "a", "--server", "unix:" + f.runner().socket_path()});
    CHECK(shown.exit_status == 0);
    CHECK(shown.out == "oops\n");
    // The log files are not for others (docs/security.md row 6): 0640 files
    // in 0750 directories under a logs/ others cannot list.
    int log_files = 0;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(f.state_dir() + "/logs")) {
        CAPTURE(entry.path().string());
        const auto perms = entry.symlink_status().permissions();
        CHECK((perms & (std::filesystem::perms::others_read | std::filesystem::perms::others_write)) ==
              std::filesystem::perms::none);
        if (entry.is_regular_file()) {
            CHECK(perms == (std::filesystem::perms::owner_read | std::filesystem::perms::owner_write |
                            std::filesystem::perms::group_read));
            ++log_files;
        }
    }
    CHECK(log_files >= 1);  // at least plain-bad's stderr.log
    CHECK((std::filesystem::status(f.state_dir() + "/logs").permissions() & std::filesystem::perms::others_read) ==
          std::filesystem::perms::none);
    check_error(http("GET", f.runner().url() + "/v1/tasks/plain-bad/nodes/a/log?stream=stdin"), 400,
                "NWP-HTTP-PARAM-INVALID");
    check_error(http("GET", f.runner().url() + "/v1/tasks/plain-bad/nodes/zz/log"), 404, "NOP-TASK-NOT-FOUND");
}

TEST_CASE("TC-N3-Life-01: an idle worker is killed and its node fails with NOP-RUNTIME-IDLE-TIMEOUT (504)")
{
    ExecutorFixture f;
    f.announce(kSleeper, inline_spawn_spec({"/bin/worker", "sleep", "30"},
                                           {{"idle_timeout_seconds", 1}, {"max_runtime_seconds", 60}}));
    Json task = f.wait_terminal(
        f.submit(task_frame_of("life-01", {dag_node("idle", kSleeper, "nwp://exec.test/idle")}, {{"max_retries", 0}})));
    INFO(task.dump(2));
    CHECK(task["state"] == "FAILED");
    CHECK(task["error_code"] == "NOP-RUNTIME-IDLE-TIMEOUT");
    CHECK(task["error_status"]["http"] == 504);
    const Json& node = task["nodes"]["idle"];
    CHECK(node["state"] == "FAILED");
    CHECK(node["error_code"] == "NOP-RUNTIME-IDLE-TIMEOUT");
    CHECK(node["error_status"] == Json{{"status", "NPS-SERVER-TIMEOUT"}, {"http", 504}});
    CHECK(node["killed_reason"] == "idle_timeout");
    check_no_worker_left(f, f.runner().pid());
}

TEST_CASE("TC-N3-Life-02: a worker past its max runtime is killed: NOP-RUNTIME-MAX-RUNTIME (504), even when chatty")
{
    ExecutorFixture f;
    f.announce(kSleeper, inline_spawn_spec({"/bin/worker", "chatter", "30"},
                                           {{"idle_timeout_seconds", 2}, {"max_runtime_seconds", 3}}));
    Json task = f.wait_terminal(
        f.submit(task_frame_of("life-02", {dag_node("long", kSleeper, "nwp://exec.test/long")}, {{"max_retries", 0}})));
    INFO(task.dump(2));
    CHECK(task["state"] == "FAILED");
    const Json& node = task["nodes"]["long"];
    CHECK(node["error_code"] == "NOP-RUNTIME-MAX-RUNTIME");
    CHECK(node["error_status"]["http"] == 504);
    CHECK(node["killed_reason"] == "max_runtime");
    check_no_worker_left(f, f.runner().pid());
}

TEST_CASE("TC-N3-Spawn-03 at run time: an agent whose SpawnSpec is invalid fails its node with NOP-SPAWN-SPEC-INVALID")
{
    ExecutorFixture f;
    f.announce(kFetch, "spawnspec:" + base64url_encode(R"({"command":["/bin/true"]})"));  // no image
    f.announce(kDouble, inline_spawn_spec({"/bin/true"}, {{"idle_timeout_seconds", 60}, {"max_runtime_seconds", 30}}));
    for (const auto& [task_id, agent] : {std::pair{"spawn-03-a", kFetch}, std::pair{"spawn-03-b", kDouble}}) {
        Json task = f.wait_terminal(f.submit(task_frame_of(task_id, {dag_node("n", agent, "nwp://exec.test/n")})));
        INFO(task.dump(2));
        CHECK(task["state"] == "FAILED");
        CHECK(task["nodes"]["n"]["state"] == "FAILED");
        CHECK(task["nodes"]["n"]["error_code"] == "NOP-SPAWN-SPEC-INVALID");
        CHECK(task["nodes"]["n"]["error_status"]["http"] == 400);
        CHECK(task["nodes"]["n"]["attempts"] == 1);  // not retried
    }
    // An agent nobody announced.
    Json task = f.wait_terminal(
        f.submit(task_frame_of("spawn-03-c", {dag_node("n", "urn:nps:agent:exec.test:nobody", "nwp://exec.test/n")})));
    CHECK(task["nodes"]["n"]["error_code"] == "NOP-SPAWN-SPEC-INVALID");
}

TEST_CASE("TC-N3-Saga-01: a downstream failure compensates the completed ancestors with sandboxed workers")
{
    ExecutorFixture f;
    f.announce(kFetch, inline_spawn_spec({"/bin/worker", "emit", R"({"reserved":"r-1"})"}));
    f.announce(kDouble, inline_spawn_spec({"/bin/worker", "emit", R"({"charge_id":"c-9","amount":12})"}));
    f.announce(kReport, inline_spawn_spec({"/bin/worker", "fail", "NOP-DELEGATE-REJECTED"}));
    Json frame = task_frame_of(
        "saga-01",
        {dag_node("reserve", kFetch, "nwp://exec.test/reserve/invoke", {},
                  {{"compensate_action", "nwp://exec.test/reserve/compensate"}}),
         dag_node("charge", kDouble, "nwp://exec.test/charge/invoke", {"reserve"},
                  {{"compensate_action", "nwp://exec.test/charge/compensate"},
                   {"compensate_params_mapping", {{"charge_id", "$.charge_id"}}}}),
         dag_node("ship", kReport, "nwp://exec.test/ship/invoke", {"charge"})},
        {{"max_retries", 0}, {"compensation_policy", "best_effort"}});
    Json task = f.wait_terminal(f.submit(frame));
    INFO(task.dump(2));
    CHECK(task["state"] == "FAILED");
    CHECK(task["error_code"] == "NOP-DELEGATE-REJECTED");
    CHECK(task["nodes"]["ship"]["state"] == "FAILED");
    CHECK(task["nodes"]["charge"]["state"] == "COMPENSATED");
    CHECK(task["nodes"]["reserve"]["state"] == "COMPENSATED");
    auto names = event_names(task);
    std::vector<std::string> saga;
    for (const auto& n : names)
        if (n.find("compensat") != std::string::npos)
            saga.push_back(n);
    CHECK(saga == std::vector<std::string>{"charge:compensating", "charge:compensated", "reserve:compensating",
                                           "reserve:compensated"});
    check_no_worker_left(f, f.runner().pid());
}

TEST_CASE("cancelling a running task stops its worker (cancel frame, SIGTERM, SIGKILL) and ends it CANCELLED")
{
    ExecutorFixture f("[workers]\nstop_grace_seconds = 1\n");
    f.announce(kSleeper, inline_spawn_spec({"/bin/worker", "sleep", "60"}));
    std::string task_id = f.submit(task_frame_of("cancel-me", {dag_node("s", kSleeper, "nwp://exec.test/s")}));
    f.wait_until(task_id, [&](const Json& t) { return !worker_processes_of(f.runner().pid()).empty() &&
                                                      t["nodes"].contains("s"); });
    auto reply = http("POST", f.runner().url() + "/v1/tasks/" + task_id + "/cancel");
    REQUIRE_MESSAGE(reply.status == 200, reply.raw);
    Json task = f.wait_until(task_id, [](const Json& t) {
        return t["state"] == "CANCELLED" && t["nodes"]["s"]["state"] == "CANCELLED";
    });
    CHECK(task["error_code"] == "NOP-TASK-CANCELLED");
    check_no_worker_left(f, f.runner().pid());
}

TEST_CASE("kill -9 of the daemon mid-run: a restart removes the orphans, resumes after the finished node, completes")
{
    ExecutorFixture f;
    f.announce(kFetch, inline_spawn_spec({"/bin/worker", "emit", R"({"value":2})"}));
    f.announce(kSleeper, inline_spawn_spec({"/bin/worker", "sleep", "3"}));
    std::string task_id = f.submit(task_frame_of(
        "crash-01", {dag_node("first", kFetch, "nwp://exec.test/first"),
                     dag_node("second", kSleeper, "nwp://exec.test/second", {"first"})}));
    f.wait_until(task_id, [&](const Json& t) {
        return t["nodes"].contains("first") && t["nodes"]["first"]["state"] == "COMPLETED" &&
               !worker_processes_of(f.runner().pid()).empty() && !parked_children_of(f.runner().pid()).empty();
    });
    const pid_t old_pid = f.runner().pid();
    INFO("parked children before the kill: " << parked_children_of(old_pid).size());  // spawn_pool = 4 by default
    f.runner().kill_hard();

    f.start();  // same state directory, same runner NID
    Json task = f.wait_terminal(task_id);
    INFO(task.dump(2));
    INFO(f.runner().log());
    CHECK(task["state"] == "COMPLETED");
    CHECK(task["nodes"]["first"]["attempts"] == 1);
    auto names = event_names(task);
    CHECK(std::count(names.begin(), names.end(), "first:attempt:1") == 1);  // not run again
    CHECK(std::count(names.begin(), names.end(), "second:completed") == 1);
    // The dead daemon's worker and cgroups are gone, its spawn pool's parked
    // children and their slots included, and so are the new one's.
    CHECK(worker_processes_of(old_pid).empty());
    CHECK(parked_children_of(old_pid).empty());
    CHECK(all_cgroups_of(old_pid).empty());
    check_no_worker_left(f, f.runner().pid());
}

TEST_CASE("SIGTERM: running tasks get the grace, then their workers die and their leases go back")
{
    ExecutorFixture f("shutdown_grace_seconds = 1\n");
    f.announce(kSleeper, inline_spawn_spec({"/bin/worker", "sleep", "60"}));
    std::string task_id = f.submit(task_frame_of("term-01", {dag_node("s", kSleeper, "nwp://exec.test/s")}));
    f.wait_until(task_id, [&](const Json&) { return !worker_processes_of(f.runner().pid()).empty(); });
    const pid_t pid = f.runner().pid();
    CHECK(f.runner().stop() == 0);
    CHECK(worker_processes_of(pid).empty());
    CHECK(worker_cgroups_of(pid).empty());

    // The lease went back: a restart claims the task again at once instead
    // of after the 60 s lease, and runs its node again.
    f.start();
    Json task = f.wait_until(
        task_id, [](const Json& t) { return t["claims"].get<int>() == 2 && t["state"] == "RUNNING"; },
        std::chrono::seconds(20));
    CHECK(has_event(task, "lease:released"));
}

TEST_CASE("a runner stopped past its lease writes nothing more once resumed: its workers die, its daemon serves on")
{
    // The case as tried: runner A executes, is stopped (SIGSTOP) past its
    // lease, runner B (a second daemon on the same runner.db) reclaims the
    // task, A is resumed. A's worker that finished meanwhile and the one
    // still running must add nothing to the task after lease:reclaimed.
    ExecutorFixture f("lease_seconds = 10\n");
    const std::string kQuick = "urn:nps:agent:exec.test:quick";
    f.announce(kQuick, inline_spawn_spec({"/bin/worker", "sleep", "4"}));
    f.announce(kSleeper, inline_spawn_spec({"/bin/worker", "sleep", "120"}));
    std::string task_id = f.submit(task_frame_of("fence-01",
                                                 {dag_node("quick", kQuick, "nwp://exec.test/quick"),
                                                  dag_node("slow", kSleeper, "nwp://exec.test/slow")},
                                                 {{"timeout_ms", 600'000}}));
    f.wait_until(task_id, [&](const Json&) { return sleeping_workers(f.runner().pid()) == 2; });
    const pid_t a = f.runner().pid();
    REQUIRE(::kill(a, SIGSTOP) == 0);
    std::this_thread::sleep_for(std::chrono::seconds(11));  // past the 10 s lease; quick's worker has ended

    RunnerProcess b(RunnerOptions{.state_dir = f.state_dir(),
                                  .config_text = "[runner]\nnid = \"urn:nps:node:exec.test:runner-b\"\n",
                                  .config_name = "config-b.toml",
                                  .unix_socket = false});
    if (!b.start()) {
        ::kill(a, SIGCONT);
        FAIL("runner B did not start: " << b.log());
    }
    const std::string claims = b.url() + "/v1/inbox/" + std::string(kInbox) + "/claims";
    auto reclaimed = http("POST", claims,
                          Json{{"runner_nid", "urn:nps:node:exec.test:runner-b"}, {"lease_seconds", 600},
                               {"task_id", task_id}}
                              .dump());
    ::kill(a, SIGCONT);
    REQUIRE_MESSAGE(reclaimed.status == 200, reclaimed.raw << "\n" << f.runner().log());
    CHECK(reclaimed.body["outcome"] == "reclaimed");

    // A finds its lease gone: the running worker is killed, nothing is written.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < deadline &&
           (!worker_processes_of(a).empty() || !worker_cgroups_of(a).empty() ||
            f.runner().log().find("task fence-01: abandoned") == std::string::npos))
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    INFO(f.runner().log());
    CHECK(worker_processes_of(a).empty());
    CHECK(worker_cgroups_of(a).empty());
    CHECK(f.runner().log().find("task fence-01: abandoned, its lease is lost") != std::string::npos);
    std::this_thread::sleep_for(std::chrono::seconds(1));  // anything A would still write has been tried

    Json task = http("GET", b.url() + "/v1/tasks/" + task_id).body;
    INFO(task.dump(2));
    auto names = event_names(task);
    REQUIRE_FALSE(names.empty());
    CHECK(names.back() == "lease:reclaimed");  // nothing after it: not A's worker ends, not its node records
    CHECK(task["state"] == "RUNNING");
    CHECK(task["lease"]["runner_nid"] == "urn:nps:node:exec.test:runner-b");
    for (const char* node : {"quick", "slow"})
        if (task["nodes"].contains(node))
            CHECK(task["nodes"][node]["state"] != "COMPLETED");

    // Only that task was given up: A claims and completes a new one.
    f.announce(kFetch, inline_spawn_spec({"/bin/worker", "emit", R"({"value":2})"}));
    Json next = f.wait_terminal(f.submit(task_frame_of("fence-02", {dag_node("a", kFetch, "nwp://exec.test/a")})));
    CHECK(next["state"] == "COMPLETED");
    CHECK(http("POST", b.url() + "/v1/tasks/" + task_id + "/cancel").status == 200);
}

TEST_CASE("a runner whose lease on a running task was released claims it back only once that execution has ended")
{
    // The lease goes (released here; lapsed would do the same) while the
    // worker runs, and a deposit wakes the claim loop at once: the task is
    // claimable, but ours still winds down until the next renewal finds the
    // lease lost. Claimed back meanwhile, it would run twice side by side.
    ExecutorFixture f("lease_seconds = 12\n");
    f.announce(kSleeper, inline_spawn_spec({"/bin/worker", "sleep", "60"}));
    f.announce(kFetch, inline_spawn_spec({"/bin/worker", "emit", R"({"value":2})"}));
    std::string task_id = f.submit(task_frame_of("released-01", {dag_node("s", kSleeper, "nwp://exec.test/s")}));
    Json running = f.wait_until(task_id, [&](const Json& t) {
        return !worker_processes_of(f.runner().pid()).empty() && t.contains("lease") && t["lease"].is_object();
    });
    const pid_t pid = f.runner().pid();
    const std::string owner = running["lease"]["runner_nid"];
    auto released = http("DELETE", f.runner().url() + "/v1/leases/" + task_id + "?runner_nid=" + owner);
    REQUIRE_MESSAGE(released.status == 204, released.raw);
    Json other = f.wait_terminal(f.submit(task_frame_of("released-02", {dag_node("a", kFetch, "nwp://exec.test/a")})));
    CHECK(other["state"] == "COMPLETED");
    Json task = http("GET", f.runner().url() + "/v1/tasks/" + task_id).body;
    INFO(task.dump(2));
    CHECK(task["claims"] == 1);

    // The renewal finds the lease lost, the worker dies, the execution ends;
    // then the task is claimed again and its node runs anew.
    task = f.wait_until(
        task_id, [](const Json& t) { return t["claims"].get<int>() == 2 && t["state"] == "RUNNING"; },
        std::chrono::seconds(30));
    INFO(f.runner().log());
    CHECK(f.runner().pid() == pid);
    CHECK(::kill(pid, 0) == 0);
    CHECK(f.runner().log().find("task released-01: abandoned, its lease is lost") != std::string::npos);
    CHECK(http("POST", f.runner().url() + "/v1/tasks/" + task_id + "/cancel").status == 200);
}

TEST_CASE("task show --log escapes a worker's terminal sequences, --raw prints them")
{
    ExecutorFixture f;
    f.announce(kDouble, inline_spawn_spec({"/bin/sh", "-c", "printf '\\033]0;pwned\\007\\033[2J\\tend\\n' >&2; exit 3"}));
    Json bad = f.wait_terminal(
        f.submit(task_frame_of("log-escape", {dag_node("a", kDouble, "nwp://exec.test/a")}, {{"max_retries", 0}})));
    REQUIRE(bad["state"] == "FAILED");
    const std::vector<std::string> show = {"task", "show", "log-escape", "--log", "a", "--server",
                                           "unix:" + f.runner().socket_path()};
    auto shown = run_command(show);
    CHECK(shown.exit_status == 0);
    CHECK(shown.out == "\\x1b]0;pwned\\x07\\x1b[2J\tend\n");
    auto raw_args = show;
    raw_args.push_back("--raw");
    CHECK(run_command(raw_args).out == "\x1b]0;pwned\x07\x1b[2J\tend\n");
}

}  // namespace nps::test
