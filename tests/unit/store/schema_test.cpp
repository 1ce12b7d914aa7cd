// SPDX-License-Identifier: Apache-2.0
// Opening, pragmas, migrations, reopening, query plans and error translation.
#include <sys/wait.h>
#include <unistd.h>

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

#include <cstdio>

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

TEST_CASE("open refuses in-memory databases and empty paths" * doctest::test_suite("sqlite"))
{
    nps::FakeClock clock;
    auto mem = Store::open({.path = ":memory:"}, clock);
    REQUIRE_FALSE(mem);
    CHECK(mem.error().message.find("Failed to open database ':memory:'") == 0);
    CHECK_FALSE(Store::open({.path = ""}, clock));
    CHECK_FALSE(Store::open({.path = "/nonexistent-dir/x/runner.db"}, clock));
}

TEST_CASE_FIXTURE(StoreFixture, "open sets WAL and the latest schema version; reopening keeps everything" * doctest::test_suite("sqlite"))
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
    CHECK(t->state == proto::TaskState::running);
    CHECK(t->lease_expiry_ms == lease.lease_expiry_ms);
    CHECK(error_code_of(claim_task("task-1", kRunnerB)) == "NOP-CLAIM-CONFLICT");
    CHECK(store->resolve_announce("agent"));
    CHECK(store->events("task-1")->size() == 2);
    // Ids keep growing across reopen (AUTOINCREMENT).
    CHECK(deposit("task-2").message_id > lease.message.message_id);
}

TEST_CASE("open refuses a file whose schema is newer, and a foreign SQLite file" * doctest::test_suite("sqlite"))
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

// SQLite refuses some lock upgrades at once (SQLITE_BUSY, no busy handler)
// while another process is setting the same new file up; parallel
// `nps-runner image import`s into a fresh state directory met it.
TEST_CASE("several processes opening a new runner.db at once all open it" * doctest::test_suite("sqlite"))
{
    TempDir dir;
    for (int round = 0; round < 40; ++round) {
        const std::string path = dir.file("runner-" + std::to_string(round) + ".db");
        int start[2];
        REQUIRE(::pipe(start) == 0);
        std::vector<pid_t> children;
        for (int i = 0; i < 12; ++i) {
            const pid_t pid = ::fork();
            REQUIRE(pid >= 0);
            if (pid == 0) {
                ::close(start[1]);
                char go;
                (void)::read(start[0], &go, 1);  // EOF once the parent has forked them all
                nps::FakeClock clock;
                auto store = Store::open({.path = path}, clock);
                if (!store)
                    std::fprintf(stderr, "%s\n", store.error().describe().c_str());
                ::_exit(store ? 0 : 1);
            }
            children.push_back(pid);
        }
        ::close(start[0]);
        ::close(start[1]);
        for (pid_t pid : children) {
            int status = 0;
            REQUIRE(::waitpid(pid, &status, 0) == pid);
            CHECK_MESSAGE((WIFEXITED(status) && WEXITSTATUS(status) == 0), "round " << round);
        }
    }
}

TEST_CASE_FIXTURE(StoreFixture, "the claim path uses the partial index and never scans a table" * doctest::test_suite("sqlite"))
{
    for (int i = 0; i < 20; ++i)
        deposit("t" + std::to_string(i), i % 3);
    SQLite::Database raw(dir.file("runner.db"), SQLite::OPEN_READWRITE);
    namespace d = nps::store::detail;
    const auto check_plans = [&raw] {
        for (const char* sql : {d::claim_head_sql(), d::claim_batch_sql()}) {
            const auto plan = query_plan(raw, sql);
            INFO(joined(plan));
            CHECK(any_contains(plan, "SEARCH tasks USING COVERING INDEX tasks_claim (nid=?)"));
            CHECK(any_contains(plan, "SEARCH tasks USING INTEGER PRIMARY KEY (rowid=?)"));
            CHECK(any_contains(plan, "SEARCH f USING INTEGER PRIMARY KEY (rowid=?)"));  // the payload
        }
        // The triggers' statements: seq is a seek on the events (message_id, seq) index.
        const char* next_seq = "SELECT coalesce(max(seq), 0) + 1 FROM events WHERE message_id = ?1";
        for (const char* sql : {d::claim_head_sql(), d::claim_batch_sql(), d::complete_sql(), next_seq}) {
            const auto plan = query_plan(raw, sql);
            INFO(sql);
            INFO(joined(plan));
            CHECK_FALSE(any_contains(plan, "TEMP B-TREE"));
            for (const char* table : {"tasks", "events", "frames", "m", "t", "e", "f"})
                CHECK_FALSE(scans(plan, table));
        }
        const auto complete = query_plan(raw, d::complete_sql());
        INFO(joined(complete));
        CHECK(any_contains(complete, "SEARCH tasks USING INDEX sqlite_autoindex_tasks_1 (task_id=?)"));
        const auto seq = query_plan(raw, next_seq);
        INFO(joined(seq));
        CHECK(any_contains(seq, "SEARCH events USING COVERING INDEX sqlite_autoindex_events_1 (message_id=?)"));
    };
    SUBCASE("as the store runs it: no statistics") { check_plans(); }
    SUBCASE("with statistics of a big inbox (after ANALYZE)")
    {
        raw.exec("BEGIN");
        // The tasks_deposited trigger logs inbox:deposited for each of them.
        raw.exec("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 20000) "
                 "INSERT INTO tasks (task_id, nid, content_type, priority, enqueued_at, expires_at, queue, state, "
                 "dag_hash, dedup_key, frame_hash, created_at, updated_at) "
                 "SELECT 'bulk-' || x, 'nid-' || (x % 7), 'application/json', x % 5, 0, 9e15, "
                 "CASE WHEN x % 4 = 0 THEN 'done' ELSE 'queued' END, 'PENDING', 'd', 'k', 'h', 0, 0 FROM c");
        raw.exec("COMMIT");
        raw.exec("ANALYZE");
        check_plans();
    }
}

