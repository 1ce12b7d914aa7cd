// SPDX-License-Identifier: Apache-2.0
// Retention: result expiry, pruning finished tasks, the inbox cap.
#include "store_fixture.hpp"

using namespace store_test;
using namespace nps::store;

namespace {

NodeResult completed_node(const std::string& task_id)
{
    NodeResult r;
    r.task_id = task_id;
    r.node_id = "n1";
    r.dedup_key = deposit_request(task_id).dedup_key;
    r.state = NodeState::completed;
    r.attempts = 1;
    r.result_json = R"({"answer":4})";
    r.fence = LeaseFence::none;
    return r;
}

struct RetentionFixture : StoreFixture {
    // A one-node task deposited, run by kRunnerA and completed with a
    // result; its node report is delivered (discarded) unless keep_report.
    void finish(const std::string& task_id, std::uint32_t result_ttl_seconds = 3600, const std::string& nid = kNid,
                bool keep_report = false)
    {
        auto request = deposit_request(task_id, 0, 3600, nid);
        request.result_ttl_seconds = result_ttl_seconds;
        REQUIRE(store->deposit(request));
        auto lease = store->claim({.nid = nid, .runner_nid = kRunnerA, .lease_seconds = 30, .task_id = task_id});
        REQUIRE(lease);
        REQUIRE(store->record_node_result(completed_node(task_id)));
        REQUIRE(store->complete(task_id, kRunnerA, completed()));
        if (!keep_report)
            REQUIRE(store->discard_node_reports());
    }
};

}  // namespace

