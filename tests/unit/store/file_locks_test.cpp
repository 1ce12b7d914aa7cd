// SPDX-License-Identifier: Apache-2.0
// Opening a Store never drops the POSIX locks this process's other
// connections hold on runner.db (docs/durability.md, "Power-cut trials").
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "store_fixture.hpp"

using namespace store_test;

namespace {

// SQLite's SHARED lock: a read lock on 510 bytes from PENDING_BYTE + 2.
constexpr off_t kSharedFirst = 0x40000000 + 2;
constexpr off_t kSharedSize = 510;

// Asks from a child process (which uses no SQLite) whether some process holds
// a lock that conflicts with a write lock on SQLite's shared range: whether
// another process's closing connection could take EXCLUSIVE and so believe
// it is the last, checkpoint and delete the WAL.
bool shared_range_locked_by_another_process(const std::string& path)
{
    pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            ::_exit(2);
        struct flock lock{};
        lock.l_type = F_WRLCK;
        lock.l_whence = SEEK_SET;
        lock.l_start = kSharedFirst;
        lock.l_len = kSharedSize;
        if (::fcntl(fd, F_GETLK, &lock) < 0)
            ::_exit(3);
        ::_exit(lock.l_type == F_UNLCK ? 0 : 1);
    }
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) <= 1);
    return WEXITSTATUS(status) == 1;
}

}  // namespace

TEST_CASE_FIXTURE(StoreFixture, "opening more Stores keeps the SHARED lock the first connection holds on runner.db" * doctest::test_suite("sqlite"))
{
    deposit("task-1");
    const std::string path = dir.file("runner.db");
    REQUIRE(shared_range_locked_by_another_process(path));  // the control: WAL mode keeps it while open

    for (int i = 0; i < 3; ++i) {
        auto other = nps::store::Store::open({.path = path}, clock);
        REQUIRE(other);
        CHECK(shared_range_locked_by_another_process(path));
    }
    deposit("task-2");
    CHECK(shared_range_locked_by_another_process(path));
    CHECK(std::filesystem::exists(path + "-wal"));

    store.reset();
    CHECK_FALSE(shared_range_locked_by_another_process(path));  // and the check can tell
}

TEST_CASE("a missing runner.db is created 0600; an existing one made readable is restricted, its WAL too" * doctest::test_suite("sqlite"))
{
    namespace fs = std::filesystem;
    const auto mode_of = [](const std::string& file) { return fs::status(file).permissions() & fs::perms::all; };
    const fs::perms owner_only = fs::perms::owner_read | fs::perms::owner_write;
    TempDir dir;
    nps::FakeClock clock;
    const std::string path = dir.file("runner.db");
    auto store = nps::store::Store::open({.path = path}, clock);
    REQUIRE(store);
    REQUIRE((*store)->deposit(deposit_request("task-1")));
    CHECK(mode_of(path) == owner_only);
    CHECK(mode_of(path + "-wal") == owner_only);

    for (const std::string& file : {path, path + "-wal"})
        fs::permissions(file, fs::perms::group_read | fs::perms::others_read, fs::perm_options::add);
    auto again = nps::store::Store::open({.path = path}, clock);
    REQUIRE(again);
    CHECK(mode_of(path) == owner_only);
    CHECK(mode_of(path + "-wal") == owner_only);
}