TEST_CASE_FIXTURE(StoreFixture, "the event log is kept by triggers, so any write to a task row is logged" * doctest::test_suite("sqlite"))
{
    const auto m = deposit("task-1");
    SQLite::Database raw(dir.file("runner.db"), SQLite::OPEN_READWRITE);
    // A transition made outside the store's C++ code (another tool, a future
    // code path) still lands in the log, with the task's next seq.
    raw.exec("UPDATE tasks SET prev_owner = lease_owner, lease_owner = 'r', lease_expiry = 99, claims = claims + 1, "
             "state = 'RUNNING', updated_at = 7 WHERE message_id = " + std::to_string(m.message_id));
    raw.exec("UPDATE tasks SET queue = 'done', state = 'COMPLETED', lease_owner = NULL, lease_expiry = 0, "
             "updated_at = 8 WHERE message_id = " + std::to_string(m.message_id));
    auto ev = store->events("task-1");
    REQUIRE(ev);
    REQUIRE(ev->size() == 3);
    CHECK((*ev)[0].name == "inbox:deposited");
    CHECK((*ev)[0].detail_json == R"({"expires_at":)" + std::to_string(m.expires_at_ms) + R"(,"message_id":)" +
                                      std::to_string(m.message_id) + R"(,"nid":")" + kNid + R"(","priority":0})");
    CHECK((*ev)[1].seq == 2);
    CHECK((*ev)[1].at_ms == 7);
    CHECK((*ev)[1].name == "lease:granted");
    CHECK((*ev)[1].detail_json == R"({"runner_nid":"r","lease_expiry":99})");
    CHECK((*ev)[2].seq == 3);
    CHECK((*ev)[2].name == "task:completed");
    CHECK((*ev)[2].detail_json == R"({"runner_nid":"r"})");
    // Renewing a lease or writing a column no transition watches logs nothing.
    raw.exec("UPDATE tasks SET aggregate = '{}', updated_at = 9 WHERE message_id = " + std::to_string(m.message_id));
    CHECK(store->events("task-1")->size() == 3);
}

TEST_CASE_FIXTURE(StoreFixture, "SQLite failures become internal errors naming the operation" * doctest::test_suite("sqlite"))
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

TEST_CASE_FIXTURE(StoreFixture, "a row whose state column is not a state is an error naming the row, not a default state" * doctest::test_suite("sqlite"))
{
    deposit("task-1");
    deposit("task-2");
    REQUIRE(claim_task("task-2", kRunnerA));
    REQUIRE(store->record_node_result({.task_id = "task-2",
                                       .node_id = "n1",
                                       .dedup_key = deposit_request("task-2").dedup_key,
                                       .state = NodeState::running,
                                       .runner_nid = std::string(kRunnerA)}));
    {
        SQLite::Database raw(dir.file("runner.db"), SQLite::OPEN_READWRITE);
        raw.exec("UPDATE tasks SET state = 'DONE' WHERE task_id = 'task-1'");
        raw.exec("UPDATE node_results SET state = 'running' WHERE task_id = 'task-2'");
    }
    auto task = store->task("task-1");
    REQUIRE_FALSE(task);
    CHECK(task.error().message ==
          "Failed to read task 'task-1': task 'task-1' has the state 'DONE', which is not a task state (a damaged store?)");
    auto listed = store->list_tasks({});
    REQUIRE_FALSE(listed);
    CHECK(listed.error().message.find("task 'task-1' has the state 'DONE'") != std::string::npos);
    auto counts = store->task_state_counts();
    REQUIRE_FALSE(counts);
    CHECK(counts.error().message.find("a task has the state 'DONE'") != std::string::npos);
    auto nodes = store->node_results("task-2");
    REQUIRE_FALSE(nodes);
    CHECK(nodes.error().message.find("node 'n1' of task 'task-2' has the state 'running', which is not a node state") !=
          std::string::npos);
    // The other task still reads as it is.
    auto other = store->task("task-2");
    REQUIRE(other);
    CHECK(other->state == proto::TaskState::running);
}