TEST_CASE_FIXTURE(RetentionFixture, "results expire result_ttl_seconds after the task finished; its state stays")
{
    finish("short", 10);
    finish("long", 3600);
    auto fresh = store->task("short");
    REQUIRE(fresh);
    REQUIRE(fresh->finished_at_ms);
    CHECK(*fresh->results_expire_at_ms == *fresh->finished_at_ms + 10'000);
    CHECK_FALSE(fresh->results_expired(clock.now_ms()));

    clock.advance_ms(10'000);
    // Due at once, before any sweep: the API answers from results_expire_at.
    CHECK(store->task("short")->results_expired(clock.now_ms()));
    CHECK(*store->expire_results(100) == 1);
    CHECK(*store->expire_results(100) == 0);  // done once

    auto expired = store->task("short");
    REQUIRE(expired);
    CHECK(expired->state == proto::TaskState::completed);
    CHECK_FALSE(expired->aggregate_json);
    CHECK(expired->results_expired_at_ms == clock.now_ms());
    CHECK_FALSE(store->node_results("short")->front().result_json);
    CHECK(store->node_results("short")->front().state == NodeState::completed);
    CHECK_FALSE(store->events("short")->empty());

    auto kept = store->task("long");
    CHECK(kept->aggregate_json);
    CHECK_FALSE(kept->results_expired(clock.now_ms()));
    CHECK(store->node_results("long")->front().result_json);
}

TEST_CASE_FIXTURE(RetentionFixture, "a running task's results never expire, however small its TTL")
{
    auto request = deposit_request("running");
    request.result_ttl_seconds = 0;
    REQUIRE(store->deposit(request));
    claim_head(kRunnerA);
    REQUIRE(store->record_node_result(completed_node("running")));
    clock.advance_ms(60'000);
    CHECK(*store->expire_results(100) == 0);
    CHECK_FALSE(store->task("running")->results_expired(clock.now_ms()));
    CHECK(store->node_results("running")->front().result_json);
}

TEST_CASE_FIXTURE(RetentionFixture, "prune_tasks deletes finished tasks older than the cutoff, oldest first, in batches")
{
    finish("old-1");
    clock.advance_ms(1000);
    finish("old-2");
    clock.advance_ms(1000);
    auto failed = deposit_request("old-failed");
    REQUIRE(store->deposit(failed));
    REQUIRE(store->cancel("old-failed"));
    clock.advance_ms(1000);
    deposit("live-pending");
    claim_head(kRunnerA);  // live-pending is now RUNNING
    clock.advance_ms(60'000);
    finish("recent");

    const std::int64_t cutoff = clock.now_ms() - 30'000;
    CHECK(*store->prune_tasks({.finished_before_ms = cutoff, .limit = 1}) == 1);
    CHECK(error_code_of(store->task("old-1")) == "NOP-TASK-NOT-FOUND");
    CHECK(store->task("old-2"));  // the batch stopped at one
    CHECK(*store->prune_tasks({.finished_before_ms = cutoff, .state = proto::TaskState::cancelled}) == 1);
    CHECK(error_code_of(store->task("old-failed")) == "NOP-TASK-NOT-FOUND");
    CHECK(*store->prune_tasks({.finished_before_ms = cutoff}) == 1);
    CHECK(*store->prune_tasks({.finished_before_ms = cutoff}) == 0);

    // Everything about the pruned tasks is gone; the live ones are whole.
    CHECK(store->events("old-2")->empty());
    CHECK(store->node_results("old-2")->empty());
    CHECK(store->task("live-pending")->state == proto::TaskState::running);
    CHECK(store->task("recent")->aggregate_json);
    CHECK(store->list_tasks({})->size() == 2);
    // The id can be used again once the old task is gone.
    CHECK_FALSE(store->deposit(deposit_request("old-1"))->duplicate);

    CHECK(error_code_of(store->prune_tasks({.finished_before_ms = cutoff, .state = proto::TaskState::running})) ==
          "NWP-HTTP-PARAM-INVALID");
}

TEST_CASE_FIXTURE(RetentionFixture, "a task with a report still to deliver is not pruned")
{
    finish("reported", 3600, kNid, /*keep_report=*/true);
    finish("quiet", 3600, kNid, /*keep_report=*/true);
    // quiet's node report goes out (delivered rows are deleted); reported's stays pending.
    auto rows = store->claim_reports({.owner = "deliverer", .lease_ms = 30'000, .max_rows = 10});
    REQUIRE(rows);
    for (const auto& row : *rows)
        if (row.task_id == "quiet")
            REQUIRE(*store->mark_report_delivered(row.id, "deliverer", "{}"));
    REQUIRE(*store->release_reports("deliverer", 0) == 1);
    clock.advance_ms(10'000);
    CHECK(*store->prune_tasks({.finished_before_ms = clock.now_ms()}) == 1);
    CHECK(store->task("reported"));
    CHECK(error_code_of(store->task("quiet")) == "NOP-TASK-NOT-FOUND");
}

TEST_CASE_FIXTURE(RetentionFixture, "remove_task deletes a finished task and refuses a live one")
{
    finish("done");
    deposit("waiting");
    CHECK(store->remove_task("done"));
    CHECK(error_code_of(store->task("done")) == "NOP-TASK-NOT-FOUND");
    CHECK(error_code_of(store->remove_task("done")) == "NOP-TASK-NOT-FOUND");
    CHECK(error_code_of(store->remove_task("waiting")) == "NOP-TASK-NOT-FINISHED");
    CHECK(store->task("waiting")->state == proto::TaskState::pending);
    CHECK(*store->depth(kNid) == 1);
}

TEST_CASE_FIXTURE(RetentionFixture, "max_inboxes refuses a new NID while that many hold tasks, until they are pruned")
{
    auto request = [](const std::string& task_id, const std::string& nid) {
        auto r = deposit_request(task_id, 0, 3600, nid);
        r.max_inboxes = 2;
        return r;
    };
    const std::string third = "urn:nps:agent:example.com:inbox-c";
    finish("a1");  // kNid
    REQUIRE(store->deposit(request("b1", kOtherNid)));
    CHECK(error_code_of(store->deposit(request("c1", third))) == "NWP-RATE-LIMIT-INBOX-FULL");
    CHECK(store->deposit(request("a2", kNid)));  // a NID already holding tasks is fine
    CHECK(error_code_of(store->task("c1")) == "NOP-TASK-NOT-FOUND");  // the refusal changed nothing

    // kNid's tasks go: a2 is still pending, so kNid keeps its place.
    clock.advance_ms(1000);
    CHECK(*store->prune_tasks({.finished_before_ms = clock.now_ms()}) == 1);
    CHECK(error_code_of(store->deposit(request("c1", third))) == "NWP-RATE-LIMIT-INBOX-FULL");
    REQUIRE(store->cancel("a2"));
    clock.advance_ms(1000);
    CHECK(*store->prune_tasks({.finished_before_ms = clock.now_ms()}) == 1);
    CHECK(store->deposit(request("c1", third)));
}

TEST_CASE_FIXTURE(RetentionFixture, "a new runner.db gives pruned pages back to the file system" * doctest::test_suite("sqlite"))
{
    for (int i = 0; i < 300; ++i) {
        auto r = deposit_request("big-" + std::to_string(i));
        r.payload = R"({"frame":"0x40","task_id":"big-)" + std::to_string(i) + R"(","pad":")" +
                    std::string(8000, 'x') + R"("})";
        r.frame_hash = nps::sha256_hex(r.payload);
        REQUIRE(store->deposit(r));
        REQUIRE(store->cancel(r.task_id));
    }
    const auto size_of = [&] { return std::filesystem::file_size(dir.file("runner.db")); };
    clock.advance_ms(1000);
    while (*store->prune_tasks({.finished_before_ms = clock.now_ms()}) > 0) {
    }
    CHECK(*store->reclaim_space(1'000'000) > 500);  // the frames' pages were free
    CHECK(*store->reclaim_space(1'000'000) == 0);    // and are given back
    // The WAL holds the truncation until a checkpoint; after it the file shrank.
    store.reset();
    reopen();
    CHECK(size_of() < 1'000'000);
}
