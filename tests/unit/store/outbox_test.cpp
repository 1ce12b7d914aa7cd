// SPDX-License-Identifier: Apache-2.0
// The report outbox: rows written by triggers with the change they report,
// per-node ordering, leases between two Store objects on one file,
// rescheduling, dead rows and their events.
#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

#include <algorithm>

#include "../../../src/store/sqlite_store.hpp"
#include "store_fixture.hpp"

using namespace store_test;
using namespace nps::store;

namespace {

constexpr const char* kOwnerA = "deliverer-a";
constexpr const char* kOwnerB = "deliverer-b";

// (Named apart from results_test.cpp's: the unity build puts both in one unit.)
NodeResult outbox_node_result(const std::string& task_id, const std::string& node_id, NodeState state,
                              std::optional<std::string> result = std::nullopt)
{
    NodeResult r;
    r.task_id = task_id;
    r.node_id = node_id;
    r.dedup_key = deposit_request(task_id).dedup_key;
    r.state = state;
    r.attempts = 2;
    r.result_json = std::move(result);
    return r;
}

DepositRequest deposit_with_payload(const std::string& task_id, const std::string& payload)
{
    DepositRequest r = deposit_request(task_id);
    r.payload = payload;
    r.frame_hash = nps::sha256_hex(payload);
    return r;
}

std::string frame_with_callback(const std::string& task_id, const std::string& url)
{
    return R"({"frame":"0x40","task_id":")" + task_id + R"(","dag":{"nodes":[{"id":"n1"}]},"callback_url":")" + url +
           R"("})";
}

ReportClaim claim_by(const char* owner, std::uint32_t max_rows = 16, std::int64_t lease_ms = 30'000)
{
    return {.owner = owner, .lease_ms = lease_ms, .max_rows = max_rows};
}

std::vector<std::string> states_of(const std::vector<ReportRow>& rows)
{
    std::vector<std::string> out;
    for (const auto& r : rows)
        out.push_back(r.node_id + ":" + r.state);
    return out;
}

bool has_event(Store& store, const std::string& task_id, const std::string& name)
{
    auto events = store.events(task_id);
    REQUIRE(events);
    return std::any_of(events->begin(), events->end(), [&](const auto& e) { return e.name == name; });
}

}  // namespace

