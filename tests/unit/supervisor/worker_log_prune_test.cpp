// SPDX-License-Identifier: Apache-2.0
// Retention of worker log directories on a real directory tree.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <sys/time.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "nps/supervisor/worker_log.hpp"
#include "temp_dir.hpp"

using nps::supervisor::prune_worker_logs;
namespace fs = std::filesystem;

namespace {

using SysClock = std::chrono::system_clock;

// A worker log directory whose files and itself were last written `age` ago.
void make_worker_logs(const fs::path& dir, std::chrono::hours age)
{
    fs::create_directories(dir);
    for (const char* file : {"stdout.log", "stderr.log"})
        std::ofstream(dir / file) << "line\n";
    const auto when = SysClock::to_time_t(SysClock::now() - age);
    struct timeval times[2] = {{when, 0}, {when, 0}};
    for (const char* file : {"stdout.log", "stderr.log"})
        REQUIRE(::utimes((dir / file).c_str(), times) == 0);
    REQUIRE(::utimes(dir.c_str(), times) == 0);
}

}  // namespace

TEST_CASE("finished workers' logs past the cutoff go; recent, running and foreign entries stay")
{
    nps::test::TempDir root;
    const fs::path base = root.path();
    make_worker_logs(base / "w-100-1", std::chrono::hours(200));
    make_worker_logs(base / "w-100-2", std::chrono::hours(200));
    make_worker_logs(base / "w-100-3", std::chrono::hours(1));
    make_worker_logs(base / "w-100-4", std::chrono::hours(200));  // running: never pruned
    // One fresh rotation inside an otherwise old directory keeps it.
    make_worker_logs(base / "w-100-5", std::chrono::hours(200));
    std::ofstream(base / "w-100-5" / "stdout.log.1") << "recent\n";
    std::ofstream(base / "README") << "not a worker\n";
    fs::create_directory_symlink(base / "w-100-1", base / "link");

    auto report = prune_worker_logs(base.string(), SysClock::now() - std::chrono::hours(168), {"w-100-4"}, 100);
    CHECK(report.problems.empty());
    CHECK(report.removed == 2);
    CHECK_FALSE(fs::exists(base / "w-100-1"));
    CHECK_FALSE(fs::exists(base / "w-100-2"));
    CHECK(fs::exists(base / "w-100-3" / "stdout.log"));
    CHECK(fs::exists(base / "w-100-4" / "stdout.log"));
    CHECK(fs::exists(base / "w-100-5" / "stdout.log"));
    CHECK(fs::exists(base / "README"));
    CHECK(fs::is_symlink(base / "link"));
}

TEST_CASE("one call removes at most max_removals; a missing root is empty")
{
    nps::test::TempDir root;
    const fs::path base = root.path();
    for (int i = 0; i < 5; ++i)
        make_worker_logs(base / ("w-7-" + std::to_string(i)), std::chrono::hours(48));
    const auto cutoff = SysClock::now() - std::chrono::hours(24);
    CHECK(prune_worker_logs(base.string(), cutoff, {}, 3).removed == 3);
    CHECK(prune_worker_logs(base.string(), cutoff, {}, 3).removed == 2);
    CHECK(prune_worker_logs(base.string(), cutoff, {}, 3).removed == 0);

    auto missing = prune_worker_logs((base / "absent").string(), cutoff, {}, 3);
    CHECK(missing.removed == 0);
    CHECK(missing.problems.empty());
}
