// SPDX-License-Identifier: Apache-2.0
// Issue 14 "Safe by default", through `nps-runner serve` and real workers:
// a worker whose SpawnSpec sets no limits still runs under [workers]'
// defaults (memory, CPU, pids in its cgroup), a fork bomb stops at
// default_pids, a memory hog is OOM-killed at default_memory, a SpawnSpec
// above the operator's ceilings fails its node before anything starts, one
// within them gets what it asks, and finished workers' logs stay under
// logs_max_bytes.
#include <signal.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>
#include <array>
#include <set>

#include "nps/sandbox/userns.hpp"

#include "executor_fixture.hpp"

namespace nps::test {
namespace {

using Json = nlohmann::json;
namespace fs = std::filesystem;

const std::string kAgent = "urn:nps:agent:exec.test:limits";
const std::string kHealthy = "urn:nps:agent:exec.test:healthy";

std::string first_line(const std::string& path)
{
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    return line;
}

// The limits written to a running worker's cgroups, by file name
// ("memory.limit_in_bytes", "pids.max", "cpu.cfs_quota_us", v2's "memory.max", …).
std::map<std::string, std::string> worker_limit_files(pid_t runner_pid)
{
    std::map<std::string, std::string> found;
    for (const auto& dir : worker_cgroups_of(runner_pid))
        for (const char* file : {"memory.limit_in_bytes", "memory.memsw.limit_in_bytes", "memory.max",
                                 "memory.swap.max", "pids.max", "cpu.cfs_quota_us", "cpu.cfs_period_us", "cpu.max"})
            if (fs::exists(dir + "/" + file))
                found[file] = first_line(dir + "/" + file);
    return found;
}

// Waits for a running worker of `runner_pid` and returns its limit files.
std::map<std::string, std::string> limits_of_running_worker(ExecutorFixture& f, const std::string& task_id)
{
    std::map<std::string, std::string> files;
    f.wait_until(task_id, [&](const Json&) {
        if (worker_processes_of(f.runner().pid()).empty())
            return false;
        files = worker_limit_files(f.runner().pid());
        return files.count("pids.max") > 0;
    });
    return files;
}

std::string memory_limit(const std::map<std::string, std::string>& files)
{
    if (auto it = files.find("memory.max"); it != files.end())
        return it->second;
    auto it = files.find("memory.limit_in_bytes");
    return it == files.end() ? "" : it->second;
}

// The CPU quota per 100 ms period, µs.
std::string cpu_quota(const std::map<std::string, std::string>& files)
{
    if (auto it = files.find("cpu.max"); it != files.end())
        return it->second.substr(0, it->second.find(' '));
    auto it = files.find("cpu.cfs_quota_us");
    return it == files.end() ? "" : it->second;
}

void stop_task(ExecutorFixture& f, const std::string& task_id)
{
    auto reply = http("POST", f.runner().url() + "/v1/tasks/" + task_id + "/cancel");
    REQUIRE_MESSAGE(reply.status == 200, reply.raw);
    f.wait_terminal(task_id);
    // The node is recorded before its worker is reaped: wait for its
    // cgroups to go, so the next worker's are the only ones.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < deadline &&
           (!worker_processes_of(f.runner().pid()).empty() || !worker_cgroups_of(f.runner().pid()).empty()))
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    CHECK(worker_cgroups_of(f.runner().pid()).empty());
}

// A worker within its limits works (the host and the runner are fine).
void check_healthy_worker(ExecutorFixture& f, const std::string& task_id)
{
    f.announce(kHealthy, inline_spawn_spec({"/bin/worker", "emit", R"({"ok":true})"},
                                           {{"resource_limits", {{"memory", "64Mi"}, {"cpu", "500m"}}}}));
    Json task = f.wait_terminal(f.submit(task_frame_of(task_id, {dag_node("n", kHealthy, "nwp://exec.test/n")})));
    INFO(task.dump(2));
    CHECK(task["state"] == "COMPLETED");
    CHECK(task["nodes"]["n"]["result"] == Json{{"ok", true}});
}

std::string node_log(ExecutorFixture& f, const std::string& task_id, const std::string& stream)
{
    auto log = http("GET", f.runner().url() + "/v1/tasks/" + task_id + "/nodes/n/log?stream=" + stream);
    REQUIRE_MESSAGE(log.status == 200, log.raw);
    return log.body.value("text", "");
}

}  // namespace

