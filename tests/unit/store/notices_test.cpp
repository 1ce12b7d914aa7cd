// SPDX-License-Identifier: Apache-2.0
// Completion messages in the store (docs/reporting.md "Completion
// messages"): the reply row a task with reply_to writes when it ends, and
// notices — inbox messages that are not tasks — beside the tasks of an inbox.
#include <SQLiteCpp/Database.h>

#include <algorithm>

#include "../../../src/store/sqlite_store.hpp"
#include "store_fixture.hpp"

using namespace store_test;
using namespace nps::store;

namespace {

constexpr const char* kOrchestrator = "urn:nps:agent:example.com:orchestrator";

DepositRequest deposit_replying(const std::string& task_id, const std::string& reply_to)
{
    DepositRequest r = deposit_request(task_id);
    r.payload = R"({"frame":"0x40","task_id":")" + task_id + R"(","dag":{"nodes":[{"id":"n1"}]},"reply_to":")" +
                reply_to + R"("})";
    r.frame_hash = nps::sha256_hex(r.payload);
    return r;
}

NoticeRequest notice(const std::string& source, const std::string& nid = kOrchestrator)
{
    return {.nid = nid,
            .source = source,
            .payload = R"({"node_state":"COMPLETED","task_id":")" + source + R"("})",
            .content_type = "application/json"};
}

}  // namespace

