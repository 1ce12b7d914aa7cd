// SPDX-License-Identifier: Apache-2.0
// Inbox: deposit idempotency and conflicts, depth cap, ordering, peek, ack,
// TTL and the sweep.
#include "store_fixture.hpp"

using namespace store_test;
using namespace nps::store;

TEST_CASE_FIXTURE(StoreFixture, "deposit stores the message and a PENDING task with an inbox:deposited event")
{
    const auto m = deposit("task-1", 5, 60);
    CHECK(m.message_id > 0);
    CHECK(m.nid == kNid);
    CHECK(m.task_id == "task-1");
    CHECK(m.payload == frame_for("task-1"));
    CHECK(m.content_type == "application/json");
    CHECK(m.priority == 5);
    CHECK(m.enqueued_at_ms == clock.now_ms());
    CHECK(m.expires_at_ms == clock.now_ms() + 60'000);

    auto t = store->task("task-1");
    REQUIRE(t);
    CHECK(t->state == proto::TaskState::pending);
    CHECK(t->nid == kNid);
    CHECK(t->payload == frame_for("task-1"));
    CHECK(t->dedup_key == deposit_request("task-1").dedup_key);
    CHECK(t->dag_hash == deposit_request("task-1").dag_hash);
    CHECK_FALSE(t->lease_owner);
    CHECK(t->claims == 0);
    CHECK(t->created_at_ms == clock.now_ms());

    auto ev = store->events("task-1");
    REQUIRE(ev);
    REQUIRE(ev->size() == 1);
    CHECK((*ev)[0].seq == 1);
    CHECK((*ev)[0].name == "inbox:deposited");

    auto last = store->last_message_id();
    REQUIRE(last);
    CHECK(*last == m.message_id);
}

TEST_CASE_FIXTURE(StoreFixture, "an identical re-deposit is idempotent; a different frame or nid conflicts")
{
    const auto first = deposit("task-1");
    clock.advance_ms(1000);

    auto again = store->deposit(deposit_request("task-1"));
    REQUIRE(again);
    CHECK(again->duplicate);
    CHECK(again->message.message_id == first.message_id);
    CHECK(again->message.enqueued_at_ms == first.enqueued_at_ms);
    CHECK(again->message.payload == first.payload);
    CHECK(*store->depth(kNid) == 1);

    auto changed = deposit_request("task-1");
    changed.payload += " ";
    changed.frame_hash = nps::sha256_hex(changed.payload);
    CHECK(error_code_of(store->deposit(changed)) == "NWP-TASK-ID-CONFLICT");

    CHECK(error_code_of(store->deposit(deposit_request("task-1", 0, 3600, kOtherNid))) == "NWP-TASK-ID-CONFLICT");
    CHECK(*store->depth(kNid) == 1);
    CHECK(*store->depth(kOtherNid) == 0);
    CHECK(store->events("task-1")->size() == 1);
}

TEST_CASE_FIXTURE(StoreFixture, "a full inbox refuses deposits; duplicates and other inboxes still pass")
{
    for (int i = 0; i < 3; ++i) {
        auto req = deposit_request("task-" + std::to_string(i));
        req.max_depth = 3;
        REQUIRE(store->deposit(req));
    }
    auto req = deposit_request("task-3");
    req.max_depth = 3;
    auto full = store->deposit(req);
    CHECK(error_code_of(full) == "NWP-RATE-LIMIT-INBOX-FULL");
    CHECK(store->task("task-3").error().code == "NOP-TASK-NOT-FOUND");

    auto dup = deposit_request("task-0");
    dup.max_depth = 3;
    auto d = store->deposit(dup);
    REQUIRE(d);
    CHECK(d->duplicate);

    auto other = deposit_request("task-x", 0, 3600, kOtherNid);
    other.max_depth = 3;
    CHECK(store->deposit(other));

    // Acking frees a slot.
    REQUIRE(store->ack(kNid, store->peek(kNid, 1)->front().message_id));
    CHECK(store->deposit(req));
}

TEST_CASE_FIXTURE(StoreFixture, "messages are claimed by priority, then FIFO")
{
    deposit("low-1", -5);
    deposit("mid-1", 0);
    deposit("high-1", 10);
    deposit("mid-2", 0);
    deposit("high-2", 10);
    deposit("other-inbox", 100, 3600, kOtherNid);

    auto peeked = store->peek(kNid, 10);
    REQUIRE(peeked);
    std::vector<std::string> peek_order;
    for (const auto& m : *peeked)
        peek_order.push_back(m.task_id);
    const std::vector<std::string> expected = {"high-1", "high-2", "mid-1", "mid-2", "low-1"};
    CHECK(peek_order == expected);

    std::vector<std::string> claim_order;
    for (int i = 0; i < 5; ++i)
        claim_order.push_back(claim_head(kRunnerA).task_id);
    CHECK(claim_order == expected);
    auto none = store->claim({.nid = kNid, .runner_nid = kRunnerA, .lease_seconds = 30});
    REQUIRE(none);
    CHECK_FALSE(none->has_value());
}

TEST_CASE_FIXTURE(StoreFixture, "peek hides live leases, shows expired ones and never changes anything")
{
    deposit("task-1");
    deposit("task-2");
    CHECK(store->peek(kNid, 10)->size() == 2);
    CHECK(store->peek(kNid, 10)->size() == 2);  // peek is not a claim
    CHECK(store->peek(kNid, 1)->size() == 1);

    claim_head(kRunnerA, 10);
    auto visible = store->peek(kNid, 10);
    REQUIRE(visible->size() == 1);
    CHECK(visible->front().task_id == "task-2");
    CHECK(*store->depth(kNid) == 2);  // depth counts leased messages too

    clock.advance_ms(10'000);  // expiry == now: no longer live
    CHECK(store->peek(kNid, 10)->size() == 2);
}

TEST_CASE_FIXTURE(StoreFixture, "ack removes the message but keeps the task; a second ack is not found")
{
    const auto m = deposit("task-1");
    CHECK(error_code_of(store->ack(kOtherNid, m.message_id)) == "NWP-INBOX-MESSAGE-NOT-FOUND");
    REQUIRE(store->ack(kNid, m.message_id));
    CHECK(store->peek(kNid, 10)->empty());
    CHECK(*store->depth(kNid) == 0);
    CHECK(error_code_of(store->ack(kNid, m.message_id)) == "NWP-INBOX-MESSAGE-NOT-FOUND");
    CHECK(error_code_of(store->ack(kNid, 999'999)) == "NWP-INBOX-MESSAGE-NOT-FOUND");
    auto t = store->task("task-1");
    REQUIRE(t);
    CHECK(t->state == proto::TaskState::pending);
    auto none = store->claim({.nid = kNid, .runner_nid = kRunnerA, .lease_seconds = 30});
    REQUIRE(none);
    CHECK_FALSE(none->has_value());
    CHECK(error_code_of(claim_task("task-1", kRunnerA)) == "NOP-TASK-NOT-FOUND");
}

TEST_CASE_FIXTURE(StoreFixture, "a message past its TTL is never claimed, and the sweep fails its task")
{
    deposit("short", 10, 5);
    deposit("long", 0, 3600);
    clock.advance_ms(5'000);  // expires_at == now: expired

    CHECK(*store->depth(kNid) == 1);
    CHECK(store->peek(kNid, 10)->size() == 1);
    CHECK(error_code_of(claim_task("short", kRunnerA)) == "NOP-TASK-NOT-FOUND");
    CHECK(claim_head(kRunnerA).task_id == "long");
    auto none = store->claim({.nid = kNid, .runner_nid = kRunnerA, .lease_seconds = 30});
    REQUIRE(none);
    CHECK_FALSE(none->has_value());

    auto swept = store->sweep_expired();
    REQUIRE(swept);
    CHECK(*swept == 1);
    auto t = store->task("short");
    REQUIRE(t);
    CHECK(t->state == proto::TaskState::failed);
    CHECK(t->error_code == "NOP-TASK-TIMEOUT");
    CHECK(store->events("short")->back().name == "inbox:expired");
    CHECK(*store->sweep_expired() == 0);
}

TEST_CASE_FIXTURE(StoreFixture, "the TTL bounds only the wait for the first claim")
{
    deposit("task-1", 0, 20);
    const auto lease = claim_head(kRunnerA, 10);
    CHECK(lease.message.expires_at_ms == std::numeric_limits<std::int64_t>::max());
    clock.advance_ms(60'000);  // lease and TTL both passed
    CHECK(*store->sweep_expired() == 0);
    CHECK(*store->depth(kNid) == 1);
    const auto again = claim_head(kRunnerB, 10);
    CHECK(again.task_id == "task-1");
    CHECK(again.outcome == ClaimOutcome::reclaimed);
}

TEST_CASE_FIXTURE(StoreFixture, "peek batch is clamped and returns payloads")
{
    for (int i = 0; i < 20; ++i)
        deposit("t" + std::to_string(i));
    CHECK(store->peek(kNid, 0)->size() == 16);  // default batch
    auto all = store->peek(kNid, 100000);
    REQUIRE(all->size() == 20);
    CHECK(all->front().payload == frame_for("t0"));
}

TEST_CASE_FIXTURE(StoreFixture, "a delayed deposit is hidden from peek and head claims until its delay ends")
{
    auto delayed = deposit_request("later");
    delayed.delay_seconds = 5;
    REQUIRE(store->deposit(delayed));
    deposit("now");
    CHECK(*store->depth(kNid) == 2);  // counted, though hidden
    auto peeked = *store->peek(kNid, 16);
    REQUIRE(peeked.size() == 1);
    CHECK(peeked[0].task_id == "now");
    CHECK(claim_head(kRunnerA).task_id == "now");
    CHECK_FALSE(*store->claim({.nid = kNid, .runner_nid = kRunnerA, .lease_seconds = 30}));

    clock.advance_ms(5'000);
    CHECK(store->peek(kNid, 16)->size() == 1);
    CHECK(claim_head(kRunnerB).task_id == "later");
}

TEST_CASE_FIXTURE(StoreFixture, "a claim naming a delayed task takes it at once, as granted")
{
    auto delayed = deposit_request("held");
    delayed.delay_seconds = 60;
    REQUIRE(store->deposit(delayed));
    auto lease = store->claim({.nid = kNid, .runner_nid = kRunnerA, .lease_seconds = 10, .task_id = "held"});
    REQUIRE(lease);
    REQUIRE(lease->has_value());
    CHECK((*lease)->outcome == ClaimOutcome::granted);
    // Its lease, not the delay, decides from now on: another runner waits for it ...
    auto other = store->claim({.nid = kNid, .runner_nid = kRunnerB, .lease_seconds = 10, .task_id = "held"});
    REQUIRE_FALSE(other);
    CHECK(other.error().code == "NOP-CLAIM-CONFLICT");
    // ... and reclaims it by a head claim once it lapses.
    clock.advance_ms(10'000);
    auto reclaimed = claim_head(kRunnerB);
    CHECK(reclaimed.task_id == "held");
    CHECK(reclaimed.outcome == ClaimOutcome::reclaimed);
}