TEST_CASE("limits: a SpawnSpec without limits runs with [workers]' defaults in its cgroup: 512Mi, swap off, 1 CPU, 256 pids")
{
    ExecutorFixture f("[workers]\nstop_grace_seconds = 1\n");
    f.announce(kAgent, inline_spawn_spec({"/bin/worker", "sleep", "60"}));
    const std::string task_id = f.submit(task_frame_of("defaults-01", {dag_node("n", kAgent, "nwp://exec.test/n")}));
    auto files = limits_of_running_worker(f, task_id);
    INFO("limit files: " << Json(files).dump());
    CHECK(memory_limit(files) == std::to_string(512ll << 20));
    if (files.count("memory.memsw.limit_in_bytes"))
        CHECK(files["memory.memsw.limit_in_bytes"] == std::to_string(512ll << 20));
    if (files.count("memory.swap.max"))
        CHECK(files["memory.swap.max"] == "0");
    CHECK(files["pids.max"] == "256");
    CHECK(cpu_quota(files) == "100000");  // 1 CPU: 100 ms per 100 ms period
    stop_task(f, task_id);
}

TEST_CASE("limits: a SpawnSpec within the ceilings gets what it asks, and works")
{
    ExecutorFixture f("[workers]\nstop_grace_seconds = 1\n");
    f.announce(kAgent, inline_spawn_spec({"/bin/worker", "sleep", "60"},
                                         {{"resource_limits", {{"memory", "4Gi"}, {"cpu", "250m"}}},
                                          {"max_runtime_seconds", 86400}}));
    const std::string task_id = f.submit(task_frame_of("within-01", {dag_node("n", kAgent, "nwp://exec.test/n")}));
    auto files = limits_of_running_worker(f, task_id);
    INFO("limit files: " << Json(files).dump());
    CHECK(memory_limit(files) == std::to_string(4ll << 30));  // exactly the ceiling is within it
    CHECK(cpu_quota(files) == "25000");
    CHECK(files["pids.max"] == "256");
    stop_task(f, task_id);
    check_healthy_worker(f, "within-02");
}

TEST_CASE("limits: a fork bomb in a worker without limits stops at default_pids; the runner and host carry on")
{
    ExecutorFixture f;
    // Starts background sleepers until fork fails, printing the count.
    // busybox sh gives up at the first failed fork.
    const std::string bomb = "n=0; while [ $n -lt 3000 ]; do sleep 60 & n=$((n+1)); echo $n; done; echo all-started";
    f.announce(kAgent, inline_spawn_spec({"/bin/sh", "-c", bomb}));
    Json task = f.wait_terminal(
        f.submit(task_frame_of("forkbomb-01", {dag_node("n", kAgent, "nwp://exec.test/n")}, {{"max_retries", 0}})),
        std::chrono::seconds(120));
    INFO(task.dump(2));
    CHECK(task["state"] == "FAILED");
    CHECK(task["nodes"]["n"]["state"] == "FAILED");
    CHECK(task["nodes"]["n"]["killed_reason"] == "exit_status");
    const std::string out = node_log(f, "forkbomb-01", "stdout");
    const std::string err = node_log(f, "forkbomb-01", "stderr");
    INFO("stderr: " << err);
    CHECK(out.find("all-started") == std::string::npos);
    CHECK(err.find("can't fork") != std::string::npos);
    // The last count printed: below 256 (the shell itself takes a pid), and
    // near it, so it was the pids limit that stopped it and not something else.
    std::istringstream lines(out);
    long last = 0;
    for (std::string line; std::getline(lines, line);)
        if (!line.empty() && line.find_first_not_of("0123456789") == std::string::npos)
            last = std::stol(line);
    CHECK(last < 256);
    CHECK(last >= 200);
    // Nothing of it is left, and the next worker runs normally.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    while (std::chrono::steady_clock::now() < deadline && !worker_processes_of(f.runner().pid()).empty())
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    CHECK(worker_processes_of(f.runner().pid()).empty());
    check_healthy_worker(f, "forkbomb-02");
}

