// SPDX-License-Identifier: Apache-2.0
// Group commit: Store::deposit_batch (one transaction for many deposits, each
// failing alone) and the DepositCommitter thread that feeds it.
#include <SQLiteCpp/Database.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "nps/store/deposit_committer.hpp"
#include "nps/store/store_pool.hpp"
#include "store_fixture.hpp"

using namespace store_test;
using nps::store::DepositRequest;

namespace {

std::vector<DepositRequest> requests_for(const std::vector<std::string>& task_ids)
{
    std::vector<DepositRequest> out;
    for (const auto& id : task_ids)
        out.push_back(deposit_request(id));
    return out;
}

}  // namespace

TEST_CASE_FIXTURE(StoreFixture, "a batch deposits every request in order, each as deposit() would")
{
    const auto results = store->deposit_batch(requests_for({"t-1", "t-2", "t-3"}));
    REQUIRE(results.size() == 3);
    std::int64_t previous = 0;
    for (int i = 0; i < 3; ++i) {
        const std::string id = "t-" + std::to_string(i + 1);
        REQUIRE_MESSAGE(results[i], results[i].error().describe());
        CHECK(results[i]->message.task_id == id);
        CHECK_FALSE(results[i]->duplicate);
        CHECK(results[i]->message.payload == frame_for(id));
        CHECK(results[i]->message.message_id > previous);
        previous = results[i]->message.message_id;
        CHECK(store->task(id)->state == proto::TaskState::pending);
        CHECK(store->events(id)->size() == 1);
    }
    CHECK(*store->depth(kNid) == 3);
    CHECK(store->deposit_batch({}).empty());
}

TEST_CASE_FIXTURE(StoreFixture, "a refused request in a batch changes nothing and does not affect the others")
{
    deposit("old");
    auto conflicting = deposit_request("old");
    conflicting.payload += " ";
    conflicting.frame_hash = nps::sha256_hex(conflicting.payload);
    auto bad_nid = deposit_request("elsewhere");
    bad_nid.max_inboxes = 1;  // a second inbox is refused
    bad_nid.nid = kOtherNid;

    const auto results = store->deposit_batch(
        {deposit_request("a"), conflicting, bad_nid, deposit_request("b"), deposit_request("a"), deposit_request("old")});
    REQUIRE(results.size() == 6);
    CHECK(results[0]);
    CHECK(error_code_of(results[1]) == "NWP-TASK-ID-CONFLICT");
    CHECK(error_code_of(results[2]) == "NWP-RATE-LIMIT-INBOX-FULL");
    CHECK(results[3]);
    // A task_id repeated in one batch is a duplicate of the earlier request.
    REQUIRE(results[4]);
    CHECK(results[4]->duplicate);
    CHECK(results[4]->message.message_id == results[0]->message.message_id);
    REQUIRE(results[5]);
    CHECK(results[5]->duplicate);

    CHECK(store->task("elsewhere").error().code == "NOP-TASK-NOT-FOUND");
    CHECK(*store->depth(kOtherNid) == 0);
    CHECK(*store->depth(kNid) == 3);  // old, a, b
    CHECK(store->events("a")->size() == 1);
}

TEST_CASE_FIXTURE(StoreFixture, "the depth limit counts the batch's own earlier deposits")
{
    std::vector<DepositRequest> batch = requests_for({"d-1", "d-2", "d-3", "d-4"});
    for (auto& r : batch)
        r.max_depth = 2;
    const auto results = store->deposit_batch(batch);
    CHECK(results[0]);
    CHECK(results[1]);
    CHECK(error_code_of(results[2]) == "NWP-RATE-LIMIT-INBOX-FULL");
    CHECK(error_code_of(results[3]) == "NWP-RATE-LIMIT-INBOX-FULL");
    CHECK(*store->depth(kNid) == 2);
}

TEST_CASE_FIXTURE(StoreFixture, "a batch whose transaction cannot commit stores nothing and fails every request" *
                                    doctest::test_suite("sqlite"))
{
    deposit("before");
    auto options = location.options();
    options.busy_timeout_ms = 50;
    auto impatient = nps::store::Store::open(options, clock);
    REQUIRE(impatient);
    // Another connection holds the write lock past the batch's busy timeout.
    SQLite::Database other(dir.file("runner.db"), SQLite::OPEN_READWRITE);
    other.exec("BEGIN IMMEDIATE");
    const auto results = (*impatient)->deposit_batch(requests_for({"x-1", "x-2"}));
    other.exec("ROLLBACK");
    REQUIRE(results.size() == 2);
    for (const auto& r : results) {
        REQUIRE_FALSE(r);
        CHECK(r.error().message.find("group of 2 deposits") != std::string::npos);
    }
    CHECK(store->task("x-1").error().code == "NOP-TASK-NOT-FOUND");
    CHECK(*store->depth(kNid) == 1);
}

TEST_CASE_FIXTURE(StoreFixture, "the committer answers every deposit in order, once committed")
{
    nps::store::StorePool pool(location.options(), clock);
    auto committer = std::make_unique<nps::store::DepositCommitter>(pool);
    std::mutex mutex;
    std::vector<std::string> answered;
    for (int i = 0; i < 40; ++i)
        committer->submit(deposit_request("c-" + std::to_string(i)), [&](nps::Result<nps::store::DepositResult> r) {
            // (On the committer's thread: CHECK, never REQUIRE, which throws.)
            CHECK_MESSAGE(r, r.error().describe());
            if (!r)
                return;
            // Durable before the answer: another connection sees it.
            CHECK(store->task(r->message.task_id));
            std::lock_guard lock(mutex);
            answered.push_back(r->message.task_id);
        });
    committer.reset();  // commits what is queued, then stops
    REQUIRE(answered.size() == 40);
    for (int i = 0; i < 40; ++i)
        CHECK(answered[i] == "c-" + std::to_string(i));
    CHECK(*store->depth(kNid) == 40);
}

TEST_CASE_FIXTURE(StoreFixture, "deposits that arrive during a commit share the next one" *
                                    doctest::test_suite("sqlite"))
{
    nps::store::StorePool pool(location.options(), clock);
    auto committer = std::make_unique<nps::store::DepositCommitter>(pool);
    std::atomic<int> ok{0};
    // The write lock is held elsewhere: the committer's first transaction
    // waits for it while the rest arrive.
    SQLite::Database other(dir.file("runner.db"), SQLite::OPEN_READWRITE);
    other.exec("BEGIN IMMEDIATE");
    for (int i = 0; i < 100; ++i)
        committer->submit(deposit_request("g-" + std::to_string(i)),
                             [&](nps::Result<nps::store::DepositResult> r) { ok += r ? 1 : 0; });
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    other.exec("ROLLBACK");
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (ok < 100 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    REQUIRE(ok == 100);
    // The first group is what was queued when it began (one deposit or a
    // few), the second all the rest.
    CHECK(committer->commits() <= 2);
    CHECK(*store->depth(kNid) == 100);
}
