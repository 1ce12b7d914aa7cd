// SPDX-License-Identifier: Apache-2.0
// Store::write_progress: a run's events, node records and end written in
// order, as append_event, record_node_result and complete would; a refused
// record ends the batch and leaves no trace, those before it stay.
#include <variant>

#include "store_fixture.hpp"

using namespace store_test;
using namespace nps::store;

namespace {

ProgressEvent event(const std::string& task_id, const std::string& name, std::optional<std::string> holder)
{
    return {.task_id = task_id, .name = name, .detail_json = R"({"k":1})", .lease_holder = std::move(holder)};
}

NodeResult completed_node(const std::string& task_id, const std::string& runner)
{
    return {.task_id = task_id,
            .node_id = "n1",
            .dedup_key = deposit_request(task_id).dedup_key,
            .state = NodeState::completed,
            .attempts = 1,
            .result_json = R"({"answer":4})",
            .runner_nid = runner};
}

std::vector<std::string> event_names(Store& store, const std::string& task_id)
{
    const auto events = store.events(task_id);
    REQUIRE_MESSAGE(events, (events ? std::string() : events.error().describe()));
    std::vector<std::string> names;
    for (const auto& e : *events)
        names.push_back(e.name);
    return names;
}

}  // namespace

TEST_CASE_FIXTURE(StoreFixture, "a run's events, node record and end are written in order")
{
    deposit("task-1");
    claim_head(kRunnerA);
    const std::vector<ProgressRecord> records{event("task-1", "n1:worker", kRunnerA),
                                              completed_node("task-1", kRunnerA),
                                              event("task-1", "n1:completed", kRunnerA),
                                              ProgressEnd{.task_id = "task-1", .runner_nid = kRunnerA,
                                                          .outcome = completed()}};
    const ProgressWritten written = store->write_progress(records);
    CHECK_MESSAGE(!written.error, (written.error ? written.error->describe() : std::string()));
    CHECK(written.written == 4);

    const auto names = event_names(*store, "task-1");
    REQUIRE(names.size() >= 4);
    // The two explicit events in order, then the end's own event.
    const std::vector<std::string> tail(names.end() - 3, names.end());
    CHECK(tail == std::vector<std::string>{"n1:worker", "n1:completed", "task:completed"});
    const auto results = *store->node_results("task-1");
    REQUIRE(results.size() == 1);
    CHECK(results.front().state == NodeState::completed);
    CHECK(results.front().result_json == std::optional<std::string>(R"({"answer":4})"));
    const auto task = *store->task("task-1");
    CHECK(task.state == proto::TaskState::completed);
    CHECK_FALSE(task.lease_owner.has_value());

    CHECK(store->write_progress({}).written == 0);
    CHECK_FALSE(store->write_progress({}).error);
}

TEST_CASE_FIXTURE(StoreFixture, "a refused record ends the batch: those before it are kept, it and those after are not")
{
    deposit("task-1");
    claim_head(kRunnerA);
    NodeResult wrong_key = completed_node("task-1", kRunnerA);
    wrong_key.dedup_key = "not-the-task's";
    const std::vector<ProgressRecord> records{event("task-1", "first", kRunnerA), wrong_key,
                                              event("task-1", "after", kRunnerA)};
    const ProgressWritten written = store->write_progress(records);
    CHECK(written.written == 1);
    REQUIRE(written.error);
    CHECK(written.error->code == "NOP-CLAIM-CONFLICT");

    const auto names = event_names(*store, "task-1");
    CHECK(names.back() == "first");
    CHECK(store->node_results("task-1")->empty());
    CHECK(store->task("task-1")->state == proto::TaskState::running);
}

TEST_CASE_FIXTURE(StoreFixture, "records fenced by a lease the writer does not hold are refused and write nothing")
{
    deposit("task-1");
    claim_head(kRunnerA);
    const auto before = event_names(*store, "task-1");
    const std::vector<ProgressRecord> records{event("task-1", "n1:worker", kRunnerB), completed_node("task-1", kRunnerB),
                                              ProgressEnd{.task_id = "task-1", .runner_nid = kRunnerB,
                                                          .outcome = completed()}};
    ProgressWritten written = store->write_progress(records);
    CHECK(written.written == 0);
    REQUIRE(written.error);
    CHECK(written.error->code == "NOP-CLAIM-CONFLICT");
    CHECK(event_names(*store, "task-1") == before);

    // The node record and the end alone: refused the same way.
    written = store->write_progress({records.begin() + 1, records.end()});
    CHECK(written.written == 0);
    REQUIRE(written.error);
    CHECK(written.error->code == "NOP-CLAIM-CONFLICT");
    CHECK(store->node_results("task-1")->empty());
    // The end alone, for a task that is not there.
    written = store->write_progress({ProgressEnd{.task_id = "no-such-task", .runner_nid = kRunnerA,
                                                 .outcome = completed()}});
    CHECK(written.written == 0);
    REQUIRE(written.error);
    CHECK(written.error->code == "NOP-TASK-NOT-FOUND");
    CHECK(store->task("task-1")->state == proto::TaskState::running);
}

TEST_CASE_FIXTURE(StoreFixture, "a node record already written counts as written; an invalid event is refused")
{
    deposit("task-1");
    claim_head(kRunnerA);
    REQUIRE(store->record_node_result(completed_node("task-1", kRunnerA)));
    ProgressWritten written = store->write_progress({completed_node("task-1", kRunnerA), event("task-1", "next", kRunnerA)});
    CHECK_MESSAGE(!written.error, (written.error ? written.error->describe() : std::string()));
    CHECK(written.written == 2);
    CHECK(event_names(*store, "task-1").back() == "next");

    ProgressEvent bad = event("task-1", "bad", kRunnerA);
    bad.detail_json = "{not json";
    written = store->write_progress({event("task-1", "kept", kRunnerA), bad, event("task-1", "not-reached", kRunnerA)});
    CHECK(written.written == 1);
    REQUIRE(written.error);
    CHECK(written.error->message.find("not valid JSON") != std::string::npos);
    CHECK(event_names(*store, "task-1").back() == "kept");
}