TEST_CASE("limits: a worker without limits holding more than 512Mi is OOM-killed (killed_reason oom)")
{
    ExecutorFixture f;
    // A string doubling in awk: 256 MiB plus its 512 MiB copy passes the default.
    f.announce(kAgent, inline_spawn_spec({"/bin/busybox", "awk", "BEGIN { s = \"x\"; while (1) s = s s }"}));
    Json task = f.wait_terminal(
        f.submit(task_frame_of("oom-01", {dag_node("n", kAgent, "nwp://exec.test/n")}, {{"max_retries", 0}})),
        std::chrono::seconds(120));
    INFO(task.dump(2));
    CHECK(task["state"] == "FAILED");
    CHECK(task["nodes"]["n"]["state"] == "FAILED");
    CHECK(task["nodes"]["n"]["killed_reason"] == "oom");
    check_healthy_worker(f, "oom-02");

    // A SpawnSpec's own, smaller limit is the one that holds.
    f.announce(kAgent, inline_spawn_spec({"/bin/busybox", "awk", "BEGIN { s = \"x\"; while (1) s = s s }"},
                                         {{"resource_limits", {{"memory", "32Mi"}}}}));
    Json small = f.wait_terminal(
        f.submit(task_frame_of("oom-03", {dag_node("n", kAgent, "nwp://exec.test/n")}, {{"max_retries", 0}})),
        std::chrono::seconds(120));
    CHECK(small["nodes"]["n"]["killed_reason"] == "oom");
}

TEST_CASE("limits: a SpawnSpec above a ceiling fails its node with NOP-SPAWN-SPEC-INVALID naming field, value, ceiling")
{
    ExecutorFixture f;
    struct Case {
        const char* task_id;
        Json extra;
        std::string message;
    } cases[] = {
        {"ceiling-memory", {{"resource_limits", {{"memory", "100Ti"}}}},
         "resource_limits.memory: 100Ti exceeds the operator's ceiling workers.max_memory = 4Gi"},
        {"ceiling-runtime", {{"max_runtime_seconds", 2147483647}},  // 68 years
         "max_runtime_seconds: 2147483647 exceeds the operator's ceiling workers.max_runtime_seconds_ceiling = 86400"},
        {"ceiling-idle", {{"idle_timeout_seconds", 90000}},
         "idle_timeout_seconds: 90000 exceeds the operator's ceiling workers.max_runtime_seconds_ceiling = 86400"},
        {"ceiling-cpu", {{"resource_limits", {{"cpu", "100000"}}}},
         "resource_limits.cpu: 100000 exceeds the operator's ceiling workers.max_cpu = "},
    };
    for (const auto& c : cases) {
        const std::string agent = "urn:nps:agent:exec.test:" + std::string(c.task_id);
        f.announce(agent, inline_spawn_spec({"/bin/worker", "emit", "{}"}, c.extra));
        Json task = f.wait_terminal(f.submit(task_frame_of(c.task_id, {dag_node("n", agent, "nwp://exec.test/n")})));
        INFO(task.dump(2));
        CHECK(task["state"] == "FAILED");
        const Json& node = task["nodes"]["n"];
        CHECK(node["state"] == "FAILED");
        CHECK(node["error_code"] == "NOP-SPAWN-SPEC-INVALID");
        CHECK(node["error_status"]["http"] == 400);
        CHECK(node["attempts"] == 1);  // not retried
        CHECK_MESSAGE(node["error_message"].get<std::string>().find(c.message) != std::string::npos,
                      node["error_message"]);
        CHECK(node["killed_reason"].is_null());  // nothing was started

        // The resolve endpoint answers as the launch did.
        auto reply = http("POST", f.runner().url() + "/v1/spawnspecs/resolve", Json{{"agent", agent}}.dump());
        check_error(reply, 400, "NOP-SPAWN-SPEC-INVALID");
        CHECK_MESSAGE(reply.body["message"].get<std::string>().find(c.message) != std::string::npos, reply.raw);
    }
    CHECK(worker_processes_of(f.runner().pid()).empty());
    check_healthy_worker(f, "ceiling-ok");
}

