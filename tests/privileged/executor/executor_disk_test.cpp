// SPDX-License-Identifier: Apache-2.0
// A daemon's worker filling its bounded writable space ([workers]
// default_disk; docs/sandbox.md "Disk"): ENOSPC for the worker, the host's
// disk untouched, the daemon serving on, and nothing mounted left after.
#include <sys/statvfs.h>
#include <sys/stat.h>

#include <doctest/doctest.h>

#include <filesystem>
#include <thread>

#include "disk_usage.hpp"
#include "executor_fixture.hpp"
#include "temp_dir.hpp"

namespace nps::test {
namespace {

using Json = nlohmann::json;

const std::string kFiller = "urn:nps:agent:exec.test:filler";
const std::string kEmit = "urn:nps:agent:exec.test:emit";

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
            if (point.ends_with("/space") && ::statvfs(point.c_str(), &st) == 0 &&
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
            if (point.ends_with("/space"))
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

}  // namespace nps::test
