// SPDX-License-Identifier: Apache-2.0
// Opening, pragmas, migrations, reopening, query plans and error translation.
#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

#include "../../../src/store/sqlite_store.hpp"
#include "store_fixture.hpp"

using namespace store_test;
using namespace nps::store;

namespace {

std::vector<std::string> query_plan(SQLite::Database& db, const std::string& sql)
{
    SQLite::Statement st(db, "EXPLAIN QUERY PLAN " + sql);
    std::vector<std::string> details;
    while (st.executeStep())
        details.push_back(st.getColumn(3).getString());
    return details;
}

bool any_contains(const std::vector<std::string>& lines, const std::string& needle)
{
    for (const auto& l : lines)
        if (l.find(needle) != std::string::npos)
            return true;
    return false;
}

// True if the plan reads every row of `table` (or of the alias).
bool scans(const std::vector<std::string>& lines, const std::string& table)
{
    const std::string scan = "SCAN " + table;
    for (const auto& l : lines)
        if (l == scan || l.rfind(scan + " ", 0) == 0)
            return true;
    return false;
}

std::string joined(const std::vector<std::string>& lines)
{
    std::string out;
    for (const auto& l : lines)
        out += l + "\n";
    return out;
}

}  // namespace

TEST_CASE("open refuses in-memory databases and empty paths")
{
    nps::FakeClock clock;
    auto mem = Store::open({.path = ":memory:"}, clock);
    REQUIRE_FALSE(mem);
    CHECK(mem.error().message.find("Failed to open database ':memory:'") == 0);
    CHECK_FALSE(Store::open({.path = ""}, clock));
    CHECK_FALSE(Store::open({.path = "/nonexistent-dir/x/runner.db"}, clock));
}

TEST_CASE_FIXTURE(StoreFixture, "open sets WAL and the latest schema version; reopening keeps everything")
{
    CHECK(store->schema_version() == nps::store::detail::latest_schema_version());
    deposit("task-1");
    const auto lease = claim_head(kRunnerA, 60);
    REQUIRE(store->put_announce({.nid = "agent", .activation_mode = "ephemeral", .spawn_spec_ref = "r", .body_json = "{}"}));

    {
        SQLite::Database raw(dir.file("runner.db"));
        SQLite::Statement mode(raw, "PRAGMA journal_mode");
        REQUIRE(mode.executeStep());
        CHECK(mode.getColumn(0).getString() == "wal");
    }

    reopen();
    CHECK(store->schema_version() == nps::store::detail::latest_schema_version());
    auto t = store->task("task-1");
    REQUIRE(t);
    CHECK(t->state == kTaskRunning);
    CHECK(t->lease_expiry_ms == lease.lease_expiry_ms);
    CHECK(error_code_of(claim_task("task-1", kRunnerB)) == "NOP-CLAIM-CONFLICT");
    CHECK(store->resolve_announce("agent"));
    CHECK(store->events("task-1")->size() == 2);
    // Ids keep growing across reopen (AUTOINCREMENT).
    CHECK(deposit("task-2").message_id > lease.message.message_id);
}

TEST_CASE("open refuses a file whose schema is newer, and a foreign SQLite file")
{
    TempDir dir;
    nps::FakeClock clock;
    const std::string path = dir.file("runner.db");
    {
        auto s = Store::open({.path = path}, clock);
        REQUIRE(s);
    }
    {
        SQLite::Database raw(path, SQLite::OPEN_READWRITE);
        raw.exec("PRAGMA user_version=" + std::to_string(nps::store::detail::latest_schema_version() + 1));
    }
    auto newer = Store::open({.path = path}, clock);
    REQUIRE_FALSE(newer);
    CHECK(newer.error().code.empty());
    CHECK(newer.error().message.find("newer") != std::string::npos);
    CHECK(newer.error().message.find(path) != std::string::npos);

    const std::string foreign = dir.file("foreign.db");
    {
        SQLite::Database raw(foreign, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
        raw.exec("CREATE TABLE something (x)");
    }
    auto refused = Store::open({.path = foreign}, clock);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().message.find("not an nps-runner schema") != std::string::npos);
}

