// SPDX-License-Identifier: Apache-2.0
// runner.db faults through the real daemon: a full disk (a size-capped
// tmpfs as the state directory), corrupt pages, a zero-length file.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/mount.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>
#include <vector>

#include "disk_usage.hpp"
#include "runner_process.hpp"

using nps::test::http;
using nps::test::RunnerOptions;
using nps::test::RunnerProcess;
using nps::test::task_frame;
using nps::test::TempDir;

namespace {

const std::string kInbox = "urn:nps:agent:example.test:faults";

// A tmpfs of `size` mounted on a fresh directory, unmounted at the end.
struct SmallDisk {
    TempDir parent;
    std::string path = parent.file("state");
    bool mounted = false;
    explicit SmallDisk(const char* size)
    {
        std::filesystem::create_directory(path);
        mounted = ::mount("tmpfs", path.c_str(), "tmpfs", 0, (std::string("size=") + size).c_str()) == 0;
    }
    ~SmallDisk()
    {
        if (mounted)
            ::umount2(path.c_str(), MNT_DETACH);
    }
};

// Runs `serve` on `state_dir`, which must refuse to start: its exit status
// and stderr. (A serve that starts would not return: the test's timeout
// fails it.)
std::pair<int, std::string> start_refused(const std::string& state_dir)
{
    nps::test::write_file(state_dir + "/config.toml", "");
    auto r = nps::test::run_command({"serve", "--config", state_dir + "/config.toml", "--state-dir", state_dir,
                                     "--listen", "127.0.0.1:0", "--socket", "none"});
    return {r.exit_status, r.err + r.out};
}

}  // namespace

TEST_CASE("a full disk: deposits answer 503 and change nothing, /healthz says degraded until space returns")
{
    SmallDisk disk("8m");
    if (!disk.mounted) {
        MESSAGE("skipped: cannot mount a tmpfs here (needs root)");
        return;
    }
    RunnerProcess runner(RunnerOptions{.state_dir = disk.path});
    REQUIRE_MESSAGE(runner.start(), runner.log());
    const std::string url = runner.url() + "/v1/inbox/" + nps::net::url_encode(kInbox);
    REQUIRE(http("POST", url, task_frame("before-full")).status == 201);
    REQUIRE(http("GET", runner.url() + "/healthz").status == 200);
    REQUIRE(http("GET", runner.url() + "/readyz").status == 200);

    REQUIRE(nps::test::fill_filesystem(disk.path + "/filler"));
    // The WAL may still have room for a deposit or two; then it must grow.
    nps::test::Reply refused;
    std::string refused_id;
    for (int i = 0; i < 200 && refused.status != 503; ++i) {
        refused_id = "while-full-" + std::to_string(i);
        refused = http("POST", url, task_frame(refused_id, 20));
        REQUIRE_MESSAGE((refused.status == 201 || refused.status == 503), refused.raw);
    }
    nps::test::check_error(refused, 503, "NWP-STORE-DISK-FULL");
    CHECK(refused.body["status"] == "NPS-SERVER-UNAVAILABLE");

    auto health = http("GET", runner.url() + "/healthz");
    CHECK(health.status == 503);
    CHECK(health.body["status"] == "degraded");
    CHECK_MESSAGE(health.body["problem"].get<std::string>().find("disk full") != std::string::npos, health.raw);
    CHECK(http("GET", runner.url() + "/metrics").raw.find("nps_store_degraded 1") != std::string::npos);
    // Not ready while it cannot write; alive all the same.
    auto ready = http("GET", runner.url() + "/readyz");
    CHECK(ready.status == 503);
    CHECK(ready.body["status"] == "not-ready");
    CHECK(ready.body["problem"].get<std::string>().find("cannot be written") != std::string::npos);
    CHECK(http("GET", runner.url() + "/health").status == 200);
    // Nothing of the refused deposit was kept.
    CHECK(http("GET", runner.url() + "/v1/tasks/" + refused_id).status == 404);

    std::filesystem::remove(disk.path + "/filler");
    long status = 0;
    for (int i = 0; i < 300 && status != 200; ++i) {
        status = http("GET", runner.url() + "/healthz").status;
        if (status != 200)
            std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the probe runs once a second
    }
    CHECK(status == 200);
    CHECK(http("GET", runner.url() + "/readyz").status == 200);
    CHECK(http("POST", url, task_frame(refused_id, 20)).status == 201);
    CHECK(http("GET", runner.url() + "/metrics").raw.find("nps_store_degraded 0") != std::string::npos);
    CHECK(http("GET", runner.url() + "/v1/tasks/before-full").status == 200);
}

TEST_CASE("a runner.db with corrupt pages is refused at start with what to do")
{
    TempDir dir;
    {
        RunnerProcess runner(RunnerOptions{.state_dir = dir.path()});
        REQUIRE_MESSAGE(runner.start(), runner.log());
        const std::string url = runner.url() + "/v1/inbox/" + nps::net::url_encode(kInbox);
        for (int i = 0; i < 50; ++i)
            REQUIRE(http("POST", url, task_frame("corrupt-" + std::to_string(i), 20)).status == 201);
        REQUIRE(runner.stop() == 0);  // checkpoints the WAL into runner.db
    }
    const std::string db = dir.file("runner.db");
    const auto size = std::filesystem::file_size(db);
    REQUIRE(size > 8 * 4096);
    {
        // Garbage over every page but the first (the header), from the third on.
        int fd = ::open(db.c_str(), O_WRONLY);
        REQUIRE(fd >= 0);
        std::vector<char> garbage(4096);
        for (std::size_t i = 0; i < garbage.size(); ++i)
            garbage[i] = static_cast<char>((i * 7919 + 13) & 0xff);
        for (off_t page = 2; page * 4096 < static_cast<off_t>(size); page += 2)
            REQUIRE(::pwrite(fd, garbage.data(), garbage.size(), page * 4096) == 4096);
        ::close(fd);
    }
    std::filesystem::remove(dir.file("runner.db-wal"));
    std::filesystem::remove(dir.file("runner.db-shm"));
    auto [status, log] = start_refused(dir.path());
    CHECK(status != 0);
    CHECK(status != -1);
    CHECK_MESSAGE(log.find("runner.db at " + db + " is corrupt") != std::string::npos, log);
    CHECK_MESSAGE(log.find("restore it from a backup, or move it aside") != std::string::npos, log);
}

TEST_CASE("a zero-length runner.db is refused where the state directory is in use, fine where it is fresh")
{
    TempDir used;
    std::filesystem::create_directories(used.file("images/blobs"));
    nps::test::write_file(used.file("runner.db"), "");
    auto [status, log] = start_refused(used.path());
    CHECK(status != 0);
    CHECK(status != -1);
    CHECK_MESSAGE(log.find("is empty (zero bytes) but the state directory is in use") != std::string::npos, log);
    CHECK(log.find(used.file("images")) != std::string::npos);

    TempDir workers;
    std::filesystem::create_directories(workers.file("workers/t-1-1"));
    nps::test::write_file(workers.file("runner.db"), "");
    CHECK(start_refused(workers.path()).first > 0);

    TempDir fresh;
    nps::test::write_file(fresh.file("runner.db"), "");
    RunnerProcess runner(RunnerOptions{.state_dir = fresh.path()});
    CHECK_MESSAGE(runner.start(), runner.log());
}