TEST_CASE_FIXTURE(StoreFixture, "a node reaching a reportable state writes a snapshot row")
{
    deposit("task-1");
    REQUIRE(store->record_node_result(outbox_node_result("task-1", "n1", NodeState::running)));
    CHECK(store->report_counts()->backlog == 0);  // RUNNING is not reported

    auto failed = outbox_node_result("task-1", "n1", NodeState::failed);
    failed.error_code = "NOP-RUNTIME-IDLE-TIMEOUT";
    failed.error_message = "no output for 30 s";
    failed.killed_reason = "idle_timeout";
    failed.runner_nid = kRunnerA;
    failed.fence = LeaseFence::none;
    REQUIRE(store->record_node_result(failed));
    // The same record again (a replay) reports nothing twice.
    CHECK(*store->record_node_result(failed) == RecordOutcome::duplicate);
    // A refused record writes nothing.
    CHECK_FALSE(store->record_node_result(outbox_node_result("task-1", "n1", NodeState::completed, "{}")));

    auto rows = store->claim_reports(claim_by(kOwnerA));
    REQUIRE(rows);
    REQUIRE(rows->size() == 1);
    const ReportRow& r = rows->front();
    CHECK(r.kind == ReportKind::node);
    CHECK(r.status == ReportStatus::pending);
    CHECK(r.task_id == "task-1");
    CHECK(r.node_id == "n1");
    CHECK(r.dedup_key == deposit_request("task-1").dedup_key);
    CHECK(r.state == "FAILED");
    CHECK(r.attempts == 2);
    CHECK(r.error_code == std::optional<std::string>("NOP-RUNTIME-IDLE-TIMEOUT"));
    CHECK(r.error_message == std::optional<std::string>("no output for 30 s"));
    CHECK_FALSE(r.result_json);
    CHECK(r.killed_reason == std::optional<std::string>("idle_timeout"));
    CHECK(r.runner_nid == std::optional<std::string>(kRunnerA));
    CHECK(r.recorded_at_ms == clock.now_ms());
    CHECK(r.tries == 0);
    CHECK(r.lease_until_ms == clock.now_ms() + 30'000);
    CHECK_FALSE(r.callback_url);
}

TEST_CASE_FIXTURE(StoreFixture, "the outbox row commits or rolls back with the node record" * doctest::test_suite("sqlite"))
{
    deposit("task-1");
    const std::string dedup = deposit_request("task-1").dedup_key;
    SQLite::Database raw(dir.file("runner.db"), SQLite::OPEN_READWRITE);
    auto count = [&raw](const char* table) {
        SQLite::Statement st(raw, std::string("SELECT count(*) FROM ") + table);
        st.executeStep();
        return st.getColumn(0).getInt64();
    };
    auto insert = [&](const char* node) {
        SQLite::Statement st(raw,
                             "INSERT INTO node_results (task_id, node_id, dedup_key, state, attempts, recorded_at) "
                             "VALUES ('task-1', ?1, ?2, 'COMPLETED', 1, 0)");
        st.bind(1, node);
        st.bind(2, dedup);
        st.exec();
    };
    raw.exec("BEGIN IMMEDIATE");
    insert("n1");
    CHECK(count("report_outbox") == 1);  // written by the statement itself
    raw.exec("ROLLBACK");
    CHECK(count("node_results") == 0);
    CHECK(count("report_outbox") == 0);

    raw.exec("BEGIN IMMEDIATE");
    insert("n1");
    raw.exec("COMMIT");
    CHECK(count("node_results") == 1);
    CHECK(store->report_counts()->backlog == 1);
}

TEST_CASE_FIXTURE(StoreFixture, "a node's reports go out in order, one at a time; other nodes do not wait")
{
    deposit("task-1");
    REQUIRE(store->record_node_result(outbox_node_result("task-1", "charge", NodeState::completed, R"({"id":1})")));
    REQUIRE(store->record_node_result(outbox_node_result("task-1", "ship", NodeState::failed)));
    REQUIRE(store->record_node_result(outbox_node_result("task-1", "charge", NodeState::compensating)));
    REQUIRE(store->record_node_result(outbox_node_result("task-1", "charge", NodeState::compensated)));
    CHECK(store->report_counts()->backlog == 4);

    auto first = *store->claim_reports(claim_by(kOwnerA));
    CHECK(states_of(first) == std::vector<std::string>{"charge:COMPLETED", "ship:FAILED"});
    CHECK(first[0].claimed_at_ms == clock.now_ms());  // the store's clock at the claim
    // Nothing else is due while charge's first report is pending.
    CHECK(store->claim_reports(claim_by(kOwnerB))->empty());

    // A failed attempt keeps the order: the later ones wait for the retry.
    REQUIRE(*store->reschedule_report(
        {.id = first[0].id, .owner = kOwnerA, .error = "HTTP 503", .next_attempt_at_ms = clock.now_ms() + 1000}));
    REQUIRE(*store->mark_report_delivered(first[1].id, kOwnerA, ""));
    CHECK(store->claim_reports(claim_by(kOwnerA))->empty());
    CHECK(*store->report_due_in_ms(ReportKinds::all) == 1000);

    clock.advance_ms(1000);
    auto retry = *store->claim_reports(claim_by(kOwnerA));
    REQUIRE(states_of(retry) == std::vector<std::string>{"charge:COMPLETED"});
    CHECK(retry[0].tries == 1);
    CHECK(retry[0].last_error == std::optional<std::string>("HTTP 503"));
    CHECK(retry[0].result_json == std::optional<std::string>(R"({"id":1})"));
    REQUIRE(*store->mark_report_delivered(retry[0].id, kOwnerA, ""));

    auto second = *store->claim_reports(claim_by(kOwnerA));
    REQUIRE(states_of(second) == std::vector<std::string>{"charge:COMPENSATING"});
    CHECK(second[0].result_json == std::optional<std::string>(R"({"id":1})"));  // kept through the saga
    REQUIRE(*store->mark_report_delivered(second[0].id, kOwnerA, ""));
    auto third = *store->claim_reports(claim_by(kOwnerA));
    REQUIRE(states_of(third) == std::vector<std::string>{"charge:COMPENSATED"});
    REQUIRE(*store->mark_report_delivered(third[0].id, kOwnerA, ""));
    CHECK(store->report_counts()->backlog == 0);
    CHECK_FALSE(*store->report_due_in_ms(ReportKinds::all));
}

TEST_CASE_FIXTURE(StoreFixture, "two Store objects on one file never hold a row at once")
{
    deposit("task-1");
    for (const char* node : {"a", "b", "c"})
        REQUIRE(store->record_node_result(outbox_node_result("task-1", node, NodeState::completed, "{}")));
    auto other = Store::open(location.options(), clock);
    REQUIRE(other);

    auto mine = *store->claim_reports(claim_by(kOwnerA, 2, 10'000));
    CHECK(states_of(mine) == std::vector<std::string>{"a:COMPLETED", "b:COMPLETED"});
    auto theirs = *(*other)->claim_reports(claim_by(kOwnerB, 16, 60'000));
    CHECK(states_of(theirs) == std::vector<std::string>{"c:COMPLETED"});
    CHECK((*other)->claim_reports(claim_by(kOwnerB))->empty());
    REQUIRE(*store->mark_report_delivered(mine[0].id, kOwnerA, ""));

    // A's lease on b runs out (A died, or hangs): B takes b over.
    clock.advance_ms(10'000);
    auto taken = *(*other)->claim_reports(claim_by(kOwnerB));
    CHECK(states_of(taken) == std::vector<std::string>{"b:COMPLETED"});
    // A's late marks no longer apply; B's do.
    CHECK_FALSE(*store->mark_report_delivered(mine[1].id, kOwnerA, ""));
    CHECK_FALSE(*store->reschedule_report({.id = mine[1].id, .owner = kOwnerA, .error = "x"}));
    CHECK_FALSE(*store->mark_report_dead(mine[1].id, kOwnerA, "x", ""));
    CHECK(*(*other)->mark_report_delivered(taken[0].id, kOwnerB, ""));

    // Released rows are due again at once, for anyone, without counting a try.
    CHECK(*(*other)->release_reports(kOwnerB, 0) == 1);
    auto released = *store->claim_reports(claim_by(kOwnerA));
    REQUIRE(states_of(released) == std::vector<std::string>{"c:COMPLETED"});
    CHECK(released[0].tries == 0);
    CHECK(*store->release_reports(kOwnerA, released[0].id) == 1);
    CHECK(*store->release_reports(kOwnerA, released[0].id) == 0);
}

TEST_CASE_FIXTURE(StoreFixture, "a task with a callback_url ending writes a callback row")
{
    REQUIRE(store->deposit(deposit_with_payload("cb-1", frame_with_callback("cb-1", "https://hooks.example.com/a"))));
    REQUIRE(store->deposit(deposit_with_payload("cb-2", frame_with_callback("cb-2", "https://hooks.example.com/b"))));
    REQUIRE(store->deposit(deposit_with_payload("cb-3", frame_with_callback("cb-3", "https://hooks.example.com/c"))));
    REQUIRE(store->deposit(deposit_with_payload("plain", frame_for("plain"))));
    REQUIRE(store->deposit(deposit_with_payload("not-json", std::string("\x40\x00\x01 binary frame", 16))));
    CHECK(store->report_counts()->backlog == 0);

    // Completion (fenced by the lease), cancellation and TTL expiry all count.
    auto lease = claim_head(kRunnerA);
    REQUIRE(lease.task_id == "cb-1");
    REQUIRE(store->complete("cb-1", kRunnerA, completed()));
    REQUIRE(store->cancel("cb-2"));
    auto plain_lease = store->claim({.nid = kNid, .runner_nid = kRunnerA, .lease_seconds = 30, .task_id = "plain"});
    REQUIRE(plain_lease);
    REQUIRE(store->complete("plain", kRunnerA, completed()));
    auto odd = store->claim({.nid = kNid, .runner_nid = kRunnerA, .lease_seconds = 30, .task_id = "not-json"});
    REQUIRE(odd);
    REQUIRE(store->complete("not-json", kRunnerA, {.state = nps::proto::TaskState::failed, .error_code = "NOP-TASK-TIMEOUT"}));
    clock.advance_ms(3'600'000);
    CHECK(*store->sweep_expired() == 1);  // cb-3, never claimed

    auto rows = *store->claim_reports(claim_by(kOwnerA));
    REQUIRE(rows.size() == 3);
    CHECK(rows[0].kind == ReportKind::callback);
    CHECK(rows[0].task_id == "cb-1");
    CHECK(rows[0].node_id.empty());
    CHECK(rows[0].state == "COMPLETED");
    CHECK(rows[0].callback_url == std::optional<std::string>("https://hooks.example.com/a"));
    CHECK(rows[1].task_id == "cb-2");
    CHECK(rows[1].state == "CANCELLED");
    CHECK(rows[1].error_code == std::optional<std::string>("NOP-TASK-CANCELLED"));
    CHECK(rows[2].task_id == "cb-3");
    CHECK(rows[2].state == "FAILED");
    CHECK(rows[2].error_code == std::optional<std::string>("NOP-TASK-TIMEOUT"));

    // Delivered and abandoned callbacks leave task events.
    REQUIRE(*store->mark_report_delivered(rows[0].id, kOwnerA, R"({"status":200})"));
    CHECK(has_event(*store, "cb-1", "callback:delivered"));
    REQUIRE(*store->mark_report_dead(rows[1].id, kOwnerA, "refused", R"({"error":"refused"})"));
    CHECK(has_event(*store, "cb-2", "callback:abandoned"));
    CHECK_FALSE(has_event(*store, "cb-2", "callback:delivered"));
}

TEST_CASE_FIXTURE(StoreFixture, "only callbacks are claimed when asked; node rows can be discarded")
{
    REQUIRE(store->deposit(deposit_with_payload("cb-1", frame_with_callback("cb-1", "https://hooks.example.com/a"))));
    claim_head(kRunnerA);
    REQUIRE(store->record_node_result(outbox_node_result("cb-1", "n1", NodeState::completed, "{}")));
    REQUIRE(store->complete("cb-1", kRunnerA, completed()));
    CHECK(store->report_counts()->backlog == 2);
    CHECK(*store->report_due_in_ms(ReportKinds::no_node_reports) == 0);

    auto rows = *store->claim_reports({.owner = kOwnerA, .lease_ms = 1000, .max_rows = 16,
                                       .kinds = ReportKinds::no_node_reports});
    REQUIRE(rows.size() == 1);
    CHECK(rows[0].kind == ReportKind::callback);
    CHECK(*store->report_due_in_ms(ReportKinds::no_node_reports) == 1000);

    CHECK(*store->discard_node_reports() == 1);
    CHECK(store->report_counts()->backlog == 1);
    CHECK(*store->report_due_in_ms(ReportKinds::all) == 1000);
}

TEST_CASE_FIXTURE(StoreFixture, "dead rows are kept, counted and listed, and unblock the node's later rows")
{
    deposit("task-1");
    REQUIRE(store->record_node_result(outbox_node_result("task-1", "n1", NodeState::completed, "{}")));
    REQUIRE(store->record_node_result(outbox_node_result("task-1", "n1", NodeState::compensating)));
    auto rows = *store->claim_reports(claim_by(kOwnerA));
    REQUIRE(rows.size() == 1);
    REQUIRE(*store->mark_report_dead(rows[0].id, kOwnerA, "HTTP 404 NOP-TASK-NOT-FOUND",
                                     R"({"node_id":"n1","state":"COMPLETED"})"));
    CHECK(has_event(*store, "task-1", "report:abandoned"));
    auto counts = *store->report_counts();
    CHECK(counts.backlog == 1);
    CHECK(counts.dead == 1);
    auto dead = *store->dead_reports(0);
    REQUIRE(dead.size() == 1);
    CHECK(dead[0].status == ReportStatus::dead);
    CHECK(dead[0].state == "COMPLETED");
    CHECK(dead[0].tries == 1);
    CHECK(dead[0].last_error == std::optional<std::string>("HTTP 404 NOP-TASK-NOT-FOUND"));

    auto next = *store->claim_reports(claim_by(kOwnerA));
    CHECK(states_of(next) == std::vector<std::string>{"n1:COMPENSATING"});
    // A dead row is never claimed again, not even by its old owner.
    CHECK_FALSE(*store->mark_report_delivered(rows[0].id, kOwnerA, ""));
    CHECK(store->report_counts()->dead == 1);
}

TEST_CASE_FIXTURE(StoreFixture, "the outbox survives reopening")
{
    deposit("task-1");
    REQUIRE(store->record_node_result(outbox_node_result("task-1", "n1", NodeState::skipped)));
    reopen();
    auto rows = *store->claim_reports(claim_by(kOwnerA));
    CHECK(states_of(rows) == std::vector<std::string>{"n1:SKIPPED"});
}

TEST_CASE_FIXTURE(StoreFixture, "a version 2 file gains the outbox when opened" * doctest::test_suite("sqlite"))
{
    deposit("task-1");
    REQUIRE(store->record_node_result(outbox_node_result("task-1", "n1", NodeState::running)));
    store.reset();
    {
        SQLite::Database raw(dir.file("runner.db"), SQLite::OPEN_READWRITE);
        // Schema 6's completion messages, schema 4's retention objects, then
        // schema 3's outbox.
        raw.exec("DROP TRIGGER tasks_reply; DROP TABLE inbox_notices");
        raw.exec("DROP TRIGGER tasks_finished; DROP TABLE inboxes; DROP INDEX tasks_results_expiry; "
                 "DROP INDEX tasks_finished_order; ALTER TABLE tasks DROP COLUMN result_ttl_seconds; "
                 "ALTER TABLE tasks DROP COLUMN finished_at; ALTER TABLE tasks DROP COLUMN results_expire_at; "
                 "ALTER TABLE tasks DROP COLUMN results_expired_at");
        raw.exec("DROP TRIGGER node_results_reported; DROP TRIGGER node_results_report_update; "
                 "DROP TRIGGER tasks_callback; DROP TABLE report_outbox; PRAGMA user_version=2");
    }
    reopen();
    CHECK(store->schema_version() == nps::store::detail::latest_schema_version());
    REQUIRE(store->record_node_result(outbox_node_result("task-1", "n1", NodeState::completed, "{}")));
    CHECK(states_of(*store->claim_reports(claim_by(kOwnerA))) == std::vector<std::string>{"n1:COMPLETED"});
}

TEST_CASE_FIXTURE(StoreFixture, "a store opened without node reports records nodes and queues none of them")
{
    // [report] without task_store_url (OpenOptions::node_reports = false):
    // a node's record leaves no outbox row, whichever way it is written; a
    // callback is still queued; another store on the same database with
    // node reports (the default) still queues its own.
    OpenOptions options = location.options();
    options.node_reports = false;
    auto opened = Store::open(options, clock);
    REQUIRE_MESSAGE(opened, (opened ? std::string() : opened.error().describe()));
    auto& unreported = **opened;

    REQUIRE(store->deposit(deposit_with_payload("cb-1", frame_with_callback("cb-1", "https://hooks.example.com/a"))));
    claim_head(kRunnerA);
    REQUIRE(unreported.record_node_result(outbox_node_result("cb-1", "n1", NodeState::failed)));
    auto n2 = outbox_node_result("cb-1", "n2", NodeState::completed, R"({"v":1})");
    n2.runner_nid = kRunnerA;
    const ProgressWritten written = unreported.write_progress(
        {n2, ProgressEnd{.task_id = "cb-1", .runner_nid = kRunnerA, .outcome = completed()}});
    REQUIRE_MESSAGE(!written.error, (written.error ? written.error->describe() : std::string()));
    CHECK(written.written == 2);

    const auto results = *store->node_results("cb-1");
    REQUIRE(results.size() == 2);
    CHECK(results[0].state == NodeState::failed);
    CHECK(results[1].result_json == std::optional<std::string>(R"({"v":1})"));
    CHECK(store->report_counts()->backlog == 1);  // the task's callback only
    auto rows = *store->claim_reports(claim_by(kOwnerA));
    REQUIRE(rows.size() == 1);
    CHECK(rows[0].kind == ReportKind::callback);
    CHECK(*store->discard_node_reports() == 0);

    // A record through a store with node reports.
    REQUIRE(store->record_node_result(outbox_node_result("cb-1", "n3", NodeState::failed)));
    CHECK(store->report_counts()->backlog == 2);
}
