// SPDX-License-Identifier: Apache-2.0
// A daemon's worker filling its bounded writable space ([workers]
// default_disk; docs/sandbox.md "Disk"): ENOSPC for the worker, the host's
// disk untouched, the daemon serving on, and nothing mounted left after.
// And the state directory's own disk full under a running task
// (docs/security.md, finding 12).
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <doctest/doctest.h>

#include <filesystem>
#include <map>
#include <thread>

#include "disk_usage.hpp"
#include "executor_fixture.hpp"
#include "temp_dir.hpp"

namespace nps::test {
namespace {

using Json = nlohmann::json;

const std::string kFiller = "urn:nps:agent:exec.test:filler";
const std::string kEmit = "urn:nps:agent:exec.test:emit";

// A worker's space is the mount on its directory, workers/<name> (its
// rootfs is mounted one level deeper).
bool is_worker_space(const std::string& workers, const std::string& point)
{
    return std::filesystem::path(point).parent_path() == std::filesystem::path(workers);
}

}  // namespace

TEST_CASE("a worker past its disk limit gets ENOSPC; the host disk is untouched, the daemon serves on, nothing stays mounted")
{
    constexpr long long kLimit = 16ll << 20;
    ExecutorFixture f("[workers]\ndefault_disk = \"16Mi\"\n");
    // Fills /tmp, then /dev/shm, holds the full space for 4 s (the test
    // looks at the host meanwhile), then reports what each holds and the
    // space's size.
    const std::string script =
        "busybox dd if=/dev/zero of=/tmp/f bs=1M count=24 2>/dev/null; t=$(busybox wc -c </tmp/f); "
        "busybox dd if=/dev/zero of=/dev/shm/f bs=1M count=24 2>/dev/null; s=$(busybox wc -c </dev/shm/f); "
        "k=$(busybox df -k /tmp | busybox tail -1 | busybox awk '{print $2}'); "
        "echo full >&2; sleep 4; "
        "printf '{\"seq\":0,\"is_final\":true,\"data\":{\"tmp\":%s,\"shm\":%s,\"size_kib\":%s}}\\n' $t $s $k";
    f.announce(kFiller, inline_spawn_spec({"/bin/sh", "-c", script}));
    f.announce(kEmit, inline_spawn_spec({"/bin/worker", "emit", R"({"value":7})"}));

    const std::string workers = f.state_dir() + "/workers";
    std::string task_id = f.submit(task_frame_of("disk-01", {dag_node("fill", kFiller, "nwp://exec.test/fill")},
                                                 {{"max_retries", 0}}));
    // While the worker holds a full space: it is a tmpfs beneath its
    // directory, the host's disk beneath workers/ holds none of it, and the
    // daemon answers.
    bool seen_full = false;
    for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
         !seen_full && std::chrono::steady_clock::now() < deadline;) {
        for (const auto& point : mounts_beneath(workers)) {
            struct statvfs st {};
            if (is_worker_space(workers, point) && ::statvfs(point.c_str(), &st) == 0 &&
                static_cast<long long>((st.f_blocks - st.f_bfree) * st.f_frsize) >= kLimit - (1ll << 20)) {
                seen_full = true;
                CHECK(disk_bytes_beneath(workers) < (1u << 20));
                auto health = http("GET", f.runner().url() + "/healthz");
                CHECK(health.status == 200);
            }
        }
        if (!seen_full)
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    CHECK(seen_full);

    Json task = f.wait_terminal(task_id);
    INFO(task.dump(2));
    REQUIRE(task["state"] == "COMPLETED");
    const Json& data = task["nodes"]["fill"]["result"];
    CHECK(data["size_kib"] == kLimit / 1024);
    const long long tmp = data["tmp"], shm = data["shm"];
    CHECK(tmp < 24ll << 20);  // dd stopped early: ENOSPC
    CHECK(tmp + shm <= kLimit);
    CHECK(tmp + shm >= kLimit - (1ll << 20));

    // The daemon keeps working: another task completes.
    Json next = f.wait_terminal(f.submit(task_frame_of("disk-02", {dag_node("emit", kEmit, "nwp://exec.test/emit")})));
    CHECK(next["state"] == "COMPLETED");
    CHECK(next["nodes"]["emit"]["result"] == Json{{"value", 7}});
    CHECK(http("GET", f.runner().url() + "/healthz").status == 200);

    // Released after the node is recorded: wait for it.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    auto leftovers = [&] {
        std::error_code ec;
        return !mounts_beneath(workers).empty() ||
               std::filesystem::directory_iterator(workers, ec) != std::filesystem::directory_iterator();
    };
    while (leftovers() && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    CHECK(mounts_beneath(workers).empty());
    CHECK_FALSE(leftovers());
}

TEST_CASE("kill -9 of the daemon with a worker holding its space: the restart unmounts and removes it")
{
    ExecutorFixture f;
    // Bounded, so the attempt the restarted daemon runs again ends too.
    f.announce(kFiller, inline_spawn_spec({"/bin/sh", "-c", "echo x > /tmp/x; sleep 30"}, {{"max_runtime_seconds", 10}}));
    const std::string workers = f.state_dir() + "/workers";
    std::string task_id = f.submit(task_frame_of("disk-crash", {dag_node("hold", kFiller, "nwp://exec.test/hold")}));
    f.wait_until(task_id, [&](const Json&) {
        for (const auto& point : mounts_beneath(workers))
            if (is_worker_space(workers, point))
                return !worker_processes_of(f.runner().pid()).empty();
        return false;
    });
    f.runner().kill_hard();
    CHECK_FALSE(mounts_beneath(workers).empty());  // the dead daemon's leftovers
    f.start();
    // Recovery runs before the daemon is ready.
    std::vector<std::string> left = mounts_beneath(workers);
    // Only the new daemon's own worker (the attempt run again) may be there.
    for (const auto& point : left)
        CHECK_MESSAGE(point.find("/t-" + std::to_string(f.runner().pid()) + "-") != std::string::npos, point);
    f.wait_terminal(task_id);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    while (!mounts_beneath(workers).empty() && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    CHECK(mounts_beneath(workers).empty());
}

TEST_CASE("a full state disk while a task runs: the task keeps its lease, its records wait for space, it completes once")
{
    // The state directory (runner.db, worker logs) on a small disk of its own.
    ExecutorFixture f("", "48m");
    const std::string script = "sleep 3; printf '{\"seq\":0,\"is_final\":true,\"data\":{\"value\":42}}\\n'";
    f.announce(kFiller, inline_spawn_spec({"/bin/sh", "-c", script}));
    const std::string task_id = f.submit(task_frame_of("full-01", {dag_node("slow", kFiller, "nwp://exec.test/slow")},
                                                       {{"max_retries", 0}}));
    f.wait_until(task_id, [&](const Json& t) {
        return t["state"] == "RUNNING" && !worker_processes_of(f.runner().pid()).empty();
    });
    const std::string runner_nid = f.task(task_id)["lease"]["runner_nid"];

    // Fill the disk while the worker runs, then use up what room the WAL
    // kept with deposits into an inbox nobody claims, until one is refused.
    REQUIRE(fill_filesystem(f.state_dir() + "/filler"));
    const std::string other_inbox = f.runner().url() + "/v1/inbox/" + net::url_encode("urn:nps:agent:exec.test:nobody");
    long status = 0;
    for (int i = 0; i < 500 && status != 503; ++i)
        status = http("POST", other_inbox, task_frame_of("spill-" + std::to_string(i),
                                                          {dag_node("n", kEmit, "nwp://exec.test/n")}).dump()).status;
    REQUIRE(status == 503);

    // The worker ends meanwhile; its record cannot be written. The task is
    // neither dropped nor failed: still RUNNING, its lease still ours, its
    // node not recorded, the daemon degraded and serving.
    f.wait_until(task_id, [&](const Json&) { return worker_processes_of(f.runner().pid()).empty(); });
    std::this_thread::sleep_for(std::chrono::seconds(3));  // three record retries
    Json held = f.task(task_id);
    INFO(held.dump(2));
    CHECK(held["state"] == "RUNNING");
    REQUIRE(held["lease"].is_object());
    CHECK(held["lease"]["runner_nid"] == runner_nid);
    if (held["nodes"].contains("slow"))  // its dispatch, recorded before the disk filled
        CHECK(held["nodes"]["slow"]["state"] == "RUNNING");
    auto health = http("GET", f.runner().url() + "/healthz");
    CHECK(health.status == 503);
    CHECK(health.body["status"] == "degraded");

    // Space returns: the kept record is written, the task completes with the
    // worker's result, and the node ran once.
    std::filesystem::remove(f.state_dir() + "/filler");
    Json task = f.wait_terminal(task_id);
    INFO(task.dump(2));
    INFO(f.runner().log());
    CHECK(task["state"] == "COMPLETED");
    CHECK(task["nodes"]["slow"]["attempts"] == 1);
    CHECK(task["nodes"]["slow"]["result"] == Json{{"value", 42}});
    CHECK(task["claims"] == 1);
    // The events the full disk held back are written too, once each.
    std::map<std::string, int> events;
    for (const auto& e : task["events"])
        ++events[e["event"].get<std::string>()];
    for (const char* name : {"slow:worker", "slow:attempt:1", "slow:completed"})
        CHECK_MESSAGE(events[name] == 1, name);
    for (int i = 0; i < 50 && http("GET", f.runner().url() + "/healthz").status != 200; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    CHECK(http("GET", f.runner().url() + "/healthz").status == 200);
}

}  // namespace nps::test