TEST_CASE_FIXTURE(StoreFixture, "the claim path uses the partial index and never scans a table")
{
    for (int i = 0; i < 20; ++i)
        deposit("t" + std::to_string(i), i % 3);
    SQLite::Database raw(dir.file("runner.db"), SQLite::OPEN_READWRITE);
    namespace d = nps::store::detail;
    const auto check_plans = [&raw] {
        for (const char* sql : {d::claim_head_sql(), d::claim_batch_sql()}) {
            const auto plan = query_plan(raw, sql);
            INFO(joined(plan));
            CHECK(any_contains(plan, "SEARCH messages USING COVERING INDEX messages_claim (nid=?)"));
            CHECK(any_contains(plan, "SEARCH messages USING INTEGER PRIMARY KEY (rowid=?)"));
            CHECK(any_contains(plan, "SEARCH f USING INTEGER PRIMARY KEY (rowid=?)"));  // the payload
        }
        for (const char* sql : {d::claim_head_sql(), d::claim_batch_sql(), d::claim_mirror_sql(),
                                d::claim_events_sql(), d::complete_message_sql(), d::complete_task_sql(),
                                d::complete_events_sql()}) {
            const auto plan = query_plan(raw, sql);
            INFO(sql);
            INFO(joined(plan));
            CHECK_FALSE(any_contains(plan, "TEMP B-TREE"));
            for (const char* table : {"messages", "tasks", "events", "frames", "m", "t", "e", "f"})
                CHECK_FALSE(scans(plan, table));
        }
        const auto complete = query_plan(raw, d::complete_message_sql());
        INFO(joined(complete));
        CHECK(any_contains(complete, "USING COVERING INDEX sqlite_autoindex_tasks_1 (task_id=?)"));
    };
    SUBCASE("as the store runs it: no statistics") { check_plans(); }
    SUBCASE("with statistics of a big inbox (after ANALYZE)")
    {
        raw.exec("BEGIN");
        raw.exec("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 20000) "
                 "INSERT INTO messages (nid, task_id, content_type, priority, enqueued_at, expires_at, state) "
                 "SELECT 'nid-' || (x % 7), 'bulk-' || x, 'application/json', x % 5, 0, 9e15, "
                 "CASE WHEN x % 4 = 0 THEN 'done' ELSE 'queued' END FROM c");
        raw.exec("INSERT INTO tasks (message_id, task_id, nid, state, dag_hash, dedup_key, frame_hash, created_at, "
                 "updated_at) SELECT message_id, task_id, nid, 'PENDING', 'd', 'k', 'h', 0, 0 FROM messages "
                 "WHERE task_id LIKE 'bulk-%'");
        raw.exec("INSERT INTO events (message_id, seq, at, name, detail) "
                 "SELECT message_id, 1, 0, 'inbox:deposited', '{}' FROM tasks WHERE task_id LIKE 'bulk-%'");
        raw.exec("COMMIT");
        raw.exec("ANALYZE");
        check_plans();
    }
}

TEST_CASE_FIXTURE(StoreFixture, "SQLite failures become internal errors naming the operation")
{
    deposit("task-1");
    auto busy = Store::open({.path = dir.file("runner.db"), .busy_timeout_ms = 20}, clock);
    REQUIRE(busy);
    SQLite::Database raw(dir.file("runner.db"), SQLite::OPEN_READWRITE);
    raw.exec("BEGIN IMMEDIATE");
    auto r = (*busy)->claim({.nid = kNid, .runner_nid = kRunnerA, .lease_seconds = 30});
    REQUIRE_FALSE(r);
    CHECK(r.error().code.empty());
    CHECK(r.error().message == std::string("Failed to claim the head from inbox '") + kNid + "': database is locked");
    raw.exec("ROLLBACK");
    auto ok = (*busy)->claim({.nid = kNid, .runner_nid = kRunnerA, .lease_seconds = 30});
    REQUIRE(ok);
    CHECK(ok->has_value());
}
