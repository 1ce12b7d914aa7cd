// SPDX-License-Identifier: Apache-2.0
// The event log as live feeds read it: positions across tasks, slices after
// a cursor, and the version 5 migration that gave old events their places.
#include <SQLiteCpp/Database.h>

#include <string>
#include <vector>

#include "../../../src/store/sqlite_store.hpp"
#include "store_fixture.hpp"

using namespace store_test;
using namespace nps::store;

namespace {

std::vector<std::string> names_of(const std::vector<FeedEvent>& events)
{
    std::vector<std::string> names;
    for (const auto& e : events)
        names.push_back(e.task_id + " " + e.event.name);
    return names;
}

}  // namespace

TEST_CASE_FIXTURE(StoreFixture, "every event has a place in the log of all tasks, ascending as they are written")
{
    deposit("a");
    deposit("b");
    REQUIRE(store->append_event("a", "n1:attempt:1", "{}"));
    REQUIRE(store->append_event("b", "n1:attempt:1", "{}"));

    auto all = store->events_after({.after = 0, .limit = 100});
    REQUIRE(all);
    CHECK(names_of(*all) ==
          std::vector<std::string>{"a inbox:deposited", "b inbox:deposited", "a n1:attempt:1", "b n1:attempt:1"});
    for (std::size_t i = 1; i < all->size(); ++i)
        CHECK((*all)[i].event.pos > (*all)[i - 1].event.pos);
    CHECK(*store->last_event_pos() == all->back().event.pos);

    // After a cursor, and at most `limit`.
    auto later = store->events_after({.after = (*all)[1].event.pos, .limit = 1});
    REQUIRE(later);
    CHECK(names_of(*later) == std::vector<std::string>{"a n1:attempt:1"});

    // One task's slice counts by its own seq.
    auto task_b = store->events_after({.task_id = "b", .after = 1, .limit = 100});
    REQUIRE(task_b);
    REQUIRE(task_b->size() == 1);
    CHECK(task_b->front().event.seq == 2);
    CHECK(task_b->front().event.name == "n1:attempt:1");
    CHECK(store->events_after({.task_id = "nobody", .after = 0, .limit = 100})->empty());

    // The per-task log carries the same positions.
    auto a_events = store->events("a");
    REQUIRE(a_events);
    CHECK(a_events->back().pos == (*all)[2].event.pos);
}

TEST_CASE_FIXTURE(StoreFixture, "a position is never given twice, even after the newest task is removed")
{
    deposit("old");
    REQUIRE(store->cancel("old"));
    const std::int64_t last = *store->last_event_pos();
    REQUIRE(store->remove_task("old"));
    deposit("new");
    auto events = store->events("new");
    REQUIRE(events);
    CHECK(events->front().pos > last);
}

TEST_CASE_FIXTURE(StoreFixture, "a version 4 file's events get their positions in time order when it is opened" * doctest::test_suite("sqlite"))
{
    deposit("first");
    clock.advance_ms(10);
    deposit("second");
    clock.advance_ms(10);
    REQUIRE(store->append_event("first", "n1:attempt:1", "{}"));
    store.reset();
    {
        // Back to schema 4's events table (no pos), holding the same rows.
        SQLite::Database raw(dir.file("runner.db"), SQLite::OPEN_READWRITE);
        raw.exec("DROP TRIGGER tasks_reply; DROP TABLE inbox_notices; ALTER TABLE report_outbox DROP COLUMN reply_to");
        raw.exec("PRAGMA legacy_alter_table = ON");
        raw.exec("CREATE TABLE events_v4 (message_id INTEGER NOT NULL REFERENCES tasks (message_id), "
                 "seq INTEGER NOT NULL, at INTEGER NOT NULL, name TEXT NOT NULL, detail TEXT NOT NULL, "
                 "PRIMARY KEY (message_id, seq)) WITHOUT ROWID");
        raw.exec("INSERT INTO events_v4 SELECT message_id, seq, at, name, detail FROM events");
        raw.exec("DROP TABLE events; ALTER TABLE events_v4 RENAME TO events; PRAGMA user_version = 4");
    }
    reopen();
    CHECK(store->schema_version() == nps::store::detail::latest_schema_version());
    auto all = store->events_after({.after = 0, .limit = 100});
    REQUIRE(all);
    CHECK(names_of(*all) ==
          std::vector<std::string>{"first inbox:deposited", "second inbox:deposited", "first n1:attempt:1"});
    // The triggers write the rebuilt table: a new event lands after them.
    deposit("third");
    auto third = store->events("third");
    REQUIRE(third);
    CHECK(third->front().pos > all->back().event.pos);
}
