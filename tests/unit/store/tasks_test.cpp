// SPDX-License-Identifier: Apache-2.0
// Task listing, cancellation and the event log.
#include "store_fixture.hpp"

using namespace store_test;
using namespace nps::store;

TEST_CASE_FIXTURE(StoreFixture, "list_tasks is newest first, filters and clamps the limit")
{
    deposit("a");
    clock.advance_ms(1);
    deposit("b", 0, 3600, kOtherNid);
    clock.advance_ms(1);
    deposit("c");
    claim_head(kRunnerA);  // a: oldest at equal priority
    auto all = store->list_tasks({});
    REQUIRE(all);
    REQUIRE(all->size() == 3);
    CHECK((*all)[0].task_id == "c");
    CHECK((*all)[1].task_id == "b");
    CHECK((*all)[2].task_id == "a");
    CHECK((*all)[0].payload.empty());  // lists leave payloads out

    auto running = store->list_tasks({.state = proto::TaskState::running});
    REQUIRE(running->size() == 1);
    CHECK(running->front().task_id == "a");
    auto other = store->list_tasks({.nid = kOtherNid});
    REQUIRE(other->size() == 1);
    CHECK(other->front().task_id == "b");
    CHECK(store->list_tasks({.limit = 2})->size() == 2);
    CHECK(store->list_tasks({.state = proto::TaskState::pending, .nid = kNid})->size() == 1);
}

TEST_CASE_FIXTURE(StoreFixture, "cancel ends a pending or running task and fences its runner")
{
    deposit("pending");
    deposit("running");
    REQUIRE(store->ack(kNid, store->peek(kNid, 1)->front().message_id));  // an acked task can still be cancelled
    claim_head(kRunnerA);  // "running"

    auto p = store->cancel("pending");
    REQUIRE(p);
    CHECK(p->state == proto::TaskState::cancelled);
    CHECK(p->error_code == std::optional<std::string>("NOP-TASK-CANCELLED"));

    auto r = store->cancel("running");
    REQUIRE(r);
    CHECK(r->state == proto::TaskState::cancelled);
    CHECK_FALSE(r->lease_owner);
    CHECK(store->events("running")->back().name == "task:cancelled");
    CHECK(error_code_of(store->renew("running", kRunnerA, 30)) == "NOP-CLAIM-CONFLICT");
    CHECK(error_code_of(store->complete("running", kRunnerA, completed())) == "NOP-CLAIM-CONFLICT");
    CHECK(*store->depth(kNid) == 0);

    CHECK(error_code_of(store->cancel("running")) == "NOP-TASK-ALREADY-COMPLETED");
    CHECK(error_code_of(store->cancel("nope")) == "NOP-TASK-NOT-FOUND");
    CHECK(error_code_of(claim_task("running", kRunnerB)) == "NOP-TASK-ALREADY-COMPLETED");
}

TEST_CASE_FIXTURE(StoreFixture, "events have per-task increasing seq and are append-only")
{
    deposit("a");
    deposit("b");
    REQUIRE(store->append_event("a", "fetch:attempt:1", R"({"url":"https://x"})"));
    REQUIRE(store->append_event("b", "task:running", ""));
    REQUIRE(store->append_event("a", "task:running", "{}"));
    CHECK(error_code_of(store->append_event("nope", "x", "{}")) == "NOP-TASK-NOT-FOUND");
    CHECK_FALSE(store->append_event("a", "x", "{not json"));
    CHECK_FALSE(store->append_event("a", "", "{}"));

    auto a = store->events("a");
    REQUIRE(a->size() == 3);
    for (std::size_t i = 0; i < a->size(); ++i)
        CHECK((*a)[i].seq == static_cast<std::int64_t>(i + 1));
    CHECK((*a)[1].name == "fetch:attempt:1");
    CHECK((*a)[1].detail_json == R"({"url":"https://x"})");
    auto b = store->events("b");
    REQUIRE(b->size() == 2);
    CHECK((*b)[1].seq == 2);
    CHECK((*b)[1].detail_json == "{}");
    CHECK(store->events("nope")->empty());
}

TEST_CASE_FIXTURE(StoreFixture, "an event fenced by a lease is written only while that runner holds it live")
{
    deposit("a");
    claim_head(kRunnerA, 10);
    const auto before = store->events("a")->size();
    REQUIRE(store->append_event("a", "n:attempt:1", "{}", std::string(kRunnerA)));
    CHECK(error_code_of(store->append_event("a", "n:worker", "{}", std::string(kRunnerB))) == "NOP-CLAIM-CONFLICT");

    clock.advance_ms(10'000);  // expired, nobody has reclaimed it yet: still not A's to write
    CHECK(error_code_of(store->append_event("a", "n:worker", "{}", std::string(kRunnerA))) == "NOP-CLAIM-CONFLICT");
    REQUIRE(claim_task("a", kRunnerB));
    CHECK(error_code_of(store->append_event("a", "n:completed", "{}", std::string(kRunnerA))) ==
          "NOP-CLAIM-CONFLICT");
    REQUIRE(store->append_event("a", "n:attempt:1", "{}", std::string(kRunnerB)));

    // What A tried after losing the lease is not in the log; B's reclaim and write are.
    auto events = store->events("a");
    REQUIRE(events->size() == before + 3);
    CHECK((*events)[before].name == "n:attempt:1");
    CHECK((*events)[before + 1].name == "lease:reclaimed");
    CHECK((*events)[before + 2].name == "n:attempt:1");
    CHECK(error_code_of(store->append_event("nope", "x", "{}", std::string(kRunnerA))) == "NOP-TASK-NOT-FOUND");
}
