// SPDX-License-Identifier: Apache-2.0
// The claim protocol: granted / reclaimed / conflict, claims by task_id,
// dedup_key checks, renew / release / complete fencing, batches.
#include "store_fixture.hpp"

using namespace store_test;
using namespace nps::store;

TEST_CASE("lease seconds are clamped to [10, 600]")
{
    CHECK(clamp_lease_seconds(0) == 10);
    CHECK(clamp_lease_seconds(9) == 10);
    CHECK(clamp_lease_seconds(10) == 10);
    CHECK(clamp_lease_seconds(300) == 300);
    CHECK(clamp_lease_seconds(600) == 600);
    CHECK(clamp_lease_seconds(601) == 600);
    CHECK(clamp_lease_seconds(UINT32_MAX) == 600);
    CHECK(std::string(to_string(ClaimOutcome::granted)) == "granted");
    CHECK(std::string(to_string(ClaimOutcome::reclaimed)) == "reclaimed");
    CHECK(std::string(to_string(RecordOutcome::recorded)) == "recorded");
    CHECK(std::string(to_string(RecordOutcome::duplicate)) == "duplicate");
}

TEST_CASE_FIXTURE(StoreFixture, "a head claim grants a lease, sets the task RUNNING and logs lease:granted")
{
    const auto m = deposit("task-1");
    const auto lease = claim_head(kRunnerA, 45);
    CHECK(lease.outcome == ClaimOutcome::granted);
    CHECK(lease.task_id == "task-1");
    CHECK(lease.runner_nid == kRunnerA);
    CHECK(lease.lease_expiry_ms == clock.now_ms() + 45'000);
    CHECK(lease.claims == 1);
    CHECK(lease.dedup_key == deposit_request("task-1").dedup_key);
    CHECK(lease.dag_hash == deposit_request("task-1").dag_hash);
    CHECK(lease.message.message_id == m.message_id);
    CHECK(lease.message.payload == m.payload);
    CHECK(lease.message.enqueued_at_ms == m.enqueued_at_ms);

    auto t = store->task("task-1");
    REQUIRE(t);
    CHECK(t->state == proto::TaskState::running);
    CHECK(t->lease_owner == std::optional<std::string>(kRunnerA));
    CHECK(t->lease_expiry_ms == lease.lease_expiry_ms);
    CHECK(t->claims == 1);

    auto ev = store->events("task-1");
    REQUIRE(ev->size() == 2);
    CHECK((*ev)[1].seq == 2);
    CHECK((*ev)[1].name == "lease:granted");
    CHECK((*ev)[1].detail_json.find(kRunnerA) != std::string::npos);
    CHECK((*ev)[1].detail_json.find(std::to_string(lease.lease_expiry_ms)) != std::string::npos);
}

TEST_CASE_FIXTURE(StoreFixture, "claim lease seconds are clamped")
{
    deposit("a");
    deposit("b");
    CHECK(claim_head(kRunnerA, 1).lease_expiry_ms == clock.now_ms() + 10'000);
    CHECK(claim_head(kRunnerA, 100'000).lease_expiry_ms == clock.now_ms() + 600'000);
}

TEST_CASE_FIXTURE(StoreFixture, "claim by task_id: a live lease conflicts for others, the holder renews, expired is reclaimed")
{
    deposit("task-1");
    auto first = claim_task("task-1", kRunnerA, 10);
    REQUIRE(first);
    REQUIRE(first->has_value());
    CHECK((*first)->outcome == ClaimOutcome::granted);
    const auto events_after_grant = store->events("task-1")->size();

    clock.advance_ms(5'000);
    CHECK(error_code_of(claim_task("task-1", kRunnerB)) == "NOP-CLAIM-CONFLICT");

    // The holder's own claim renews its lease: granted, a new expiry from
    // now, no second claim, nothing logged.
    auto again = claim_task("task-1", kRunnerA, 10);
    REQUIRE(again);
    REQUIRE(again->has_value());
    CHECK((*again)->outcome == ClaimOutcome::granted);
    CHECK((*again)->claims == 1);
    CHECK((*again)->lease_expiry_ms == clock.now_ms() + 10'000);
    CHECK((*again)->task_id == "task-1");
    CHECK(store->events("task-1")->size() == events_after_grant);
    CHECK(store->task("task-1")->lease_expiry_ms == clock.now_ms() + 10'000);

    clock.advance_ms(9'999);  // past the first lease's end
    CHECK(error_code_of(claim_task("task-1", kRunnerB)) == "NOP-CLAIM-CONFLICT");  // renewed: still live
    clock.advance_ms(1);  // expiry == now: the lease is no longer live
    auto second = claim_task("task-1", kRunnerB, 10);
    REQUIRE(second);
    REQUIRE(second->has_value());
    CHECK((*second)->outcome == ClaimOutcome::reclaimed);
    CHECK((*second)->claims == 2);
    CHECK(store->events("task-1")->back().name == "lease:reclaimed");
    CHECK(store->task("task-1")->lease_owner == std::optional<std::string>(kRunnerB));
}

TEST_CASE_FIXTURE(StoreFixture, "claim by task_id: unknown, other inbox, terminal and dedup mismatch")
{
    deposit("task-1");
    deposit("elsewhere", 0, 3600, kOtherNid);
    CHECK(error_code_of(claim_task("nope", kRunnerA)) == "NOP-TASK-NOT-FOUND");
    CHECK(error_code_of(claim_task("elsewhere", kRunnerA)) == "NOP-TASK-NOT-FOUND");

    auto wrong = store->claim({.nid = kNid,
                               .runner_nid = kRunnerA,
                               .lease_seconds = 30,
                               .task_id = "task-1",
                               .dedup_key = dedup_for("task-1", "other-dag")});
    CHECK(error_code_of(wrong) == "NOP-CLAIM-CONFLICT");
    auto right = store->claim({.nid = kNid,
                               .runner_nid = kRunnerA,
                               .lease_seconds = 30,
                               .task_id = "task-1",
                               .dedup_key = deposit_request("task-1").dedup_key});
    REQUIRE(right);
    REQUIRE(right->has_value());

    REQUIRE(store->complete("task-1", kRunnerA, completed()));
    CHECK(error_code_of(claim_task("task-1", kRunnerB)) == "NOP-TASK-ALREADY-COMPLETED");
}

TEST_CASE_FIXTURE(StoreFixture, "renew: only the live owner; new expiry is now + clamped seconds")
{
    deposit("task-1");
    const auto lease = claim_head(kRunnerA, 10);
    clock.advance_ms(5'000);
    auto renewed = store->renew("task-1", kRunnerA, 20);
    REQUIRE(renewed);
    CHECK(*renewed == clock.now_ms() + 20'000);
    CHECK(*renewed != lease.lease_expiry_ms + 20'000);
    CHECK(store->task("task-1")->lease_expiry_ms == *renewed);

    CHECK(*store->renew("task-1", kRunnerA, 1) == clock.now_ms() + 10'000);  // clamped

    CHECK(error_code_of(store->renew("task-1", kRunnerB, 10)) == "NOP-CLAIM-CONFLICT");
    CHECK(error_code_of(store->renew("nope", kRunnerA, 10)) == "NOP-TASK-NOT-FOUND");

    clock.advance_ms(10'000);  // expired exactly now
    auto late = store->renew("task-1", kRunnerA, 10);
    CHECK(error_code_of(late) == "NOP-CLAIM-CONFLICT");
    CHECK(late.error().message.find("expired") != std::string::npos);

    // Reclaimed by B: A can no longer renew, B can.
    REQUIRE(claim_task("task-1", kRunnerB));
    CHECK(error_code_of(store->renew("task-1", kRunnerA, 10)) == "NOP-CLAIM-CONFLICT");
    CHECK(store->renew("task-1", kRunnerB, 10));
}

TEST_CASE_FIXTURE(StoreFixture, "release makes the message claimable at once, and the next claim is granted")
{
    deposit("task-1");
    claim_head(kRunnerA, 60);
    CHECK(error_code_of(store->release("task-1", kRunnerB)) == "NOP-CLAIM-CONFLICT");
    REQUIRE(store->release("task-1", kRunnerA));
    CHECK(error_code_of(store->release("task-1", kRunnerA)) == "NOP-CLAIM-CONFLICT");  // released
    CHECK(error_code_of(store->renew("task-1", kRunnerA, 10)) == "NOP-CLAIM-CONFLICT");

    auto t = store->task("task-1");
    CHECK(t->state == proto::TaskState::pending);
    CHECK_FALSE(t->lease_owner);
    CHECK(store->events("task-1")->back().name == "lease:released");
    CHECK(store->peek(kNid, 10)->size() == 1);

    const auto next = claim_head(kRunnerB, 60);  // same instant
    CHECK(next.outcome == ClaimOutcome::granted);
    CHECK(next.claims == 2);
}

TEST_CASE_FIXTURE(StoreFixture, "complete is fenced by the live lease and ends the task")
{
    deposit("task-1");
    claim_head(kRunnerA, 10);
    CHECK(error_code_of(store->complete("task-1", kRunnerB, completed())) == "NOP-CLAIM-CONFLICT");
    CHECK(error_code_of(store->complete("nope", kRunnerA, completed())) == "NOP-TASK-NOT-FOUND");

    clock.advance_ms(10'000);
    CHECK(error_code_of(store->complete("task-1", kRunnerA, completed())) == "NOP-CLAIM-CONFLICT");
    CHECK(store->task("task-1")->state == proto::TaskState::running);

    claim_head(kRunnerB, 10);
    CHECK(error_code_of(store->complete("task-1", kRunnerA, completed())) == "NOP-CLAIM-CONFLICT");
    REQUIRE(store->complete("task-1", kRunnerB, completed()));

    auto t = store->task("task-1");
    CHECK(t->state == proto::TaskState::completed);
    CHECK(t->aggregate_json == std::optional<std::string>(R"({"n1":{"ok":true}})"));
    CHECK_FALSE(t->lease_owner);
    CHECK(store->events("task-1")->back().name == "task:completed");
    CHECK(*store->depth(kNid) == 0);
    CHECK(store->peek(kNid, 10)->empty());
    // The lease has ended: nothing more for anyone.
    CHECK(error_code_of(store->complete("task-1", kRunnerB, completed())) == "NOP-CLAIM-CONFLICT");
    CHECK(error_code_of(store->renew("task-1", kRunnerB, 10)) == "NOP-CLAIM-CONFLICT");
    CHECK(error_code_of(store->release("task-1", kRunnerB)) == "NOP-CLAIM-CONFLICT");
}

TEST_CASE_FIXTURE(StoreFixture, "complete records failures with their code")
{
    deposit("task-1");
    claim_head(kRunnerA);
    REQUIRE(store->complete("task-1", kRunnerA,
                            {.state = nps::proto::TaskState::failed,
                             .error_code = "NOP-RUNTIME-MAX-RUNTIME",
                             .error_message = "node n1 ran too long"}));
    auto t = store->task("task-1");
    CHECK(t->state == proto::TaskState::failed);
    CHECK(t->error_code == std::optional<std::string>("NOP-RUNTIME-MAX-RUNTIME"));
    CHECK(t->error_message == std::optional<std::string>("node n1 ran too long"));
    auto ev = store->events("task-1");
    CHECK(ev->back().name == "task:failed");
    CHECK(ev->back().detail_json.find("NOP-RUNTIME-MAX-RUNTIME") != std::string::npos);

    deposit("task-2");
    claim_head(kRunnerA);
    CHECK_FALSE(store->complete("task-2", kRunnerA, {.state = nps::proto::TaskState::running}));
    CHECK(store->task("task-2")->state == proto::TaskState::running);
}

TEST_CASE_FIXTURE(StoreFixture, "claim_batch takes up to k in claim order; complete_batch is all or nothing")
{
    for (int i = 0; i < 10; ++i)
        deposit("t" + std::to_string(i), i % 2);  // odd ids have priority 1
    auto batch = store->claim_batch(kNid, kRunnerA, 30, 4);
    REQUIRE(batch);
    REQUIRE(batch->size() == 4);
    CHECK((*batch)[0].task_id == "t1");
    CHECK((*batch)[1].task_id == "t3");
    CHECK((*batch)[2].task_id == "t5");
    CHECK((*batch)[3].task_id == "t7");
    for (const auto& l : *batch) {
        CHECK(l.outcome == ClaimOutcome::granted);
        CHECK(l.message.payload == frame_for(l.task_id));
        CHECK(l.dedup_key == deposit_request(l.task_id).dedup_key);
    }

    auto rest = store->claim_batch(kNid, kRunnerB, 30, 100);
    REQUIRE(rest);
    CHECK(rest->size() == 6);
    CHECK(store->claim_batch(kNid, kRunnerB, 30, 100)->empty());
    CHECK(store->claim_batch(kNid, kRunnerB, 30, 0)->empty());

    // t0 is B's: the whole batch fails and nothing changes.
    CHECK(error_code_of(store->complete_batch({"t1", "t3", "t0"}, kRunnerA, completed())) == "NOP-CLAIM-CONFLICT");
    CHECK(store->task("t1")->state == proto::TaskState::running);
    REQUIRE(store->complete_batch({"t1", "t3", "t5", "t7"}, kRunnerA, completed()));
    for (const char* id : {"t1", "t3", "t5", "t7"})
        CHECK(store->task(id)->state == proto::TaskState::completed);
    CHECK(*store->depth(kNid) == 6);
    CHECK(store->complete_batch({}, kRunnerA, completed()));
}

TEST_CASE_FIXTURE(StoreFixture, "a head claim never takes a message under a live lease")
{
    deposit("task-1");
    claim_head(kRunnerA, 10);
    clock.advance_ms(9'999);
    for (const char* runner : {kRunnerA, kRunnerB}) {
        auto none = store->claim({.nid = kNid, .runner_nid = runner, .lease_seconds = 30});
        REQUIRE(none);
        CHECK_FALSE(none->has_value());
        CHECK(store->claim_batch(kNid, runner, 30, 10)->empty());
    }
    clock.advance_ms(1);
    CHECK(claim_head(kRunnerB, 10).outcome == ClaimOutcome::reclaimed);
}

TEST_CASE_FIXTURE(StoreFixture, "an expired lease is reclaimed from the head by another runner")
{
    deposit("task-1");
    deposit("task-2");
    claim_head(kRunnerA, 10);  // task-1
    clock.advance_ms(10'000);
    const auto l = claim_head(kRunnerB, 10);
    CHECK(l.task_id == "task-1");  // back at the head, ahead of task-2
    CHECK(l.outcome == ClaimOutcome::reclaimed);
    CHECK(claim_head(kRunnerB, 10).outcome == ClaimOutcome::granted);
}

TEST_CASE_FIXTURE(StoreFixture, "a head claim passes over the messages it is asked to")
{
    const auto first = deposit("task-1");
    const auto second = deposit("task-2");
    deposit("task-3");
    // task-1's lease lapsed while its runner still winds it down: that
    // runner passes over it, another does not.
    claim_head(kRunnerA, 10);
    clock.advance_ms(10'000);
    auto next = store->claim(
        {.nid = kNid, .runner_nid = kRunnerA, .lease_seconds = 30, .passing_over = {first.message_id}});
    REQUIRE(next);
    REQUIRE(next->has_value());
    CHECK((*next)->task_id == "task-2");
    auto third = store->claim({.nid = kNid,
                              .runner_nid = kRunnerA,
                              .lease_seconds = 30,
                              .passing_over = {first.message_id, second.message_id, 1'000'000}});
    REQUIRE(third);
    REQUIRE(third->has_value());
    CHECK((*third)->task_id == "task-3");
    auto nothing = store->claim(
        {.nid = kNid, .runner_nid = kRunnerA, .lease_seconds = 30, .passing_over = {first.message_id}});
    REQUIRE(nothing);
    CHECK_FALSE(nothing->has_value());
    CHECK(claim_head(kRunnerB, 10).task_id == "task-1");
    CHECK(store->task("task-1")->claims == 2);
}

TEST_CASE_FIXTURE(StoreFixture, "a second Store on the same file sees the lease at once")
{
    deposit("task-1");
    auto other = Store::open(location.options(), clock);
    REQUIRE(other);
    claim_head(kRunnerA, 30);
    auto conflict = (*other)->claim({.nid = kNid, .runner_nid = kRunnerB, .lease_seconds = 30, .task_id = "task-1"});
    CHECK(error_code_of(conflict) == "NOP-CLAIM-CONFLICT");
    auto empty = (*other)->claim({.nid = kNid, .runner_nid = kRunnerB, .lease_seconds = 30});
    REQUIRE(empty);
    CHECK_FALSE(empty->has_value());
}

TEST_CASE_FIXTURE(StoreFixture, "a runner NID that is not valid UTF-8 does not break claims or events")
{
    deposit("task-1");
    deposit("task-2");
    const std::string odd = "runner-\xff\xfe";
    claim_head(odd, 30);
    REQUIRE(store->complete("task-1", odd, {.state = nps::proto::TaskState::failed, .error_code = "NOP-RUNTIME-IDLE-TIMEOUT"}));
    claim_head(odd, 30);
    REQUIRE(store->release("task-2", odd));
    CHECK(store->events("task-1")->back().name == "task:failed");
    CHECK(store->events("task-2")->back().name == "lease:released");
}
