// SPDX-License-Identifier: Apache-2.0
// The PostgreSQL store's clock (docs/durability.md, "Leases across hosts"):
// runners on hosts whose wall clocks disagree by hours share one database,
// and still neither takes nor renews the other's lease, because every lease
// time is the database server's. Only meaningful on PostgreSQL (doctest
// suite "postgresql"); SQLite's users are all on one host and use its clock.
#include "store_fixture.hpp"

using namespace store_test;
using nps::store::ClockSource;
using nps::store::Store;

namespace {

constexpr std::int64_t kHour = 3'600'000;

std::unique_ptr<Store> open_with(StoreLocation& location, const nps::Clock& clock)
{
    auto options = location.options();
    options.clock_source = ClockSource::database;  // production's choice
    auto opened = Store::open(options, clock);
    REQUIRE_MESSAGE(opened, (opened ? std::string() : opened.error().describe()));
    return std::move(opened).value();
}

}  // namespace

TEST_CASE("leases follow the database's clock: hosts hours apart never take or renew each other's lease" *
          doctest::test_suite("postgresql"))
{
    StoreLocation location;
    REQUIRE_MESSAGE(location.on_postgres(), "this case runs on the PostgreSQL store only");
    const std::int64_t real_now = nps::SystemClock::instance().now_ms();
    nps::FakeClock host_a(real_now - 3 * kHour);  // three hours slow
    nps::FakeClock host_b(real_now + 5 * kHour);  // five hours fast
    auto a = open_with(location, host_a);
    auto b = open_with(location, host_b);

    REQUIRE(a->deposit(deposit_request("task-1")));
    auto lease = a->claim({.nid = kNid, .runner_nid = kRunnerA, .lease_seconds = 30});
    REQUIRE(lease);
    REQUIRE(lease->has_value());
    // The expiry is the server's now + 30 s: near the real time, not host A's.
    CHECK((*lease)->lease_expiry_ms > real_now + 20'000);
    CHECK((*lease)->lease_expiry_ms < real_now + 60'000);

    // Host B's clock is past that expiry by hours; the server's is not.
    auto head = b->claim({.nid = kNid, .runner_nid = kRunnerB, .lease_seconds = 30});
    REQUIRE(head);
    CHECK_FALSE(head->has_value());
    CHECK(error_code_of(b->claim({.nid = kNid, .runner_nid = kRunnerB, .lease_seconds = 30,
                                  .task_id = std::string("task-1")})) == "NOP-CLAIM-CONFLICT");
    CHECK(error_code_of(b->renew("task-1", kRunnerB, 30)) == "NOP-CLAIM-CONFLICT");
    CHECK(error_code_of(b->complete("task-1", kRunnerB, completed())) == "NOP-CLAIM-CONFLICT");
    auto task = b->task("task-1");
    REQUIRE(task);
    CHECK(task->lease_owner == std::optional<std::string>(kRunnerA));
    CHECK(task->state == proto::TaskState::running);

    // Host A, hours slow, renews and completes its own lease.
    auto renewed = a->renew("task-1", kRunnerA, 30);
    REQUIRE(renewed);
    CHECK(*renewed > real_now + 20'000);
    REQUIRE(a->complete("task-1", kRunnerA, completed()));
    auto done = b->task("task-1");
    REQUIRE(done);
    CHECK(done->state == proto::TaskState::completed);
    // The deposit's time is the server's too.
    CHECK(done->created_at_ms >= real_now - 60'000);
    CHECK(done->created_at_ms <= real_now + 60'000);
}

TEST_CASE("the outbox follows the database's clock: a deliverer on a host hours fast still waits out a retry" *
          doctest::test_suite("postgresql"))
{
    StoreLocation location;
    REQUIRE_MESSAGE(location.on_postgres(), "this case runs on the PostgreSQL store only");
    const std::int64_t real_now = nps::SystemClock::instance().now_ms();
    nps::FakeClock fast(real_now + 5 * kHour);
    auto store = open_with(location, fast);

    REQUIRE(store->deposit(deposit_request("task-r")));
    nps::store::NodeResult result{.task_id = "task-r",
                                  .node_id = "n1",
                                  .dedup_key = deposit_request("task-r").dedup_key,
                                  .state = nps::proto::NodeState::completed,
                                  .attempts = 1};
    REQUIRE(store->record_node_result(result));
    auto rows = store->claim_reports({.owner = "deliverer", .lease_ms = 30'000, .max_rows = 16});
    REQUIRE(rows);
    REQUIRE(rows->size() == 1);
    const nps::store::ReportRow row = rows->front();
    // The claim's moment and the row's times are the server's, not the host's.
    CHECK(row.claimed_at_ms > real_now - 60'000);
    CHECK(row.claimed_at_ms < real_now + 60'000);
    CHECK(row.lease_until_ms - row.claimed_at_ms == 30'000);
    CHECK(row.claimed_at_ms - row.recorded_at_ms < 60'000);  // the age a deliverer reckons

    // A retry 10 s after the claim, reckoned on the claim's clock: due in
    // about 10 s, though the host's clock is hours past that moment.
    REQUIRE(*store->reschedule_report(
        {.id = row.id, .owner = "deliverer", .error = "HTTP 503", .next_attempt_at_ms = row.claimed_at_ms + 10'000}));
    auto due_in = store->report_due_in_ms(nps::store::ReportKinds::all);
    REQUIRE(due_in);
    REQUIRE(due_in->has_value());
    CHECK(**due_in > 5'000);
    CHECK(**due_in <= 10'000);
    auto early = store->claim_reports({.owner = "deliverer", .lease_ms = 30'000, .max_rows = 16});
    REQUIRE(early);
    CHECK(early->empty());
}
