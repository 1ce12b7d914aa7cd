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

namespace {

// A worker log directory holding `bytes` in stdout.log, last written `age` ago.
void make_sized_logs(const fs::path& dir, std::size_t bytes, std::chrono::minutes age)
{
    fs::create_directories(dir);
    std::ofstream(dir / "stdout.log") << std::string(bytes, 'x');
    const auto when = SysClock::to_time_t(SysClock::now() - age);
    struct timeval times[2] = {{when, 0}, {when, 0}};
    REQUIRE(::utimes((dir / "stdout.log").c_str(), times) == 0);
    REQUIRE(::utimes(dir.c_str(), times) == 0);
}

}  // namespace

TEST_CASE("logs_max_bytes: finished workers' logs go oldest first until all logs fit; running ones never")
{
    nps::test::TempDir root;
    const fs::path base = root.path();
    make_sized_logs(base / "w-1-1", 4000, std::chrono::minutes(50));  // oldest
    make_sized_logs(base / "w-1-2", 4000, std::chrono::minutes(40));
    make_sized_logs(base / "w-1-3", 4000, std::chrono::minutes(30));
    make_sized_logs(base / "w-1-4", 4000, std::chrono::minutes(60));  // oldest of all, but running
    make_sized_logs(base / "w-1-5", 4000, std::chrono::minutes(20));
    std::ofstream(base / "README") << std::string(100'000, 'r');     // not a worker's: not counted

    nps::supervisor::LogPruneOptions options{.max_total_bytes = 12'000};
    auto report = nps::supervisor::prune_worker_logs(base.string(), {"w-1-4"}, options);
    CHECK(report.problems.empty());
    CHECK(report.removed == 2);
    CHECK(report.removed_for_cap == 2);
    CHECK(report.kept == 3);
    CHECK(report.kept_bytes == 12'000);
    CHECK_FALSE(fs::exists(base / "w-1-1"));
    CHECK_FALSE(fs::exists(base / "w-1-2"));
    CHECK(fs::exists(base / "w-1-3"));
    CHECK(fs::exists(base / "w-1-4"));
    CHECK(fs::exists(base / "w-1-5"));
    CHECK(fs::exists(base / "README"));

    // Under the cap nothing more goes; running logs alone over it stay.
    CHECK(nps::supervisor::prune_worker_logs(base.string(), {"w-1-4"}, options).removed == 0);
    auto tight = nps::supervisor::prune_worker_logs(base.string(), {"w-1-4"}, {.max_total_bytes = 1});
    CHECK(tight.removed == 2);
    CHECK(tight.kept_bytes == 4000);
    CHECK(fs::exists(base / "w-1-4"));
}

TEST_CASE("logs_max_bytes spares logs written after the running set was taken, and 0 is no cap")
{
    nps::test::TempDir root;
    const fs::path base = root.path();
    make_sized_logs(base / "w-2-1", 5000, std::chrono::minutes(10));
    make_sized_logs(base / "w-2-2", 5000, std::chrono::minutes(0));  // a worker started after the snapshot
    auto none = nps::supervisor::prune_worker_logs(base.string(), {}, {});
    CHECK(none.removed == 0);
    CHECK(none.kept_bytes == 10'000);

    auto report = nps::supervisor::prune_worker_logs(
        base.string(), {},
        {.max_total_bytes = 1000, .running_as_of = SysClock::now() - std::chrono::minutes(1)});
    CHECK(report.removed_for_cap == 1);
    CHECK_FALSE(fs::exists(base / "w-2-1"));
    CHECK(fs::exists(base / "w-2-2"));
}

TEST_CASE("age and cap together: age first, then the cap, within max_removals")
{
    nps::test::TempDir root;
    const fs::path base = root.path();
    for (int i = 0; i < 4; ++i)
        make_sized_logs(base / ("w-3-" + std::to_string(i)), 1000, std::chrono::minutes(100 - i));
    make_sized_logs(base / "w-3-old", 1000, std::chrono::minutes(60 * 24 * 10));
    auto report = nps::supervisor::prune_worker_logs(
        base.string(), {},
        {.cutoff = SysClock::now() - std::chrono::hours(24), .max_total_bytes = 2500, .max_removals = 2});
    CHECK(report.removed == 2);
    CHECK(report.removed_for_cap == 1);
    CHECK_FALSE(fs::exists(base / "w-3-old"));
    CHECK_FALSE(fs::exists(base / "w-3-0"));
    CHECK(report.kept_bytes == 3000);  // max_removals stopped it above the cap; the next round goes on
    auto next = nps::supervisor::prune_worker_logs(base.string(), {}, {.max_total_bytes = 2500});
    CHECK(next.removed_for_cap == 1);
    CHECK_FALSE(fs::exists(base / "w-3-1"));
}
