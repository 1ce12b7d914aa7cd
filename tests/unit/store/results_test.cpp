// SPDX-License-Identifier: Apache-2.0
// Node results: idempotency, fencing, is_node_terminal.
#include "store_fixture.hpp"

using namespace store_test;
using namespace nps::store;

namespace {

NodeResult node_result(const std::string& task_id, const std::string& node_id, NodeState state,
                       std::optional<std::string> result = std::nullopt)
{
    NodeResult r;
    r.task_id = task_id;
    r.node_id = node_id;
    r.dedup_key = deposit_request(task_id).dedup_key;
    r.state = state;
    r.attempts = 1;
    r.result_json = std::move(result);
    return r;
}

}  // namespace

TEST_CASE_FIXTURE(StoreFixture, "node results are idempotent on (task_id, node_id, dedup_key)")
{
    deposit("task-1");
    const auto dedup = deposit_request("task-1").dedup_key;
    CHECK_FALSE(*store->is_node_terminal(dedup, "n1"));

    CHECK(*store->record_node_result(node_result("task-1", "n1", NodeState::running)) == RecordOutcome::recorded);
    CHECK_FALSE(*store->is_node_terminal(dedup, "n1"));
    // A non-terminal record may be overwritten.
    auto done = node_result("task-1", "n1", NodeState::completed, R"({"answer":4})");
    done.killed_reason = "exit_status";
    CHECK(*store->record_node_result(done) == RecordOutcome::recorded);
    CHECK(*store->is_node_terminal(dedup, "n1"));
    CHECK_FALSE(*store->is_node_terminal(dedup, "n2"));
    CHECK_FALSE(*store->is_node_terminal("other-dedup", "n1"));

    CHECK(*store->record_node_result(done) == RecordOutcome::duplicate);
    auto different = node_result("task-1", "n1", NodeState::completed, R"({"answer":5})");
    CHECK(error_code_of(store->record_node_result(different)) == "NOP-TASK-ALREADY-COMPLETED");
    auto failed = node_result("task-1", "n1", NodeState::failed);
    failed.error_code = "NOP-RUNTIME-IDLE-TIMEOUT";
    CHECK(error_code_of(store->record_node_result(failed)) == "NOP-TASK-ALREADY-COMPLETED");

    auto list = store->node_results("task-1");
    REQUIRE(list);
    REQUIRE(list->size() == 1);
    CHECK(list->front().state == NodeState::completed);
    CHECK(list->front().result_json == std::optional<std::string>(R"({"answer":4})"));
    CHECK(list->front().killed_reason == std::optional<std::string>("exit_status"));
    CHECK(list->front().attempts == 1);
    CHECK(list->front().recorded_at_ms == clock.now_ms());
}