TEST_CASE("limits: the operator's own defaults and ceilings apply, also after a SIGHUP reload")
{
    const std::string first = "[workers]\nstop_grace_seconds = 1\ndefault_memory = \"96Mi\"\ndefault_pids = 48\n"
                              "max_memory = \"8Gi\"\n";
    ExecutorFixture f(first);
    f.announce(kAgent, inline_spawn_spec({"/bin/worker", "sleep", "60"}));
    std::string task_id = f.submit(task_frame_of("operator-01", {dag_node("n", kAgent, "nwp://exec.test/n")}));
    auto files = limits_of_running_worker(f, task_id);
    CHECK(memory_limit(files) == std::to_string(96ll << 20));
    CHECK(files["pids.max"] == "48");
    stop_task(f, task_id);

    // A spec asking 6Gi is within this operator's 8Gi ceiling ...
    const std::string big = "urn:nps:agent:exec.test:big";
    f.announce(big, inline_spawn_spec({"/bin/worker", "emit", "{}"}, {{"resource_limits", {{"memory", "6Gi"}}}}));
    Json ok = f.wait_terminal(f.submit(task_frame_of("operator-02", {dag_node("n", big, "nwp://exec.test/n")})));
    CHECK(ok["state"] == "COMPLETED");

    // ... and above the lowered one after a reload, which also changes the defaults.
    write_file(f.state_dir() + "/config.toml",
               "[runner]\ninboxes = [\"" + std::string(kInbox) +
                   "\"]\n[workers]\nstop_grace_seconds = 1\ndefault_pids = 40\nmax_memory = \"2Gi\"\n");
    REQUIRE(::kill(f.runner().pid(), SIGHUP) == 0);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline &&
           f.runner().log().find("workers.max_memory") == std::string::npos)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    REQUIRE_MESSAGE(f.runner().log().find("workers.max_memory") != std::string::npos, f.runner().log());
    Json refused = f.wait_terminal(f.submit(task_frame_of("operator-03", {dag_node("n", big, "nwp://exec.test/n")})));
    CHECK(refused["nodes"]["n"]["error_code"] == "NOP-SPAWN-SPEC-INVALID");
    CHECK(refused["nodes"]["n"]["error_message"].get<std::string>().find(
              "resource_limits.memory: 6Gi exceeds the operator's ceiling workers.max_memory = 2Gi") != std::string::npos);
    task_id = f.submit(task_frame_of("operator-04", {dag_node("n", kAgent, "nwp://exec.test/n")}));
    files = limits_of_running_worker(f, task_id);
    CHECK(memory_limit(files) == std::to_string(512ll << 20));  // back to the built-in default
    CHECK(files["pids.max"] == "40");
    stop_task(f, task_id);
}

TEST_CASE("logs: past workers.logs_max_bytes finished workers' logs go, oldest first; the newest stay")
{
    // Each worker writes about 40 KiB to stderr; the cap holds two of them.
    ExecutorFixture f("[workers]\nlogs_max_bytes = \"100Ki\"\n");
    f.announce(kAgent, inline_spawn_spec({"/bin/sh", "-c",
                                          "i=0; while [ $i -lt 640 ]; do "
                                          "echo 'log line of sixty-four bytes, to fill the log up: ..........' >&2; "
                                          "i=$((i+1)); done"}));
    const std::string logs = f.state_dir() + "/logs";
    auto total_bytes = [&] {
        std::uintmax_t total = 0;
        std::error_code ec;
        for (auto it = fs::recursive_directory_iterator(logs, ec); !ec && it != fs::recursive_directory_iterator();
             it.increment(ec))
            if (it->is_regular_file(ec))
                total += it->file_size(ec);
        return total;
    };
    std::vector<std::string> dirs_in_order;
    for (int i = 0; i < 5; ++i) {
        const std::string task_id = "logs-" + std::to_string(i);
        Json task = f.wait_terminal(f.submit(task_frame_of(task_id, {dag_node("n", kAgent, "nwp://exec.test/n")})));
        REQUIRE_MESSAGE(task["state"] == "COMPLETED", task.dump(2));
        for (const auto& e : task["events"])
            if (e["event"] == "n:worker" && e["detail"].contains("log_dir"))
                dirs_in_order.push_back(e["detail"]["log_dir"].get<std::string>());
    }
    REQUIRE(dirs_in_order.size() == 5);
    // The prune runs on a pool thread after each worker's end (at most one a
    // second) and is logged when it is done: wait for both rather than for a
    // fixed time.
    const auto pruned_logged = [&] {
        return f.runner().log().find("to keep all worker logs under workers.logs_max_bytes = 100Ki") !=
               std::string::npos;
    };
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline && (total_bytes() > 100 * 1024 || !pruned_logged()))
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    INFO(f.runner().log());
    CHECK(total_bytes() <= 100 * 1024);
    CHECK(total_bytes() > 0);
    CHECK_FALSE(fs::exists(dirs_in_order[0]));
    CHECK_FALSE(fs::exists(dirs_in_order[1]));
    CHECK(fs::exists(dirs_in_order[4]));
    CHECK(f.runner().log().find("to keep all worker logs under workers.logs_max_bytes = 100Ki") != std::string::npos);
    // The newest node's log is still served.
    auto log = http("GET", f.runner().url() + "/v1/tasks/logs-4/nodes/n/log?stream=stderr");
    REQUIRE_MESSAGE(log.status == 200, log.raw);
    CHECK(log.body["text"].get<std::string>().find("log line of sixty-four bytes") != std::string::npos);
}