TEST_CASE_FIXTURE(StoreFixture, "a task with reply_to writes one reply row when it ends, in the same transaction")
{
    REQUIRE(store->deposit(deposit_replying("r-1", kOrchestrator)));
    REQUIRE(store->deposit(deposit_replying("r-2", kOrchestrator)));
    deposit("plain");
    CHECK(store->report_counts()->backlog == 0);

    auto lease = claim_head(kRunnerA);
    REQUIRE(lease.task_id == "r-1");
    REQUIRE(store->complete("r-1", kRunnerA, completed()));
    REQUIRE(store->cancel("r-2"));
    auto plain = store->claim({.nid = kNid, .runner_nid = kRunnerA, .lease_seconds = 30, .task_id = "plain"});
    REQUIRE(plain);
    REQUIRE(store->complete("plain", kRunnerA, completed()));

    auto rows = *store->claim_reports({.owner = "d", .lease_ms = 30'000, .max_rows = 16});
    REQUIRE(rows.size() == 2);
    CHECK(rows[0].kind == ReportKind::reply);
    CHECK(rows[0].task_id == "r-1");
    CHECK(rows[0].state == "COMPLETED");
    CHECK(rows[0].reply_to == std::optional<std::string>(kOrchestrator));
    CHECK(rows[1].task_id == "r-2");
    CHECK(rows[1].state == "CANCELLED");
    CHECK(rows[1].error_code == std::optional<std::string>("NOP-TASK-CANCELLED"));

    // Replies are not node reports: a runner without a task store sends them.
    REQUIRE(*store->release_reports("d", 0) == 2);
    rows = *store->claim_reports({.owner = "d", .lease_ms = 30'000, .max_rows = 16,
                                  .kinds = ReportKinds::no_node_reports});
    REQUIRE(rows.size() == 2);
    REQUIRE(*store->mark_report_delivered(rows[0].id, "d", R"({"reply_to":"x"})"));
    REQUIRE(*store->mark_report_dead(rows[1].id, "d", "refused", R"({"error":"refused"})"));
    const auto names = [&](const std::string& task_id) {
        const auto events = store->events(task_id);
        REQUIRE(events);
        std::vector<std::string> out;
        for (const auto& e : *events)
            out.push_back(e.name);
        return out;
    };
    const auto delivered = names("r-1");
    CHECK(std::find(delivered.begin(), delivered.end(), "reply:delivered") != delivered.end());
    const auto abandoned = names("r-2");
    CHECK(std::find(abandoned.begin(), abandoned.end(), "reply:abandoned") != abandoned.end());
}

TEST_CASE_FIXTURE(StoreFixture, "a task's callback and its reply do not wait for each other")
{
    DepositRequest both = deposit_request("both");
    both.payload = R"({"task_id":"both","dag":{"nodes":[{"id":"n1"}]},"reply_to":")" + std::string(kOrchestrator) +
                   R"(","callback_url":"https://hooks.example.com/cb"})";
    both.frame_hash = nps::sha256_hex(both.payload);
    REQUIRE(store->deposit(both));
    claim_head(kRunnerA);
    REQUIRE(store->complete("both", kRunnerA, completed()));
    auto rows = *store->claim_reports({.owner = "d", .lease_ms = 30'000, .max_rows = 16});
    REQUIRE(rows.size() == 2);  // both due at once: neither is "earlier" for the other
    CHECK(rows[0].kind != rows[1].kind);
}

TEST_CASE_FIXTURE(StoreFixture, "a notice is listed by peek among the tasks, never claimed, and acked away")
{
    deposit("task-before", 0, 3600, kOrchestrator);
    auto first = store->deposit_notice(notice("reply:a"));
    REQUIRE(first);
    CHECK_FALSE(first->duplicate);
    CHECK(first->message.task_id.empty());
    deposit("task-after", 0, 3600, kOrchestrator);

    auto peeked = *store->peek(kOrchestrator, 16);
    REQUIRE(peeked.size() == 3);
    CHECK(peeked[0].task_id == "task-before");
    CHECK(peeked[1].task_id.empty());  // the notice, in id order
    CHECK(peeked[1].message_id == first->message.message_id);
    CHECK(peeked[1].payload == R"({"node_state":"COMPLETED","task_id":"reply:a"})");
    CHECK(peeked[2].task_id == "task-after");
    // One id space: the notice's id lies between the two tasks'.
    CHECK(peeked[0].message_id < peeked[1].message_id);
    CHECK(peeked[1].message_id < peeked[2].message_id);
    CHECK(*store->depth(kOrchestrator) == 3);
    CHECK(*store->last_message_id() == peeked[2].message_id);

    // The same source again is the first notice.
    auto again = store->deposit_notice(notice("reply:a"));
    REQUIRE(again);
    CHECK(again->duplicate);
    CHECK(again->message.message_id == first->message.message_id);

    // Claims take the two tasks, never the notice.
    CHECK(claim_head(kRunnerA, 30, kOrchestrator).task_id == "task-before");
    CHECK(claim_head(kRunnerA, 30, kOrchestrator).task_id == "task-after");
    CHECK_FALSE(*store->claim({.nid = kOrchestrator, .runner_nid = kRunnerA, .lease_seconds = 30}));

    REQUIRE(store->ack(kOrchestrator, first->message.message_id));
    auto gone = store->ack(kOrchestrator, first->message.message_id);
    REQUIRE_FALSE(gone);
    CHECK(gone.error().code == "NWP-INBOX-MESSAGE-NOT-FOUND");
    CHECK(*store->depth(kOrchestrator) == 2);  // the two tasks, under their leases
}

TEST_CASE_FIXTURE(StoreFixture, "a notice obeys the inbox's depth cap and TTL, and survives reopening")
{
    deposit("t1", 0, 3600, kOrchestrator);
    auto capped = notice("reply:cap");
    capped.max_depth = 1;
    auto full = store->deposit_notice(capped);
    REQUIRE_FALSE(full);
    CHECK(full.error().code == "NWP-RATE-LIMIT-INBOX-FULL");

    auto short_lived = notice("reply:ttl");
    short_lived.ttl_seconds = 10;
    REQUIRE(store->deposit_notice(short_lived));
    REQUIRE(store->deposit_notice(notice("reply:kept")));
    reopen();
    CHECK(store->peek(kOrchestrator, 16)->size() == 3);
    clock.advance_ms(11'000);
    CHECK(store->peek(kOrchestrator, 16)->size() == 2);  // past its TTL: not listed
    CHECK(*store->sweep_expired() == 0);                 // and deleted, not counted as an expired task
    auto other = store->ack(kOtherNid, store->peek(kOrchestrator, 16)->back().message_id);
    CHECK_FALSE(other);  // another inbox's id is not found
    // The next task's id comes after every notice's.
    const std::int64_t last_notice = store->peek(kOrchestrator, 16)->back().message_id;
    CHECK(deposit("t2", 0, 3600, kOrchestrator).message_id > last_notice);
}

TEST_CASE_FIXTURE(StoreFixture, "a version 5 file keeps its outbox rows and gains completion messages when opened" * doctest::test_suite("sqlite"))
{
    DepositRequest cb = deposit_request("cb");
    cb.payload = R"({"task_id":"cb","dag":{"nodes":[{"id":"n1"}]},"callback_url":"https://hooks.example.com/cb"})";
    cb.frame_hash = nps::sha256_hex(cb.payload);
    REQUIRE(store->deposit(cb));
    REQUIRE(store->deposit(deposit_replying("r-late", kOrchestrator)));
    claim_head(kRunnerA);
    REQUIRE(store->complete("cb", kRunnerA, completed()));
    store.reset();
    {
        // Back to schema 5: no reply kind, no notices (a pending callback row kept).
        SQLite::Database raw(dir.file("runner.db"), SQLite::OPEN_READWRITE);
        raw.exec("DROP TRIGGER tasks_reply; DROP TABLE inbox_notices; ALTER TABLE report_outbox DROP COLUMN reply_to; "
                 "PRAGMA user_version = 5");
    }
    reopen();
    CHECK(store->schema_version() == nps::store::detail::latest_schema_version());
    auto rows = *store->claim_reports({.owner = "d", .lease_ms = 30'000, .max_rows = 16});
    REQUIRE(rows.size() == 1);
    CHECK(rows[0].kind == ReportKind::callback);
    CHECK(rows[0].callback_url == std::optional<std::string>("https://hooks.example.com/cb"));
    // The triggers write the rebuilt table.
    auto late = store->claim({.nid = kNid, .runner_nid = kRunnerA, .lease_seconds = 30, .task_id = "r-late"});
    REQUIRE(late);
    REQUIRE(store->complete("r-late", kRunnerA, completed()));
    rows = *store->claim_reports({.owner = "d", .lease_ms = 30'000, .max_rows = 16});
    REQUIRE(rows.size() == 1);
    CHECK(rows[0].kind == ReportKind::reply);
    REQUIRE(store->deposit_notice(notice("reply:after-upgrade")));
}