TEST_CASE_FIXTURE(StoreFixture, "node results check the task, the dedup_key, the state and the live lease")
{
    deposit("task-1");
    CHECK(error_code_of(store->record_node_result(node_result("nope", "n1", NodeState::completed))) == "NOP-TASK-NOT-FOUND");
    auto wrong_dedup = node_result("task-1", "n1", NodeState::completed);
    wrong_dedup.dedup_key = dedup_for("task-1", "another-dag");
    CHECK(error_code_of(store->record_node_result(wrong_dedup)) == "NOP-CLAIM-CONFLICT");

    auto fenced = node_result("task-1", "n1", NodeState::completed);
    fenced.runner_nid = kRunnerA;
    CHECK(error_code_of(store->record_node_result(fenced)) == "NOP-CLAIM-CONFLICT");  // no lease yet
    claim_head(kRunnerA, 10);
    auto by_b = fenced;
    by_b.runner_nid = kRunnerB;
    CHECK(error_code_of(store->record_node_result(by_b)) == "NOP-CLAIM-CONFLICT");
    clock.advance_ms(10'000);
    CHECK(error_code_of(store->record_node_result(fenced)) == "NOP-CLAIM-CONFLICT");  // expired
    REQUIRE(claim_task("task-1", kRunnerA));
    CHECK(*store->record_node_result(fenced) == RecordOutcome::recorded);
}

TEST_CASE_FIXTURE(StoreFixture, "a reclaiming runner sees the nodes its predecessor finished")
{
    deposit("task-1");
    const auto lease = claim_head(kRunnerA, 10);
    auto n1 = node_result("task-1", "n1", NodeState::completed, "{}");
    n1.runner_nid = kRunnerA;
    REQUIRE(store->record_node_result(n1));
    clock.advance_ms(11'000);
    const auto reclaim = claim_head(kRunnerB, 10);
    CHECK(reclaim.outcome == ClaimOutcome::reclaimed);
    CHECK(*store->is_node_terminal(reclaim.dedup_key, "n1"));
    CHECK_FALSE(*store->is_node_terminal(reclaim.dedup_key, "n2"));
    CHECK(reclaim.dedup_key == lease.dedup_key);
}

TEST_CASE_FIXTURE(StoreFixture, "the saga's steps may follow COMPLETED; stale saga replays are duplicates")
{
    deposit("task-1");
    const auto dedup = deposit_request("task-1").dedup_key;
    REQUIRE(store->record_node_result(node_result("task-1", "charge", NodeState::completed, R"({"charge_id":"c1"})")));
    // COMPLETED → COMPENSATING; a compensation record without a result keeps the stored one.
    CHECK(*store->record_node_result(node_result("task-1", "charge", NodeState::compensating)) == RecordOutcome::recorded);
    CHECK_FALSE(*store->is_node_terminal(dedup, "charge"));
    // A replay of COMPLETED after the saga moved on changes nothing.
    CHECK(*store->record_node_result(node_result("task-1", "charge", NodeState::completed, R"({"charge_id":"c1"})")) ==
          RecordOutcome::duplicate);
    CHECK(*store->record_node_result(node_result("task-1", "charge", NodeState::compensated)) == RecordOutcome::recorded);
    CHECK(*store->record_node_result(node_result("task-1", "charge", NodeState::compensating)) == RecordOutcome::duplicate);
    CHECK(*store->record_node_result(node_result("task-1", "charge", NodeState::compensated)) == RecordOutcome::duplicate);
    CHECK(*store->record_node_result(node_result("task-1", "charge", NodeState::compensated, R"({"charge_id":"c1"})")) ==
          RecordOutcome::duplicate);
    CHECK(error_code_of(store->record_node_result(node_result("task-1", "charge", NodeState::compensation_failed))) ==
          "NOP-TASK-ALREADY-COMPLETED");
    auto list = *store->node_results("task-1");
    REQUIRE(list.size() == 1);
    CHECK(list[0].state == NodeState::compensated);
    CHECK(list[0].result_json == std::optional<std::string>(R"({"charge_id":"c1"})"));

    // Only COMPLETED may enter the saga.
    REQUIRE(store->record_node_result(node_result("task-1", "ship", NodeState::failed)));
    CHECK(error_code_of(store->record_node_result(node_result("task-1", "ship", NodeState::compensating))) ==
          "NOP-TASK-ALREADY-COMPLETED");
}

TEST_CASE_FIXTURE(StoreFixture, "a task store's record keeps runner_nid without fencing it on a lease")
{
    deposit("task-1");
    auto reported = node_result("task-1", "n1", NodeState::completed, "{}");
    reported.runner_nid = kRunnerA;
    CHECK(error_code_of(store->record_node_result(reported)) == "NOP-CLAIM-CONFLICT");  // no lease here
    reported.fence = LeaseFence::none;
    CHECK(*store->record_node_result(reported) == RecordOutcome::recorded);
    CHECK(*store->record_node_result(reported) == RecordOutcome::duplicate);
    CHECK(store->node_results("task-1")->front().runner_nid == std::optional<std::string>(kRunnerA));
}

TEST_CASE_FIXTURE(StoreFixture, "a task store's report is refused only while another runner holds a live lease")
{
    deposit("task-1");
    claim_head(kRunnerA, 10);
    auto late = node_result("task-1", "n0", NodeState::completed, "{}");
    late.runner_nid = kRunnerA;
    late.fence = LeaseFence::foreign_lease;
    CHECK(*store->record_node_result(late) == RecordOutcome::recorded);  // the owner itself

    clock.advance_ms(11'000);
    claim_head(kRunnerB, 10);  // A's lease expired; B reclaimed the task
    auto stale = node_result("task-1", "n1", NodeState::completed, "{}");
    stale.runner_nid = kRunnerA;
    stale.fence = LeaseFence::foreign_lease;
    CHECK(error_code_of(store->record_node_result(stale)) == "NOP-CLAIM-CONFLICT");  // A lost the task

    clock.advance_ms(11'000);  // B's lease ended too: a late outbox delivery from A is accepted
    CHECK(*store->record_node_result(stale) == RecordOutcome::recorded);
}