// The worker cgroup ("…/w-<runner pid>-…") of process `pid`, from its first
// hierarchy that has one.
static std::string cgroup_of(pid_t pid)
{
    std::ifstream in("/proc/" + std::to_string(pid) + "/cgroup");
    for (std::string line; std::getline(in, line);)
        if (auto at = line.find("/w-"); at != std::string::npos)
            return line.substr(at);
    return "";
}

// The first line of /proc/<pid>/uid_map: "inside outside count".
static std::array<unsigned long, 3> uid_map_of(pid_t pid)
{
    std::ifstream in("/proc/" + std::to_string(pid) + "/uid_map");
    std::array<unsigned long, 3> map{1, 0, 0};
    in >> map[0] >> map[1] >> map[2];
    return map;
}

TEST_CASE("a daemon's workers run in user namespaces of their own: a slot's host ids each, none shared")
{
    ExecutorFixture f;
    const std::string why_not = sandbox::user_namespace_unavailable_reason(
        sandbox::userns_slots_options(0x7000'0000, 65'536, sandbox::kUsernsLockDir), f.state_dir() + "/workers",
        sandbox::RootfsKind::overlay);
    f.announce(kAgent, inline_spawn_spec({"/bin/worker", "sleep", "20"}));
    f.submit(task_frame_of("userns-a", {dag_node("n", kAgent, "nwp://exec.test/n")}));
    f.submit(task_frame_of("userns-b", {dag_node("n", kAgent, "nwp://exec.test/n")}));
    // One process of each of the two workers (a worker may have several).
    std::map<std::string, pid_t> workers;  // by cgroup
    f.wait_until("userns-b", [&](const Json&) {
        workers.clear();
        for (pid_t pid : worker_processes_of(f.runner().pid()))
            workers.emplace(cgroup_of(pid), pid);
        return workers.size() >= 2;
    });
    INFO(f.runner().log());
    if (!why_not.empty()) {
        // auto: off where the kernel cannot, saying why at start.
        CHECK(f.runner().log().find("user namespace off (auto: off") != std::string::npos);
        for (const auto& [cgroup, pid] : workers)
            CHECK(uid_map_of(pid)[2] == 4294967295ul);
        return;
    }
    CHECK(f.runner().log().find("user namespace on") != std::string::npos);
    std::set<unsigned long> outsides;
    for (const auto& [cgroup, pid] : workers) {
        const auto map = uid_map_of(pid);
        CAPTURE(cgroup);
        CHECK(map[0] == 0);
        CHECK(map[1] >= 0x7000'0000ul);
        CHECK((map[1] - 0x7000'0000ul) % 65'536 == 0);
        CHECK(map[2] == 65'536);
        outsides.insert(map[1]);
    }
    CHECK(outsides.size() == workers.size());  // no two workers share a host id range
    for (const char* task : {"userns-a", "userns-b"})
        CHECK(http("POST", f.runner().url() + "/v1/tasks/" + task + "/cancel").status == 200);
}

}  // namespace nps::test