TEST_CASE_FIXTURE(StoreFixture, "every transition of the store logs exactly one event, with its detail")
{
    const auto names = [this](const std::string& task_id) {
        std::vector<std::string> out;
        const auto events = store->events(task_id);
        REQUIRE(events);
        for (const auto& e : *events)
            out.push_back(e.name + " " + e.detail_json);
        return out;
    };
    const std::string a = std::string(R"({"runner_nid":")") + kRunnerA + "\"";
    const std::string b = std::string(R"({"runner_nid":")") + kRunnerB + "\"";

    deposit("t1");
    const auto l1 = claim_head(kRunnerA, 10);
    REQUIRE(store->renew("t1", kRunnerA, 20));  // no event
    clock.advance_ms(20'000);
    const auto l2 = claim_head(kRunnerB, 30);  // reclaims the expired lease
    CHECK(l2.outcome == ClaimOutcome::reclaimed);
    REQUIRE(store->release("t1", kRunnerB));
    const auto l3 = claim_head(kRunnerA, 30);
    CHECK(l3.outcome == ClaimOutcome::granted);
    REQUIRE(store->complete("t1", kRunnerA, {.state = nps::proto::TaskState::failed, .error_code = "NOP-RUNTIME-OOM"}));
    const auto e1 = names("t1");
    REQUIRE(e1.size() == 6);
    CHECK(e1[0].rfind("inbox:deposited {", 0) == 0);
    CHECK(e1[1] == "lease:granted " + a + R"(,"lease_expiry":)" + std::to_string(l1.lease_expiry_ms) + "}");
    CHECK(e1[2] == "lease:reclaimed " + b + R"(,"lease_expiry":)" + std::to_string(l2.lease_expiry_ms) + "}");
    CHECK(e1[3] == "lease:released " + b + "}");
    CHECK(e1[4] == "lease:granted " + a + R"(,"lease_expiry":)" + std::to_string(l3.lease_expiry_ms) + "}");
    CHECK(e1[5] == std::string(R"(task:failed {"error_code":"NOP-RUNTIME-OOM","runner_nid":")") + kRunnerA + "\"}");
    CHECK(store->task("t1")->claims == 3);

    const auto m2 = deposit("t2");
    REQUIRE(store->ack(kNid, m2.message_id));
    REQUIRE(store->cancel("t2"));
    const auto e2 = names("t2");
    REQUIRE(e2.size() == 3);
    CHECK(e2[1] == "inbox:acked {\"message_id\":" + std::to_string(m2.message_id) + "}");
    CHECK(e2[2] == R"(task:cancelled {"error_code":"NOP-TASK-CANCELLED"})");

    deposit("t3");
    claim_head(kRunnerB, 30);
    REQUIRE(store->cancel("t3"));  // names the runner whose lease it ended
    CHECK(names("t3").back() == std::string(R"(task:cancelled {"error_code":"NOP-TASK-CANCELLED","runner_nid":")") +
                                    kRunnerB + "\"}");

    deposit("t4");
    claim_head(kRunnerB, 30);
    REQUIRE(store->complete("t4", kRunnerB, completed()));
    CHECK(names("t4").back() == "task:completed " + b + "}");

    const auto m5 = deposit("t5", 0, 1);
    clock.advance_ms(1'000);
    CHECK(*store->sweep_expired() == 1);
    const auto e5 = names("t5");
    REQUIRE(e5.size() == 2);
    CHECK(e5[1] == "inbox:expired {\"message_id\":" + std::to_string(m5.message_id) + "}");
    CHECK(store->task("t5")->state == proto::TaskState::failed);

    // Explicit events keep the task's seq going.
    REQUIRE(store->append_event("t5", "note", R"({"x":1})"));
    const auto ev = *store->events("t5");
    CHECK(ev.back().seq == 3);
    CHECK(ev.back().at_ms == clock.now_ms());
}
